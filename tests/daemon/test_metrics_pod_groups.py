"""Queue metrics of pod groups (v1.37, GenericWorkload): pods kept aside ("incomplete",
"pending"), group entities by type, incoming entities of type ``podgroup``."""

from __future__ import annotations

import anyio

from ksched.config import default_config
from ksched.features import set_feature_gates
from ksched.metrics import SchedulerMetrics
from ksched.plugins import default_registry
from ksched.sim import Simulation, parse_cluster

from .test_metrics import value

CLUSTER = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1},
   status: {allocatable: {cpu: "2", memory: 8Gi, pods: "10"}}}
- {apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, metadata: {name: g, namespace: default},
   spec: {schedulingPolicy: {gang: {minCount: 3}}}}
- {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: default, uid: ua},
   spec: {schedulerName: ksched, schedulingGroup: {podGroupName: g}, containers: [{name: c}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: b, namespace: default, uid: ub},
   spec: {schedulerName: ksched, schedulingGroup: {podGroupName: g}, containers: [{name: c}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: c, namespace: default, uid: uc},
   spec: {schedulerName: ksched, schedulingGroup: {podGroupName: h}, containers: [{name: c}]}}
"""


def run(gates: list[str]) -> tuple[Simulation, SchedulerMetrics]:
    features = set_feature_gates(gates, ["1.37"])
    m = SchedulerMetrics(seed=0, process_metrics=False, features=features)
    sim = Simulation(
        parse_cluster(CLUSTER, "test", validate=False),
        default_config(features),
        default_registry(),
        metrics=m,
    )
    anyio.run(sim.run)
    return sim, m


def test_a_gated_gang_and_an_incomplete_member() -> None:
    sim, m = run(["GenericWorkload=true"])
    assert sim.sched.queue.pod_group("default/g") is not None  # the file's PodGroup, fed in
    assert value(m, "scheduler_pending_pods", queue="gated") == 2
    assert value(m, "scheduler_pending_pods", queue="incomplete") == 1
    assert value(m, "scheduler_pending_pods", queue="pending") == 0
    assert value(m, "scheduler_queued_entities", queue="gated", type="podgroup") == 1
    # no bare pod was ever gated: upstream's series appears on first use only
    assert value(m, "scheduler_queued_entities", queue="gated", type="pod") is None
    assert value(m, "scheduler_queued_entities", queue="active", type="podgroup") is None
    incoming = value(
        m,
        "scheduler_queue_incoming_entities_total",
        queue="unschedulable",
        event="UnscheduledPodAdd",
        type="podgroup",
    )
    # created gated; re-gated on each member's UnscheduledPodAdd (its hint says Queue);
    # b joining the pooled entity is a move within the pool: no entity
    assert incoming == 3
    pods = value(
        m, "scheduler_queue_incoming_pods_total", queue="unschedulable", event="UnscheduledPodAdd"
    )
    assert pods == 1 + 1 + 2 + 2


def test_1_37_shows_the_aside_queues_whatever_the_gate() -> None:
    _, m = run([])
    assert value(m, "scheduler_pending_pods", queue="incomplete") == 0
    assert value(m, "scheduler_pending_pods", queue="pending") == 0
    assert value(m, "scheduler_pending_pods", queue="active") == 0
    assert value(m, "scheduler_queued_entities", queue="gated", type="podgroup") is None
