"""Permit waits in simulate run on the virtual clock and time out when nothing else can happen."""

from __future__ import annotations

from typing import Any

import anyio

from ksched.config import load_config_data
from ksched.framework import Code, PermitPlugin, Registry, Status
from ksched.framework.cycle_state import CycleState
from ksched.framework.types import PodInfo
from ksched.plugins import register_builtins
from ksched.sim import Simulation, parse_cluster

CLUSTER = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}}
- {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: default, labels: {gang: g}},
   spec: {schedulerName: ksched, containers: [{name: c}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: b, namespace: default, labels: {gang: g}},
   spec: {schedulerName: ksched, containers: [{name: c}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: solo, namespace: default, labels: {gang: lonely}},
   spec: {schedulerName: ksched, containers: [{name: c}]}}
"""


class PairUp(PermitPlugin):
    """Waits until two pods of the same gang are at Permit, then allows both."""

    name = "PairUp"

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        assert self.handle is not None
        gang = pod.labels.get("gang", "")
        waiting = [wp for wp in self.handle.waiting_pods if wp.pod.labels.get("gang") == gang]
        if waiting:
            for wp in waiting:
                wp.allow(self.name)
            return None, 0
        return Status(Code.WAIT), 30.0


def config(**extra: Any) -> Any:
    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "ksched",
                    "plugins": {
                        "multiPoint": {"disabled": [{"name": "*"}]},
                        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                        "bind": {"enabled": [{"name": "DefaultBinder"}]},
                        "permit": {"enabled": [{"name": "PairUp"}]},
                    },
                }
            ],
        },
        "test",
        None,
    )
    return cfg


def test_gang_pair_allowed_and_lonely_pod_times_out_on_virtual_time() -> None:
    reg = Registry()
    register_builtins(reg)
    reg.register("PairUp", PairUp, "tests")
    sim = Simulation(parse_cluster(CLUSTER, "inline"), config(), reg, seed=1)
    results = anyio.run(sim.run)
    by = {r.name: r for r in results}
    assert by["a"].status == "Scheduled" and by["b"].status == "Scheduled"
    assert by["solo"].status == "Unschedulable"
    assert by["solo"].message == "rejected due to timeout after waiting 30s at plugin PairUp"
    # Virtual time advanced to the Permit deadline; nothing really slept.
    assert sim.clock.now() >= 30.0
