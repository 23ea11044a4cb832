"""One pod through the framework, top to bottom, as upstream's ``schedule_one.go``.

``schedule_one``: pop → scheduling cycle → (on success) binding cycle started beside the
next scheduling cycles; on failure ``handle_scheduling_failure``.

``scheduling_cycle`` (sync, CPU only):
    ``schedule_pod`` = ``find_nodes_that_fit_pod`` (PreFilter → Filter round-robin over
    ``numFeasibleNodesToFind`` nodes, or the equivalence cache's known results)
    → ``prioritize_nodes`` (PreScore/Score/Normalize/weights) → ``select_host``;
    a FitError → PostFilter (preemption); success → assume → Reserve → Permit.
``binding_cycle`` (async):
    WaitOnPermit → PreBind → Bind → PostBind; ``handle_binding_failure`` (Unreserve,
    forget, requeue) on any failure.

Extenders (only for a pod some configured extender is interested in): the cycle is then
awaited, pausing after Filter for extender Filter, after Score for Prioritize, and in
PostFilter when preemption asks the extenders' preemptVerb about its candidates; without
extenders the same code runs synchronously (``run_sync``).

Node selection (how many nodes, from where, which to pick) is ``framework.selection``'s,
for the full cycle and the cache alike; ``find_nodes_that_fit_pod`` is the one place the
round-robin start (``Scheduler.rotation``) moves. The ``Scheduler`` keeps the queue, the
cache and the wiring.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

import anyio.abc
import numpy as np
import structlog

from ..api.objects import ObjectMeta, Pod, PodSpec
from ..framework.cycle_state import CycleState
from ..framework.deadline import PluginTimeout, culprit_in_traceback, format_seconds
from ..framework.diagnosis import Diagnosis, FitError
from ..framework.preemption import PreemptionInFlight
from ..framework.runtime import PREFILTER_NARROWED_KEY, FilterOutcome, Framework
from ..framework.selection import (
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
    MIN_FEASIBLE_NODES_TO_FIND,
    KnownResults,
    NodeRotation,
    num_feasible_nodes_to_find,
    select_host,
)
from ..framework.snapshot import NodeInfoView
from ..framework.status import SUCCESS, Code, Status
from ..framework.types import NodeInfo, PodInfo
from ..queue import events as ev
from ..queue.scheduling_queue import INVALID_POD_PLUGIN
from ..util.coro import run_sync
from .cycle_result import CycleResult

if TYPE_CHECKING:
    from ..extender.client import ExtenderSet
    from ..queue.scheduling_queue import QueuedPodInfo
    from .scheduler import Scheduler

__all__ = [
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "assume_and_reserve",
    "binding_cycle",
    "find_nodes_that_fit_pod",
    "handle_binding_failure",
    "handle_scheduling_failure",
    "num_feasible_nodes_to_find",
    "prepare_for_binding",
    "prioritize_nodes",
    "schedule_one",
    "schedule_pod",
    "scheduling_algorithm",
    "scheduling_cycle",
    "scheduling_cycle_async",
    "select_host",
    "skip_pod_schedule",
    "unreserve_and_forget",
]

ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
_UNBOUNDED = contextlib.nullcontext()
# CycleState key holding the attempt's perf_counter start, for the binding-cycle metrics.
_ATTEMPT_START = "ksched.io/attempt-start"
log = structlog.get_logger("ksched.scheduler")


class _CycleError(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


# == scheduleOne ===========================================================================
def skip_pod_schedule(sched: Scheduler, fw: Framework, pod: PodInfo) -> bool:
    """``skipPodSchedule``: a pod being deleted (told so by a FailedScheduling event), or
    one assumed already (an update requeued it while it was in flight), leaves the queue
    without a cycle."""
    if pod.pod.metadata.deletion_timestamp is not None:
        fw.handle.recorder.event(
            pod,
            "Warning",
            "FailedScheduling",
            "Scheduling",
            f"skip schedule deleting pod: {pod.namespace}/{pod.name}",
        )
        sched.queue.done(pod)
        return True
    if sched.cache.is_assumed(pod):
        sched.queue.done(pod)
        return True
    return False


async def schedule_one(sched: Scheduler, qpi: QueuedPodInfo, tg: anyio.abc.TaskGroup) -> None:
    """One scheduling cycle now; the binding cycle is started in ``tg``."""
    fw = sched.frameworks[qpi.profile]
    pod = qpi.pod_info
    if skip_pod_schedule(sched, fw, pod):
        return
    state = CycleState()
    m = sched.metrics
    if m is not None:
        start = time.perf_counter()
        state.write(_ATTEMPT_START, start)
        # upstream: rand.Intn(100) < pluginMetricsSamplePercent, flagged in the CycleState
        state.record_plugin_metrics = m.sample_plugins()
        if sched.extenders is None:
            res = scheduling_cycle(sched, fw, state, qpi, sched.explain)
        else:
            sched.extenders.register_metrics(getattr(m, "registry", None))
            res = await scheduling_cycle_async(sched, fw, state, qpi, sched.explain)
        m.cycle_finished(fw, state, time.perf_counter() - start)
    elif sched.extenders is None:
        res = scheduling_cycle(sched, fw, state, qpi, sched.explain)
    else:
        res = await scheduling_cycle_async(sched, fw, state, qpi, sched.explain)
    if sched.explain:
        model = sched.describe(res, weights=fw.weights)
        earlier = sched.explanations.get(pod.key)
        if model["preemption"] is None and earlier and earlier["preemption"]:
            # The attempt that preempted made room for this one: say so.
            model["preemption"] = {**earlier["preemption"], "earlierAttempt": True}
        sched.remember_explanation(pod.key, model)
    if not res.status.is_success():
        handle_scheduling_failure(sched, fw, qpi, res.status, res)
        if m is not None:
            result = "error" if res.status.code == Code.ERROR else "unschedulable"
            m.attempt_finished(qpi, result, time.perf_counter() - start)
        return
    assert res.assumed is not None
    # Assumed on a node now, so no longer a nominated pod (upstream ``assume``).
    sched.queue.nominator.delete(pod)
    await sched.acquire_binding_slot()
    sched.start_binding(tg, binding_cycle(sched, _Binding(fw, state, qpi, res.assumed, res.node)))


# == schedulingCycle =======================================================================
def scheduling_cycle(
    sched: Scheduler, fw: Framework, state: CycleState, qpi: QueuedPodInfo, explain: bool = False
) -> CycleResult:
    """One scheduling cycle, synchronously: extenders are not consulted."""
    return run_sync(_scheduling_cycle(sched, fw, state, qpi, explain, None))


async def scheduling_cycle_async(
    sched: Scheduler, fw: Framework, state: CycleState, qpi: QueuedPodInfo, explain: bool = False
) -> CycleResult:
    """One scheduling cycle awaiting the extenders interested in the pod.

    The in-tree parts stay synchronous CPU work; the cycle yields to the event loop only
    for extender Filter (after the in-tree Filter) and Prioritize (after Score). Informer
    events arriving meanwhile change the cache, not this cycle's snapshot (its NodeInfos
    are clones), just as upstream's cycle runs beside its informers.
    """
    ext = sched.extenders
    if ext is None or not ext.interested(qpi.pod_info):
        return scheduling_cycle(sched, fw, state, qpi, explain)
    return await _scheduling_cycle(sched, fw, state, qpi, explain, ext)


async def _scheduling_cycle(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    qpi: QueuedPodInfo,
    explain: bool,
    ext: ExtenderSet | None,
) -> CycleResult:
    pod = qpi.pod_info
    if pod.error is not None:
        st = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, pod.error)
        return CycleResult(st)
    sched.cache.update_snapshot(sched.snapshot)
    deadline = sched.deadline
    try:
        # Without extenders nothing below awaits, so plugin code runs under the
        # deadline; with them the awaits would let the timer fire in other tasks.
        with deadline if ext is None else _UNBOUNDED:
            attempt = _Attempt(sched, fw, state, pod, explain, ext, sched.rotation)
            res = await _schedule_pod(attempt)
            if res.fit_error is not None:
                await _run_post_filter(fw, state, pod, res, ext)
                return res
    except _CycleError as e:
        return CycleResult(e.status)
    except PluginTimeout as e:
        return CycleResult(Status(Code.ERROR, str(e)))
    if not res.status.is_success():
        return res
    assumed, st = prepare_for_binding(sched, fw, state, pod, res.node)
    if assumed is None:
        return CycleResult(st)
    res.assumed = assumed
    res.status = st
    return res


# == assumeAndReserve, prepareForBindingCycle ==============================================
def assume_and_reserve(
    sched: Scheduler, fw: Framework, state: CycleState, pod: PodInfo, node: str
) -> tuple[PodInfo | None, Status]:
    """``assumeAndReserve``: the pod on ``node`` in the cache (in a pod-group cycle, in the
    snapshot only: the group's simulation), then Reserve; a Reserve failure is undone
    (``unreserve_and_forget``). None: the pod could not even be assumed."""
    assumed = pod.assumed_on(node)
    try:
        if state.in_pod_group_cycle:
            sched.snapshot.assume_pod(assumed, node)
            # upstream's assume drops the nomination (given back if the group reverts)
            sched.queue.nominator.delete(assumed)
        else:
            sched.cache.assume_pod(assumed, node)
    except Exception as e:
        return None, Status(Code.ERROR, str(e))
    try:
        with sched.deadline:
            st = fw.run_reserve(state, assumed, node)
    except PluginTimeout as e:
        st = Status(Code.ERROR, str(e))
    if not st.is_success():
        unreserve_and_forget(sched, fw, state, assumed, node)
    return assumed, st


def prepare_for_binding(
    sched: Scheduler, fw: Framework, state: CycleState, pod: PodInfo, node: str
) -> tuple[PodInfo | None, Status]:
    """``prepareForBindingCycle``: assume and Reserve, then Permit (Wait parks the pod for
    its binding cycle); a failure is undone. The pod cycle's tail, and each member's of a
    pod group that succeeded."""
    assumed, st = assume_and_reserve(sched, fw, state, pod, node)
    if assumed is None or not st.is_success():
        return assumed, st
    try:
        with sched.deadline:
            st = fw.run_permit(state, assumed, node)
    except PluginTimeout as e:
        # Permit hung: undo as for any failure there (a pod Permit had already parked is
        # let go first, so no binding cycle waits for it).
        st = Status(Code.ERROR, str(e))
        sched.waiting_pods.remove(assumed.uid or assumed.key)
    if not st.is_success() and not st.is_wait():
        unreserve_and_forget(sched, fw, state, assumed, node)
        return assumed, st
    return assumed, SUCCESS


def unreserve_and_forget(
    sched: Scheduler, fw: Framework, state: CycleState, assumed: PodInfo, node: str
) -> None:
    """``unreserveAndForget``: Unreserve, then forget the pod where it was assumed (the
    snapshot in a pod-group cycle, whose nomination it gets back, else the cache)."""
    unreserve(sched, fw, state, assumed, node)
    if not state.in_pod_group_cycle:
        sched.cache.forget_pod(assumed)
        return
    sched.snapshot.forget_pod(assumed)
    nominated = assumed.pod.status.nominated_node_name
    if nominated:
        sched.queue.nominator.add(assumed, nominated)


async def scheduling_algorithm(
    sched: Scheduler, fw: Framework, state: CycleState, qpi: QueuedPodInfo
) -> CycleResult:
    """``schedulingAlgorithm`` of a pod-group member (``state.in_pod_group_cycle``): the
    pod's Filter and Score over the snapshot (a placement's nodes, when one is assumed),
    consulting the extenders interested in it. No PostFilter: a FitError stays
    Unschedulable, the group's PodGroupPostFilter decides instead."""
    pod = qpi.pod_info
    if pod.error is not None:
        return CycleResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, pod.error))
    ext = sched.extenders
    if ext is not None and not ext.interested(pod):
        ext = None
    try:
        with sched.deadline if ext is None else _UNBOUNDED:
            attempt = _Attempt(sched, fw, state, pod, sched.explain, ext, sched.rotation)
            return await _schedule_pod(attempt)
    except _CycleError as e:
        return CycleResult(e.status)
    except PluginTimeout as e:
        return CycleResult(Status(Code.ERROR, str(e)))


