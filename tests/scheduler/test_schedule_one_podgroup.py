"""The pod-group cycle (GenericWorkload, v1.37): all or nothing, placements chosen by score,
the PodGroup's condition, metrics, validation; and 1.36 without any of it.

Small fake plugins: ``GangScheduling`` (PlacementFeasible with upstream's minCount rule, and
a Permit holding the gang until minCount are assumed), ``Zones`` (PlacementGenerate: one
placement per ``zone`` label value), ``PreferZone`` (PlacementScore). NodeResourcesFit
filters on CPU. FakeClock; nothing sleeps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import pytest

from ksched.api.workload import Condition, PodGroup, pod_group_from_json
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import NullCluster
from ksched.framework.interface import (
    PermitPlugin,
    PlacementFeasiblePlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
)
from ksched.framework.listers import Listers
from ksched.framework.podgroup import (
    GeneratePlacementsResult,
    Placement,
    PlacementProgress,
    PodGroupAssignments,
    PodGroupInfo,
    pod_group_of,
)
from ksched.framework.registry import Registry
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.metrics import SchedulerMetrics
from ksched.plugins import BUILTIN_PLUGINS, builtin_plugin
from ksched.queue.podgroups import QueuedPodGroupInfo
from ksched.scheduler.cycle_result import CycleResult
from ksched.scheduler.dispatch import schedule_entity
from ksched.scheduler.schedule_one_podgroup import update_pod_group_condition
from ksched.scheduler.scheduler import Scheduler
from ksched.testing.objects import make_pod_group
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod
from tests.queue._util import config
from tests.scheduler.test_binding_cycle import Recorder

# the built-in plugins, but GangScheduling: a fake here
BUILTINS = tuple(n for n in BUILTIN_PLUGINS if n != "GangScheduling")

pytestmark = pytest.mark.anyio

GROUP = "default/g"


# -- fake plugins -------------------------------------------------------------------------


def _min_count(info: PodGroupInfo) -> int:
    gang = info.pod_group.spec.scheduling_policy.gang
    return 1 if gang is None else gang.min_count


class GangScheduling(PlacementFeasiblePlugin, PermitPlugin):
    """Upstream's rules: PlacementFeasible by minCount; Permit waits until minCount
    members are assumed, then lets them all go."""

    name = "GangScheduling"

    def placement_feasible(
        self, state: CycleState, group: PodGroupInfo, progress: PlacementProgress
    ) -> Status | None:
        n, done, left = _min_count(group), progress.scheduled, progress.remaining
        if left + done < n:
            return Status(
                Code.UNSCHEDULABLE,
                f"minCount ({n}) cannot be satisfied: {done} scheduled, {left} remaining",
            )
        if done < n:
            return Status(
                Code.WAIT,
                f"minCount ({n}) is not yet satisfied: {done} scheduled, {left} remaining",
            )
        return None

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        assert self.handle is not None
        key = pod_group_of(pod.pod)
        if key is None:
            return None, 0.0
        pg = self.handle.listers.store(Listers.SCHEDULING_POD_GROUPS)[key]
        gang = pg.spec.scheduling_policy.gang
        waiting = [wp for wp in self.handle.waiting_pods if pod_group_of(wp.pod.pod) == key]
        if gang is None or len(waiting) + 1 >= gang.min_count:
            for wp in waiting:
                wp.allow(self.name)
            return None, 0.0
        return Status(Code.WAIT, "waiting for minCount pods from a gang to be scheduled"), 300.0


class Zones(PlacementGeneratePlugin):
    """One placement per value of the nodes' ``zone`` label, in name order."""

    name = "Zones"

    def generate_placements(
        self, state: CycleState, group: PodGroupInfo, parent: Placement
    ) -> tuple[GeneratePlacementsResult | None, Status | None]:
        zones: dict[str, list[Any]] = {}
        for ni in parent.nodes:
            assert ni.node is not None
            zones.setdefault(ni.node.metadata.labels.get("zone", ""), []).append(ni)
        return GeneratePlacementsResult(
            [Placement(f"zone={z}", tuple(ns)) for z, ns in sorted(zones.items())]
        ), None


class PreferZone(PlacementScorePlugin):
    """Scores the placement named ``zone=<preferred>`` 100, others by how many nodes the
    assignments use (each 10)."""

    name = "PreferZone"
    preferred = "b"

    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> int:
        if assignments.placement.name == f"zone={self.preferred}":
            return 100
        return 10 * len({a.node_name for a in assignments.assignments})


