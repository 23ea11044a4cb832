"""One pod through the framework, top to bottom (``schedule_one.go``).

scheduling cycle (sync, CPU only):
    snapshot → PreFilter → Filter (round-robin, percentageOfNodesToScore)
    → PostFilter when nothing fits → PreScore/Score/Normalize/weights → select
    → assume → Reserve → Permit
extenders (only for a pod some configured extender is interested in): the cycle is then
    awaited, pausing after Filter for extender Filter, after Score for Prioritize, and in
    PostFilter when preemption asks the extenders' preemptVerb about its candidates;
    without extenders the same code runs synchronously (``run_sync``).
binding cycle (async, runs beside the next scheduling cycles):
    WaitOnPermit → PreBind → Bind → PostBind; Unreserve + forget on any failure.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog

from ..framework.cycle_state import CycleState
from ..framework.deadline import PluginTimeout
from ..framework.diagnosis import Diagnosis, FitError
from ..framework.interface import PostFilterResult
from ..framework.runtime import PREFILTER_NARROWED_KEY, Framework
from ..framework.snapshot import NodeInfoView
from ..framework.status import SUCCESS, Code, Status
from ..framework.types import PodInfo
from ..util.coro import run_sync

if TYPE_CHECKING:
    from ..extender.client import ExtenderSet
    from ..queue.scheduling_queue import QueuedPodInfo
    from .scheduler import Scheduler

__all__ = [
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "CycleResult",
    "num_feasible_nodes_to_find",
    "scheduling_cycle",
    "scheduling_cycle_async",
    "select_host",
]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
_UNBOUNDED = contextlib.nullcontext()
log = structlog.get_logger("ksched.scheduler")


def num_feasible_nodes_to_find(
    percentage: int | None, global_percentage: int | None, num_all: int
) -> int:
    """How many feasible nodes are enough.

    Adaptive: 50 - nodes/125 percent, at least 5 %, and never fewer than 100 nodes.
    """
    if num_all < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all
    pct = percentage if percentage is not None else (global_percentage or 0)
    if pct == 0:
        pct = 50 - num_all // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    n = num_all * pct // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(totals: np.ndarray[Any, Any], rng: random.Random) -> int:
    """Index of a highest total; ties broken uniformly at random.

    Equivalent in distribution to upstream's reservoir sampling over the tied
    nodes, with one random draw instead of one per tie.
    """
    best = totals.max()
    ties = np.flatnonzero(totals == best)
    if len(ties) == 1:
        return int(ties[0])
    return int(ties[rng.randrange(len(ties))])


@dataclass(slots=True)
class CycleResult:
    """Outcome of a scheduling cycle."""

    status: Status
    node: str = ""
    assumed: PodInfo | None = None
    fit_error: FitError | None = None
    post_filter: PostFilterResult | None = None
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    explain: dict[str, Any] | None = None
    diagnosis: Diagnosis = field(default_factory=Diagnosis)

    @property
    def message(self) -> str:
        if self.fit_error is not None:
            return str(self.fit_error)
        return self.status.message()


def _nominated_rows(sched: Scheduler, pod: PodInfo) -> dict[int, list[PodInfo]]:
    """Nodes with pods nominated there of priority >= the pod's (``addGENominatedPods``)."""
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
        sel = [p for p in pods if p.priority >= pod.priority and (p.uid or p.key) != me]
        if sel:
            out[row] = sel
    return out


async def find_nodes_that_fit_pod(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    explain: bool,
    ext: ExtenderSet | None = None,
) -> tuple[np.ndarray[Any, np.dtype[np.intp]], Diagnosis, int, dict[str, Any] | None]:
    snap = sched.snapshot
    diagnosis = Diagnosis()
    empty = np.empty(0, dtype=np.intp)
    pre_res, st, rejected = fw.run_pre_filter(state, pod, snap)
    diagnosis.unschedulable_plugins |= rejected
    if not st.is_success():
        if not st.is_rejected():
            raise _CycleError(st)
        diagnosis.node_to_status.absent = st
        diagnosis.pre_filter_msg = st.message()
        if st.plugin:
            diagnosis.unschedulable_plugins.add(st.plugin)
        return empty, diagnosis, 0, ({"filter": {}} if explain else None)
    nominated = _nominated_rows(sched, pod)
    # A node nominated by an earlier preemption is tried first, alone. Explaining does not
    # change that decision: the explanation then covers the nominated node only.
    nominated_node = pod.pod.status.nominated_node_name or sched.queue.nominator.nominated_node(pod)
    if nominated_node:
        row = snap.row(nominated_node)
        if row is not None and (
            pre_res is None or pre_res.node_names is None or nominated_node in pre_res.node_names
        ):
            out = fw.find_feasible(
                state, pod, snap, np.array([row], dtype=np.intp), 0, 1, nominated, explain=explain
            )
            found = out.feasible
            if len(found) and ext is not None:
                try:
                    found = await _extender_filter(sched, ext, pod, found, diagnosis)
                except _CycleError:
                    found = found[:0]  # upstream logs it and searches all nodes
            if len(found):
                return found, diagnosis, 1, ({"filter": out.explain} if explain else None)
    if pre_res is not None and pre_res.node_names is not None:
        rows = sorted(r for r in (snap.row(n) for n in pre_res.node_names) if r is not None)
        candidates = np.array(rows, dtype=np.intp)
        narrowed = sorted(state.get(PREFILTER_NARROWED_KEY, ()))
        diagnosis.node_to_status.absent = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"node(s) didn't satisfy plugin(s) [{' '.join(narrowed)}]",
        )
    else:
        candidates = snap.all_rows
    num_to_find = num_feasible_nodes_to_find(
        fw.percentage_of_nodes_to_score, sched.percentage_of_nodes_to_score, len(candidates)
    )
    start = sched.next_start_node_index
    out = fw.find_feasible(
        state, pod, snap, candidates, start, num_to_find, nominated, explain=explain
    )
    if snap.n:
        sched.next_start_node_index = (sched.next_start_node_index + out.processed) % snap.n
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
    return feasible, diagnosis, out.processed, explain_out