async def _run_post_filter(
    fw: Framework, state: CycleState, pod: PodInfo, res: CycleResult, ext: ExtenderSet | None
) -> None:
    """A FitError: PostFilter (preemption) may nominate a node; the attempt stays
    Unschedulable with the FitError's message.

    As upstream, even a PostFilter error leaves the attempt Unschedulable with the
    FitError, its message appended; only a result changes the nomination.
    """
    fe = res.fit_error
    assert fe is not None
    if fw.post_filter_plugins and res.status.code != Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        statuses = fe.diagnosis.node_to_status
        if ext is None:
            pf, pst = fw.run_post_filter(state, pod, statuses)
        else:  # preemption may ask the extenders (upstream ``callExtenders``)
            pf, pst = await fw.run_post_filter_async(state, pod, statuses)
        fe.diagnosis.post_filter_msg = pst.message()
        res.post_filter = pf
    res.status = Status(Code.UNSCHEDULABLE, str(fe))


def unreserve(sched: Scheduler, fw: Framework, state: CycleState, pod: PodInfo, node: str) -> None:
    """Unreserve under the deadline: a plugin hanging there must not stall the undo."""
    try:
        with sched.deadline:
            fw.run_unreserve(state, pod, node)
    except PluginTimeout as e:
        log.warning("unreserve abandoned", pod=pod.key, node=node, error=str(e))


