"""One pod group through the framework, top to bottom, as upstream's
``schedule_one_podgroup.go`` (v1.37, GenericWorkload; CompositePodGroup stays out).

``schedule_one_podgroup``: snapshot → the PodGroup as the snapshot's lister has it →
``validate_pod_group`` → members being deleted or already assumed leave the attempt →
``pod_group_cycle``.

``pod_group_cycle``:
    ``run_root_algorithm`` = the default algorithm, or with TopologyAwareWorkloadScheduling
    the placement algorithm (PlacementGenerate over all nodes; per placement the default
    algorithm on the placement's nodes, reverted; PlacementScore picks the best of the
    feasible ones). Whatever the algorithm assumed is reverted when it returns: it only
    simulates, on the snapshot.
    → the root Unschedulable: PodGroupPostFilter (a plugin may rerun the algorithm)
    → ``submit``: a group that succeeded sends its members that found a node through
    ``prepare_for_binding`` (assume in the cache, Reserve, Permit, where GangScheduling holds
    them until the whole gang is there) to their binding cycles; every other member goes
    through ``handle_scheduling_failure``; the PodGroup's PodGroupInitiallyScheduled
    condition is written; the queue gets the group back
    (``add_attempted_pod_group_if_needed``).

The default algorithm: PlacementFeasible before any member (enough of them left?), then
each member through the per-pod algorithm (``schedule_one``'s Filter/Score, no PostFilter)
and, when it found a node, assume (in the snapshot) and Reserve; PlacementFeasible after
each member may stop early. Wait at the end is Unschedulable: all or nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import anyio
import anyio.abc
import structlog

from ..api.workload import Condition
from ..framework.cycle_state import CycleState
from ..framework.interface import PostFilterResult
from ..framework.listers import Listers
from ..framework.podgroup import (
    Placement,
    PlacementProgress,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
    PodGroupState,
    ProposedAssignment,
)
from ..framework.podgroupstate import PodGroupStateData
from ..framework.preemption import PodGroupPreemptor, PreemptionInFlight
from ..framework.runtime import Framework, as_error_text
from ..framework.status import SUCCESS, Code, Status
from ..framework.types import PodInfo
from ..util.clock import rfc3339
from ..util.coro import run_sync
from ..util.errors import KschedError
from .cycle_result import CycleResult
from .schedule_one import (
    _ATTEMPT_START,
    _Binding,
    assume_and_reserve,
    binding_cycle,
    handle_scheduling_failure,
    prepare_for_binding,
    scheduling_algorithm,
    skip_pod_schedule,
    unreserve_and_forget,
)

if TYPE_CHECKING:
    from ..queue.podgroups import QueuedPodGroupInfo
    from ..queue.scheduling_queue import QueuedPodInfo
    from .scheduler import Scheduler

__all__ = [
    "ERR_POD_GROUP_UNSCHEDULABLE",
    "POD_GROUP_INITIALLY_SCHEDULED",
    "PodGroupUnschedulable",
    "pod_group_cycle",
    "schedule_one_podgroup",
    "validate_pod_group",
]

log = structlog.get_logger("ksched.scheduler")

POD_GROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
#: Seconds a group waiting on its preemption waits for the evictions' API calls before it
#: goes back to the queue anyway (a slow API server must not stall the loop).
EVICTION_WAIT = 1.0


class PodGroupUnschedulable(KschedError):
    """Upstream's ``errPodGroupUnschedulable``: the error an Unschedulable group status
    carries (its text leads the status message)."""


ERR_POD_GROUP_UNSCHEDULABLE = PodGroupUnschedulable("pod group is unschedulable")


def _unschedulable(*reasons: str) -> Status:
    """``NewStatus(Unschedulable, reasons...).WithError(errPodGroupUnschedulable)``."""
    return Status(Code.UNSCHEDULABLE, *reasons, error=ERR_POD_GROUP_UNSCHEDULABLE)


def _clone(st: Status) -> Status:
    """``Status.Clone``."""
    c = Status(st.code, *st.reasons, plugin=st.plugin, error=st.error)
    c.cause = st.cause
    return c


class _Reverts(list[Callable[[], None]]):
    """Upstream's ``revertFns``: undo the simulation's changes, last first."""

    def revert(self) -> None:
        while self:
            self.pop()()


@dataclass(slots=True)
class _MemberResult:
    """``algorithmResult``: one member's attempt in this cycle."""

    qpi: QueuedPodInfo
    state: CycleState
    status: Status
    node: str = ""
    # the per-pod algorithm's result (its FitError, for the failure handler)
    result: CycleResult | None = None
    # PodGroupPostFilter's node for it; None: keep the pod's own nomination (upstream's
    # nil NominatingInfo); "": clear it
    nominated: str | None = ""
    seconds: float = 0.0

    @property
    def pod(self) -> PodInfo:
        return self.qpi.pod_info


