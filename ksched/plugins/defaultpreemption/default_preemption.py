"""DefaultPreemption: make room for a pod that fits nowhere by evicting lower-priority pods.

A PostFilter plugin (upstream ``plugins/defaultpreemption``): on a node where the
preemptor failed only for reasons removing pods can fix, remove every lower-priority
pod, check the preemptor fits (accounting for pods nominated there), then give back
("reprieve") as many pods as still leave room — PDB-protected ones first, most
important first — so the victims are the fewest and least important. The node whose
victims hurt least is nominated; the scheduler evicts them and the preemptor is
scheduled there once they are gone.

PreEnqueue holds the preemptor back while the scheduler is still evicting its victims
(upstream's async preemption, on by default since v1.33), so it is not retried, and
does not preempt again, half-way.

At v1.37 with GenericWorkload preemption is workload-aware: a pod of a PodGroup counts at
its group's priority and a group with disruption mode ``all`` is one victim with all its
pods, whichever nodes they are on; and the plugin also serves PodGroupPostFilter, room for
a whole pod group (``podgroup_preemption``), whose members PreEnqueue then holds back by
their PodGroup's uid.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...api.objects import PodDisruptionBudget, PodSpec
from ...api.quantity import wrap_int64
from ...api.resources import Resource
from ...framework.args import ArgsErrors, Int32, KubeArgs
from ...framework.cycle_state import CycleState
from ...framework.events import ActionType, EventResource
from ...framework.handle import Handle, PluginsRunner
from ...framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    NodeOnlyFilter,
    NodeToStatus,
    PodGroupPostFilterPlugin,
    PodGroupSchedulingFunc,
    PostFilterOutcome,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    QueueingHint,
)
from ...framework.listers import Listers
from ...framework.podgroup import PodGroupInfo, PodGroupPostFilterResult, pod_group_of
from ...framework.preemption import POD_PREEMPTOR
from ...framework.runtime import _status
from ...framework.snapshot import BoolArray, Snapshot
from ...framework.status import SUCCESS, Code, Status
from ...framework.types import NodeInfo, PodInfo, add_requests
from ...util.gosort import sort_slice
from .. import names
from ..noderesources.fit import PRE_FILTER_STATE_KEY as FIT_PRE_FILTER_KEY
from ..noderesources.fit import Fit, fits_aggregates
from .batch import Pass, VictimTable, batch_dry_run
from .podgroup_preemption import (
    DomainVictim,
    Groups,
    PodGroupEvaluator,
    SnapshotMutations,
    cluster_victims,
    more_important_victim,
    scheduled_members,
    split_by_pdb,
)
from .preemption import (
    UNWORDED,
    Candidate,
    Evaluator,
    MoreImportantPodFunc,
    Victims,
    filter_pods_with_pdb_violation,
    more_important_pod,
    pod_terminating_by_preemption,
    sort_by_importance,
    victim_importance,
)

__all__ = [
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "IsEligiblePodFunc",
    "filter_pods_with_pdb_violation",
    "pod_terminating_by_preemption",
]

PREEMPT_NEVER = "Never"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS = "No preemption victims found for incoming pod"
WAITING = "waiting for the preemption for this pod to be finished"
WAITING_GROUP = "waiting for the preemption for this pod group to be finished"

IsEligiblePodFunc = Callable[[NodeInfo, PodInfo, PodInfo], bool]


class DefaultPreemptionArgs(KubeArgs):
    """``DefaultPreemptionArgs`` (v1 defaulting: 10 %, 100 nodes)."""

    min_candidate_nodes_percentage: Int32 = 10
    min_candidate_nodes_absolute: Int32 = 100

    def validate(self, errs: ArgsErrors) -> None:
        """``ValidateDefaultPreemptionArgs``: same checks, paths and messages."""
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        if pct < 0 or pct > 100:
            errs.invalid("minCandidateNodesPercentage", pct, "not in valid range [0, 100]")
        if absolute < 0:
            errs.invalid("minCandidateNodesAbsolute", absolute, "not in valid range [0, inf)")
        if pct == 0 and absolute == 0:
            errs.invalid(
                "minCandidateNodesPercentage",
                pct,
                "cannot be zero at the same time as minCandidateNodesAbsolute",
            )
            errs.invalid(
                "minCandidateNodesAbsolute",
                absolute,
                "cannot be zero at the same time as minCandidateNodesPercentage",
            )


class DefaultPreemption(
    PostFilterPlugin[DefaultPreemptionArgs],
    PreEnqueuePlugin[DefaultPreemptionArgs],
    PodGroupPostFilterPlugin[DefaultPreemptionArgs],
):
    name = names.DEFAULT_PREEMPTION
    # a member waits on its PodGroup's preemption (keyed by the group), not on its own
    pre_enqueue_per_pod_group = True
    Args = DefaultPreemptionArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle if handle is not None else Handle())
        self.handle: Handle
        # Extension hooks as upstream: extra victim eligibility (on top of lower
        # priority) and victim ordering, most important first.
        self.is_eligible_pod: IsEligiblePodFunc = _always
        self.more_important_pod: MoreImportantPodFunc = more_important_pod
        # Offset source: tests pin it; otherwise the handle's random source (the
        # scheduler's seeded one, else a fixed seed: deterministic either way).
        self.offset_rand: Callable[[int], int] | None = None
        self.evaluator = Evaluator(self.name, self.handle, self)
        self.pod_group_evaluator = PodGroupEvaluator(self)
        # ((snapshot, epoch, log position), its scheduled pod-group members)
        self._members_cache: tuple[tuple[Any, int, int], dict[str, Any]] | None = None
        # select_victims_in_place's plan for the last (state, pod) it saw
        self._plan: tuple[CycleState | None, PodInfo | None, _ResourcePlan | None] = (
            None,
            None,
            None,
        )
        # select_victims_batch's table of the snapshot's pods
        self._table: VictimTable | None = None

    # -- PostFilter ------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        try:
            return self._post_filter(state, pod, statuses)
        finally:
            # every attempt, whatever its outcome (upstream's deferred PreemptionAttempts.Inc)
            fw = self.handle.framework
            if fw is not None:
                fw.recorder.preemption_attempted()

    def _post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        started = time.perf_counter()
        result, st = self.evaluator.preempt(state, pod, statuses)
        resume = result.resume if result is not None else None
        if resume is not None:  # extenders to ask first: the same wording once resumed

            async def resumed() -> PostFilterOutcome:
                r, s = await resume()
                self._evaluated(s, started)
                return r, _worded(s)

            return PostFilterResult(resume=resumed), None
        self._evaluated(st, started)
        return result, _worded(st)

    def _evaluated(self, st: Status | None, started: float) -> None:
        """``scheduler_preemption_evaluation_duration_seconds`` of a pod (exposed with
        GenericWorkload)."""
        fw = self.handle.framework
        if fw is not None:
            code = st.code if st is not None else Code.SUCCESS
            fw.recorder.preemption_evaluated(
                POD_PREEMPTOR, code.label, time.perf_counter() - started
            )

    # -- PodGroupPostFilter (workload-aware preemption, v1.37 with GenericWorkload) ----------
    def pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        """``PodGroupPostFilter``: room for the whole group, found by dry-running its
        algorithm (``schedule``) on the snapshot without lower-priority victims; the
        snapshot is as it was when this returns."""
        st: Status | None = None
        try:
            mutations = SnapshotMutations(self.handle.snapshot)
            try:
                result, st = self.pod_group_evaluator.preempt(group, schedule, mutations)
            finally:
                mutations.end()
            msg = st.message()
            if msg:
                st = Status(st.code, "pod group preemption: " + msg)
            return result, st
        finally:
            fw = self.handle.framework
            if fw is not None:  # every attempt, labelled with its outcome
                code = st.code if st is not None else Code.ERROR
                fw.recorder.workload_preemption_attempted(code.label)

    # -- PreEnqueue (async preemption) --------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        running = self.handle.preempting
        if not running:
            return None
        group = self._group_preempting(pod)
        if group is not None:
            # A member waits for its group's preemption (keyed by the PodGroup's uid), not
            # for one of its own.
            key, message = group, WAITING_GROUP
        else:
            key, message = pod.uid or pod.key, WAITING
        entry = running.get(key) if key else None
        if entry is None:
            return None
        if not entry.running(self.handle.listers.store(Listers.PODS)):
            return None  # its last victim is going: the deletion events may requeue it
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)

    def _group_preempting(self, pod: PodInfo) -> str | None:
        """The key a member of a pod group is held back by (v1.37 with GenericWorkload):
        its PodGroup's uid (its ``namespace/name`` without one), "" when the PodGroup is
        unknown (nothing holds it back); None for a pod on its own."""
        if pod.pod.spec.scheduling_group is None:
            return None
        features = self.handle.features
        if not features.at_least("1.37"):
            return None
        if not features.enabled("GenericWorkload"):
            return None
        key = pod_group_of(pod.pod)
        groups = self.handle.listers.scheduling_pod_groups
        pg = groups.get(key) if groups is not None and key is not None else None
        if pg is None or key is None:
            return ""
        return pg.metadata.uid or key

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Assigned pod deletions un-gate a preemptor, but whether it is worth retrying is
        for the plugins that rejected it to say: this hint always skips (as upstream)."""
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE), _skip)
        ]

    # -- preemption.Interface ----------------------------------------------------------------
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """At least minCandidateNodesPercentage % / minCandidateNodesAbsolute, at most all."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self._offset(num_nodes), self.calculate_num_candidates(num_nodes)

    def _offset(self, num_nodes: int) -> int:
        if self.offset_rand is not None:
            return self.offset_rand(num_nodes)
        return self.handle.rng.randrange(num_nodes) if num_nodes > 0 else 0

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]:
        return {c.name: c.victims for c in candidates}

    def ordered_score_funcs(
        self, nodes_to_victims: Mapping[str, Victims]
    ) -> list[Callable[[str], float]] | None:
        return None

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Not with preemptionPolicy Never; not while victims it already chose on its
        nominated node are still terminating (unless that node became hopeless)."""
        spec: PodSpec = pod.pod.spec
        if spec.preemption_policy == PREEMPT_NEVER:
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.pod.status.nominated_node_name
        if nominated:
            if (
                nominated_node_status is not None
                and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            ):
                return True, ""
            ni = self.handle.snapshot.get(nominated)
            if ni is not None:
                groups = self._groups()
                for p in ni.pods:
                    if groups is not None:  # a victim counts at its group's priority
                        allowed = groups.priority(p) < pod.priority and self.is_eligible_pod(
                            ni, p, pod
                        )
                    else:
                        allowed = self._preemption_allowed(ni, p, pod)
                    if allowed and pod_terminating_by_preemption(p):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    # -- workload-aware victims (v1.37 with GenericWorkload) -----------------------------------
    def _groups(self) -> Groups | None:
        """The PodGroups when preemption is workload-aware (v1.37 with GenericWorkload):
        then a pod in a PodGroup counts at its group's priority and the pods of a group
        with disruption mode ``all`` go together (``GetVictimsOnNode``); else None."""
        features = self.handle.features
        if not features.at_least("1.37") or not features.enabled("GenericWorkload"):
            return None
        return Groups(self.handle.listers.scheduling_pod_groups)

    def _members(self) -> dict[str, list[tuple[PodInfo, str]]]:
        """``scheduled_members`` of the snapshot, kept while it does not change (a dry
        run asks for it once per node and changes copies only)."""
        snap = self.handle.snapshot
        key = (snap, snap.epoch, snap.log_position)
        cached = self._members_cache
        if cached is None or cached[0] != key:
            cached = self._members_cache = (key, scheduled_members(snap))
        return cached[1]

    def _victims_on_node(
        self, groups: Groups, node_info: NodeInfo, pod: PodInfo
    ) -> list[DomainVictim]:
        """``GetVictimsOnNode`` kept to those ``isPreemptionAllowedAcrossAllVictimNodes``:
        of lower priority, every pod eligible on its own node."""
        snap = self.handle.snapshot
        units = cluster_victims(snap, groups, [node_info], self._members())
        out = []
        for v in units:
            if v.priority >= pod.priority:
                continue
            if all(
                self.is_eligible_pod(
                    node_info if node == node_info.name else snap.get(node) or node_info, pi, pod
                )
                for pi, node in v.pods
            ):
                out.append(v)
        return out

    def _select_units(
        self,
        trial: _TrialLike,
        units: list[DomainVictim],
        node_name: str,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status]:
        """``_select`` over victims that may be whole PodGroups: a group's pods on other
        nodes leave those nodes as they are and only reach the PreFilter extensions (as
        upstream, which re-runs Filter on this node alone)."""
        snap = self.handle.snapshot

        def put(v: DomainVictim, add: bool) -> Status | None:
            for pi, node in v.pods:
                if node == node_name:
                    err = trial.add(pi) if add else trial.remove(pi)
                else:
                    err = trial.remote(pi, snap.get(node), add)
                if err is not None:
                    return err
            return None

        for v in units:
            if (err := put(v, False)) is not None:
                return [], 0, err
        st = trial.filter()
        if not st.is_success():
            return [], 0, st
        sort_slice(units, more_important_victim)
        violating, non_violating = split_by_pdb(units, pdbs)
        chosen: list[DomainVictim] = []
        num_violating = 0
        for v, count in [*violating, *((v, 0) for v in non_violating)]:
            if (err := put(v, True)) is not None:
                return [], 0, err
            if trial.fits():
                continue
            if (err := put(v, False)) is not None:
                return [], 0, err
            chosen.append(v)
            num_violating += count
        if violating and non_violating:
            sort_slice(chosen, more_important_victim)
        return [pi for v in chosen for pi, _ in v.pods], num_violating, SUCCESS

    def copy_state_for_dry_run(self, state: CycleState) -> CycleState:
        """The per-node copy of the cycle state the dry run hands to ``select_victims_on_node``.

        Only PreFilter extensions (AddPod/RemovePod) write to it here, so when no active
        PreFilter plugin has them the state is shared instead of cloned per node; what
        any plugin observes is the same.
        """
        fw = self.handle.framework
        if fw is None:
            return state.clone()
        skip = state.skip_filter_plugins
        for p in fw.pre_filter_plugins:
            if p.name not in skip and p.pre_filter_extensions() is not None:
                return state.clone()
        return state

    def dry_run_fits(self, state: CycleState, pod: PodInfo, ni: NodeInfo) -> bool:
        """``RunFilterPluginsWithNominatedPods`` passes ``pod`` on ``ni`` as it is now."""
        fw = self.handle.framework
        assert fw is not None, "DefaultPreemption needs its framework on the handle"
        return _Trial(fw, state, pod, ni, self._nominated_pods(pod, ni.name)).fits()

    def dry_run_extension(
        self, state: CycleState, pod: PodInfo, other: PodInfo, ni: NodeInfo, add: bool
    ) -> Status | None:
        """``other`` put on (or taken off) ``ni`` for ``pod``'s PreFilter extensions."""
        fw = self.handle.framework
        assert fw is not None, "DefaultPreemption needs its framework on the handle"
        return _run_extension(fw, state, pod, other, ni, add)

    def _preemption_allowed(self, ni: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        return victim.priority < preemptor.priority and self.is_eligible_pod(ni, victim, preemptor)

    def _nominated_pods(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        """Pods nominated to the node that the preemptor must leave room for
        (``addGENominatedPods``: priority >= the preemptor's, not itself)."""
        nominator = self.handle.nominator
        if nominator is None or not len(nominator):
            return []
        me = pod.uid or pod.key
        prio = pod.priority
        return [
            p
            for p in nominator.pods_for_node(node_name)
            if p.priority >= prio and (p.uid or p.key) != me
        ]

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        node_info: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status]:
        """``SelectVictimsOnNode`` on copies of the state and node: the fewest, least
        important pods whose removal lets ``pod`` pass every Filter plugin."""
        fw = self.handle.framework
        assert fw is not None, "DefaultPreemption needs its framework on the handle"
        groups = self._groups()
        if groups is not None:
            units = self._victims_on_node(groups, node_info, pod)
            if not units:
                return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
            nominated = self._nominated_pods(pod, node_info.name)
            trial = _Trial(fw, state, pod, node_info, nominated)
            return self._select_units(trial, units, node_info.name, pdbs)
        potential = [pi for pi in node_info.pods if self._preemption_allowed(node_info, pi, pod)]
        if not potential:
            # The node did not change, so filtering it again cannot help.
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        trial = _Trial(fw, state, pod, node_info, self._nominated_pods(pod, node_info.name))
        return self._select(trial, potential, pdbs)

    def _select(
        self, trial: _TrialLike, potential: list[PodInfo], pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[PodInfo], int, Status]:
        """Remove every potential victim, check the preemptor fits, then reprieve."""
        for pi in potential:
            err = trial.remove(pi)
            if err is not None:
                return [], 0, err
        # Not fitting even without every lower-priority pod: preemption cannot help here
        # (affinity to a victim is deliberately not considered, as upstream).
        st = trial.filter()
        if not st.is_success():
            return [], 0, st
        more_important = self.more_important_pod
        if more_important is more_important_pod and self.handle.features.at_least("1.37"):
            more_important = victim_importance(potential)
        sort_by_importance(potential, more_important)
        violating, non_violating = filter_pods_with_pdb_violation(
            potential, pdbs, first_violation_stops=self.handle.features.at_least("1.37")
        )
        victims: list[PodInfo] = []
        num_violating = 0
        for group, counts in ((violating, True), (non_violating, False)):
            for pi in group:
                # Reprieve: put it back; it stays a victim if the pod no longer fits.
                err = trial.add(pi)
                if err is not None:
                    return [], 0, err
                if trial.fits():
                    continue
                err = trial.remove(pi)
                if err is not None:
                    return [], 0, err
                victims.append(pi)
                if counts:
                    num_violating += 1
        if violating and non_violating:
            # Keep victims most important first (pickOneNodeForPreemption reads [0]).
            sort_by_importance(victims, more_important)
        return victims, num_violating, SUCCESS

    # -- the dry run without copies -------------------------------------------------------------
    def _resource_plan(self, state: CycleState, pod: PodInfo) -> _ResourcePlan | None:
        """The plan for (state, pod), built once per preemptor's dry run."""
        cached_state, cached_pod, plan = self._plan
        if cached_state is not state or cached_pod is not pod:
            plan = _ResourcePlan.build(self.handle.framework, state, pod)
            self._plan = (state, pod, plan)
        return plan

    def select_victims_batch(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
    ) -> Callable[[int], tuple[list[PodInfo], int, Status] | None] | None:
        """``select_victims_in_place(worded=False)`` for all of ``nodes`` in one vector pass
        (``batch.batch_dry_run``): a function of a node's index giving its answer, or None
        for a node the pass cannot decide; None when it applies to no node here.

        Where ``select_victims_in_place`` is exact and, besides, victims are single pods
        (not workload-aware) judged by the default eligibility and importance.
        """
        if type(self).select_victims_on_node is not DefaultPreemption.select_victims_on_node:
            return None
        if self.is_eligible_pod is not _always or self.more_important_pod is not more_important_pod:
            return None
        snap = self.handle.snapshot
        if not isinstance(snap, Snapshot) or self._groups() is not None:
            return None
        plan = self._resource_plan(state, pod)
        if plan is None:
            return None
        checks: list[Callable[[NodeInfo], bool] | BoolArray] = []
        for p in plan.others:
            fb = getattr(p, "filter_batch", None)
            if fb is None:
                checks.append(_passes(p, state, pod))
                continue
            try:
                checks.append(fb(state, pod, snap))
            except Exception:
                return None  # the per-node path words (or raises) as before
        if self._table is None:
            self._table = VictimTable()
        return batch_dry_run(
            self._table,
            snap,
            nodes,
            pod,
            plan.key,
            checks,
            self._nominated_by_node(pod, nodes),
            pdbs,
            v137=self.handle.features.at_least("1.37"),
            no_victims=NO_VICTIMS,
            word=functools.partial(_word, plan, pod),
        )

    def _nominated_by_node(
        self, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[str, list[PodInfo]] | None:
        """``_nominated_pods`` of every node that has some (None: nothing is nominated)."""
        nominator = self.handle.nominator
        if nominator is None or not len(nominator):
            return None
        me, prio = pod.uid or pod.key, pod.priority
        at_least = getattr(nominator, "nodes_at_least", None)
        node_of = getattr(nominator, "nominated_node", None)
        if callable(at_least) and callable(node_of):
            # the queue's nominator keeps these lists: only the preemptor's own node's
            # list (if it is nominated already) needs it taken out
            kept_lists: dict[str, list[PodInfo]] = dict(at_least(prio))
            mine = node_of(pod)
            if mine in kept_lists:
                kept = [p for p in kept_lists[mine] if (p.uid or p.key) != me]
                if kept:
                    kept_lists[mine] = kept
                else:
                    del kept_lists[mine]
            return kept_lists
        by_node = getattr(nominator, "nodes", None)
        if not callable(by_node):
            lists = {ni.name: nominator.pods_for_node(ni.name) for ni in nodes}
        else:
            lists = by_node()
        out: dict[str, list[PodInfo]] = {}
        for name, noms in lists.items():
            # as _nominated_pods: priority >= the preemptor's, not the preemptor itself
            kept = [p for p in noms if p.priority >= prio and (p.uid or p.key) != me]
            if kept:
                out[name] = kept
        return out

    #: ``select_victims_in_place`` takes ``worded`` (``Evaluator.dry_run_preemption``)
    dry_run_words_lazily = True

    def select_victims_in_place(
        self,
        state: CycleState,
        pod: PodInfo,
        node_info: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
        *,
        worded: bool = True,
    ) -> tuple[list[PodInfo], int, Status] | None:
        """``select_victims_on_node``'s result, computed from the node's aggregates without
        copying or changing it, or None when that shortcut is not exact here (the Evaluator
        then runs ``select_victims_on_node`` on a copy).

        Exact when the only active Filter plugin whose verdict depends on the pods on a
        node is the built-in NodeResourcesFit (the others read the Node alone and pass on
        it) and no PreFilter extension is active: then each of the dry run's Filter calls
        is Fit's verdict on (allocatable, requested, pod count), which is all this varies.
        That is the common case (preemption for resources), and it skips per node the
        NodeInfo copy, the pod list edits and a Filter pass per reprieve. ``worded=False``:
        a node the preemptor does not fit even without its victims gets ``UNWORDED``
        instead of Fit's reasons.
        """
        if type(self).select_victims_on_node is not DefaultPreemption.select_victims_on_node:
            return None  # a subclass decides differently: only its own method is exact
        plan = self._resource_plan(state, pod)
        if plan is None or node_info.error is not None:
            return None
        for st in plan.node_only(state, pod, node_info):
            if not st.is_success():
                return None
        pods = node_info.pods
        uids = {p.uid for p in pods}
        if len(uids) != len(pods) or "" in uids:
            return None  # remove_pod matches by uid: only unique uids remove what we count
        nominated = self._nominated_pods(pod, node_info.name)
        groups = self._groups()
        if groups is not None:
            units = self._victims_on_node(groups, node_info, pod)
            if not units:
                return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
            trial = _ResourceTrial(plan, pod, node_info, nominated, len(pods), worded)
            return self._select_units(trial, units, node_info.name, pdbs)
        potential = [pi for pi in pods if self._preemption_allowed(node_info, pi, pod)]
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        trial = _ResourceTrial(plan, pod, node_info, nominated, len(pods), worded)
        return self._select(trial, potential, pdbs)


class _TrialLike(Protocol):
    """A node under a dry run: pods taken off and put back, the preemptor judged."""

    def remove(self, pi: PodInfo) -> Status | None: ...

    def add(self, pi: PodInfo) -> Status | None: ...

    def remote(self, pi: PodInfo, ni: NodeInfo | None, add: bool) -> Status | None:
        """A pod of a victim PodGroup on another node, taken off or put back: through the
        PreFilter extensions only (that node is not judged)."""

    def filter(self) -> Status: ...

    def fits(self) -> bool: ...


@dataclass(slots=True)
class _ResourcePlan:
    """Which plugins ``select_victims_in_place`` consults for one (cycle, preemptor)."""

    fit: Fit
    others: list[Any]
    # Fit's reading of the preemptor and the scalar resources it checks
    key: Any
    names: tuple[str, ...]

    @classmethod
    def build(
        cls, fw: PluginsRunner | None, state: CycleState, pod: PodInfo
    ) -> _ResourcePlan | None:
        if fw is None or FIT_PRE_FILTER_KEY not in state:
            return None
        skip = state.skip_filter_plugins
        for p in fw.pre_filter_plugins:
            if p.name not in skip and p.pre_filter_extensions() is not None:
                return None
        fit: Fit | None = None
        others: list[Any] = []
        for p in fw.filter_plugins:
            if p.name in skip:
                continue
            if type(p) is Fit and fit is None:
                fit = p
            elif isinstance(p, NodeOnlyFilter):
                others.append(p)
            else:
                return None
        if fit is None:
            return None
        key = fit.mask_key(pod)
        return cls(fit, others, key, tuple(name for name, _ in key[4]))

    def node_only(self, state: CycleState, pod: PodInfo, ni: NodeInfo) -> Any:
        for p in self.others:
            yield _status(p.filter(state, pod, ni), p.name)


_NOTHING_ADDED: tuple[int, int, int, dict[str, int], int] = (0, 0, 0, {}, 0)


class _ResourceTrial:
    """A node's requested resources and pod count as the dry run removes and adds back
    pods (``NodeInfo.remove_pod``/``add_pod`` arithmetic), judged by Fit alone.

    The sums are plain ints of the resources Fit checks for this preemptor (int64
    wrapping commutes with the sums, so ``fits_aggregates`` wraps once at the end): a
    reprieve step is a few additions and comparisons, not a Resource copy and a Status.
    """

    __slots__ = (
        "alloc",
        "cpu",
        "eph",
        "key",
        "mem",
        "n",
        "names",
        "nominated",
        "plan",
        "pod",
        "scalar",
        "with_nominated",
        "worded",
    )

    def __init__(
        self,
        plan: _ResourcePlan,
        pod: PodInfo,
        ni: NodeInfo,
        nominated: list[PodInfo],
        n: int,
        worded: bool = True,
    ) -> None:
        self.plan, self.pod, self.nominated, self.worded = plan, pod, nominated, worded
        self.key, self.names = plan.key, plan.names
        self.alloc = ni.allocatable
        used = ni.requested
        self.cpu, self.mem, self.eph = used.milli_cpu, used.memory, used.ephemeral_storage
        self.scalar = {name: used.scalar.get(name, 0) for name in self.names}
        self.n = n
        # what the nominated pods add (RunFilterPluginsWithNominatedPods' first pass)
        if nominated:
            extra = Resource()
            for p in nominated:
                add_requests(extra, p.requests, 1)
            self.with_nominated = (
                extra.milli_cpu,
                extra.memory,
                extra.ephemeral_storage,
                {name: extra.scalar.get(name, 0) for name in self.names},
                len(nominated),
            )
        else:
            self.with_nominated = _NOTHING_ADDED

    def _step(self, pi: PodInfo, sign: int) -> None:
        r = pi.requests
        self.cpu += sign * r.milli_cpu
        self.mem += sign * r.memory
        self.eph += sign * r.ephemeral_storage
        if self.names and r.scalar:
            for name in self.names:
                self.scalar[name] += sign * r.scalar.get(name, 0)
        self.n += sign

    def remove(self, pi: PodInfo) -> Status | None:
        self._step(pi, -1)
        return None

    def add(self, pi: PodInfo) -> Status | None:
        self._step(pi, 1)
        return None

    def remote(self, pi: PodInfo, ni: NodeInfo | None, add: bool) -> Status | None:
        return None  # no PreFilter extension is active on this path

    def fits(self) -> bool:
        """``filter().is_success()``, without building statuses."""
        key, alloc = self.key, self.alloc
        if self.nominated:
            c, m, e, sc, k = self.with_nominated
            scalar = {name: v + sc[name] for name, v in self.scalar.items()}
            if not fits_aggregates(
                key, alloc, self.cpu + c, self.mem + m, self.eph + e, scalar, self.n + k
            ):
                return False
        return fits_aggregates(key, alloc, self.cpu, self.mem, self.eph, self.scalar, self.n)

    def filter(self) -> Status:
        """``_Trial.filter``: with the nominated pods added first, then without. A node
        that fits builds no Status (the plain-int check says so)."""
        if self.fits():
            return SUCCESS
        if not self.worded:
            return UNWORDED
        passes: list[Pass] = []
        if self.nominated:
            c, m, e, sc, k = self.with_nominated
            scalar = {name: v + sc[name] for name, v in self.scalar.items()}
            passes.append((self.cpu + c, self.mem + m, self.eph + e, scalar, self.n + k))
        passes.append((self.cpu, self.mem, self.eph, self.scalar, self.n))
        return _fit_status(self.plan.fit, self.pod, self.alloc, passes)


class _Trial:
    """One node's dry run: pods removed and added back (through the PreFilter extensions,
    skipped when no active PreFilter plugin has any) and Filter with the pods nominated there."""

    __slots__ = ("ext", "fw", "ni", "nominated", "pod", "state")

    def __init__(
        self,
        fw: PluginsRunner,
        state: CycleState,
        pod: PodInfo,
        ni: NodeInfo,
        nominated: list[PodInfo],
    ) -> None:
        self.fw, self.state, self.pod, self.ni, self.nominated = fw, state, pod, ni, nominated
        skip = state.skip_filter_plugins
        self.ext = any(
            p.name not in skip and p.pre_filter_extensions() is not None
            for p in fw.pre_filter_plugins
        )

    def remove(self, pi: PodInfo) -> Status | None:
        self.ni.remove_pod(pi)
        if not self.ext:
            return None
        return _run_extension(self.fw, self.state, self.pod, pi, self.ni, False)

    def add(self, pi: PodInfo) -> Status | None:
        self.ni.add_pod(pi)
        if not self.ext:
            return None
        return _run_extension(self.fw, self.state, self.pod, pi, self.ni, True)

    def remote(self, pi: PodInfo, ni: NodeInfo | None, add: bool) -> Status | None:
        if not self.ext or ni is None:
            return None
        return _run_extension(self.fw, self.state, self.pod, pi, ni, add)

    def fits(self) -> bool:
        return self.filter().is_success()

    def filter(self) -> Status:
        """``RunFilterPluginsWithNominatedPods``: fit with the nominated pods added, then
        without them. Without active extensions adding them cannot change the cycle state,
        so only the node is copied (the runtime's version also clones the state)."""
        fw = self.fw
        if not self.nominated:
            return fw.run_filter_plugins(self.state, self.pod, self.ni)
        if self.ext:
            return fw.run_filter_with_nominated_pods(self.state, self.pod, self.ni, self.nominated)
        with_nominated = self.ni.clone()
        for p in self.nominated:
            with_nominated.add_pod(p)
        st = fw.run_filter_plugins(self.state, self.pod, with_nominated)
        if not st.is_success():
            return st
        return fw.run_filter_plugins(self.state, self.pod, self.ni)


def _run_extension(
    fw: PluginsRunner, state: CycleState, pod: PodInfo, other: PodInfo, ni: NodeInfo, add: bool
) -> Status | None:
    """``other`` added to (or removed from) ``ni`` through every PreFilter extension, as
    the dry run words a failure; None on success."""
    if add:
        return _extension_status(fw.run_pre_filter_add_pod(state, pod, other, ni), "AddPod")
    return _extension_status(fw.run_pre_filter_remove_pod(state, pod, other, ni), "RemovePod")


def _extension_status(st: Status, op: str) -> Status | None:
    """A failing PreFilter extension as upstream's wrapped error status; None on success."""
    if st.is_success():
        return None
    if st.cause is not None:  # an exception, already worded by the runtime
        return Status(Code.ERROR, st.message(), plugin=st.plugin)
    return Status(
        Code.ERROR,
        f'running {op} on PreFilter plugin "{st.plugin}": {st.message()}',
        plugin=st.plugin,
    )


def _worded(st: Status | None) -> Status | None:
    """The Evaluator's status as the plugin reports it (upstream: "preemption: " + msg)."""
    if st is None or not st.message():
        return st
    return Status(st.code, "preemption: " + st.message())


def _always(ni: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
    return True


def _word(plan: _ResourcePlan, pod: PodInfo, ni: NodeInfo, passes: list[Pass]) -> Status:
    """``_ResourceTrial.filter`` on a node the preemptor does not fit even without its
    victims, for ``BatchAnswers.worded``."""
    return _fit_status(plan.fit, pod, ni.allocatable, passes)


def _fit_status(fit: Fit, pod: PodInfo, alloc: Resource, passes: list[Pass]) -> Status:
    """Fit's status of the first pass that fails (SUCCESS if none does)."""
    for cpu, mem, eph, scalar, n in passes:
        used = Resource(
            wrap_int64(cpu),
            wrap_int64(mem),
            wrap_int64(eph),
            scalar={name: wrap_int64(v) for name, v in scalar.items()},
        )
        st = _status(fit.verdict(pod, alloc, used, n), fit.name)
        if not st.is_success():
            return st
    return SUCCESS


def _passes(p: Any, state: CycleState, pod: PodInfo) -> Callable[[NodeInfo], bool]:
    """A Filter plugin without a batch form as a per-node predicate; a failure counts as
    not passing (the per-node path then decides that node, and words or raises)."""

    def check(ni: NodeInfo) -> bool:
        try:
            return _status(p.filter(state, pod, ni), p.name).is_success()
        except Exception:
            return False

    return check


def _skip(pod: PodInfo, old: Any, new: Any) -> str:
    return QueueingHint.SKIP