# == bindingCycle ==========================================================================
@dataclass(slots=True)
class _Binding:
    """A pod assumed on its node, on its way there: what the binding cycle's steps read."""

    fw: Framework
    state: CycleState
    qpi: QueuedPodInfo
    assumed: PodInfo
    node: str
    # Whether it waits at Permit, as seen when the binding cycle was started (a pod-group
    # member: upstream's goroutine asks WillWaitOnPermit before the later members' Permit
    # allows it); None: ask when the cycle runs.
    waits: bool | None = None


async def binding_cycle(sched: Scheduler, b: _Binding) -> None:
    """WaitOnPermit → PreBind → Bind (an extender's or the Bind plugins') → PostBind."""
    fw, state, qpi, assumed, node = b.fw, b.state, b.qpi, b.assumed, b.node
    holding = True
    try:
        will_wait = b.waits
        if will_wait is None:
            wp = sched.waiting_pods.get(assumed.uid or assumed.key)
            will_wait = wp is not None and not wp.done
        nominated_here = False
        if fw.handle.features.enabled("NominatedNodeNameForExpectation"):
            pre_flight = fw.run_pre_bind_pre_flights(state, assumed, node)
            if pre_flight.code == Code.ERROR or pre_flight.is_rejected():
                handle_binding_failure(sched, b, pre_flight)
                if assumed.pod.status.nominated_node_name:
                    await _write_nomination(sched, assumed, "")
                return
            nominated_here = pre_flight.is_success() or will_wait
        if nominated_here:
            # NominatedNodeNameForExpectation: PreBind or Permit will take a while, so
            # tell everyone (the autoscaler, other schedulers) where the pod is going.
            await _write_nomination(sched, assumed, node)
        if will_wait:
            # A pod parked at Permit (e.g. waiting for its gang) must not hold a
            # binding slot, or a gang larger than the bound could never assemble.
            sched.binding_slots.release()
            holding = False
            st = await fw.wait_on_permit(assumed)
            if st.is_success():
                await sched.binding_slots.acquire()
                holding = True
        else:
            st = await fw.wait_on_permit(assumed)
        if st.is_success():
            overdue = sched.overdue
            task = overdue.begin()
            try:
                st = await fw.run_pre_bind(state, assumed, node)
                if st.is_success():
                    # An interested extender with a bindVerb binds instead of Bind plugins.
                    ext = sched.extenders
                    got = None if ext is None else await ext.bind(assumed, node)
                    st = got if got is not None else await fw.run_bind(state, assumed, node)
            except asyncio.CancelledError as e:
                if not overdue.absorb(task):
                    raise
                st = _timed_out(sched, e)
            finally:
                overdue.end(task)
        m = sched.metrics
        if not st.is_success():
            handle_binding_failure(sched, b, st)
            if nominated_here or assumed.pod.status.nominated_node_name:
                # handleBindingCycleError's clearNominatedNode: a pod that failed to
                # bind holds no room anywhere
                await _write_nomination(sched, assumed, "")
            if m is not None and _ATTEMPT_START in state:
                result = "unschedulable" if st.is_rejected() else "error"
                m.attempt_finished(qpi, result, time.perf_counter() - state.read(_ATTEMPT_START))
            return
        sched.cache.finish_binding(assumed)
        sched.queue.done(qpi.pod_info)
        sched.observer.scheduled(assumed, node, qpi.profile, qpi.attempts)
        if m is not None and _ATTEMPT_START in state:
            first = qpi.initial_attempt_timestamp
            m.attempt_finished(
                qpi,
                "scheduled",
                time.perf_counter() - state.read(_ATTEMPT_START),
                None if first is None else sched.clock.now() - first,
            )
        if fw.post_bind_plugins:
            await _post_bind(sched, b)
        else:  # nothing to run, but every bound pod goes through PostBind (its metrics)
            await fw.run_post_bind(state, assumed, node)
    finally:
        sched.in_flight_bindings -= 1
        if holding:
            sched.binding_slots.release()
        sched.loop.progress.notify()


