"""Pod groups through the whole default profile of 1.37 (GenericWorkload on), as
``ksched simulate`` and the oracle's replay run them: the queue pops the group, the
pod-group cycle decides it, GangScheduling's Permit holds members until the quorum,
DefaultPreemption and DynamicResources serve PodGroupPostFilter, shadow mode decides a
group without binding it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry

from ksched.config import load_config
from ksched.daemon.shadow import Shadow
from ksched.features import resolve_feature_gates
from ksched.plugins import default_registry
from ksched.queue.podgroups import QueuedPodGroupInfo
from ksched.scheduler.dispatch import schedule_entity
from ksched.scheduler.loop import decide_group
from ksched.sim import PodResult, Simulation, parse_cluster

GATES = ["GenericWorkload=true"]


def _cluster(
    nodes: int,
    members: int,
    min_count: int,
    *,
    cpu: str = "1",
    node_cpu: str = "2",
    running: int = 0,
    priority: bool = False,
) -> str:
    items = [
        "- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, "
        "value: 1000}",
        "- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: low}, "
        "value: 10}",
    ]
    for i in range(nodes):
        items.append(
            f"- {{apiVersion: v1, kind: Node, metadata: {{name: n{i}}}, "
            f'status: {{allocatable: {{cpu: "{node_cpu}", memory: 8Gi, pods: "10"}}}}}}'
        )
    for i in range(running):
        items.append(
            "- apiVersion: v1\n  kind: Pod\n"
            f"  metadata: {{name: low{i}, namespace: ml, uid: low{i}}}\n"
            f"  spec:\n    nodeName: n{i % nodes}\n    priorityClassName: low\n"
            f'    containers: [{{name: c, resources: {{requests: {{cpu: "{node_cpu}"}}}}}}]'
        )
    pc = "priorityClassName: high, " if priority else ""
    items.append(
        "- apiVersion: scheduling.k8s.io/v1beta1\n  kind: PodGroup\n"
        "  metadata: {name: g, namespace: ml, uid: pg-uid, generation: 1}\n"
        f"  spec: {{{pc}schedulingPolicy: {{gang: {{minCount: {min_count}}}}}}}"
    )
    for i in range(members):
        items.append(
            "- apiVersion: v1\n  kind: Pod\n"
            f"  metadata: {{name: m{i}, namespace: ml, uid: m{i}}}\n"
            "  spec:\n    schedulerName: ksched\n"
            + ("    priorityClassName: high\n" if priority else "")
            + "    schedulingGroup: {podGroupName: g}\n"
            f'    containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]'
        )
    return "apiVersion: v1\nkind: List\nitems:\n" + "\n".join(items) + "\n"


def _simulation(text: str, **kw: Any) -> Simulation:
    registry = default_registry(entry_points=False)
    features = resolve_feature_gates(GATES, ["1.37"])
    cfg, _ = load_config(None, set(registry.names()), features)
    return Simulation(parse_cluster(text, "c.yaml"), cfg, registry, seed=0, explain=True, **kw)


def _run(sim: Simulation) -> dict[str, PodResult]:
    return {r.name: r for r in anyio.run(sim.run)}


def test_a_gang_that_fits_binds_whole_and_members_waiting_at_permit_were_nominated() -> None:
    sim = _simulation(_cluster(2, 3, 3))
    got = _run(sim)
    assert {n: r.status for n, r in got.items()} == dict.fromkeys(("m0", "m1", "m2"), "Scheduled")
    (cond,) = sim.recorder.pod_group_conditions["ml/g"]
    assert (cond.status, cond.reason) == ("True", "Scheduled")
    pods = {p.name: p for p in sim.cluster.pods.values()}
    # NominatedNodeNameForExpectation: the members that waited at GangScheduling's Permit
    # for the last one announced their node; the last was allowed at once
    assert [pods[n].pod.status.nominated_node_name for n in ("m0", "m1", "m2")] == [
        got["m0"].node,
        got["m1"].node,
        "",
    ]
    # each member's explanation is its placing attempt's
    assert set(sim.sched.explanations) == {"ml/m0", "ml/m1", "ml/m2"}


def test_a_gang_too_big_binds_nothing_and_says_why_on_its_pod_group() -> None:
    sim = _simulation(_cluster(1, 3, 3))
    got = _run(sim)
    assert all(r.node is None for r in got.values())
    assert got["m0"].message.startswith(
        "pod group is unschedulable, minCount (3) cannot be satisfied"
    )
    (cond, *_) = sim.recorder.pod_group_conditions["ml/g"]
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    # nothing to preempt is UnschedulableAndUnresolvable: DefaultPreemption's status alone
    # (DynamicResources' reason before it is dropped, as upstream's runtime drops it)
    assert cond.message == (
        "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, pod group preemption: "
        "No preemption victims found for incoming preemptor"
    )


def test_both_pod_group_post_filters_speak_when_preemption_cannot_help() -> None:
    """A victim exists but evicting it is not enough: DynamicResources' reason, then
    DefaultPreemption's (its rerun's status), in the profile's order."""
    sim = _simulation(_cluster(1, 3, 3, running=1, priority=True))
    got = _run(sim)
    assert all(r.node is None for r in got.values())
    (cond, *_) = sim.recorder.pod_group_conditions["ml/g"]
    assert cond.message == (
        "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining, deallocation and "
        "deletion of ResourceClaims completed, pod group preemption: minCount (3) cannot be "
        "satisfied: 2 scheduled, 0 remaining"
    )
    assert "pg-uid" not in sim.sched.preemptions  # nobody evicted in vain


