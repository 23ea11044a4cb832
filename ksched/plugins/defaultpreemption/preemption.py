"""Generic preemption (upstream ``pkg/scheduler/framework/preemption``).

The ``Evaluator`` runs the steps every preemption plugin shares: check the preemptor
may preempt at all, dry-run victim selection on the nodes where removing pods could
help (a bounded sample starting at a random offset), pick the best candidate and
return it as a ``PostFilterResult``. What is plugin-specific (eligibility, how victims
are chosen on one node, how many nodes to sample) comes from a ``PreemptionInterface``
— ``DefaultPreemption`` is one.

Unlike upstream the Evaluator does not evict: the victims travel in the result and
the scheduler marks them (``preemption_condition``) and deletes them, and records the
nomination, asynchronously, as upstream's async preemption does. The dry run is
sequential, which makes the sampled set equal to upstream's with parallelism 1; where
upstream iterates a Go map (node statuses, candidates) we keep snapshot/dry-run order, so
ties resolve deterministically.

Extenders with a preemptVerb (``handle.extenders``) may narrow the candidates before the
choice (upstream ``callExtenders``). Those are HTTP calls while PostFilter is synchronous,
so then ``preempt`` returns a result to ``resume``: the scheduling cycle, which runs
asynchronously for any pod an extender is interested in, awaits the extenders and the
choice there. Without such extenders nothing changes and nothing is awaited.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...api.objects import PodDisruptionBudget
from ...api.selectors import SelectorError, compile_label_selector
from ...framework.cycle_state import CycleState
from ...framework.diagnosis import Diagnosis, FitError
from ...framework.handle import Handle
from ...framework.interface import NodeToStatus, PostFilterOutcome, PostFilterResult, Victims
from ...framework.listers import Listers
from ...framework.preemption import (
    DISRUPTION_TARGET,
    POD_PREEMPTOR,
    PREEMPTION_BY_SCHEDULER,
    preemption_condition,
)
from ...framework.status import SUCCESS, Code, Status
from ...framework.types import NodeInfo, PodInfo
from ...util.gosort import MAX_INSERTION, sort_slice

__all__ = [
    "DISRUPTION_TARGET",
    "PREEMPTION_BY_SCHEDULER",
    "Candidate",
    "Evaluator",
    "MoreImportantPodFunc",
    "PreemptionInterface",
    "Victims",
    "aggregate_errors",
    "filter_pods_with_pdb_violation",
    "get_earliest_pod_start_time",
    "get_pod_start_time",
    "lower_priority_nominated_pods",
    "more_important_pod",
    "nodes_for_status_code",
    "pick_one_node_for_preemption",
    "pod_terminating_by_preemption",
    "preemption_condition",
    "victim_importance",
]

NO_NODES_AVAILABLE = "no nodes available"
NOT_HELPFUL = "Preemption is not helpful for scheduling"

#: A dry run's verdict on a node preemption cannot help, left unworded: the statuses of
#: such nodes are read only when no candidate is found, and only then worded (by asking
#: ``select_victims_in_place`` again with ``worded=True``).
UNWORDED = Status(Code.UNSCHEDULABLE)
NO_CANDIDATE = "no candidate node for preemption"

# The condition preemption puts on each victim before deleting it (``PreemptPod``), which
# ``pod_terminating_by_preemption`` reads back on later attempts.

_MAX_INT32 = 2**31 - 1
_START_TIME_CACHE = "DefaultPreemption/startTime"

MoreImportantPodFunc = Callable[[PodInfo, PodInfo], bool]


@dataclass(slots=True)
class Candidate:
    """A node the preemptor fits on once ``victims`` are gone."""

    name: str
    victims: Victims


class PreemptionInterface(Protocol):
    """What a preemption plugin decides (upstream ``preemption.Interface``)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]: ...

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        node_info: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status]: ...

    def ordered_score_funcs(
        self, nodes_to_victims: Mapping[str, Victims]
    ) -> list[Callable[[str], float]] | None: ...


# ---- pod helpers (pkg/scheduler/util) --------------------------------------------------------