async def _write_nomination(sched: Scheduler, pod: PodInfo, node: str) -> None:
    """Write (or with "" clear) ``status.nominatedNodeName``; a failure is logged, as
    upstream logs a failed updatePod and goes on binding."""
    try:
        await sched.cluster.set_nominated_node(pod, node)
    except Exception as e:
        log.warning("updating the nominated node failed", pod=pod.key, node=node, error=str(e))


async def _post_bind(sched: Scheduler, b: _Binding) -> None:
    """PostBind within the binding timeout; a stuck one is only logged (it is bound)."""
    fw, state, assumed, node = b.fw, b.state, b.assumed, b.node
    overdue = sched.overdue
    task = overdue.begin()
    try:
        await fw.run_post_bind(state, assumed, node)
    except asyncio.CancelledError as e:
        if not overdue.absorb(task):
            raise
        log.warning(
            "postbind abandoned", pod=assumed.key, node=node, error=_timed_out(sched, e).message()
        )
    finally:
        overdue.end(task)


def _timed_out(sched: Scheduler, e: BaseException) -> Status:
    """The Error of a binding step the timeout cancelled, naming the plugin."""
    who = culprit_in_traceback(e, sched.plugin_index())
    what = f"plugin {who}" if who else "binding"
    limit = format_seconds(sched.overdue.limit or 0.0)
    return Status(Code.ERROR, f"{what} did not return within {limit}")


def handle_binding_failure(sched: Scheduler, b: _Binding, st: Status) -> None:
    """``handleBindingCycleError``: Unreserve, forget, requeue unless final, free resources."""
    fw, state, qpi, assumed, node = b.fw, b.state, b.qpi, b.assumed, b.node
    unreserve(sched, fw, state, assumed, node)
    # Not assumed any more: deleted (already removed) or confirmed by the watch.
    forgotten = sched.cache.is_assumed(assumed) and sched.cache_op(sched.cache.forget_pod, assumed)
    # Forgetting frees resources, which is an AssignedPodDelete for the pool. For a
    # rejection the move waits until the pod itself is requeued and skips it, so the
    # event cannot count as "seen while in flight" and bypass its rejecting plugin.
    if forgotten and not st.is_rejected():
        sched.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, assumed, None)
    # Every binding failure is a scheduling failure, 409/404 included: requeued unless
    # the informer has seen the pod deleted or bound meanwhile (the queue drops those),
    # as upstream's handleSchedulingFailure checks its informer cache.
    handle_scheduling_failure(sched, fw, qpi, st, None)
    if forgotten and st.is_rejected():
        me = assumed.uid or assumed.key
        sched.queue.move_all_to_active_or_backoff(
            ev.ASSIGNED_POD_DELETE, assumed, None, lambda p: (p.uid or p.key) != me
        )


