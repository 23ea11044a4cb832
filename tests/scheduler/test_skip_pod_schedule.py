"""``skipPodSchedule``: a pending pod already being deleted gets no scheduling cycle."""

from __future__ import annotations

import anyio

from ksched.config import load_config
from ksched.features import resolve_feature_gates
from ksched.plugins import default_registry
from ksched.sim import Simulation, parse_cluster

CLUSTER = """apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n0}, status: {allocatable: {cpu: "4", pods: "10"}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: going, namespace: default, uid: going, deletionTimestamp: "2026-11-29T10:00:00Z",
    finalizers: [example.com/hold]}
  spec: {schedulerName: ksched, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: staying, namespace: default, uid: staying}
  spec: {schedulerName: ksched, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
"""


def test_a_pending_pod_being_deleted_is_skipped_with_an_event() -> None:
    registry = default_registry(entry_points=False)
    cfg, _ = load_config(None, set(registry.names()), resolve_feature_gates([], ["1.37"]))
    sim = Simulation(parse_cluster(CLUSTER, "c.yaml"), cfg, registry, seed=0)
    got = {r.name: r for r in anyio.run(sim.run)}
    assert got["staying"].node == "n0"
    assert got["going"].node is None
    events = sim.sched.frameworks["ksched"].handle.recorder.events  # type: ignore[attr-defined]
    skipped = [(e.pod, e.reason, e.note) for e in events if e.pod == "default/going"]
    assert skipped == [
        ("default/going", "FailedScheduling", "skip schedule deleting pod: default/going")
    ]
    assert sim.sched.queue.location(sim.cluster.pods["going"]) is None  # out of the queue