@dataclass(slots=True)
class _GroupResult:
    """``podGroupAlgorithmResult``."""

    info: PodGroupInfo
    status: Status
    members: list[_MemberResult] = field(default_factory=list)
    placement_state: CycleState | None = None
    waiting_on_preemption: bool = False
    any_scheduled: bool = False


# == scheduleOnePodGroup ===================================================================
async def schedule_one_podgroup(
    sched: Scheduler, group: QueuedPodGroupInfo, tg: anyio.abc.TaskGroup
) -> None:
    """The whole workload-aware attempt of one pod group; bindings start in ``tg``."""
    start = time.perf_counter()
    sched.cache.update_snapshot(sched.snapshot)
    # The entity may carry an older PodGroup: the snapshot's one holds for the cycle.
    err = _reconcile_with_snapshot(sched, group)
    if err is not None:
        # It will come back once the queue sees the change; no condition to write.
        _fail_before_scheduling(sched, group, err, write_condition=False)
        return
    err = validate_pod_group(sched, group)
    if err is not None:
        _fail_before_scheduling(sched, group, err)
        return
    fw = sched.frameworks[group.members[0].pod_info.pod.spec.scheduler_name]
    _skip_members(sched, fw, group)
    if not group.members:
        # Members that arrived while these were skipped must not wait forever.
        sched.queue.add_attempted_pod_group_if_needed(group, sched.queue.scheduling_cycle, SUCCESS)
        return
    await pod_group_cycle(sched, fw, CycleState(), group, start, tg)


def _reconcile_with_snapshot(sched: Scheduler, group: QueuedPodGroupInfo) -> str | None:
    """``reconcilePodGroupWithSnapshot``: the PodGroup of the snapshot's lister."""
    info = group.info
    fw = sched.frameworks.get(group.profile) or next(iter(sched.frameworks.values()))
    store = fw.handle.listers.store(Listers.SCHEDULING_POD_GROUPS)
    pg = store.get(info.key)
    if pg is None:
        return f"pod group object not found for pod group podgroup/{info.key}"
    info.pod_group = pg
    return None


def _fail_before_scheduling(
    sched: Scheduler, group: QueuedPodGroupInfo, err: str, *, write_condition: bool = True
) -> None:
    """``handlePodGroupFailureBeforeScheduling``: every member fails with ``err`` (an
    error), the condition says SchedulerError, the queue gets the group back."""
    st = Status.as_error(err)
    for qpi in group.members:
        fw = sched.frameworks.get(qpi.pod_info.pod.spec.scheduler_name)
        if fw is None:
            # only pods of a profile are queued; upstream logs and drops it
            sched.queue.done(qpi.pod_info)
            continue
        _fail_member(sched, fw, qpi, st, None, 0.0)
    if write_condition:
        update_pod_group_condition(sched, group.info, "False", REASON_SCHEDULER_ERROR, err)
    sched.queue.add_attempted_pod_group_if_needed(
        group, sched.queue.scheduling_cycle, Status.as_error(err)
    )