# == schedulePod ===========================================================================
def schedule_pod(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    explain: bool,
    rotation: NodeRotation | None = None,
) -> CycleResult:
    """The scheduling algorithm without extenders (also /debug/explain's and shadow
    mode's). ``rotation`` defaults to the scheduler's; a dry run passes a copy."""
    rot = sched.rotation if rotation is None else rotation
    return run_sync(_schedule_pod(_Attempt(sched, fw, state, pod, explain, None, rot)))


@dataclass(slots=True)
class _Attempt:
    """What every step of one pod's ``schedulePod`` reads (upstream passes them one by one)."""

    sched: Scheduler
    fw: Framework
    state: CycleState
    pod: PodInfo
    explain: bool
    ext: ExtenderSet | None  # the extenders, when one is interested in the pod
    rotation: NodeRotation  # the round-robin start this attempt moves


async def _schedule_pod(a: _Attempt) -> CycleResult:
    sched, pod, explain = a.sched, a.pod, a.explain
    snap = sched.snapshot
    # A pod-group cycle may restrict the nodes to a placement's (``NumNodesInPlacement``).
    n_nodes = len(snap.rows_in_placement())
    if n_nodes == 0:
        return CycleResult(
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE),
            fit_error=FitError(pod.key, 0, Diagnosis()),
        )
    known = _known_results(sched, a.fw, a.state, pod) if a.ext is None and not explain else None
    feasible, diagnosis, explain_out = await find_nodes_that_fit_pod(a, known)
    if len(feasible) == 0:
        fe = FitError(pod.key, n_nodes, diagnosis)
        return CycleResult(
            Status(Code.UNSCHEDULABLE, str(fe)),
            fit_error=fe,
            diagnosis=diagnosis,
            explain=explain_out,
        )
    infos = snap.node_infos
    if len(feasible) == 1 and not explain:
        return CycleResult(
            SUCCESS,
            infos[int(feasible[0])].name,
            evaluated_nodes=1 + len(diagnosis.node_to_status),
            feasible_nodes=1,
            diagnosis=diagnosis,
        )
    totals, st, per = await prioritize_nodes(a, feasible, known)
    if not st.is_success():
        raise _CycleError(st)
    i = select_host(totals, sched.rng)
    if sched.tie_breaks:
        i = _preferred_tie(sched.tie_breaks.get(pod.key), totals, i, feasible, infos)
    res = CycleResult(
        SUCCESS,
        infos[int(feasible[i])].name,
        evaluated_nodes=len(feasible) + len(diagnosis.node_to_status),
        feasible_nodes=len(feasible),
        diagnosis=diagnosis,
    )
    if explain_out is not None:
        names = [infos[int(r)].name for r in feasible]
        scores: dict[str, Any] = {}
        for plugin, (raw, norm, weighted) in (per or {}).items():
            scores[plugin] = {
                n: {"raw": int(raw[k]), "normalized": int(norm[k]), "weighted": int(weighted[k])}
                for k, n in enumerate(names)
            }
        explain_out["score"] = scores
        explain_out["total"] = {n: int(totals[k]) for k, n in enumerate(names)}
        res.explain = explain_out
    return res


def _preferred_tie(
    want: str | None, totals: Any, i: int, feasible: Any, infos: list[NodeInfo]
) -> int:
    """The index of node ``want`` when it ties with the drawn best ``i``, else ``i``."""
    if want is None:
        return i
    for k, r in enumerate(feasible):
        if infos[int(r)].name == want:
            return k if totals[k] == totals[i] else i
    return i


def _known_results(
    sched: Scheduler, fw: Framework, state: CycleState, pod: PodInfo
) -> KnownResults | None:
    """The equivalence cache's results for ``pod``, when it may answer: not for a pod
    nominated itself (its nominated node is tried first, alone), nor in a pod-group cycle
    (its simulated pods and placements are not the cluster the cache knows). Pods
    nominated elsewhere make Filter depend on more than the node on their nodes only:
    those rows get the full cycle's verdict (``_with_nominated``), when they are few
    (``NOMINATED_ROWS_MAX``)."""
    cache = fw.cycle_cache
    if cache is None or pod.pod.status.nominated_node_name or state.in_pod_group_cycle:
        return None
    m = sched.metrics
    t0 = perf_counter() if m is not None else 0.0
    snap = sched.snapshot
    known = cache.lookup(pod, snap, m, state.record_plugin_metrics)
    if known is not None and len(sched.queue.nominator):
        nominated = _nominated_rows(sched, pod)
        if len(nominated) > NOMINATED_ROWS_MAX:
            known = None
        elif nominated:
            known = _with_nominated(fw, known, pod, snap, nominated)
    if m is not None:
        m.batch_lookup(fw.profile_name, known is not None, perf_counter() - t0)
    return known


