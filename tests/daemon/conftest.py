"""A scheduler driven in memory (``ksched.sim``) with metrics attached, for unit tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from ksched.config import default_config
from ksched.daemon.explain import Outcomes
from ksched.metrics import SchedulerMetrics
from ksched.plugins import default_registry
from ksched.sim import Simulation, parse_cluster

CLUSTER = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1},
   status: {allocatable: {cpu: "2", memory: 8Gi, pods: "10"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2},
   status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}}
- {apiVersion: v1, kind: Pod, metadata: {name: small, namespace: default, uid: u1},
   spec: {schedulerName: ksched, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: mid, namespace: default, uid: u2},
   spec: {schedulerName: ksched, containers: [{name: c, resources: {requests: {cpu: "3"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: huge, namespace: default, uid: u3},
   spec: {schedulerName: ksched, containers: [{name: c, resources: {requests: {cpu: "8"}}}]}}
"""


def simulated(metrics: SchedulerMetrics | None = None, cluster: str = CLUSTER) -> Simulation:
    """The example cluster scheduled to completion: small and mid bound, huge unschedulable."""
    # unvalidated: some tests feed the scheduler a pod the API server would have refused
    cf = parse_cluster(cluster, "test", validate=False)
    # the metrics' emulated version is the scheduler's
    config = default_config(metrics.features if metrics is not None else None)
    sim = Simulation(cf, config, default_registry(), seed=0, metrics=metrics)
    if metrics is not None:
        # Every plugin run (so evaluated and timed) on every attempt: a cycle the cache
        # answers goes through the extension points without running their plugins.
        for fw in sim.sched.frameworks.values():
            fw.cycle_cache = None
    anyio.run(sim.run)
    return sim


@dataclass
class FakeDaemon:
    """What DebugServer reads from a SchedulerDaemon, over a simulated scheduler."""

    sim: Simulation | None
    synced: bool = True
    stopping: bool = False
    metrics: SchedulerMetrics = field(default_factory=lambda: SchedulerMetrics(seed=0))
    outcomes: Outcomes = field(default_factory=Outcomes)
    config: Any = field(default_factory=default_config)
    shadow: Any = None  # not in shadow mode
    flags: dict[str, str] = field(default_factory=dict)  # /flagz

    @property
    def scheduler_if_started(self) -> Any:
        return self.sim.sched if self.sim is not None else None

    def client_settings(self) -> dict[str, Any] | None:
        return None  # no API client

    def liveness_checks(self) -> list[tuple[str, str | None]]:
        return [("ping", None)]

    def readiness_checks(self) -> list[tuple[str, str | None]]:
        return [
            ("ping", None),
            ("informer-sync", None if self.synced else "informers have not synced yet"),
            ("shutdown", "shutting down" if self.stopping else None),
        ]


@pytest.fixture
def sim_metrics() -> tuple[Simulation, SchedulerMetrics]:
    m = SchedulerMetrics(seed=0, plugin_sample_percent=100)
    return simulated(m), m