class Preempting:
    """A PodGroupPostFilter fake: reruns the algorithm, then nominates p0 to n0."""

    name = "Preempting"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.reruns: list[Status | None] = []
        self.proposed: list[list[str]] = []

    def pod_group_post_filter(self, state: CycleState, group: PodGroupInfo, schedule: Any) -> Any:
        from ksched.framework.podgroup import NominatingInfo, PodGroupPostFilterResult

        assignments, st = schedule()
        self.reruns.append(st)
        self.proposed.append([a.pod.name for a in assignments.assignments])
        return PodGroupPostFilterResult({"default/p0": NominatingInfo("n0")}), None


# -- harness ------------------------------------------------------------------------------


class Cluster(NullCluster):
    """Binds by echoing the bound pod back as the watch would."""

    def __init__(self) -> None:
        self.sched: Scheduler | None = None
        self.bound: dict[str, str] = {}

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        assert self.sched is not None
        spec = msgspec.structs.replace(pod.pod.spec, node_name=node_name)
        new = pod.with_pod(msgspec.structs.replace(pod.pod, spec=spec))
        self.bound[pod.name] = node_name
        self.sched.on_pod_update(pod, new)


class Observer:
    """The scheduler's outcomes, and the PodGroup status writes applied to the lister."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}
        self.failures: dict[str, tuple[str, str]] = {}
        self.conditions: list[Condition] = []
        self.store: dict[str, PodGroup] = {}

    def scheduled(self, pod: PodInfo, node: str, profile: str, attempts: int) -> None:
        self.bound[pod.name] = node

    def failed(
        self, pod: PodInfo, profile: str, reason: str, message: str, result: CycleResult | None
    ) -> None:
        self.failures[pod.name] = (reason, message)

    def pod_group_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        self.conditions.append(condition)
        key = f"{pod_group.metadata.namespace}/{pod_group.metadata.name}"
        cur = self.store[key]
        kept = [c for c in cur.status.conditions if c.type != condition.type]
        status = msgspec.structs.replace(cur.status, conditions=[*kept, condition])
        self.store[key] = msgspec.structs.replace(cur, status=status)


POINTS = {
    "preFilter": ["NodeResourcesFit"],
    "filter": ["NodeResourcesFit"],
    "reserve": ["Recorder"],
    "permit": ["GangScheduling"],
}
TOPOLOGY = {"placementGenerate": ["Zones"], "placementScore": ["PreferZone"]}


class Harness:
    def __init__(
        self,
        nodes: Sequence[tuple[str, str, str]] = (("n0", "2", "a"),),
        *,
        gates: dict[str, bool] | None = None,
        points: dict[str, list[str]] | None = None,
        version: str = "1.37",
        metrics: bool = False,
    ) -> None:
        reg = Registry()
        for builtin in BUILTINS:
            reg.register(builtin, builtin_plugin(builtin))
        for cls in (GangScheduling, Zones, PreferZone, Recorder, Preempting):
            reg.register(cls.name, cls, "tests")
        g = {"GenericWorkload": True} if gates is None else gates
        cfg = config({**POINTS, **(points or {})}, version=version, gates=g)
        self.cluster = Cluster()
        self.out = Observer()
        self.metrics = SchedulerMetrics(features=cfg.features, seed=0) if metrics else None
        self.sched = Scheduler(
            cfg,
            reg,
            cluster=self.cluster,
            clock=FakeClock(),
            observer=self.out,
            seed=1,
            assumed_ttl=0,
            metrics=self.metrics,
        )
        self.cluster.sched = self.sched
        self.fw = self.sched.frameworks["ksched"]
        self.fw.handle.listers[Listers.SCHEDULING_POD_GROUPS] = self.out.store
        self.recorder: Recorder = self.fw.plugins["Recorder"]
        for name, cpu, zone in nodes:
            self.sched.on_node_add(make_node(name, cpu=cpu, pods=100, labels={"zone": zone}))

    def pod_group(self, min_count: int | None, **spec: Any) -> PodGroup:
        raw = make_pod_group("g", min_count)
        raw["metadata"]["generation"] = 4
        raw["spec"].update(spec)
        pg = pod_group_from_json(json.dumps(raw).encode())
        self.out.store[GROUP] = pg
        self.sched.on_pod_group_add(pg)  # the informer: the cache and the queue see it
        return pg

    def members(self, n: int, cpu: str = "1", **kw: Any) -> list[PodInfo]:
        pods = [
            make_pod(
                f"p{i}",
                cpu=cpu,
                uid=f"uid-p{i}",
                schedulingGroup={"podGroupName": "g"},
                **kw,
            )
            for i in range(n)
        ]
        for p in pods:
            self.sched.on_pod_add(p)
        return pods

    def group(self) -> QueuedPodGroupInfo:
        """The queue's entity of the group: popped whole by a pod-group queue, else
        assembled from the members popped one by one."""
        q = self.sched.queue
        members = []
        while (got := q.pop_nowait()) is not None:
            if isinstance(got, QueuedPodGroupInfo):
                return got
            members.append(got)
        pg = self.out.store[GROUP]
        info = PodGroupInfo("default", "g", pg, [m.pod_info for m in members])
        return QueuedPodGroupInfo(info, "ksched", members)

    async def attempt(self) -> QueuedPodGroupInfo:
        group = self.group()
        async with anyio.create_task_group() as tg:
            self.sched.loop.task_group = tg
            await schedule_entity(self.sched, group, tg)
        self.sched.loop.task_group = None
        return group

    def requested_cpu(self) -> dict[str, int]:
        return {name: ni.requested.milli_cpu for name, ni in self.sched.cache.nodes.items()}


def _sample(h: Harness, name: str, **labels: str) -> float | None:
    assert h.metrics is not None
    value: float | None = h.metrics.registry.get_sample_value(name, labels)
    return value


# -- the default algorithm ----------------------------------------------------------------


async def test_a_group_that_fits_binds_every_member_and_says_so() -> None:
    h = Harness([("n0", "2", "a"), ("n1", "2", "a")], metrics=True)
    h.pod_group(3)
    h.members(3)
    await h.attempt()
    assert sorted(h.cluster.bound) == ["p0", "p1", "p2"]
    assert sorted(h.out.bound) == ["p0", "p1", "p2"]
    assert not h.out.failures
    # Reserve ran in the simulation (undone) and again for real; the last three stay
    calls = h.recorder.calls
    assert [c[0] for c in calls[:3]] == ["reserve"] * 3
    assert [c[0] for c in calls[3:6]] == ["unreserve"] * 3
    assert [c[0] for c in calls[6:]] == ["reserve"] * 3
    (cond,) = h.out.conditions
    assert (cond.type, cond.status, cond.reason, cond.message) == (
        "PodGroupInitiallyScheduled",
        "True",
        "Scheduled",
        "",
    )
    assert cond.observed_generation == 4 and cond.last_transition_time
    total = "scheduler_podgroup_schedule_attempts_total"
    assert _sample(h, total, result="scheduled", profile="ksched") == 1
    assert _sample(h, "scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 1
    assert (
        _sample(
            h,
            "scheduler_podgroup_scheduling_attempt_duration_seconds_count",
            result="scheduled",
            profile="ksched",
        )
        == 1
    )
    # each member's algorithm and attempt, as a pod's
    assert _sample(h, "scheduler_scheduling_algorithm_duration_seconds_count") == 3
    assert (
        _sample(h, "scheduler_schedule_attempts_total", result="scheduled", profile="ksched") == 3
    )


async def test_a_group_of_three_with_room_for_two_binds_none_and_reverts_everything() -> None:
    h = Harness([("n0", "2", "a")], metrics=True)
    h.pod_group(3)
    h.members(3)
    h.sched.cache.update_snapshot(h.sched.snapshot)
    snap_before = list(h.sched.snapshot.node_infos)
    await h.attempt()
    assert not h.cluster.bound and not h.out.bound
    # nothing assumed anywhere: the cache's node is empty, the snapshot rows are the ones
    # before the simulation
    assert h.requested_cpu() == {"n0": 0}
    assert not h.sched.cache.assumed
    assert h.sched.snapshot.node_infos == snap_before
    assert h.sched.snapshot.assumed_count == 0
    assert [c[0] for c in h.recorder.calls] == ["reserve", "reserve", "unreserve", "unreserve"]
    group_msg = "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
    assert h.out.failures == {
        "p0": ("Unschedulable", "pod group is unschedulable, " + group_msg),
        "p1": ("Unschedulable", "pod group is unschedulable, " + group_msg),
        "p2": ("Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."),
    }
    (cond,) = h.out.conditions
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", group_msg)
    total = "scheduler_podgroup_schedule_attempts_total"
    assert _sample(h, total, result="unschedulable", profile="ksched") == 1
    assert (
        _sample(h, "scheduler_schedule_attempts_total", result="unschedulable", profile="ksched")
        == 3
    )


async def test_placement_feasible_stops_before_any_member_when_too_few_are_left() -> None:
    h = Harness([("n0", "8", "a")])
    h.pod_group(3)
    h.members(2)
    await h.attempt()
    assert not h.recorder.calls and not h.cluster.bound
    reason, message = h.out.failures["p0"]
    # the root: PlacementFeasible's Unschedulable wrapped in errPodGroupUnschedulable,
    # given (cloned, before PodGroupPostFilter's text is appended) to every member the
    # algorithm did not reach
    assert reason == "Unschedulable"
    assert message == (
        "pod group is unschedulable, minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"
    )
    assert h.out.conditions[-1].message == message + ", "
    assert h.out.failures["p1"] == h.out.failures["p0"]


async def test_a_wait_at_the_end_is_unschedulable() -> None:
    """Basic policy with a fake that never says Success: Wait → Unschedulable."""
    h = Harness([("n0", "8", "a")])
    h.pod_group(5)
    h.members(5)
    h.fw.plugins["GangScheduling"].placement_feasible = lambda s, g, p: Status(Code.WAIT, "not yet")
    await h.attempt()
    assert not h.cluster.bound
    assert h.out.conditions[-1].message == "pod group is unschedulable, not yet, "


async def test_a_group_without_gang_scheduling_needs_one_member_scheduled() -> None:
    """No PlacementFeasible plugin: the group succeeds with whatever fits (basic policy)."""
    h = Harness([("n0", "2", "a")], points={"permit": []})
    h.pod_group(None)
    h.members(3)
    await h.attempt()
    assert sorted(h.cluster.bound) == ["p0", "p1"]
    assert h.out.failures["p2"][1] == "0/1 nodes are available: 1 Insufficient cpu."
    assert h.out.conditions[-1].status == "True"


# -- placements ---------------------------------------------------------------------------


ZONED = (("a0", "2", "a"), ("a1", "2", "a"), ("b0", "2", "b"), ("b1", "2", "b"))


async def test_the_best_scored_placement_gets_the_group() -> None:
    gates = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
    h = Harness(ZONED, gates=gates, points=TOPOLOGY, metrics=True)
    h.pod_group(3)
    h.members(3)
    await h.attempt()
    assert sorted(h.cluster.bound.values()) == ["b0", "b0", "b1"] or sorted(
        h.cluster.bound.values()
    ) == ["b0", "b1", "b1"]
    assert len(h.cluster.bound) == 3
    assert _sample(h, "scheduler_generated_placements_total", profile="ksched") == 2
    evals = "scheduler_placement_evaluations_total"
    assert _sample(h, evals, result="feasible", profile="ksched") == 2
    # the simulation of both placements left nothing behind but the winner's bindings
    assert h.sched.snapshot.placement is None and h.sched.snapshot.assumed_count == 0


async def test_the_other_placement_wins_when_it_scores_higher() -> None:
    gates = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
    h = Harness(ZONED, gates=gates, points=TOPOLOGY)
    h.fw.plugins["PreferZone"].preferred = "a"
    h.pod_group(3)
    h.members(3)
    await h.attempt()
    assert {n[0] for n in h.cluster.bound.values()} == {"a"}


async def test_the_only_feasible_placement_needs_no_score() -> None:
    gates = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
    h = Harness(
        (("a0", "2", "a"), ("b0", "2", "b"), ("b1", "2", "b")), gates=gates, points=TOPOLOGY
    )
    h.fw.plugins["PreferZone"].preferred = "a"  # would pick a, but a has room for 2 only
    h.pod_group(3)
    h.members(3)
    await h.attempt()
    assert {n[0] for n in h.cluster.bound.values()} == {"b"} and len(h.cluster.bound) == 3


async def test_no_feasible_placement_reports_the_first_ones_status() -> None:
    gates = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
    h = Harness((("a0", "2", "a"), ("b0", "2", "b")), gates=gates, points=TOPOLOGY, metrics=True)
    h.pod_group(3)
    h.members(3)
    await h.attempt()
    assert not h.cluster.bound
    # the first placement's status was PlacementFeasible's (no error of its own): its text
    first = "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    group_msg = (
        f"pod group is unschedulable, 0/2 placements are available, first placement status: "
        f"{first}, "
    )
    assert h.out.conditions[-1].message == group_msg
    assert h.out.failures["p0"] == ("Unschedulable", "pod group is unschedulable, " + group_msg)
    evals = "scheduler_placement_evaluations_total"
    assert _sample(h, evals, result="infeasible", profile="ksched") == 2
    assert h.requested_cpu() == {"a0": 0, "b0": 0}


# -- PodGroupPostFilter ---------------------------------------------------------------------


async def test_pod_group_post_filter_success_means_waiting_on_preemption() -> None:
    reg_points = {"podGroupPostFilter": ["Preempting"]}
    h = Harness([("n0", "2", "a")], points=reg_points, metrics=True)
    h.pod_group(3)
    pods = h.members(3)
    await h.attempt()
    pf = h.fw.plugins["Preempting"]
    assert len(pf.reruns) == 1 and pf.reruns[0] is not None
    assert pf.reruns[0].code == Code.UNSCHEDULABLE
    # the members the rerun found nodes for (as upstream, though the group failed)
    assert pf.proposed == [["p0", "p1"]]
    assert h.sched.queue.nominator.nominated_node(pods[0]) == "n0"
    total = "scheduler_podgroup_schedule_attempts_total"
    assert _sample(h, total, result="waiting_on_preemption", profile="ksched") == 1
    assert not h.cluster.bound
    # the members that found a node fail with the group's own status
    assert h.out.failures["p0"][1] == "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "


# -- conditions and validation ----------------------------------------------------------------


async def test_the_condition_never_goes_back_from_true() -> None:
    h = Harness([("n0", "1", "a")])
    pg = h.pod_group(2)
    done = Condition(
        type="PodGroupInitiallyScheduled", status="True", reason="Scheduled", observed_generation=4
    )
    h.out.store[GROUP] = msgspec.structs.replace(
        pg, status=msgspec.structs.replace(pg.status, conditions=[done])
    )
    h.members(2)
    await h.attempt()
    assert not h.cluster.bound and h.out.failures
    assert h.out.conditions == []


def test_an_unchanged_condition_is_not_written_again() -> None:
    """``SetStatusCondition``: a write only when something changed; the transition time
    kept while the status stays."""
    h = Harness([("n0", "1", "a")])
    h.pod_group(2)

    def update(status: str, reason: str, message: str) -> None:
        info = PodGroupInfo("default", "g", h.out.store[GROUP])
        update_pod_group_condition(h.sched, info, status, reason, message)

    update("False", "Unschedulable", "m")
    update("False", "Unschedulable", "m")
    assert len(h.out.conditions) == 1
    first = h.out.conditions[0]
    first.last_transition_time = "2020-01-01T00:00:00Z"  # the one the lister has too
    update("False", "Unschedulable", "other")
    assert [c.message for c in h.out.conditions] == ["m", "other"]
    assert h.out.conditions[1].last_transition_time == "2020-01-01T00:00:00Z"
    update("True", "Scheduled", "")
    assert h.out.conditions[2].last_transition_time != "2020-01-01T00:00:00Z"
    update("False", "Unschedulable", "later")
    assert len(h.out.conditions) == 3


async def test_a_member_of_another_priority_fails_the_group_with_upstreams_text() -> None:
    h = Harness([("n0", "8", "a")])
    h.pod_group(2, priority=7)
    h.members(2, priority=7)
    odd = make_pod("odd", cpu="1", uid="uid-odd", schedulingGroup={"podGroupName": "g"}, priority=3)
    h.sched.on_pod_add(odd)
    await h.attempt()
    err = (
        "all pods in a single pod group should have the same priority as the pod group's "
        "priority, got 3 and 7"
    )
    assert h.out.failures == {p: ("SchedulerError", err) for p in ("p0", "p1", "odd")}
    (cond,) = h.out.conditions
    assert (cond.status, cond.reason, cond.message) == ("False", "SchedulerError", err)
    assert not h.recorder.calls


async def test_members_disagreeing_on_preemption_policy_fail_validation() -> None:
    h = Harness([("n0", "8", "a")])
    h.pod_group(2)
    h.members(1)
    h.sched.on_pod_add(
        make_pod(
            "never", cpu="1", uid="u-n", schedulingGroup={"podGroupName": "g"},
            preemptionPolicy="Never",
        )
    )  # fmt: skip
    await h.attempt()
    assert h.out.failures["never"] == (
        "SchedulerError",
        # the queue's first member ("never": equal priority and time, then by name) sets it
        "all pods in a single pod group should have the same preemption policy, got "
        "PreemptLowerPriority and Never",
    )


async def test_a_pod_group_missing_from_the_lister_is_an_error_without_a_condition() -> None:
    h = Harness([("n0", "8", "a")])
    h.pod_group(1)
    h.members(1)
    group = h.group()
    del h.out.store[GROUP]
    async with anyio.create_task_group() as tg:
        await schedule_entity(h.sched, group, tg)
    assert h.out.failures["p0"] == (
        "SchedulerError",
        "pod group object not found for pod group podgroup/default/g",
    )
    assert h.out.conditions == []


async def test_members_being_deleted_leave_the_attempt() -> None:
    h = Harness([("n0", "8", "a")], points={"permit": []})
    h.pod_group(None)
    h.members(2)
    group = h.group()
    gone = group.members[1].pod_info
    meta = msgspec.structs.replace(gone.pod.metadata, deletion_timestamp="2026-01-01T00:00:00Z")
    group.members[1].pod_info = gone.with_pod(msgspec.structs.replace(gone.pod, metadata=meta))
    async with anyio.create_task_group() as tg:
        await schedule_entity(h.sched, group, tg)
    assert list(h.cluster.bound) == ["p0"]
    assert "p1" not in h.out.failures


# -- 1.36: none of it ---------------------------------------------------------------------------


async def test_at_1_36_a_member_of_a_pod_group_is_scheduled_as_a_pod() -> None:
    """No pod-group cycle at 1.36 (GenericWorkload on there is refused): a pod naming a
    group goes through the pod's cycle, no PlacementFeasible plugin, no condition."""
    h = Harness([("n0", "2", "a")], version="1.36", gates={}, points={"permit": []})
    assert h.fw.placement_feasible_plugins == []
    h.pod_group(2)
    h.members(1)
    qpi = h.sched.queue.pop_nowait()
    assert qpi is not None and not isinstance(qpi, QueuedPodGroupInfo)
    async with anyio.create_task_group() as tg:
        await schedule_entity(h.sched, qpi, tg)
    assert h.cluster.bound == {"p0": "n0"}
    assert h.out.conditions == []
    assert [c[0] for c in h.recorder.calls] == ["reserve"]