def test_a_high_priority_gang_preempts_lower_priority_pods_as_one_group() -> None:
    sim = _simulation(_cluster(2, 2, 2, cpu="2", running=2, priority=True))
    got = _run(sim)
    assert sorted(r.node or "" for r in got.values()) == ["n0", "n1"]
    # the victims are the group's (recorded under its PodGroup), not a member's
    assert sorted(sim.sched.preemptions["pg-uid"]) == ["ml/low0", "ml/low1"]
    assert not any(r.preempted for r in got.values())


def test_tie_breaks_steer_equal_nodes_only() -> None:
    for want in ("n0", "n1"):
        sim = _simulation(_cluster(2, 1, 1), tie_breaks={"ml/m0": want})
        assert _run(sim)["m0"].node == want
    # a node that does not tie is not taken: n1 is full
    full = _cluster(2, 1, 1, running=1).replace("nodeName: n0", "nodeName: n1")
    sim = _simulation(full, tie_breaks={"ml/m0": "n1"})
    assert _run(sim)["m0"].node == "n0"


def _shadow_decided(nodes: int) -> tuple[Simulation, Shadow, QueuedPodGroupInfo]:
    """A gang of three (quorum 3) decided by shadow mode on ``nodes`` nodes of 2 CPUs."""
    sim = _simulation(_cluster(nodes, 3, 3), adopt={"default-scheduler": "ksched"})
    shadow = Shadow(sim.sched, CollectorRegistry(), shadowed="default-scheduler", profile="ksched")
    sim._load()
    group = sim.sched.queue.pop_nowait()
    assert isinstance(group, QueuedPodGroupInfo)

    async def decide() -> None:
        shadow.record(group, await decide_group(sim.sched, group))

    anyio.run(decide, backend="asyncio")
    return sim, shadow, group


@pytest.mark.parametrize(("nodes", "placed"), [(2, True), (1, False)])
def test_shadow_mode_decides_a_group_whole_without_binding_it(nodes: int, placed: bool) -> None:
    sim, shadow, _ = _shadow_decided(nodes)
    decisions = [shadow.decisions[f"m{i}"] for i in range(3)]
    if placed:
        assert all(d.node in ("n0", "n1") for d in decisions)
    else:
        assert all(d.node is None for d in decisions)
        assert decisions[0].message.startswith("minCount (3) cannot be satisfied")
    assert not any(p.node_name for p in sim.cluster.pods.values())  # nothing bound
    assert not sim.recorder.pod_group_conditions  # nor any condition written


RACKS = """apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n0, labels: {rack: r0}},
   status: {allocatable: {cpu: "1", memory: 8Gi, pods: "10"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {rack: r1}},
   status: {allocatable: {cpu: 500m, memory: 8Gi, pods: "10"}}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: g, namespace: ml, uid: pg-uid}
  spec: {schedulingPolicy: {gang: {minCount: 2}},
         schedulingConstraints: {topology: [{key: rack}]}}
""" + "".join(
    f"""- apiVersion: v1
  kind: Pod
  metadata: {{name: m{i}, namespace: ml, uid: m{i}}}
  spec:
    schedulerName: ksched
    schedulingGroup: {{podGroupName: g}}
    containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]
"""
    for i in range(2)
)


@pytest.mark.parametrize(
    ("order", "first"),
    [
        (["r0", "r1"], "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"),
        (["r1", "r0"], "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"),
    ],
)
def test_placement_orders_decide_which_placement_names_the_groups_status(
    order: list[str], first: str
) -> None:
    """Upstream tries placements in a Go map's order and reports the first one's status;
    the oracle's replay hands ksched kube-scheduler's order (one per run of the
    algorithm, the last one kept for later runs)."""
    registry = default_registry(entry_points=False)
    gates = [*GATES, "TopologyAwareWorkloadScheduling=true"]
    cfg, _ = load_config(None, set(registry.names()), resolve_feature_gates(gates, ["1.37"]))
    cluster = parse_cluster(RACKS, "c.yaml")
    sim = Simulation(cluster, cfg, registry, seed=0, placement_orders={"ml/g": [order]})
    got = _run(sim)
    assert all(r.node is None for r in got.values())
    (cond, *_) = sim.recorder.pod_group_conditions["ml/g"]
    assert cond.message.startswith(
        f"pod group is unschedulable, 0/2 placements are available, first placement status: {first}"
    )