def validate_pod_group(sched: Scheduler, group: QueuedPodGroupInfo) -> str | None:
    """``validatePodGroup``: every member, queued or already scheduled, has the first
    queued member's schedulerName, the group's priority and one preemption policy (the
    first member's; PodGroupPreemptionPolicy, which would make it the group's, is not
    implemented); the schedulerName names a profile. The first problem, upstream's text."""
    scheduler_name = ""
    priority = group.info.pod_group.spec.priority or 0  # ``PodGroupPriority``
    policy = ""

    def check(pod: PodInfo) -> str | None:
        nonlocal policy
        spec = pod.pod.spec
        if spec.scheduler_name != scheduler_name:
            return (
                "all pods in a single pod group should have the same .spec.schedulerName set, "
                f'got: "{spec.scheduler_name}" and "{scheduler_name}"'
            )
        if pod.priority != priority:
            return (
                "all pods in a single pod group should have the same priority as the pod "
                f"group's priority, got {pod.priority} and {priority}"
            )
        pod_policy = spec.preemption_policy or "PreemptLowerPriority"
        if not policy:
            policy = pod_policy
        elif pod_policy != policy:
            return (
                "all pods in a single pod group should have the same preemption policy, "
                f"got {pod_policy} and {policy}"
            )
        return None

    for qpi in group.members:
        if not scheduler_name:
            scheduler_name = qpi.pod_info.pod.spec.scheduler_name
        err = check(qpi.pod_info)
        if err is not None:
            return err
    for pod in pod_group_state(sched, group.info).scheduled_pods():
        err = check(PodInfo(pod))
        if err is not None:
            return err
    if scheduler_name not in sched.frameworks:
        return f'profile not found for scheduler name "{scheduler_name}"'
    return None


def _skip_members(sched: Scheduler, fw: Framework, group: QueuedPodGroupInfo) -> None:
    """``skipPodGroupPodSchedule``: members being deleted, or assumed already (an update
    requeued them while they were in flight), leave this attempt."""
    kept = [qpi for qpi in group.members if not skip_pod_schedule(sched, fw, qpi.pod_info)]
    if len(kept) != len(group.members):
        group.members = kept
        group.info.unscheduled_pods = [q.pod_info for q in kept]


# == a dry run (shadow mode) ===============================================================
class MemberDecision(NamedTuple):
    """One member's part of a dry run: the node it would get (None unless the whole group
    succeeds), why not, and its own algorithm's result (its FitError), if it got one."""

    qpi: QueuedPodInfo
    node: str | None
    message: str
    result: CycleResult | None = None


async def decide_pod_group(
    sched: Scheduler, group: QueuedPodGroupInfo
) -> tuple[Status, list[MemberDecision]]:
    """The group's algorithm without its consequences (no PodGroupPostFilter, no
    assume, no condition, nothing queued): the group's status and each member's
    decision. Shadow mode decides groups with it."""
    sched.cache.update_snapshot(sched.snapshot)
    err = _reconcile_with_snapshot(sched, group) or validate_pod_group(sched, group)
    if err is not None:
        return Status.as_error(err), [MemberDecision(q, None, err) for q in group.members]
    fw = sched.frameworks[group.members[0].pod_info.pod.spec.scheduler_name]
    res = await _run_root_algorithm(sched, fw, CycleState(), group)
    _complete(group, res)
    out: list[MemberDecision] = []
    for m in res.members:
        if res.status.is_success() and m.status.is_success():
            out.append(MemberDecision(m.qpi, m.node, "", m.result))
        else:
            why = m.status if not m.status.is_success() else res.status
            out.append(MemberDecision(m.qpi, None, why.message(), m.result))
    return res.status, out


