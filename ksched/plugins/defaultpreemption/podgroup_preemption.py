"""Workload-aware preemption: victims for a whole pod group (upstream v1.37
``framework/preemption/podgrouppreemption.go`` and the victim types of ``types.go``).

The domain is the whole cluster. Every pod on a node is a potential victim, alone, or with
every scheduled pod of its PodGroup when that group's disruption mode is ``all`` (one
victim, evicted whole); a pod in a group counts at its group's priority. Every victim of
lower priority than the preemptor group is taken off the snapshot, then the group's own
scheduling algorithm (``schedule``, the cycle's) runs once over what is left; if the group
fits, the victims are given back one by one, most important first (PDB-violating ones
first), as long as every member still passes Filter on the node the algorithm proposed for
it. What could not be given back is evicted, and each member is nominated to its node.

The snapshot is changed in place for the dry run (``SnapshotMutations``, upstream's
``StartMutations``/``EndMutations``) so ``schedule`` sees it, and put back afterwards.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ...framework.cycle_state import CycleState
from ...framework.handle import Handle
from ...framework.interface import PodGroupSchedulingFunc
from ...framework.podgroup import (
    NominatingInfo,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
    ProposedAssignment,
    pod_group_key,
    pod_group_of,
)
from ...framework.preemption import (
    POD_GROUP_PREEMPTOR,
    POD_PREEMPTOR,
    PodGroupPreemptor,
    pod_group_priority,
)
from ...framework.recorder import NO_RECORDER, FrameworkRecorder
from ...framework.snapshot import Snapshot
from ...framework.status import Code, Status
from ...framework.types import NodeInfo, PodInfo
from ...util.errors import KschedError
from ...util.gosort import sort_slice
from .preemption import (
    Evaluator,
    filter_pods_with_pdb_violation,
    get_pod_start_time,
    pod_terminating_by_preemption,
)

if TYPE_CHECKING:
    from ...api.objects import PodDisruptionBudget
    from ...api.workload import PodGroup

__all__ = [
    "NO_VICTIMS_FOR_PREEMPTOR",
    "ONGOING",
    "DomainVictim",
    "Groups",
    "MutationError",
    "PodGroupEvaluator",
    "SnapshotMutations",
    "cluster_victims",
    "more_important_victim",
    "scheduled_members",
    "split_by_pdb",
]

NO_VICTIMS_FOR_PREEMPTOR = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
PREEMPT_NEVER = "Never"


class MutationError(KschedError):
    """A dry-run removal that found nothing to remove (upstream ``RemovePod``'s error)."""


class SnapshotMutations:
    """Pods taken off and put on the snapshot's nodes, in place, for a dry run everyone
    reading the snapshot sees (upstream's ``MutableSnapshotSharedLister``); ``end`` puts
    the original NodeInfos back.

    The first change to a node swaps in a copy of it (``Snapshot.replace``, which refreshes
    the node's columns and logs the row for per-row caches); later changes edit that copy
    and refresh the row again. Nothing the cache or another cycle holds is touched.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._originals: dict[int, NodeInfo] = {}

    def _editable(self, node_name: str) -> tuple[int, NodeInfo]:
        snap = self.snapshot
        i = snap.row(node_name)
        if i is None:
            raise MutationError(f'node "{node_name}" not found in the snapshot')
        ni = snap.node_infos[i]
        if i not in self._originals:
            self._originals[i] = ni
            ni = ni.clone()
        return i, ni

    def remove_pod(self, pod: PodInfo, node_name: str) -> None:
        i, ni = self._editable(node_name)
        if not ni.remove_pod(pod):
            raise MutationError(f"no corresponding pod {pod.name} in pods of node {node_name}")
        self.snapshot.replace(i, ni)

    def add_pod(self, pod: PodInfo, node_name: str) -> None:
        i, ni = self._editable(node_name)
        ni.add_pod(pod)
        self.snapshot.replace(i, ni)

    def end(self) -> None:
        """Every changed node back as it was, in the order they were first changed."""
        for i, ni in self._originals.items():
            self.snapshot.replace(i, ni)
        self._originals.clear()


# ---- victims (types.go) ---------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class DomainVictim:
    """What is evicted as one unit (upstream ``DomainVictim``): one pod, or every scheduled
    pod of a disruption-mode-``all`` PodGroup; ``pods`` pairs each pod with its node.

    ``kind`` is upstream's key type: ``podgroup`` for a group and for a lone pod that names
    a scheduling group, ``pod`` otherwise. ``earliest_start``: the earliest start of its pods,
    +inf when none started; ``order``, its place in the cluster's listing, orders two such
    (upstream reads ``time.Now()`` for them one after another).
    """

    pods: list[tuple[PodInfo, str]]
    priority: int
    kind: str
    order: int
    earliest_start: float = field(init=False)

    def __post_init__(self) -> None:
        self.earliest_start = min((get_pod_start_time(pi) for pi, _ in self.pods), default=math.inf)

    @property
    def is_group(self) -> bool:
        return self.kind == POD_GROUP_PREEMPTOR


def more_important_victim(v1: DomainVictim, v2: DomainVictim) -> bool:
    """``MoreImportantVictim``: higher priority; then a group before a lone pod; then more
    pods; then the one started earlier."""
    if v1.priority != v2.priority:
        return v1.priority > v2.priority
    if v1.kind != v2.kind:
        return v1.is_group
    if len(v1.pods) != len(v2.pods):
        return len(v1.pods) > len(v2.pods)
    t1, t2 = v1.earliest_start, v2.earliest_start
    if t1 == math.inf and t2 == math.inf:
        return v1.order < v2.order
    return t1 < t2


class Groups:
    """The PodGroups (GenericWorkload's lister) and what preemption reads of them."""

    def __init__(self, pod_groups: Mapping[str, PodGroup] | None) -> None:
        self.pod_groups: Mapping[str, PodGroup] = pod_groups or {}

    def get(self, pod: PodInfo) -> PodGroup | None:
        key = pod_group_of(pod.pod)
        return self.pod_groups.get(key) if key is not None else None

    def priority(self, pod: PodInfo) -> int:
        """``GetPodPriority``: its group's priority when the group exists, else its own."""
        pg = self.get(pod)
        return pod_group_priority(pg) if pg is not None else pod.priority

    def disrupted_whole(self, pod: PodInfo) -> str | None:
        """``getHighestAllAncestor``: the key of its group when that group goes as a whole
        (disruption mode ``all``)."""
        pg = self.get(pod)
        if pg is None or pg.spec.disruption_mode is None or pg.spec.disruption_mode.all is None:
            return None
        return pod_group_key(pod.namespace, pg.metadata.name)


def cluster_victims(
    snapshot: Snapshot,
    groups: Groups,
    nodes: Sequence[NodeInfo] | None = None,
    members: Mapping[str, list[tuple[PodInfo, str]]] | None = None,
) -> list[DomainVictim]:
    """``getCrossNodesVictims`` over ``nodes`` (every node of the snapshot by default):
    each pod once, each all-or-nothing group once (with all its scheduled pods in the
    snapshot, in node order, at the first of them). ``members``: ``scheduled_members``
    of the snapshot, when the caller keeps it."""
    seen: set[tuple[str, str]] = set()
    victims: list[DomainVictim] = []
    for ni in snapshot.node_infos if nodes is None else nodes:
        for pi in ni.pods:
            whole = groups.disrupted_whole(pi)
            if whole is None:
                key = (POD_PREEMPTOR, pi.key)
                if key not in seen:
                    seen.add(key)
                    kind = (
                        POD_PREEMPTOR
                        if pi.pod.spec.scheduling_group is None
                        else POD_GROUP_PREEMPTOR
                    )
                    victims.append(
                        DomainVictim([(pi, ni.name)], groups.priority(pi), kind, len(victims))
                    )
                continue
            key = (POD_GROUP_PREEMPTOR, whole)
            if key in seen:
                continue
            seen.add(key)
            if members is None:
                members = scheduled_members(snapshot)
            pods = members.get(whole) or [(pi, ni.name)]
            victims.append(
                DomainVictim(list(pods), groups.priority(pi), POD_GROUP_PREEMPTOR, len(victims))
            )
    return victims


def scheduled_members(snapshot: Snapshot) -> dict[str, list[tuple[PodInfo, str]]]:
    """Assumed and bound pods per pod group (``PodGroupState.ScheduledPods``), as the
    snapshot's nodes hold them, in node order (upstream's order is a map's)."""
    out: dict[str, list[tuple[PodInfo, str]]] = {}
    for ni in snapshot.node_infos:
        for pi in ni.pods:
            key = pod_group_of(pi.pod)
            if key is not None:
                out.setdefault(key, []).append((pi, ni.name))
    return out


# ---- the evaluator (podgrouppreemption.go) ------------------------------------------------


@dataclass(slots=True)
class _Selection:
    nominations: dict[str, NominatingInfo]
    victims: list[DomainVictim]
    num_pdb_violations: int


class PreemptionPlugin(Protocol):
    """What a pod group's preemption uses of DefaultPreemption (which builds it here, so
    this module does not import the plugin back): its handle, its single-pod evaluator
    (the PDBs) and its dry-run checks."""

    @property
    def handle(self) -> Handle: ...

    @property
    def evaluator(self) -> Evaluator: ...

    def dry_run_fits(self, state: CycleState, pod: PodInfo, ni: NodeInfo) -> bool: ...

    def dry_run_extension(
        self, state: CycleState, pod: PodInfo, other: PodInfo, ni: NodeInfo, add: bool
    ) -> Status | None: ...


class PodGroupEvaluator:
    """``PodGroupEvaluator`` without eviction: the result carries the victims and the
    scheduler evicts them, as for a single pod's preemption."""

    def __init__(self, plugin: PreemptionPlugin) -> None:
        self.plugin = plugin

    @property
    def handle(self) -> Handle:
        return self.plugin.handle

    def _recorder(self) -> FrameworkRecorder:
        fw = self.handle.framework
        return fw.recorder if fw is not None else NO_RECORDER

    def preempt(
        self, group: PodGroupInfo, schedule: PodGroupSchedulingFunc, mutations: SnapshotMutations
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        """``Preempt``: not eligible (policy Never) -> Unschedulable; victims of an earlier
        preemption still terminating on a member's nominated node -> Success keeping the
        nominations; else the victims and nominations, or the status that prevents them."""
        handle = self.handle
        groups = Groups(handle.listers.scheduling_pod_groups)
        snapshot: Snapshot = handle.snapshot
        victims = cluster_victims(snapshot, groups)
        preemptor = PodGroupPreemptor(group.pod_group, list(group.unscheduled_pods))
        if any(p.pod.spec.preemption_policy == PREEMPT_NEVER for p in preemptor.pods):
            return None, Status(Code.UNSCHEDULABLE, NOT_ELIGIBLE_NEVER)
        if self._ongoing(preemptor, groups, snapshot):
            current = {
                p.key: NominatingInfo(p.pod.status.nominated_node_name) for p in preemptor.pods
            }
            return PodGroupPostFilterResult(current), Status(Code.SUCCESS, ONGOING)

        recorder = self._recorder()
        started = time.perf_counter()
        code = Code.ERROR
        try:
            pdbs = self.plugin.evaluator._pdbs()
            sel, st = self._select(preemptor, victims, pdbs, schedule, mutations)
            code = st.code
        finally:
            elapsed = time.perf_counter() - started
            recorder.preemption_evaluated(POD_GROUP_PREEMPTOR, code.label, elapsed)
        if sel is None:
            return None, st
        pods = [pi for v in sel.victims for pi, _ in v.pods]
        disruptions = sum(1 for v in sel.victims if v.is_group)
        # upstream's observeVictims, as the (asynchronous) actuation starts
        recorder.preemption_victims_chosen(
            POD_GROUP_PREEMPTOR, len(pods), disruptions, sel.num_pdb_violations
        )
        result = PodGroupPostFilterResult(
            sel.nominations, pods, sel.num_pdb_violations, disruptions
        )
        found = f"found a placement for podgroup, preempting {len(pods)} victims"
        return result, Status(Code.SUCCESS, found)

    def _ongoing(self, preemptor: PodGroupPreemptor, groups: Groups, snapshot: Snapshot) -> bool:
        """``isOngoingPreemption``: a lower-priority pod on a member's nominated node is
        being deleted by a preemption."""
        nominated = {p.pod.status.nominated_node_name for p in preemptor.pods} - {""}
        for name in nominated:
            ni = snapshot.get(name)
            if ni is None:
                continue
            for p in ni.pods:
                if groups.priority(p) < preemptor.priority and pod_terminating_by_preemption(p):
                    return True
        return False

    def _select(
        self,
        preemptor: PodGroupPreemptor,
        all_victims: list[DomainVictim],
        pdbs: Sequence[PodDisruptionBudget],
        schedule: PodGroupSchedulingFunc,
        mutations: SnapshotMutations,
    ) -> tuple[_Selection | None, Status]:
        """``selectVictimsOnDomain``."""
        potential = [v for v in all_victims if v.priority < preemptor.priority]
        if not potential:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS_FOR_PREEMPTOR)
        try:
            for v in potential:
                for pi, node in v.pods:
                    mutations.remove_pod(pi, node)
        except MutationError as e:
            return None, Status(Code.ERROR, str(e))
        # The group's algorithm over the cluster without every potential victim.
        assignments, st = schedule()
        if st is not None and not st.is_success():
            return None, st

        sort_slice(potential, more_important_victim)
        violating, non_violating = split_by_pdb(potential, pdbs)
        valid = _valid(assignments)
        trial = _Reprieve(self.plugin, mutations, valid)
        chosen: list[DomainVictim] = []
        num_violations = 0
        try:
            for v, count in violating:
                if not trial.reprieve(v):
                    chosen.append(v)
                    num_violations += count
            for v in non_violating:
                if not trial.reprieve(v):
                    chosen.append(v)
        except _ReprieveError as e:
            return None, e.status
        sort_slice(chosen, more_important_victim)
        nominations = {a.pod.key: NominatingInfo(a.node_name) for a in valid}
        return _Selection(nominations, chosen, num_violations), Status(Code.SUCCESS)


def split_by_pdb(
    victims: Sequence[DomainVictim], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[tuple[DomainVictim, int]], list[DomainVictim]]:
    """``FilterVictimsWithPDBViolation``: a victim violates when any of its pods does
    (each counted); the budgets are spent pod by pod in victim order, as one pass of the
    per-pod filter over all their pods gives."""
    flat = [pi for v in victims for pi, _ in v.pods]
    bad, _ = filter_pods_with_pdb_violation(flat, pdbs, first_violation_stops=True)
    bad_ids = {id(p) for p in bad}
    violating: list[tuple[DomainVictim, int]] = []
    non_violating: list[DomainVictim] = []
    for v in victims:
        n = sum(1 for pi, _ in v.pods if id(pi) in bad_ids)
        if n:
            violating.append((v, n))
        else:
            non_violating.append(v)
    return violating, non_violating


def _valid(assignments: PodGroupAssignments | None) -> list[ProposedAssignment]:
    """The proposed assignments that name a node, in the algorithm's order."""
    if assignments is None:
        return []
    return [a for a in assignments.assignments if a.node_name]


class _ReprieveError(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


class _Reprieve:
    """``reprieveVictim``: give a victim back and see whether every member still passes
    Filter on its proposed node, the members before it assumed there and reserved (each
    member's cycle state saw the earlier ones assumed already)."""

    def __init__(
        self,
        plugin: PreemptionPlugin,
        mutations: SnapshotMutations,
        valid: list[ProposedAssignment],
    ) -> None:
        fw = plugin.handle.framework
        assert fw is not None, "DefaultPreemption needs its framework on the handle"
        self.fw = fw
        self.plugin = plugin
        self.mutations = mutations
        self.valid = valid

    def _node(self, name: str) -> NodeInfo:
        ni = self.mutations.snapshot.get(name)
        if ni is None:
            raise _ReprieveError(Status(Code.ERROR, f'node "{name}" not found in the snapshot'))
        return ni

    def _put(self, v: DomainVictim, add: bool) -> None:
        """The victim's pods back on (or off) their nodes, through every member's
        PreFilter extensions (the node as changed)."""
        for pi, node in v.pods:
            try:
                if add:
                    self.mutations.add_pod(pi, node)
                else:
                    self.mutations.remove_pod(pi, node)
            except MutationError as e:
                raise _ReprieveError(Status(Code.ERROR, str(e))) from None
            ni = self._node(node)
            for a in self.valid:
                err = self.plugin.dry_run_extension(a.state, a.pod, pi, ni, add)
                if err is not None:
                    raise _ReprieveError(err)

    def reprieve(self, v: DomainVictim) -> bool:
        """True: the group still fits with ``v`` back (it stays). False: ``v`` is taken off
        again and must go."""
        self._put(v, add=True)
        placed: list[tuple[ProposedAssignment, PodInfo]] = []
        try:
            for a in self.valid:
                if not self.plugin.dry_run_fits(a.state, a.pod, self._node(a.node_name)):
                    self._put(v, add=False)
                    return False
                # As if assumed there and reserved; the later members' states already
                # count it (the algorithm assumed it before trying them).
                assumed = a.pod.assumed_on(a.node_name)
                self.mutations.add_pod(assumed, a.node_name)
                self.fw.run_reserve(a.state, a.pod, a.node_name)
                placed.append((a, assumed))
            return True
        finally:
            for a, assumed in reversed(placed):
                self.fw.run_unreserve(a.state, a.pod, a.node_name)
                self.mutations.remove_pod(assumed, a.node_name)