#: The most rows with nominated pods the cache's answer is judged again on, node by node.
#: Beyond it the full cycle is cheaper: its first pass beside the nominated pods is one
#: vector pass over all of them (PreemptionBasic nominates on hundreds of nodes at once;
#: there re-judging each row cost a fifth of ksched's CPU).
NOMINATED_ROWS_MAX = 8


def _with_nominated(
    fw: Framework,
    known: KnownResults,
    pod: PodInfo,
    snap: Any,
    nominated: dict[int, list[PodInfo]],
) -> KnownResults | None:
    """``known`` with the verdict of each row that has nominated pods (priority >= the
    pod's) replaced by the full cycle's: ``RunFilterPluginsWithNominatedPods`` there, as
    ``Framework.find_feasible`` runs it on every such row it reaches, rejected by the batch
    masks or not. The other rows' verdicts do not depend on nominations, and Score never
    sees nominated pods. None when a row errs or no row is left: the full cycle decides,
    and words the error or FitError."""
    feasible = known.feasible.copy()
    infos = snap.node_infos
    take_added = fw._filters_take_added(known.state)
    for row, pods in nominated.items():
        st = fw.run_filter_with_nominated_pods(known.state, pod, infos[row], pods, take_added)
        if st.code == Code.ERROR:
            return None
        feasible[row] = st.is_success()
    if not feasible.any():
        return None
    return KnownResults(known.state, feasible, known.static, known.columns, known.live)


# == findNodesThatFitPod ===================================================================
async def find_nodes_that_fit_pod(
    a: _Attempt, known: KnownResults | None = None
) -> tuple[np.ndarray[Any, np.dtype[np.intp]], Diagnosis, dict[str, Any] | None]:
    """The feasible nodes (rows) to score, the diagnosis of the others, the explanation.

    With ``known`` results (the equivalence cache's) no PreFilter/Filter plugin runs: the
    verdicts of every row are known, and the nodes are taken by the same routine as
    ``Framework.find_feasible``'s from its plugins' verdicts.
    """
    sched, fw, state, pod, explain, ext = a.sched, a.fw, a.state, a.pod, a.explain, a.ext
    snap = sched.snapshot
    diagnosis = Diagnosis()
    nominated: dict[int, list[PodInfo]] = {}
    pre_res = None
    if known is not None:
        fw.run_pre_filter(state, pod, snap, known=known)  # takes the state PreFilter wrote
    else:
        pre_res, st, rejected = fw.run_pre_filter(state, pod, snap)
        diagnosis.unschedulable_plugins |= rejected
        if not st.is_success():
            if not st.is_rejected():
                raise _CycleError(st)
            diagnosis.node_to_status.absent = st
            diagnosis.pre_filter_msg = st.message()
            if st.plugin:
                diagnosis.unschedulable_plugins.add(st.plugin)
            return np.empty(0, dtype=np.intp), diagnosis, ({"filter": {}} if explain else None)
        nominated = _nominated_rows(sched, pod)
        # A node nominated by an earlier preemption is tried first, alone. Explaining does
        # not change that decision: the explanation then covers the nominated node only.
        found, out = await _evaluate_nominated_node(a, pre_res, nominated, diagnosis)
        if len(found):
            return found, diagnosis, ({"filter": out.explain} if explain and out else None)
    in_placement = snap.rows_in_placement()
    if pre_res is not None and pre_res.node_names is not None:
        rows = sorted(
            r
            for r in (snap.row(n) for n in pre_res.node_names)
            if r is not None and snap.in_placement(r)
        )
        candidates = np.array(rows, dtype=np.intp)
        narrowed = sorted(state.get(PREFILTER_NARROWED_KEY, ()))
        diagnosis.node_to_status.absent = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"node(s) didn't satisfy plugin(s) [{' '.join(narrowed)}]",
        )
    else:
        candidates = in_placement
    num_to_find = num_feasible_nodes_to_find(
        fw.percentage_of_nodes_to_score, sched.config.percentage_of_nodes_to_score, len(candidates)
    )
    start = a.rotation.next_start
    out = fw.find_feasible(
        state, pod, snap, candidates, start, num_to_find, nominated, explain=explain, known=known
    )
    a.rotation.advance(out.processed, len(in_placement))
    diagnosis.node_to_status.statuses.update(out.statuses.statuses)
    if out.statuses.absent is not None and out.statuses.absent.code == Code.ERROR:
        raise _CycleError(out.statuses.absent)
    diagnosis.unschedulable_plugins |= out.unschedulable_plugins
    feasible = out.feasible
    if ext is not None and len(feasible):
        feasible = await _extender_filter(sched, ext, pod, feasible, diagnosis)
        if not len(feasible):
            _record_filter_statuses(
                fw, state, pod, snap, candidates, start, out, nominated, diagnosis
            )
    explain_out: dict[str, Any] | None = None
    if explain:
        explain_out = {"filter": out.explain or {}}
        if pre_res is not None and pre_res.node_names is not None:
            # The nodes PreFilter left (the others are rejected without Filter).
            explain_out["narrowedTo"] = [snap.node_infos[int(r)].name for r in candidates]
    return feasible, diagnosis, explain_out