def pod_terminating_by_preemption(pod: PodInfo) -> bool:
    """Being deleted, and the (first) DisruptionTarget condition says the scheduler did it."""
    p = pod.pod
    if p.metadata.deletion_timestamp is None:
        return False
    for c in p.status.conditions:
        if c.type == DISRUPTION_TARGET:
            return c.status == "True" and c.reason == PREEMPTION_BY_SCHEDULER
    return False


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo],
    pdbs: Sequence[PodDisruptionBudget],
    *,
    first_violation_stops: bool = False,
) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), order kept.

    Each matching PDB (same namespace, non-empty valid selector) spends one of its
    ``disruptionsAllowed`` per pod not already listed in ``disruptedPods``; a pod whose
    eviction drives some budget below zero violates it. ``first_violation_stops`` (v1.37's
    ``FilterVictimsWithPDBViolation``): a pod stops spending budgets at the first one it
    overdraws, so its later matching PDBs keep theirs for the next pods.
    """
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    selectors: list[Any] = []
    for pdb in pdbs:
        try:
            sel = compile_label_selector(pdb.spec.selector)
        except SelectorError:
            sel = None  # an invalid selector matches nothing
        selectors.append(None if sel is None or sel.empty or sel.nothing else sel)
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pods:
        violated = False
        labels = pi.labels
        if labels:
            ns, name = pi.namespace, pi.name
            for i, pdb in enumerate(pdbs):
                sel = selectors[i]
                if sel is None or pdb.metadata.namespace != ns or not sel.matches(labels):
                    continue
                if name in pdb.status.disrupted_pods:
                    continue  # eviction already processed by the API server
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
                    if first_violation_stops:
                        break
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


def get_pod_start_time(pod: PodInfo) -> float:
    """``util.GetPodStartTime`` as seconds; a pod not started yet counts as newest (+inf).

    Upstream substitutes ``time.Now()`` for a missing start time, read afresh at each
    call: against any real start it is later, as +inf is; two unstarted pods are ordered
    by which is asked about first, which ``more_important_pod`` reproduces.
    """
    cache = pod.cache
    t = cache.get(_START_TIME_CACHE)
    if t is None:
        t = math.inf
        raw = pod.pod.status.start_time
        if raw:
            try:
                t = dt.datetime.fromisoformat(raw).timestamp()
            except ValueError:
                t = math.inf
        cache[_START_TIME_CACHE] = t
    return float(t)


def more_important_pod(pod1: PodInfo, pod2: PodInfo) -> bool:
    """``util.MoreImportantPod``: higher priority, then the one running longer.

    Of two unstarted pods of one priority the first asked about is "older" (its
    ``time.Now()`` is read first), so ``less(a, b)`` and ``less(b, a)`` are both true and
    Go's sort decides their order; ``sort_by_importance`` runs that same sort.
    """
    p1, p2 = pod1.priority, pod2.priority
    if p1 != p2:
        return p1 > p2
    t1, t2 = get_pod_start_time(pod1), get_pod_start_time(pod2)
    if t1 == math.inf:
        return t2 == math.inf
    return t1 < t2


def victim_importance(potential: Sequence[PodInfo]) -> MoreImportantPodFunc:
    """1.37's ``preemption.MoreImportantVictim`` for single-pod victims of ``potential``.

    Upstream builds one victim per pod in the node's order (``GetVictimsOnNode``) and
    reads an unstarted pod's ``time.Now()`` once, there: two unstarted pods of one
    priority keep the node's order (the first is "older"), where 1.36's
    ``MoreImportantPod`` reads the clock at each comparison and lets the sort swap them.
    """
    order = {id(p): i for i, p in enumerate(potential)}

    def less(pod1: PodInfo, pod2: PodInfo) -> bool:
        if pod1.priority != pod2.priority:
            return pod1.priority > pod2.priority
        t1, t2 = get_pod_start_time(pod1), get_pod_start_time(pod2)
        if t1 == math.inf and t2 == math.inf:
            return order[id(pod1)] < order[id(pod2)]
        return t1 < t2

    return less


def sort_by_importance(pods: list[PodInfo], more_important: MoreImportantPodFunc | None) -> None:
    """Sort in place, most important first, as upstream's ``sort.Slice`` does: the same
    algorithm (unstable), so ties among unstarted pods come out in upstream's order.

    With the default order two shortcuts give the same result much cheaper than replaying
    Go's algorithm through Python calls: up to 12 pods Go's pdqsort is a plain insertion
    sort, run here with ``more_important_pod`` inlined over precomputed keys; beyond that,
    when no two pods are alike in (priority, start time) there are no ties, and every
    correct sort agrees, so Python's ``sorted`` on that key.
    """
    n = len(pods)
    if (more_important is None or more_important is more_important_pod) and n > 1:
        if n <= MAX_INSERTION:
            _insertion_sort_by_importance(pods)
            return
        keys = [(-p.priority, get_pod_start_time(p)) for p in pods]
        if len(set(keys)) == n:
            order = sorted(range(n), key=keys.__getitem__)
            pods[:] = [pods[i] for i in order]
            return
    sort_slice(pods, more_important or more_important_pod)


def _insertion_sort_by_importance(pods: list[PodInfo]) -> None:
    """Go's ``insertionSort`` with ``more_important_pod`` as the less function."""
    inf = math.inf
    items = [(p.priority, get_pod_start_time(p), p) for p in pods]
    for i in range(1, len(items)):
        j = i
        while j > 0:
            p1, t1, _ = items[j]
            p2, t2, _ = items[j - 1]
            if p1 != p2:
                less = p1 > p2
            elif t1 == inf:
                less = t2 == inf
            else:
                less = t1 < t2
            if not less:
                break
            items[j], items[j - 1] = items[j - 1], items[j]
            j -= 1
    pods[:] = [item[2] for item in items]