# == podGroupCycle =========================================================================
async def pod_group_cycle(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    group: QueuedPodGroupInfo,
    start: float,
    tg: anyio.abc.TaskGroup,
) -> None:
    """The algorithm, PodGroupPostFilter when the group is Unschedulable, the submission.
    The snapshot must be up to date."""
    res = await _run_root_algorithm(sched, fw, state, group)
    root_status = res.status
    _complete(group, res)
    m = sched.metrics
    if m is not None:
        m.pod_group_algorithm_finished(time.perf_counter() - start)
    evicting: PreemptionInFlight | None = None
    if root_status.code == Code.UNSCHEDULABLE:

        def schedule() -> tuple[PodGroupAssignments, Status | None]:
            # A PodGroupPostFilter plugin's rerun, on the snapshot as it has changed it
            # (synchronous: an extender's I/O cannot take part there).
            again = run_sync(_run_root_algorithm(sched, fw, CycleState(), group))
            return PodGroupAssignments(Placement("", ()), _proposed(again)), again.status

        pf, pst = fw.run_pod_group_post_filter(state, group.info, schedule)
        _apply_post_filter(res, pf, pst)
        if pst.is_success() and pf is not None and pf.victims:
            # ``actuatePodGroupPreemption``: evictions start before the members go back
            preemptor = PodGroupPreemptor(group.info.pod_group, list(group.info.unscheduled_pods))
            evicting = sched.preempt_pod_group(fw, preemptor, pf.victims)
    await _submit(sched, fw, group, res, start, root_status, tg, evicting)


async def _run_root_algorithm(
    sched: Scheduler, fw: Framework, state: CycleState, group: QueuedPodGroupInfo
) -> _GroupResult:
    """``runRootSchedulingAlgorithm``: the algorithm, then everything it assumed undone;
    success needs at least one member scheduled in this cycle."""
    reverts = _Reverts()
    try:
        if fw.handle.features.enabled_if_known("TopologyAwareWorkloadScheduling"):
            res = await _placement_algorithm(sched, fw, state, group, reverts)
        else:
            # one implicit placement, so placement-scoped state works as with placements
            placement_state = CycleState()
            placement_state.pod_group_cycle = state
            res = await _default_algorithm(sched, fw, placement_state, group, reverts)
    finally:
        reverts.revert()
    if res.status.is_success() and not res.any_scheduled:
        res.status = _unschedulable()
    # the group's own status (a plugin's may be shared): PodGroupPostFilter appends to it
    res.status = _clone(res.status)
    return res


# == the default algorithm =================================================================
async def _default_algorithm(
    sched: Scheduler,
    fw: Framework,
    placement_state: CycleState,
    group: QueuedPodGroupInfo,
    reverts: _Reverts,
) -> _GroupResult:
    """``podGroupSchedulingDefaultAlgorithm``: the members in the queue's order, each
    assumed (in the snapshot) where it fits, PlacementFeasible judging the group before
    and after each; what it assumed is added to ``reverts``, and reverted at once unless
    the group succeeded."""
    info = group.info
    res = _GroupResult(info, _unschedulable(), placement_state=placement_state)
    mine = _Reverts()
    try:
        await _default_members(sched, fw, placement_state, group, res, mine)
    finally:
        if res.status.is_success():
            reverts.extend(mine)
        else:
            mine.revert()
            res.any_scheduled = False
    return res


