"""GangScheduling: all or nothing for the pods of a PodGroup with a gang policy (v1.37,
GenericWorkload; upstream ``framework/plugins/gangscheduling``, without CompositePodGroups).

* PreEnqueue keeps a member out of activeQ until its PodGroup is observed and, for a gang,
  until ``minCount`` members are known to the scheduler's cache.
* Permit holds each member (Wait, 5 minutes) until ``minCount`` members are scheduled
  (assumed or bound), activating the unscheduled ones meanwhile; the member that makes
  the quorum allows the waiting ones.
* PlacementFeasible judges a pod-group cycle's progress on a placement: Unschedulable
  once ``minCount`` is out of reach, Wait until it is met.

It reads the cache's live pod-group states (``handle.pod_group_manager``, upstream's
``PodGroupManager``) and, in Permit, the PodGroup of the cycle's snapshot.
"""

from __future__ import annotations

from typing import Any

from ..api.workload import PodGroup
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    PermitPlugin,
    PlacementFeasiblePlugin,
    PreEnqueuePlugin,
    QueueingHint,
)
from ..framework.podgroup import PlacementProgress, PodGroupInfo, PodGroupState, pod_group_key
from ..framework.status import Code, Status
from ..framework.types import PodInfo
from . import names

__all__ = ["PERMIT_TIMEOUT", "GangScheduling"]

# permitTimeoutDuration: how long gang members wait at Permit for their quorum.
PERMIT_TIMEOUT = 5 * 60.0


def _group_name(pod: PodInfo) -> str | None:
    g = pod.pod.spec.scheduling_group
    return None if g is None else (g.pod_group_name or None)


def _min_count(pg: PodGroup) -> int:
    """``getMinCount``: the gang's minCount; 1 for a basic group."""
    gang = pg.spec.scheduling_policy.gang
    return 1 if gang is None else gang.min_count


class GangScheduling(
    PreEnqueuePlugin[NoArgs], PermitPlugin[NoArgs], PlacementFeasiblePlugin[NoArgs]
):
    name = names.GANG_SCHEDULING
    pre_enqueue_per_pod_group = True  # the PodGroup and its state, never the pod

    # -- PreEnqueue -------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """``preEnqueueHierarchiesDisabled``."""
        group = _group_name(pod)
        if group is None:
            return None
        manager = self.handle.pod_group_manager if self.handle is not None else None
        ns = pod.namespace
        pg = manager.pod_group(ns, group) if manager is not None else None
        if pg is None:
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f'waiting for pods\'s pod group "{group}" to appear in scheduling queue',
            )
        gang = pg.spec.scheduling_policy.gang
        if gang is None:
            return None
        state = manager.pod_group_state(ns, group) if manager is not None else None
        if state is None:
            return Status.as_error(f"pod group state not found for pod group {ns}/{group}")
        if state.all_pods_count() < gang.min_count:
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                "waiting for minCount pods from a gang to appear in scheduling queue",
            )
        return None

    # -- queueing hints ---------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A new member (pending or pre-bound) may complete the gang; the PodGroup's
        arrival, or a lower minCount, may too. ``schedulingGroup`` is immutable, so pod
        updates are not registered."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD), self._pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD), self._pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.ADD), self._pod_group_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.UPDATE),
                self._pod_group_updated,
            ),
        ]

    @staticmethod
    def _pod_added(pod: PodInfo, old: Any, new: Any) -> str:
        """``isSchedulableAfterPodAdded``: a pod of the same group."""
        group, added = _group_name(pod), new if isinstance(new, PodInfo) else None
        if added is None:
            return QueueingHint.QUEUE  # upstream: a conversion error means Queue
        other = _group_name(added)
        if group is None or other is None:
            return QueueingHint.SKIP
        if pod_group_key(added.namespace, other) == pod_group_key(pod.namespace, group):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _pod_group_added(pod: PodInfo, old: Any, new: Any) -> str:
        """``isSchedulableAfterPodGroupAdded``: the pod's own PodGroup."""
        if not isinstance(new, PodGroup):
            return QueueingHint.QUEUE
        group = _group_name(pod)
        if group is None:
            return QueueingHint.SKIP
        same = (new.metadata.namespace, new.metadata.name) == (pod.namespace, group)
        return QueueingHint.QUEUE if same else QueueingHint.SKIP

    @staticmethod
    def _pod_group_updated(pod: PodInfo, old: Any, new: Any) -> str:
        """``isSchedulableAfterPodGroupUpdated``: the pod's own gang, its minCount lowered."""
        if not isinstance(old, PodGroup) or not isinstance(new, PodGroup):
            return QueueingHint.QUEUE
        group = _group_name(pod)
        if group is None:
            return QueueingHint.SKIP
        if (new.metadata.namespace, new.metadata.name) != (pod.namespace, group):
            return QueueingHint.SKIP
        was, now = old.spec.scheduling_policy.gang, new.spec.scheduling_policy.gang
        if was is None or now is None or now.min_count >= was.min_count:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    # -- Permit -----------------------------------------------------------------------------
    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        """Wait for the gang's quorum of scheduled members, or allow them all."""
        group = _group_name(pod)
        if group is None or self.handle is None:
            return None, 0.0
        ns = pod.namespace
        snap = self.handle.snapshot
        st = snap.pod_group_state(ns, group)
        pg = None if st is None else st.pod_group
        if pg is None:
            why = "state" if st is None else "object"
            return Status.as_error(
                f"failed to get podGroup {ns}/{group}: pod group {why} not found for pod "
                f"group podgroup/{ns}/{group}"
            ), 0.0
        manager = self.handle.pod_group_manager
        live = manager.pod_group_state(ns, group) if manager is not None else None
        if live is None:
            return Status.as_error(f"pod group state not found for pod group {ns}/{group}"), 0.0
        return self._permit_pod_group(pg, live)

    def _permit_pod_group(self, pg: PodGroup, st: PodGroupState) -> tuple[Status | None, float]:
        gang = pg.spec.scheduling_policy.gang
        if gang is None:
            return None, 0.0
        assert self.handle is not None
        if st.scheduled_pods_count() < gang.min_count:
            # The rest of the gang may be waiting for this one: retry them now.
            self.handle.activate(st.unscheduled_pod_infos())
            return Status(Code.WAIT, "waiting for minCount pods from a gang to be scheduled"), (
                PERMIT_TIMEOUT
            )
        for uid in st.assumed_pods():
            wp = self.handle.waiting_pods.get(uid)
            if wp is not None:
                wp.allow(self.name)
        return None, 0.0

    # -- PlacementFeasible ------------------------------------------------------------------
    def placement_feasible(
        self, state: CycleState, group: PodGroupInfo, progress: PlacementProgress
    ) -> Status | None:
        """Unschedulable when even every remaining member cannot reach minCount; Wait
        while minCount is not met yet; success once it is (or for a basic group)."""
        need = _min_count(group.pod_group)
        remaining, scheduled = progress.remaining, progress.scheduled
        if remaining + scheduled < need:
            return Status(
                Code.UNSCHEDULABLE,
                f"minCount ({need}) cannot be satisfied: {scheduled} scheduled, "
                f"{remaining} remaining",
            )
        if scheduled < need:
            return Status(
                Code.WAIT,
                f"minCount ({need}) is not yet satisfied: {scheduled} scheduled, "
                f"{remaining} remaining",
            )
        return None