def test_members_stopped_before_dynamic_resources_prefilter_make_its_post_filter_fail() -> None:
    """DynamicResources keeps each member's state for its PodGroupPostFilter from its
    PreFilter; when no member got that far (VolumeBinding stopped them: the claim is
    missing), upstream's lookup fails with ErrNotFound and the group's attempt is an
    Error."""
    text = _cluster(1, 2, 2).replace(
        "    containers: [{name: c,",
        "    volumes: [{name: v, persistentVolumeClaim: {claimName: missing}}]\n"
        "    containers: [{name: c,",
    )
    sim = _simulation(text)
    got = _run(sim)
    assert all(r.node is None for r in got.values())
    assert got["m0"].status == "Error"
    (cond, *_) = sim.recorder.pod_group_conditions["ml/g"]
    assert (cond.reason, cond.message) == (
        "SchedulerError",
        'error in "DynamicResources" PodGroupPostFilter plugins: not found',
    )


def test_a_gang_waiting_on_its_preemption_backs_off_and_is_retried_once_victims_are_gone() -> None:
    """Upstream requeues the group after its members' status writes, by which time the
    preemption goroutine has made its few calls: the group lands in backoffQ (not gated
    in the pool), is retried when the backoff's 1 s window has passed (2.0 s after a
    failure at 0.0), and the group's victims, finished within 0.5 s, are gone by then."""
    from ksched.queue.scheduling_queue import BACKOFF_Q
    from ksched.sim.simulator import GROUP_VICTIM_TERMINATION_SECONDS

    sim = _simulation(_cluster(2, 2, 2, cpu="2", running=2, priority=True))
    sim._load()
    group = sim.sched.queue.pop_nowait()
    assert isinstance(group, QueuedPodGroupInfo)
    member = group.members[0].pod_info

    async def first_cycle() -> None:
        async with anyio.create_task_group() as tg:
            sim.sched.loop.task_group = tg
            await schedule_entity(sim.sched, group, tg)
            tg.cancel_scope.cancel()

    anyio.run(first_cycle, backend="asyncio")
    assert sim.sched.queue.location(member) == BACKOFF_Q
    assert not group.gated and sim.sched.preempting == {}
    assert sorted(sim.cluster.deleted) == ["ml/low0", "ml/low1"]
    assert [due for due, *_ in sim.cluster.terminating] == [GROUP_VICTIM_TERMINATION_SECONDS] * 2
    assert sim.sched.queue.next_backoff_expiry() == 2.0


def test_only_a_pod_groups_victims_terminate_sooner() -> None:
    from ksched.api.objects import PodCondition
    from ksched.framework.preemption import preempted_for_pod_group

    def cond(preemptor: str, status: str = "True") -> PodCondition:
        return PodCondition(
            type="DisruptionTarget",
            status=status,
            reason="PreemptionByScheduler",
            message=f"ksched: preempting to accommodate a higher priority {preemptor}",
        )

    assert preempted_for_pod_group([cond("podgroup")])
    assert not preempted_for_pod_group([cond("pod")])
    assert not preempted_for_pod_group([cond("podgroup", "False")])
    assert not preempted_for_pod_group([])


@pytest.mark.parametrize(
    ("nodes", "there_binds", "verdict"),
    [
        (2, True, "agree"),
        (1, True, "unschedulable_here"),
        (2, False, "unschedulable_there"),
        (1, False, "agree"),
    ],
)
def test_shadow_mode_compares_a_group_whole_once_per_decision(
    nodes: int, there_binds: bool, verdict: str
) -> None:
    """The shadowed scheduler's first verdict on a member (bound, or Unschedulable) is
    compared with ksched's decision of the whole group, once."""
    import msgspec

    from ksched.api.objects import PodCondition

    _, shadow, group = _shadow_decided(nodes)

    def theirs(i: int) -> tuple[Any, Any]:
        pod = group.members[i].pod_info
        spec = msgspec.structs.replace(pod.pod.spec, scheduler_name="default-scheduler")
        old = pod.with_pod(msgspec.structs.replace(pod.pod, spec=spec))
        if there_binds:
            bound = msgspec.structs.replace(spec, node_name="n0")
            return old, old.with_pod(msgspec.structs.replace(old.pod, spec=bound))
        cond = PodCondition(
            type="PodScheduled", status="False", reason="Unschedulable", message="0/2 nodes"
        )
        status = msgspec.structs.replace(old.pod.status, conditions=[cond])
        return old, old.with_pod(msgspec.structs.replace(old.pod, status=status))

    shadow.observe(*theirs(0))
    shadow.observe(*theirs(1))  # the same decision: not counted again
    assert dict(shadow.group_counts) == {verdict: 1}
    assert shadow.to_dict()["podGroupCounts"][verdict] == 1
    sample = shadow.group_metric.labels("ksched", verdict)._value.get()  # type: ignore[attr-defined]
    assert sample == 1