def get_earliest_pod_start_time(victims: Victims) -> float | None:
    """``util.GetEarliestPodStartTime``: earliest start among the highest-priority victims."""
    if not victims.pods:
        return None
    earliest = get_pod_start_time(victims.pods[0])
    max_priority = victims.pods[0].priority
    for p in victims.pods:
        prio = p.priority
        if prio == max_priority:
            t = get_pod_start_time(p)
            if t < earliest:
                earliest = t
        elif prio > max_priority:
            max_priority = prio
            earliest = get_pod_start_time(p)
    return earliest


def aggregate_errors(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as is, several deduped in []."""
    if len(messages) == 1:
        return messages[0]
    seen: list[str] = []
    for m in messages:
        if m not in seen:
            seen.append(m)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def _absent(m: NodeToStatus) -> Status:
    """Status of nodes missing from the map; none recorded means UnschedulableAndUnresolvable
    (``NewDefaultNodeToStatus``)."""
    return m.absent if m.absent is not None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def nodes_for_status_code(m: NodeToStatus, nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
    """``NodeToStatus.NodesForStatusCode`` in snapshot order (upstream: map order)."""
    absent = _absent(m)
    statuses = m.statuses
    if absent.code == code:
        if not statuses:
            return list(nodes)
        return [ni for ni in nodes if statuses.get(ni.name, absent).code == code]
    if not statuses:
        return []
    return [ni for ni in nodes if (st := statuses.get(ni.name)) is not None and st.code == code]


def lower_priority_nominated_pods(handle: Handle, pod: PodInfo, node_name: str) -> list[PodInfo]:
    """``getLowerPriorityNominatedPods``: nominated to ``node_name`` with lower priority."""
    nominator = handle.nominator
    if nominator is None:
        return []
    return [p for p in nominator.pods_for_node(node_name) if p.priority < pod.priority]


# ---- candidate selection -------------------------------------------------------------------


def pick_one_node_for_preemption(
    nodes_to_victims: Mapping[str, Victims],
    score_funcs: Sequence[Callable[[str], float]] | None = None,
) -> str:
    """``pickOneNodeForPreemption``: the best node by successive tie-breaking scores.

    Defaults, each applied only to the nodes tied on all previous ones: fewest PDB
    violations, lowest highest-victim priority, smallest sum of (shifted) priorities,
    fewest victims, latest start of the highest-priority victims; then the first
    node (in candidate order here, Go map order upstream).
    """
    if not nodes_to_victims:
        return ""
    candidates = list(nodes_to_victims)
    if not score_funcs and all(v.pods for v in nodes_to_victims.values()):
        return _pick_by_default_scores(nodes_to_victims)
    if not score_funcs:

        def min_pdb_violations(node: str) -> float:
            return -nodes_to_victims[node].num_pdb_violations

        def min_highest_priority(node: str) -> float:
            return -nodes_to_victims[node].pods[0].priority

        def min_sum_priorities(node: str) -> float:
            return -_shifted_priority_sum(nodes_to_victims[node].pods)

        def min_num_pods(node: str) -> float:
            return -len(nodes_to_victims[node].pods)

        def latest_start_time(node: str) -> float:
            earliest = get_earliest_pod_start_time(nodes_to_victims[node])
            return -math.inf if earliest is None else earliest

        score_funcs = [
            min_pdb_violations,
            min_highest_priority,
            min_sum_priorities,
            min_num_pods,
            latest_start_time,
        ]
    for f in score_funcs:
        selected: list[str] = []
        best = -math.inf
        for node in candidates:
            score = f(node)
            if score > best:
                best = score
                selected = []
            if score == best:
                selected.append(node)
        if len(selected) == 1:
            return selected[0]
        if selected:
            candidates = selected
    return candidates[0]


def _shifted_priority_sum(pods: Sequence[PodInfo]) -> int:
    """The victims' priorities, each shifted by MaxInt32+1 so that every term is
    positive: more negative-priority pods never look better than fewer."""
    return sum(p.priority for p in pods) + len(pods) * (_MAX_INT32 + 1)


def _pick_by_default_scores(nodes_to_victims: Mapping[str, Victims]) -> str:
    """``pick_one_node_for_preemption`` with the default scores, every node having
    victims: each score is worked out only for the nodes tied on all before it (most
    nodes differ on the first ones, and the start times are the dearest), and the
    first of the nodes tied on all of them wins."""
    items = list(nodes_to_victims.items())
    for score in _DEFAULT_SCORES:
        if len(items) <= 1:
            break
        values = [score(v) for _, v in items]
        top = max(values)
        items = [it for it, s in zip(items, values, strict=True) if s == top]
    return items[0][0] if items else ""


def _latest_start(v: Victims) -> float:
    earliest = get_earliest_pod_start_time(v)
    return -math.inf if earliest is None else earliest


_DEFAULT_SCORES: tuple[Callable[[Victims], float], ...] = (
    lambda v: -v.num_pdb_violations,
    lambda v: -v.pods[0].priority,
    lambda v: -_shifted_priority_sum(v.pods),
    lambda v: -len(v.pods),
    _latest_start,
)


class Evaluator:
    """``preemption.Evaluator`` without eviction (the scheduler evicts from the result)."""

    def __init__(self, plugin_name: str, handle: Handle, iface: PreemptionInterface) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.iface = iface

    def _pdbs(self) -> list[PodDisruptionBudget]:
        pdbs: Any = self.handle.listers.get(Listers.PDBS)
        if not pdbs:
            return []
        return list(pdbs.values()) if isinstance(pdbs, Mapping) else list(pdbs)

    def preempt(
        self, state: CycleState, pod: PodInfo, m: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """``Evaluator.Preempt``.

        ``(None, Unschedulable)`` leaves the nomination alone (not eligible, nothing to
        pick); ``(PostFilterResult(""), Unschedulable)`` with a FitError text clears it
        (no node helps); ``(PostFilterResult(node, victims), Success)`` nominates.
        ``(PostFilterResult(resume=...), Success)``: extenders must be asked first, and
        awaiting ``resume()`` gives the actual outcome, one of the above or an Error.
        """
        # 1) Is the preemptor allowed to preempt at all?
        nominated = pod.pod.status.nominated_node_name
        nominated_status = m.get(nominated) if nominated in m.statuses else _absent(m)
        ok, msg = self.iface.pod_eligible_to_preempt_others(pod, nominated_status)
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, msg)

        # 2) Candidates from a dry run on the nodes where removing pods may help.
        all_nodes = self.handle.snapshot.node_infos
        if not all_nodes:
            return None, Status(Code.ERROR, NO_NODES_AVAILABLE)
        candidates, statuses, errors = self.find_candidates(state, all_nodes, pod, m)
        if errors and not candidates:
            return None, Status(Code.ERROR, aggregate_errors(errors))
        if not candidates:
            statuses.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL)
            fe = FitError(pod.key, len(all_nodes), Diagnosis(node_to_status=statuses))
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, str(fe))

        # 3) Extenders that support preemption may drop candidates or change victims: their
        # HTTP calls, and so the choice, happen when the scheduling cycle resumes the result.
        if self._consults_extenders(pod):
            resume = functools.partial(self._resume, pod, candidates)
            return PostFilterResult(resume=resume), SUCCESS
        # 4) The best candidate.
        return self._choose(candidates)

    def _choose(self, candidates: Sequence[Candidate]) -> tuple[PostFilterResult | None, Status]:
        """Step 4: nominate the best candidate's node, its victims in the result."""
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, NO_CANDIDATE)
        result = PostFilterResult(best.name, list(best.victims.pods))
        fw = self.handle.framework
        if fw is not None:  # observeVictims (its pod-group parts are a group's only)
            violations = best.victims.num_pdb_violations
            fw.recorder.preemption_victims_chosen(POD_PREEMPTOR, len(result.victims), 0, violations)
        if not self.handle.features.at_least("1.37"):
            return result, SUCCESS
        # v1.37 says what it found: the FitError's PostFilter part after "preemption: "
        n = len(best.victims.pods)
        found = f"found a potential placement for pod on node {best.name}, preempting {n} victims"
        return result, Status(Code.SUCCESS, found)

    async def _resume(self, pod: PodInfo, candidates: list[Candidate]) -> PostFilterOutcome:
        """Steps 3 and 4 of ``preempt`` once extenders are involved."""
        candidates, st = await self.call_extenders(pod, candidates)
        if not st.is_success():
            return None, st
        return self._choose(candidates)

    def _consults_extenders(self, pod: PodInfo) -> bool:
        ext = self.handle.extenders
        return ext is not None and ext.preempts_for(pod)

    async def call_extenders(
        self, pod: PodInfo, candidates: Sequence[Candidate]
    ) -> tuple[list[Candidate], Status]:
        """``callExtenders``: the candidates the interested extenders with a preemptVerb
        agree with, each seeing what the previous one left; an Error status when a
        non-ignorable one fails (ignorable ones are skipped).

        Kept candidates keep their dry-run order (upstream: map order); nodes an extender
        added come after them.
        """
        ext = self.handle.extenders
        if ext is None:
            return list(candidates), SUCCESS
        victims = self.iface.candidates_to_victims_map(candidates)
        if not victims:
            return list(candidates), SUCCESS
        out, st = await ext.process_preemption(pod, victims, self.handle.snapshot)
        if not st.is_success():
            return [], st
        order = [n for n in victims if n in out] + [n for n in out if n not in victims]
        return [Candidate(n, out[n]) for n in order], SUCCESS

    def find_candidates(
        self, state: CycleState, all_nodes: Sequence[NodeInfo], pod: PodInfo, m: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """``findCandidates``: only nodes whose filter status was plain Unschedulable."""
        potential = nodes_for_status_code(m, all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            return [], NodeToStatus(), []
        offset, num = self.iface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, self._pdbs(), offset, num)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        potential_nodes: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """``DryRunPreemption``: victims per node on copies, from ``offset`` round-robin.

        Stops once ``num_candidates`` are found and at least one violates no PDB; each
        list keeps at most ``num_candidates`` (upstream's fixed-size candidate lists).
        Non-violating candidates come first. The statuses of the nodes without
        candidates are worded only if no candidate is found (the one case they are read).
        """
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[str] = []
        n = len(potential_nodes)
        select = self.iface.select_victims_on_node
        copy_state: Callable[[CycleState], CycleState] = getattr(
            self.iface, "copy_state_for_dry_run", CycleState.clone
        )
        in_place: Callable[..., Any] | None = getattr(self.iface, "select_victims_in_place", None)
        lazy = in_place is not None and getattr(self.iface, "dry_run_words_lazily", False)
        # every node's answer from one vector pass, where the plugin has one (None: a
        # node it cannot decide, left to the per-node path below)
        batch: Callable[..., Any] | None = getattr(self.iface, "select_victims_batch", None)
        decided = batch(state, pod, potential_nodes, pdbs) if batch is not None and lazy else None
        walk = getattr(decided, "walk", None)
        walked: tuple[list[Candidate], NodeToStatus, list[str]] | None = (
            walk(offset, num_candidates) if walk is not None else None
        )
        if walked is not None:
            return walked  # every node it passes decided by the vector pass
        unworded: list[tuple[int, NodeInfo]] = []
        for i in range(n):
            k = (offset + i) % n
            ni = potential_nodes[k]
            name = ni.name
            found = decided(k) if decided is not None else None
            if found is None and in_place is not None:
                found = (
                    in_place(state, pod, ni, pdbs, worded=False)
                    if lazy
                    else in_place(state, pod, ni, pdbs)
                )
            if found is None:
                found = select(copy_state(state), pod, ni.clone(), pdbs)
            pods, num_violations, st = found
            if st.is_success() and pods:
                c = Candidate(name, Victims(pods, num_violations))
                lst = non_violating if num_violations == 0 else violating
                if len(lst) < num_candidates:
                    lst.append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if st.is_success():
                st = Status(Code.ERROR, f'expected at least one victim pod on node "{name}"')
            if st.code == Code.ERROR:
                errors.append(st.message())
            elif st is UNWORDED:
                unworded.append((k, ni))
            statuses.set(name, st)
        if unworded:
            for k, ni in unworded:
                if non_violating or violating:
                    del statuses.statuses[ni.name]  # not read: no placeholder left behind
                    continue
                worded = decided.worded(k) if decided is not None else None
                if worded is None:
                    assert in_place is not None
                    worded = in_place(state, pod, ni, pdbs)[2]
                statuses.set(ni.name, worded)
        return non_violating + violating, statuses, errors

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        """``SelectCandidate``."""
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims_map = self.iface.candidates_to_victims_map(candidates)
        funcs = self.iface.ordered_score_funcs(victims_map)
        node = pick_one_node_for_preemption(victims_map, funcs)
        victims = victims_map.get(node)
        if victims is not None:
            return Candidate(node, victims)
        return candidates[0]