async def _default_members(
    sched: Scheduler,
    fw: Framework,
    placement_state: CycleState,
    group: QueuedPodGroupInfo,
    res: _GroupResult,
    reverts: _Reverts,
) -> None:
    info = group.info
    progress = PlacementProgress(
        remaining=len(info.unscheduled_pods),
        scheduled=pod_group_state(sched, info).scheduled_pods_count(),
    )
    st = fw.run_placement_feasible(placement_state, info, progress)
    res.status = st
    if st.code == Code.ERROR:
        res.status = Status.as_error(
            f"failed to evaluate placement feasibility: {as_error_text(st)}"
        )
        return
    if st.code == Code.UNSCHEDULABLE:
        res.status = _unschedulable(*st.all_reasons())
        return
    any_scheduled = False
    for qpi in group.members:
        member, revert = await _schedule_member(sched, fw, placement_state, qpi)
        res.members.append(member)
        if revert is not None:
            reverts.append(revert)
        if not member.status.is_success() and not member.status.is_rejected():
            res.status = Status.as_error(
                f"failed to schedule other pod from a pod group: {as_error_text(member.status)}"
            )
            break
        progress.remaining -= 1
        if member.status.is_success():
            progress.scheduled += 1
        st = fw.run_placement_feasible(placement_state, info, progress)
        if st.code == Code.ERROR:
            res.status = Status.as_error(
                f"failed to evaluate placement feasibility: {as_error_text(st)}"
            )
            break
        res.status = st
        if st.code == Code.UNSCHEDULABLE:
            break
        any_scheduled = any_scheduled or member.status.is_success()
    if res.status.is_wait():
        res.status = _unschedulable(*res.status.all_reasons())
    res.any_scheduled = any_scheduled


async def _schedule_member(
    sched: Scheduler, fw: Framework, placement_state: CycleState, qpi: QueuedPodInfo
) -> tuple[_MemberResult, Callable[[], None] | None]:
    """``podGroupPodSchedulingAlgorithm``: the per-pod algorithm, then assume (in the
    snapshot) and Reserve; the revert undoes both."""
    state = _member_state(sched, placement_state)
    t0 = time.perf_counter()
    res = await scheduling_algorithm(sched, fw, state, qpi)
    m = sched.metrics
    if m is not None:  # upstream's schedulingAlgorithm observes each member's
        m.cycle_finished(fw, state, time.perf_counter() - t0)
    if not res.status.is_success():
        # a FitError keeps the nomination for PodGroupPostFilter to decide; others clear
        keep = res.fit_error is not None and res.status.code == Code.UNSCHEDULABLE
        member = _MemberResult(qpi, state, res.status, result=res, nominated=None if keep else "")
        member.seconds = time.perf_counter() - t0
        return member, None
    node = res.node
    assumed, st = assume_and_reserve(sched, fw, state, qpi.pod_info, node)
    if assumed is None or not st.is_success():
        member = _MemberResult(qpi, state, st, seconds=time.perf_counter() - t0)
        return member, None
    member = _MemberResult(qpi, state, SUCCESS, node, res, seconds=time.perf_counter() - t0)

    def revert() -> None:
        unreserve_and_forget(sched, fw, state, assumed, node)

    return member, revert


def _member_state(sched: Scheduler, placement_state: CycleState) -> CycleState:
    """``initPodSchedulingContext``: a member's own cycle state, marked as in the group's
    cycle and given the placement's state; its plugin timings sampled as a pod's."""
    state = CycleState()
    m = sched.metrics
    if m is not None:
        state.record_plugin_metrics = m.sample_plugins()
    state.pod_group_cycle = placement_state.pod_group_cycle
    state.placement_cycle = placement_state
    return state