def _nominated_rows(sched: Scheduler, pod: PodInfo) -> dict[int, list[PodInfo]]:
    """Nodes with pods nominated there of priority >= the pod's (``addGENominatedPods``).

    With hundreds of preemptors nominated at once, walking them all every cycle is the
    cost: the nominator keeps the lists of the pods as queued up to date per priority
    (``rows_at_least``), and only the rows of the few pods seen otherwise (the pod itself,
    pods in flight or out of the queue: ``_as_queued``) are worked out again, as
    ``_nominated_rows_slow`` does. Rows come in no particular order (consumers look rows up
    or sort them).
    """
    nominator = sched.queue.nominator
    if not len(nominator):
        return {}
    queue = sched.queue
    index = sched.snapshot.index
    base = nominator.rows_at_least(index, pod.priority)
    me = pod.uid or pod.key
    odd = queue.outside_queues(nominator.keys())
    odd.add(me)
    nodes = {n for k in odd if (n := nominator.node_of_key(k))}
    if not nodes:
        return dict(base)
    out = dict(base)
    by_node = nominator.nodes()
    for node in nodes:
        row = index.get(node)
        if row is None:
            continue
        sel = _select(queue, by_node[node], me, pod.priority)
        if sel:
            out[row] = sel
        else:
            out.pop(row, None)
    return out


def _select(queue: Any, pods: list[PodInfo], me: str, priority: int) -> list[PodInfo]:
    return [
        q
        for p in pods
        if (p.uid or p.key) != me and (q := _as_queued(queue, p)).priority >= priority
    ]


def _nominated_rows_slow(sched: Scheduler, pod: PodInfo) -> dict[int, list[PodInfo]]:
    """``_nominated_rows`` by walking every nominated pod (the reference for its tests)."""
    nominator = sched.queue.nominator
    if not len(nominator):
        return {}
    snap = sched.snapshot
    out: dict[int, list[PodInfo]] = {}
    me = pod.uid or pod.key
    for node, pods in nominator.nodes().items():
        row = snap.row(node)
        if row is None:
            continue
        sel = _select(sched.queue, pods, me, pod.priority)
        if sel:
            out[row] = sel
    return out


def _as_queued(queue: Any, pod: PodInfo) -> PodInfo:
    """A nominated pod as upstream's ``NominatedPodsForNode`` sees it: the queue's copy,
    or, out of the queue (in flight: the other members of the pod group being scheduled),
    a bare pod (name, namespace, uid and group only: priority 0, nothing requested)."""
    if queue.location(pod) not in (None, "inFlight"):
        return pod
    meta = pod.pod.metadata
    bare = Pod(
        metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=meta.uid),
        spec=PodSpec(scheduling_group=pod.pod.spec.scheduling_group),
    )
    return PodInfo(bare)


async def _evaluate_nominated_node(
    a: _Attempt, pre_res: Any, nominated: dict[int, list[PodInfo]], diagnosis: Diagnosis
) -> tuple[np.ndarray[Any, np.dtype[np.intp]], FilterOutcome | None]:
    """``evaluateNominatedNode``: the node an earlier preemption nominated, if it fits
    (then no other node is looked at); empty rows otherwise."""
    sched, pod, ext = a.sched, a.pod, a.ext
    snap = sched.snapshot
    empty = np.empty(0, dtype=np.intp)
    nominated_node = pod.pod.status.nominated_node_name or sched.queue.nominator.nominated_node(pod)
    if not nominated_node:
        return empty, None
    row = snap.row(nominated_node)
    # a nominated node outside the placement being tried is no error: it is not tried
    if (
        row is None
        or not snap.in_placement(row)
        or not (
            pre_res is None or pre_res.node_names is None or nominated_node in pre_res.node_names
        )
    ):
        return empty, None
    out = a.fw.find_feasible(
        a.state, pod, snap, np.array([row], dtype=np.intp), 0, 1, nominated, explain=a.explain
    )
    found = out.feasible
    if len(found) and ext is not None:
        try:
            found = await _extender_filter(sched, ext, pod, found, diagnosis)
        except _CycleError:
            found = found[:0]  # upstream logs it and searches all nodes
    return found, out


async def _extender_filter(
    sched: Scheduler, ext: ExtenderSet, pod: PodInfo, rows: Any, diagnosis: Diagnosis
) -> np.ndarray[Any, np.dtype[np.intp]]:
    """``findNodesThatPassExtenders``: a failing non-ignorable extender fails the cycle."""
    out, st = await ext.filter(pod, sched.snapshot, rows, diagnosis)
    if not st.is_success():
        raise _CycleError(st)
    return out