class _CycleError(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


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


def schedule_pod(
    sched: Scheduler, fw: Framework, state: CycleState, pod: PodInfo, explain: bool
) -> CycleResult:
    """The scheduling algorithm without extenders (also /debug/explain's)."""
    return run_sync(_schedule_pod(sched, fw, state, pod, explain, None))


async def _schedule_pod(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    explain: bool,
    ext: ExtenderSet | None,
) -> CycleResult:
    snap = sched.snapshot
    if snap.n == 0:
        return CycleResult(
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE),
            fit_error=FitError(pod.key, 0, Diagnosis()),
        )
    if ext is None and not explain and fw.cycle_cache is not None:
        m = sched.metrics
        t0 = perf_counter() if m is not None else 0.0
        cached: CycleResult | None = fw.cycle_cache.schedule(sched, state, pod)
        if m is not None:
            m.batch_lookup(fw.profile_name, cached is not None, perf_counter() - t0)
        if cached is not None:
            return cached
    feasible, diagnosis, _processed, explain_out = await find_nodes_that_fit_pod(
        sched, fw, state, pod, explain, ext
    )
    if len(feasible) == 0:
        fe = FitError(pod.key, snap.n, diagnosis)
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
    totals, st, per = await prioritize_nodes(sched, fw, state, pod, feasible, explain, ext)
    if not st.is_success():
        raise _CycleError(st)
    i = select_host(totals, sched.rng)
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


async def prioritize_nodes(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    feasible: Any,
    explain: bool,
    ext: ExtenderSet | None = None,
) -> tuple[np.ndarray[Any, Any], Status, Any]:
    if not fw.score_plugins and ext is None:
        return np.ones(len(feasible), dtype=np.int64), SUCCESS, None
    st = fw.run_pre_score(state, pod, NodeInfoView(sched.snapshot.node_infos, feasible))
    if not st.is_success():
        return np.empty(0), st, None
    out, st = fw.run_score(state, pod, sched.snapshot, feasible, explain=explain)
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
            res = await _schedule_pod(sched, fw, state, pod, explain, ext)
            if res.fit_error is not None:
                fe = res.fit_error
                if (
                    fw.post_filter_plugins
                    and res.status.code != Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                ):
                    # As upstream, even a PostFilter error leaves the attempt
                    # Unschedulable with the FitError, its message appended; only a
                    # result changes the nomination.
                    statuses = fe.diagnosis.node_to_status
                    if ext is None:
                        pf, pst = fw.run_post_filter(state, pod, statuses)
                    else:  # preemption may ask the extenders (upstream ``callExtenders``)
                        pf, pst = await fw.run_post_filter_async(state, pod, statuses)
                    fe.diagnosis.post_filter_msg = pst.message()
                    res.post_filter = pf
                res.status = Status(Code.UNSCHEDULABLE, str(fe))
                return res
    except _CycleError as e:
        return CycleResult(e.status)
    except PluginTimeout as e:
        return CycleResult(Status(Code.ERROR, str(e)))
    if not res.status.is_success():
        return res
    assumed = pod.assumed_on(res.node)
    try:
        sched.cache.assume_pod(assumed, res.node)
    except Exception as e:
        return CycleResult(Status(Code.ERROR, str(e)))
    res.assumed = assumed
    try:
        with deadline:
            st = fw.run_reserve(state, assumed, res.node)
            if st.is_success():
                st = fw.run_permit(state, assumed, res.node)
    except PluginTimeout as e:
        # Reserve or Permit hung: undo as for any failure there (a pod Permit had
        # already parked is let go first, so no binding cycle waits for it).
        st = Status(Code.ERROR, str(e))
        sched.waiting_pods.remove(assumed.uid or assumed.key)
    if not st.is_success() and not st.is_wait():
        unreserve(sched, fw, state, assumed, res.node)
        sched.cache.forget_pod(assumed)
        res.status = st
        return res
    res.status = SUCCESS
    return res


def unreserve(sched: Scheduler, fw: Framework, state: CycleState, pod: PodInfo, node: str) -> None:
    """Unreserve under the deadline: a plugin hanging there must not stall the undo."""
    try:
        with sched.deadline:
            fw.run_unreserve(state, pod, node)
    except PluginTimeout as e:
        log.warning("unreserve abandoned", pod=pod.key, node=node, error=str(e))