# == the placement algorithm ===============================================================
async def _placement_algorithm(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    group: QueuedPodGroupInfo,
    reverts: _Reverts,
) -> _GroupResult:
    """``podGroupSchedulingPlacementAlgorithm``: the default algorithm on each generated
    placement's nodes (reverted after each), PlacementScore choosing among the feasible.

    Without CompositePodGroup upstream does not assume the winner's members again here:
    the algorithm's simulation is over, and ``submit`` assumes them for real in the cache
    (``prepare_for_binding``) from the winner's results.
    """
    info = group.info
    snap = sched.snapshot
    all_nodes = snap.nodes_in_placement()
    state.record_plugin_metrics = True  # upstream: always, for now
    placements, st = fw.run_placement_generate(state, info, all_nodes)
    if not st.is_success():
        return _GroupResult(info, st)
    m = sched.metrics
    profile = fw.profile_name
    if m is not None:
        m.placements_generated(profile, len(placements))
    orders = sched.placement_orders.get(info.key)
    if orders:
        # the differential oracle's replay: kube-scheduler's order (a Go map's, upstream)
        order = orders.pop(0) if len(orders) > 1 else orders[0]
        rank = {name: i for i, name in enumerate(order)}
        placements = sorted(placements, key=lambda p: rank.get(p.name, len(rank)))
    first: _GroupResult | None = None
    feasible: list[tuple[Placement, _GroupResult]] = []
    parent = snap.placement
    try:
        for placement in placements:
            t0 = time.perf_counter()
            try:
                snap.assume_placement(placement)
            except KeyError as e:
                return _GroupResult(
                    info, Status.as_error(f"failed to assume pod group placement: {e.args[0]}")
                )
            placement_state = CycleState()
            placement_state.pod_group_cycle = state
            tried = _Reverts()
            try:
                res = await _default_algorithm(sched, fw, placement_state, group, tried)
            finally:
                tried.revert()
            if res.status.code == Code.ERROR:
                return res
            if first is None:
                first = res
            result = "infeasible"
            if res.status.is_success():
                result = "feasible"
                feasible.append((placement, res))
            if m is not None:
                m.placement_evaluated(result, profile, time.perf_counter() - t0)
    finally:
        snap.forget_placement()
        snap.assume_placement(parent)
    if not feasible:
        assert first is not None  # an empty list of placements is PlacementGenerate's error
        first.status = _unschedulable(
            f"0/{len(placements)} placements are available, first placement status: "
            f"{as_error_text(first.status)}"
        )
        return first
    best, st = _best_placement(sched, fw, state, info, feasible)
    if best is None:
        return _GroupResult(info, st)
    return best


def _best_placement(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    info: PodGroupInfo,
    feasible: list[tuple[Placement, _GroupResult]],
) -> tuple[_GroupResult | None, Status]:
    """``findBestPodGroupPlacement``: the only one, or PlacementScore's highest total;
    ties go to the higher random draw, one per placement (upstream's ``Randomizer``)."""
    if len(feasible) == 1:
        return feasible[0][1], SUCCESS
    assignments = [PodGroupAssignments(p, _proposed(r)) for p, r in feasible]
    states = [r.placement_state or CycleState() for _, r in feasible]
    scores, st = fw.run_placement_score(state, info, assignments, states)
    if not st.is_success():
        return None, st
    rng = sched.rng
    draws = [rng.getrandbits(63) for _ in scores]
    best = 0
    for i in range(1, len(scores)):
        if scores[i].score > scores[best].score or (
            scores[i].score == scores[best].score and draws[i] > draws[best]
        ):
            best = i
    if sched.tie_breaks:
        # the differential oracle's replay: among the best, the placement holding the
        # nodes kube-scheduler put the members on
        wanted = {n for m in info.unscheduled_pods if (n := sched.tie_breaks.get(m.key))}
        for i, s in enumerate(scores):
            if s.score == scores[best].score and wanted <= {n.name for n in s.placement.nodes}:
                best = i
                break
    return feasible[best][1], SUCCESS


def _proposed(res: _GroupResult) -> list[ProposedAssignment]:
    """``makeProposedAssignments``: the members that found a node."""
    return [
        ProposedAssignment(m.pod, m.node, m.state)
        for m in res.members
        if m.status.is_success() and m.node
    ]


# == completing and PodGroupPostFilter =====================================================
def _complete(group: QueuedPodGroupInfo, res: _GroupResult) -> None:
    """``completePodGroupAlgorithmResult``: a result for every member, those the algorithm
    did not reach getting (a copy of) the group's status."""
    for qpi in group.members[len(res.members) :]:
        res.members.append(_MemberResult(qpi, CycleState(), _clone(res.status), nominated=None))