async def test_members_the_algorithm_did_not_reach_keep_their_nomination() -> None:
    """Upstream's nil NominatingInfo for them: the node an earlier preemption nominated
    stays; a member assumed and given up (a Reserve failure) would lose it instead."""
    h = Harness([("n0", "8", "a")])
    h.pod_group(3)
    h.members(2)
    group = h.group()
    qpi = group.members[0]
    status = msgspec.structs.replace(qpi.pod_info.pod.status, nominated_node_name="n0")
    qpi.pod_info = qpi.pod_info.with_pod(msgspec.structs.replace(qpi.pod_info.pod, status=status))
    group.info.unscheduled_pods[0] = qpi.pod_info
    async with anyio.create_task_group() as tg:
        await schedule_entity(h.sched, group, tg)
    assert not h.recorder.calls  # PlacementFeasible stopped it before any member
    nominator = h.sched.queue.nominator
    assert nominator.nominated_node(qpi.pod_info) == "n0"
    assert nominator.nominated_node(group.members[1].pod_info) in ("", None)


async def test_an_error_at_placement_feasible_fails_every_member_with_it() -> None:
    h = Harness([("n0", "8", "a")], metrics=True)
    h.pod_group(2)
    h.members(2)
    h.fw.plugins["GangScheduling"].placement_feasible = lambda s, g, p: Status(Code.ERROR, "boom")
    await h.attempt()
    err = "failed to evaluate placement feasibility: running PlacementFeasible plugin: boom"
    assert h.out.failures == {"p0": ("SchedulerError", err), "p1": ("SchedulerError", err)}
    (cond,) = h.out.conditions
    assert (cond.status, cond.reason, cond.message) == ("False", "SchedulerError", err)
    total = "scheduler_podgroup_schedule_attempts_total"
    assert _sample(h, total, result="error", profile="ksched") == 1


async def test_no_placement_generated_leaves_every_member_unschedulable() -> None:
    gates = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
    h = Harness(ZONED, gates=gates, points=TOPOLOGY)
    h.fw.plugins["Zones"].generate_placements = lambda s, g, p: (GeneratePlacementsResult(), None)
    h.pod_group(2)
    h.members(2)
    await h.attempt()
    assert not h.recorder.calls and not h.cluster.bound
    # PlacementGenerate's status (Zones'), then PodGroupPostFilter's empty verdict
    assert h.out.failures["p0"] == ("Unschedulable", "no feasible placements found")
    assert h.out.conditions[-1].message == "no feasible placements found, "
