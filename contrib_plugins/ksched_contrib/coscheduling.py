"""Coscheduling: gang scheduling with scheduler-plugins' PodGroup CRD.

Pods labelled ``scheduling.x-k8s.io/pod-group: NAME`` belong to the PodGroup NAME of
their namespace, and the group is placed all or nothing: each pod is assumed on a
node and parked at Permit until ``spec.minMember`` pods of its group are assumed or
bound, then all are released together. If the group cannot complete (a member does
not fit, or ``scheduleTimeoutSeconds`` runs out) every parked member is rejected and
its reservation freed, so a half-placed gang never holds capacity other pods could
use. Behaviour, messages and args follow kubernetes-sigs/scheduler-plugins'
``pkg/coscheduling``:

* QueueSort: priority, then the PodGroup's creationTimestamp (a pod without a group:
  its first queueing time), then group name, so a gang's pods are popped back to back.
* PreFilter: rejects a pod whose group has fewer than minMember pods in total, was
  rejected within ``podGroupBackoffSeconds``, or cannot fit ``spec.minResources``.
* PostFilter: when a member fits nowhere, rejects the group's parked members at once
  rather than letting each wait for its timeout.
* Permit / Unreserve: the wait, the release, and the group-wide rejection.

PodGroups and pods are read through ``handle.listers`` (see ``PODGROUPS_LISTER`` and
``PODS_LISTER``) because plugin extension points are synchronous and cannot await
the API; ``watch_resources`` has ``ksched run`` keep the PodGroup lister filled.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, ClassVar

import structlog
from ksched import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Handle,
    Listers,
    NodeInfo,
    NodeToStatus,
    PermitPlugin,
    PluginArgs,
    PodInfo,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    QueueSortPlugin,
    ReservePlugin,
    Resource,
    Snapshot,
    Status,
    WatchedResource,
)
from msgspec import Meta

from .podgroup import POD_GROUP_LABEL, PodGroup, parse_podgroup

__all__ = [
    "DEFAULT_PERMIT_WAITING_TIME_SECONDS",
    "PODGROUPS_LISTER",
    "PODGROUPS_PATH",
    "PODGROUP_RESOURCE",
    "PODS_LISTER",
    "Coscheduling",
]

NAME = "Coscheduling"
log = structlog.get_logger("ksched_contrib.coscheduling")
# handle.listers keys. "podgroups": Mapping "namespace/name" -> raw PodGroup object.
PODGROUPS_LISTER = "podgroups"
# Mapping (any key) -> PodInfo of every non-terminal pod, bound or pending (the daemon and
# simulate fill it). Without it (the extender server with no kubeconfig) only the
# snapshot's pods are counted.
PODS_LISTER = Listers.PODS
# Resource name of PodGroup cluster events, in upstream's GVK form.
PODGROUP_RESOURCE = "podgroups.v1alpha1.scheduling.x-k8s.io"
# The PodGroup collection ``ksched run`` watches into the lister (all namespaces).
PODGROUPS_PATH = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
# PostFilter leaves the parked members alone when at most this fraction is missing.
_SMALL_GAP = 0.1


def _pod_key(pod: PodInfo) -> str:
    return pod.uid or pod.key


def _in_group(pod: PodInfo, pg: PodGroup) -> bool:
    return pod.namespace == pg.namespace and pod.labels.get(POD_GROUP_LABEL) == pg.name


class CoschedulingArgs(PluginArgs):
    """``CoschedulingArgs`` (scheduler-plugins config v1)."""

    permit_waiting_time_seconds: Annotated[int, Meta(ge=1)] = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    pod_group_backoff_seconds: Annotated[int, Meta(ge=0)] = 0


class Coscheduling(
    QueueSortPlugin[CoschedulingArgs],
    PreFilterPlugin[CoschedulingArgs],
    PostFilterPlugin[CoschedulingArgs],
    PermitPlugin[CoschedulingArgs],
    ReservePlugin[CoschedulingArgs],
):
    name = NAME
    # ksched run: a PodGroup informer fills handle.listers["podgroups"] and reports changes.
    watch_resources: ClassVar[Sequence[WatchedResource]] = (
        WatchedResource(PODGROUPS_PATH, PODGROUPS_LISTER, PODGROUP_RESOURCE),
    )

    Args = CoschedulingArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle if handle is not None else Handle())
        self.permit_waiting_time = float(self.args.permit_waiting_time_seconds)
        self.pod_group_backoff = float(self.args.pod_group_backoff_seconds)
        # Group full name -> clock time until which its pods are rejected at PreFilter.
        self.backed_off: dict[str, float] = {}
        # Scheduler clock minus wall clock, fixed at first use so sort keys stay stable.
        self._clock_offset: float | None = None
        self._warned_no_lister = False

    @property
    def _handle(self) -> Handle:
        assert self.handle is not None
        return self.handle

    # -- lookups ---------------------------------------------------------------------------
    def podgroup(self, namespace: str, name: str) -> PodGroup | None:
        store = self._handle.listers.get(PODGROUPS_LISTER)
        if store is None:
            if not self._warned_no_lister:
                # Said once: otherwise every gang pod fails with "PodGroup not found"
                # and nothing tells the operator why.
                self._warned_no_lister = True
                log.warning(
                    "no PodGroup lister: every PodGroup counts as missing",
                    plugin=self.name,
                    lister=PODGROUPS_LISTER,
                )
            return None
        raw = store.get(f"{namespace}/{name}")
        return parse_podgroup(raw) if raw is not None else None

    def group_of(self, pod: PodInfo) -> tuple[str, PodGroup | None]:
        """``GetPodGroup``: the group's full name ("" without the label) and the PodGroup."""
        name = pod.labels.get(POD_GROUP_LABEL, "")
        if not name:
            return "", None
        return f"{pod.namespace}/{name}", self.podgroup(pod.namespace, name)

    def assigned(self, pg: PodGroup, exclude: PodInfo | None = None) -> int:
        """``CalculateAssignedPods``: members assumed or bound, from the cycle's snapshot."""
        skip = _pod_key(exclude) if exclude is not None else None
        n = 0
        for ni in self._handle.snapshot.node_infos:
            for p in ni.pods:
                if p.node_name and _in_group(p, pg) and _pod_key(p) != skip:
                    n += 1
        return n

    def group_pods(self, pg: PodGroup, current: PodInfo | None = None) -> dict[str, PodInfo]:
        """Every pod of the group, bound or pending (upstream lists them from the informer)."""
        h = self._handle
        out: dict[str, PodInfo] = {}
        store: Mapping[Any, PodInfo] | None = h.listers.get(PODS_LISTER)
        if store is not None:
            candidates: Iterable[PodInfo] = store.values()
        else:
            candidates = [p for ni in h.snapshot.node_infos for p in ni.pods]
        for p in candidates:
            if _in_group(p, pg):
                out.setdefault(_pod_key(p), p)
        if current is not None and _in_group(current, pg):
            out.setdefault(_pod_key(current), current)
        return out

    def _reject_waiting(self, pg: PodGroup, message: str) -> None:
        for wp in self._handle.waiting_pods:
            if _in_group(wp.pod, pg):
                wp.reject(self.name, message)

    def _activate_siblings(self, pg: PodGroup, pod: PodInfo) -> None:
        """``ActivateSiblings``: the group's pending pods go back to the active queue now
        that one member is parked at Permit, so the gang can assemble (the queue moves
        those in the pool or in backoff, and ignores the rest)."""
        me = _pod_key(pod)
        siblings = [p for k, p in self.group_pods(pg).items() if k != me and not p.node_name]
        if siblings:
            self._handle.activate(siblings)

    def _wait_time(self, pg: PodGroup) -> float:
        """``GetWaitTimeDuration``: the group's scheduleTimeoutSeconds, else the plugin arg."""
        if pg.schedule_timeout_seconds is not None:
            return float(max(0, pg.schedule_timeout_seconds))
        return self.permit_waiting_time

    # -- QueueSort -------------------------------------------------------------------------
    def _clock_time(self, epoch: float | None) -> float:
        """A wall-clock timestamp on the scheduler's clock (queue timestamps use the latter).

        A PodGroup without creationTimestamp sorts first, as Go's zero time does upstream.
        """
        if epoch is None:
            return float("-inf")
        if self._clock_offset is None:
            self._clock_offset = self._handle.clock.now() - time.time()
        return epoch + self._clock_offset

    def sort_key(self, qpi: Any) -> tuple[int, float, str, str]:
        """Priority (high first), group creation or pod queueing time, group name, pod name."""
        pod: PodInfo = qpi.pod_info
        initial = qpi.initial_attempt_timestamp
        t = float(initial if initial is not None else qpi.timestamp)
        group = pod.labels.get(POD_GROUP_LABEL, "")
        if not group:
            return (-pod.priority, t, pod.key, pod.key)
        try:
            pg = self.podgroup(pod.namespace, group)
        except Exception:
            # A malformed PodGroup is reported at PreFilter; a queue push must never fail.
            pg = None
        if pg is not None:
            t = self._clock_time(pg.creation_timestamp)
        return (-pod.priority, t, f"{pod.namespace}/{group}", pod.key)

    def less(self, a: Any, b: Any) -> bool:
        return self.sort_key(a) < self.sort_key(b)

    # -- PreFilter -------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        full, pg = self.group_of(pod)
        if pg is None:
            return None, None
        until = self.backed_off.get(full)
        if until is not None:
            if self._handle.clock.now() < until:
                return None, Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"podGroup {full} failed recently"
                )
            del self.backed_off[full]
        total = len(self.group_pods(pg, pod))
        if total < pg.min_member:
            return None, Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {total}, minMember of group: {pg.min_member}",
            )
        if pg.min_resources:
            gap = self._resource_gap(pg, nodes)
            if gap:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, gap)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def _resource_gap(self, pg: PodGroup, snap: Snapshot) -> str:
        """``CheckClusterResource``: can the cluster, not counting the group's own pods, hold
        minResources plus minMember pods? Returns the shortfall, or "" when it can."""
        assert pg.min_resources is not None
        want = Resource.from_list(pg.min_resources, f"PodGroup {pg.full_name}: spec.minResources")
        remaining = {
            CPU: want.milli_cpu,
            MEMORY: want.memory,
            EPHEMERAL_STORAGE: want.ephemeral_storage,
            PODS: pg.min_member,
            **want.scalar,
        }
        remaining = {k: v for k, v in remaining.items() if v > 0}
        for ni in snap.node_infos:
            if not remaining:
                break
            if ni.node is None:
                continue
            free = _free_without_group(ni, pg)
            for k in list(remaining):
                left = remaining[k] - free.get(k, 0)
                if left <= 0:
                    del remaining[k]
                else:
                    remaining[k] = left
        if not remaining:
            return ""
        parts = [f"{k}: {v}m" if k == CPU else f"{k}: {v}" for k, v in sorted(remaining.items())]
        return "resource gap: " + ", ".join(parts)

    # -- PostFilter ------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        full, pg = self.group_of(pod)
        if pg is None:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE, "can not find pod group")
        assigned = self.assigned(pg, pod)
        # Enough members are placed already: rejecting them would only undo a good gang.
        if assigned >= pg.min_member:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # A small gap: later members may still complete the quorum, keep the parked ones.
        if (pg.min_member - assigned) / pg.min_member <= _SMALL_GAP:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # One member fits nowhere, so its siblings very likely will not either: free the
        # parked members' reservations now instead of at their timeout.
        self._reject_waiting(pg, "optimistic rejection in PostFilter")
        if self.pod_group_backoff > 0 and len(self.group_pods(pg, pod)) >= pg.min_member:
            self.backed_off[full] = self._handle.clock.now() + self.pod_group_backoff
        return PostFilterResult(), Status(
            Code.UNSCHEDULABLE,
            f"PodGroup {full} gets rejected due to Pod {pod.name} is unschedulable even after "
            "PostFilter",
        )

    # -- Permit / Reserve ------------------------------------------------------------------
    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        full, pg = self.group_of(pod)
        if not full:
            return None, 0.0
        if pg is None:
            return Status(Code.UNSCHEDULABLE, "PodGroup not found"), 0.0
        assigned = self.assigned(pg, pod)
        # The pod itself is not in the snapshot yet, hence the +1.
        if assigned + 1 >= pg.min_member:
            for wp in self._handle.waiting_pods:
                if _in_group(wp.pod, pg):
                    wp.allow(self.name)
            return None, 0.0
        if assigned == 0:
            # Only the first member to park activates the others (scheduler-plugins#682).
            self._activate_siblings(pg, pod)
        return Status(Code.WAIT), self._wait_time(pg)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """One member failed after Reserve (timeout, rejection, bind error): the gang cannot
        complete, so its parked members give their reservations back too."""
        _, pg = self.group_of(pod)
        if pg is None:
            return
        self._reject_waiting(pg, "rejection in Unreserve")

    # -- queueing hints --------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A new sibling (PreFilter's "not enough pods") or a PodGroup change can help.

        Pods parked and rejected at Permit come back when a sibling reaches Permit and
        activates them, so unrelated pod additions are skipped.
        """
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ADD), _sibling_added),
            ClusterEventWithHint(ClusterEvent(PODGROUP_RESOURCE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(PODGROUP_RESOURCE, ActionType.UPDATE)),
        ]


def _sibling_added(pod: PodInfo, old: Any, new: Any) -> str:
    group = pod.labels.get(POD_GROUP_LABEL)
    if (
        group
        and isinstance(new, PodInfo)
        and new.namespace == pod.namespace
        and new.labels.get(POD_GROUP_LABEL) == group
    ):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _free_without_group(ni: NodeInfo, pg: PodGroup) -> dict[str, int]:
    """What the node has left if the group's own pods were not on it (``getNodeResource``)."""
    mine = [p for p in ni.pods if _in_group(p, pg)]
    alloc, req = ni.allocatable, ni.requested
    free = {
        CPU: alloc.milli_cpu - req.milli_cpu + sum(p.requests.milli_cpu for p in mine),
        MEMORY: alloc.memory - req.memory + sum(p.requests.memory for p in mine),
        EPHEMERAL_STORAGE: alloc.ephemeral_storage
        - req.ephemeral_storage
        + sum(p.requests.ephemeral_storage for p in mine),
        PODS: alloc.allowed_pod_number - (len(ni.pods) - len(mine)),
    }
    for k, v in alloc.scalar.items():
        free[k] = v - req.scalar.get(k, 0) + sum(p.requests.scalar.get(k, 0) for p in mine)
    return free