def _apply_post_filter(res: _GroupResult, pf: PodGroupPostFilterResult | None, st: Status) -> None:
    """``applyPodGroupPostFilterResult``: a success means preemption is under way (members
    nominated where the plugin says); an error becomes the group's status; otherwise the
    plugins' message is appended to it."""
    if st.is_success():
        res.waiting_on_preemption = True
        infos = pf.nominating_infos if pf is not None else {}
        for m in res.members:
            got = infos.get(m.pod.key)
            if got is not None:
                m.nominated = got.node_name
    if st.code == Code.ERROR:
        res.status = st
    else:
        res.status.reasons = (*res.status.reasons, st.message())


# == submitPodGroupAlgorithmResult =========================================================
async def _submit(
    sched: Scheduler,
    fw: Framework,
    group: QueuedPodGroupInfo,
    res: _GroupResult,
    start: float,
    root_status: Status,
    tg: anyio.abc.TaskGroup,
    evicting: PreemptionInFlight | None = None,
) -> None:
    """Members to their binding cycles (the group succeeded) or back to the queue, the
    condition, the metrics, then the group back to the queue.

    A group waiting on its preemption goes back only once the evictions' API calls have
    returned (``evicting``; at most ``EVICTION_WAIT`` seconds). Upstream requeues the group
    after one synchronous status write per member and the PodGroup's condition, by which
    time its preemption goroutine (a few calls, in parallel) has all but always finished:
    so the group lands in backoffQ rather than gated in the unschedulable pool, and it is
    retried when its backoff ends, not at the first victim's deletion event."""
    info = group.info
    status = res.status
    if len(res.members) != len(group.members):
        status = res.status = Status(
            Code.ERROR, "scheduling error for pod group, some pods were not processed"
        )
        res.members = []
        _complete(group, res)
    bindings: list[_Binding] = []
    for m in res.members:
        qpi = m.qpi
        if sched.explain and m.result is not None:
            # the attempt that counts: the chosen placement's (or the only one)
            sched.remember_explanation(m.pod.key, sched.describe(m.result, weights=fw.weights))
        if status.code == Code.ERROR:
            own = m.status.code == Code.ERROR
            _fail_member(sched, fw, qpi, m.status if own else status, None, m.seconds)
            continue
        if not m.status.is_success():
            _fail_member(sched, fw, qpi, m.status, m, m.seconds)
            continue
        if status.is_success():
            m.state.pod_group_cycle = None  # the binding cycle is the pod's own
            m.state.write(_ATTEMPT_START, time.perf_counter() - m.seconds)
            assumed, st = prepare_for_binding(sched, fw, m.state, qpi.pod_info, m.node)
            if assumed is None or not st.is_success():
                _fail_member(sched, fw, qpi, st, None, m.seconds)
                continue
            sched.queue.nominator.delete(qpi.pod_info)
            wp = sched.waiting_pods.get(assumed.uid or assumed.key)
            waits = wp is not None and not wp.done
            bindings.append(_Binding(fw, m.state, qpi, assumed, m.node, waits))
        elif status.is_rejected():
            if res.waiting_on_preemption:
                _fail_member(sched, fw, qpi, status, m, m.seconds)
            else:
                st = _unschedulable(status.message())
                _fail_member(sched, fw, qpi, st, None, m.seconds)
        else:
            st = Status.as_error(
                "received unexpected pod group scheduling algorithm status code: "
                f"{status.code.label}"
            )
            _fail_member(sched, fw, qpi, st, None, m.seconds)
    if status.is_success():
        update_pod_group_condition(sched, info, "True", REASON_SCHEDULED, status.message())
        result = "scheduled"
    elif status.is_rejected():
        update_pod_group_condition(sched, info, "False", REASON_UNSCHEDULABLE, status.message())
        result = "waiting_on_preemption" if res.waiting_on_preemption else "unschedulable"
    else:
        log.error("Error scheduling pod group", podGroup=info.key, error=as_error_text(status))
        update_pod_group_condition(
            sched, info, "False", REASON_SCHEDULER_ERROR, as_error_text(status)
        )
        result = "error"
    m_ = sched.metrics
    if m_ is not None:
        m_.pod_group_attempt_finished(fw.profile_name, result, time.perf_counter() - start)
    if evicting is not None:
        with anyio.move_on_after(EVICTION_WAIT):
            await evicting.finished.wait()
    sched.queue.add_attempted_pod_group_if_needed(group, sched.queue.scheduling_cycle, root_status)
    for b in bindings:
        await sched.acquire_binding_slot()
        sched.start_binding(tg, binding_cycle(sched, b))