def _record_filter_statuses(
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    snap: Any,
    candidates: Any,
    start: int,
    out: Any,
    nominated: dict[int, list[PodInfo]],
    diagnosis: Diagnosis,
) -> None:
    """The in-tree verdicts of the evaluated nodes that failed Filter.

    ``find_feasible`` computes them only when no node passes; when extenders then reject
    every node that did, the FitError (and preemption) still needs them all, as upstream.
    """
    n = len(candidates)
    if not n:
        return
    s = start % n
    order = np.concatenate((candidates[s:], candidates[:s]))[: out.processed]
    passed = set(out.feasible.tolist())
    statuses = diagnosis.node_to_status
    infos = snap.node_infos
    for row in order.tolist():
        ni = infos[row]
        if row in passed or ni.name in statuses.statuses:
            continue
        if row in nominated:
            st = fw.run_filter_with_nominated_pods(state, pod, ni, nominated[row])
        else:
            st = fw.run_filter_plugins(state, pod, ni)
        if not st.is_success():
            statuses.set(ni.name, st)
            if st.plugin:
                diagnosis.unschedulable_plugins.add(st.plugin)


# == prioritizeNodes =======================================================================
async def prioritize_nodes(
    a: _Attempt, feasible: Any, known: KnownResults | None = None
) -> tuple[np.ndarray[Any, Any], Status, Any]:
    """Each feasible node's total: PreScore, Score, NormalizeScore, weights (from the known
    raw scores when the cache answered), plus the extenders' priorities."""
    sched, fw, state, pod, ext = a.sched, a.fw, a.state, a.pod, a.ext
    if not fw.score_plugins and ext is None:
        return np.ones(len(feasible), dtype=np.int64), SUCCESS, None
    # With ``known`` only the plugins the cache runs every cycle (``known.live``) run
    # PreScore and Score; the framework takes the others' results.
    view = NodeInfoView(sched.snapshot.node_infos, feasible)
    st = fw.run_pre_score(state, pod, view, known=known)
    if not st.is_success():
        return np.empty(0), st, None
    out, st = fw.run_score(state, pod, sched.snapshot, feasible, explain=a.explain, known=known)
    if out is None:
        return np.empty(0), st, None
    if ext is not None:
        # Extender score * weight * (MaxNodeScore / MaxExtenderPriority), added to the total.
        extra = await ext.prioritize(pod, sched.snapshot, feasible)
        if extra is not None:
            if out.per_plugin is not None:
                out.per_plugin["Extender"] = (extra, extra, extra)
            return out.totals + extra, SUCCESS, out.per_plugin
    return out.totals, SUCCESS, out.per_plugin


# == handleSchedulingFailure ===============================================================
def handle_scheduling_failure(
    sched: Scheduler, fw: Framework, qpi: QueuedPodInfo, st: Status, res: CycleResult | None
) -> None:
    """``handleSchedulingFailure``: requeue (pool or backoff), nominate, report."""
    pod = qpi.pod_info
    is_error = st.code == Code.ERROR
    reason = "SchedulerError" if is_error else "Unschedulable"
    if res is not None and res.fit_error is not None:
        d = res.fit_error.diagnosis
        qpi.unschedulable_plugins = set(d.unschedulable_plugins)
        qpi.pending_plugins = set(d.pending_plugins)
    elif st.plugin and not is_error:
        qpi.unschedulable_plugins = {st.plugin}
    else:
        qpi.unschedulable_plugins = set()
    message = res.message if res is not None and res.fit_error is not None else st.message()
    if pod.error is not None:
        # The pod's own fields are broken: nothing in the cluster can fix it, only an update.
        qpi.unschedulable_plugins = {INVALID_POD_PLUGIN}
    pf = res.post_filter if res is not None else None
    tg = sched.loop.task_group
    preempt_on = pf.nominated_node_name if pf is not None and tg is not None else ""
    # Victims already terminating need no second eviction (``prepareCandidateAsync``).
    victims = (
        [v for v in pf.victims if v.pod.metadata.deletion_timestamp is None]
        if pf is not None and preempt_on
        else []
    )
    token = PreemptionInFlight()
    if victims:
        # Before requeueing: an event seen in flight must not retry it mid-eviction.
        sched.preempting[pod.uid or pod.key] = token
    sched.queue.add_unschedulable_if_not_present(qpi, error=is_error)
    _nominate(sched, fw, qpi.pod_info, res)
    if preempt_on and tg is not None:
        tg.start_soon(sched.preempt, fw, qpi.pod_info, preempt_on, victims, token)
    sched.observer.failed(pod, qpi.profile, reason, message, res)


def _nominate(sched: Scheduler, fw: Framework, pod: PodInfo, res: CycleResult | None) -> None:
    """``AddNominatedPod`` with the attempt's NominatingInfo.

    A PostFilter result overrides (an empty name clears); a FitError without one
    keeps what the pod's status says; any other failure (error, Reserve/Permit or
    binding failure, no PostFilter plugin) clears. The API side of clearing is the
    observer's status patch (``updatePod``), as upstream.
    """
    nominator = sched.queue.nominator
    fe = res.fit_error if res is not None else None
    if fe is None or fe.num_all_nodes == 0 or not fw.post_filter_plugins:
        nominator.delete(pod)
        return
    pf = res.post_filter if res is not None else None
    if pf is None:
        if sched.queue.location(pod) is not None:  # not deleted meanwhile
            nominator.add(pod)
    elif pf.nominated_node_name and sched.queue.location(pod) is not None:
        nominator.add(pod, pf.nominated_node_name)
    else:
        nominator.delete(pod)
