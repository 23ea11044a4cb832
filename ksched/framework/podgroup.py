"""The pod-group vocabulary of workload-aware scheduling (GenericWorkload, v1.37).

Upstream spreads these over ``k8s.io/kube-scheduler/framework`` (``types.go``: PodGroupInfo,
Placement, ProposedAssignment, PodGroupAssignments; ``listers.go``: PodGroupState;
``interface.go``: the placement results) and ``pkg/scheduler/framework`` (PlacementProgress).
Here they are one module that the queue, the pod-group cycle and the plugins share; the
plugin base classes of the new extension points are in ``interface`` with the others.

A pod group is scheduled as one unit: the queue pops every queued member together, the
cycle tries placements (sets of nodes) and keeps the pods' assignments of the best one,
or none of them (all or nothing, as GangScheduling's PlacementFeasible decides).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .cycle_state import CycleState
from .types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from ..api.objects import Pod
    from ..api.workload import PodGroup

__all__ = [
    "GeneratePlacementsResult",
    "NominatingInfo",
    "Placement",
    "PlacementProgress",
    "PlacementScore",
    "PodGroupAssignments",
    "PodGroupInfo",
    "PodGroupManager",
    "PodGroupPostFilterResult",
    "PodGroupState",
    "ProposedAssignment",
    "pod_group_key",
    "pod_group_of",
]


def pod_group_key(namespace: str, name: str) -> str:
    """The key a pod group is known by in the queue, the cache and the listers."""
    return f"{namespace}/{name}"


def pod_group_of(pod: Pod) -> str | None:
    """The key of the pod group ``pod`` belongs to (``spec.schedulingGroup.podGroupName``),
    None for a pod scheduled alone."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return None
    return pod_group_key(pod.metadata.namespace, group.pod_group_name)


@dataclass(slots=True)
class PodGroupInfo:
    """A pod group as one scheduling cycle sees it (upstream's ``PodGroupInfo``).

    ``unscheduled_pods``: the members this cycle considers, in the queue's order (priority,
    then arrival); members already assumed or bound are in the ``PodGroupState``.
    """

    namespace: str
    name: str
    pod_group: PodGroup
    unscheduled_pods: list[PodInfo] = field(default_factory=list)

    @property
    def key(self) -> str:
        return pod_group_key(self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class Placement:
    """A candidate set of nodes for a whole pod group (upstream's ``fwk.Placement``): the
    cycle schedules the group on these nodes only. ``name`` is for diagnostics; the
    generating plugin chooses it (TopologyPlacementGenerator: the domain, the label's value)."""

    name: str
    nodes: Sequence[NodeInfo]


@dataclass(slots=True)
class ProposedAssignment:
    """A member's node under one placement, with the cycle state its attempt produced."""

    pod: PodInfo
    node_name: str
    state: CycleState


@dataclass(slots=True)
class PodGroupAssignments:
    """Every proposed assignment of a feasible placement, as PlacementScore plugins get it."""

    placement: Placement
    assignments: list[ProposedAssignment]


@dataclass(slots=True)
class GeneratePlacementsResult:
    """A PlacementGenerate plugin's placements; they may overlap. Empty: none is valid."""

    placements: list[Placement] = field(default_factory=list)


@dataclass(slots=True)
class PlacementScore:
    """One plugin's score of one placement, before and after its normalization."""

    placement: Placement
    score: int


@dataclass(slots=True)
class PlacementProgress:
    """What a PlacementFeasible plugin judges by: members left to try in this cycle
    (``remaining``) and members scheduled so far, assumed and bound included."""

    remaining: int
    scheduled: int


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    """A node a member is nominated to after workload-aware preemption."""

    node_name: str


@dataclass(slots=True)
class PodGroupPostFilterResult:
    """Nominations per member (``namespace/name`` -> node) after a successful preemption.

    As the per-pod ``PostFilterResult``, the victims travel in the result and the scheduler
    evicts them (``Scheduler.preempt_pod_group``); ``num_pdb_violations`` and
    ``num_pod_group_disruptions`` are the chosen candidate's, for the record."""

    nominating_infos: dict[str, NominatingInfo] = field(default_factory=dict)
    victims: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0
    num_pod_group_disruptions: int = 0


class PodGroupState(Protocol):
    """A pod group's members as the scheduler's cache knows them (upstream's
    ``fwk.PodGroupState``); ``scheduled`` means assumed or bound."""

    def all_pods_count(self) -> int: ...

    def unscheduled_pods(self) -> Mapping[str, Pod]: ...

    def assumed_pods(self) -> frozenset[str]: ...

    def assigned_pods(self) -> frozenset[str]: ...

    def scheduled_pods(self) -> list[Pod]: ...

    def scheduled_pods_count(self) -> int: ...

    def unscheduled_pod_infos(self) -> list[PodInfo]:
        """The unscheduled members as ``handle.activate`` takes them (ksched's addition:
        upstream activates the ``unscheduled_pods`` map)."""
        ...


class PodGroupManager(Protocol):
    """Pod groups' states and objects (upstream's ``PodGroupStateLister`` and
    ``PodGroupLister``): ``handle.pod_group_manager`` is the cache's live view (upstream's
    ``Handle.PodGroupManager()``), ``handle.snapshot`` the cycle's (upstream's
    ``SnapshotSharedLister()``). None where upstream's listers return an error: the gate
    is off, no such group, or (``pod_group``) its object is not observed yet."""

    def pod_group_state(self, namespace: str, name: str) -> PodGroupState | None: ...

    def pod_group(self, namespace: str, name: str) -> PodGroup | None: ...