def _fail_member(
    sched: Scheduler,
    fw: Framework,
    qpi: QueuedPodInfo,
    st: Status,
    member: _MemberResult | None,
    seconds: float,
) -> None:
    """``FailureHandler`` for one member: with its own failure (``member``), its FitError
    (the message, the rejecting plugins, its nomination kept) and PodGroupPostFilter's
    nomination; else ``st`` alone, which clears the nomination."""
    res: CycleResult | None = None
    nominated = member.nominated if member is not None else ""
    if member is not None and member.result is not None and member.result.fit_error is not None:
        res = member.result
    if nominated:
        res = res or CycleResult(st)
        res.post_filter = PostFilterResult(nominated_node_name=nominated)
    handle_scheduling_failure(sched, fw, qpi, st, res)
    if sched.queue.location(qpi.pod_info) is None:
        return  # not requeued (deleted or bound meanwhile)
    # upstream's AddNominatedPod with the member's NominatingInfo: PodGroupPostFilter's
    # node, or (none: nil) the pod's own nomination kept, which ``handle_scheduling_failure``
    # clears without a FitError
    if nominated:
        sched.queue.nominator.add(qpi.pod_info, nominated)
    elif nominated is None and res is None:
        sched.queue.nominator.add(qpi.pod_info)
    m = sched.metrics
    if m is not None:
        result = "error" if st.code == Code.ERROR else "unschedulable"
        m.attempt_finished(qpi, result, seconds)


# == the PodGroup's condition ==============================================================
def update_pod_group_condition(
    sched: Scheduler, info: PodGroupInfo, status: str, reason: str, message: str
) -> None:
    """``updatePodGroupCondition``: PodGroupInitiallyScheduled set as
    ``apimeta.SetStatusCondition`` would (the transition time kept unless the status
    changes), never back from True, with the PodGroup's generation; written only when it
    changed, through the observer that writes the pods' status (``pod_group_condition``)."""
    pg = info.pod_group
    conditions = pg.status.conditions
    existing = next((c for c in conditions if c.type == POD_GROUP_INITIALLY_SCHEDULED), None)
    if existing is not None and existing.status == "True" and status != "True":
        return
    generation = pg.metadata.generation
    if existing is not None and (
        existing.status,
        existing.reason,
        existing.message,
        existing.observed_generation,
    ) == (status, reason, message, generation):
        return
    transition = (
        existing.last_transition_time
        if existing is not None and existing.status == status
        else rfc3339()
    )
    cond = Condition(
        type=POD_GROUP_INITIALLY_SCHEDULED,
        status=status,
        observed_generation=generation,
        last_transition_time=transition,
        reason=reason,
        message=message,
    )
    write = getattr(sched.observer, "pod_group_condition", None)
    if write is not None:
        write(pg, cond)


# == the group's state =====================================================================
def pod_group_state(sched: Scheduler, info: PodGroupInfo) -> PodGroupState:
    """The group's assumed and bound members as the cycle's snapshot has them (upstream's
    ``nodeInfoSnapshot.PodGroupStates().Get``); an empty state when the snapshot has none
    (a PodGroup observed with no member known yet)."""
    got = sched.snapshot.pod_group_state(info.namespace, info.name)
    if got is not None:
        return got
    empty = PodGroupStateData()
    empty.pod_group = info.pod_group
    return empty
