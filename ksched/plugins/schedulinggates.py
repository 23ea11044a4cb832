"""SchedulingGates: pods with ``spec.schedulingGates`` stay out of activeQ."""

from __future__ import annotations

from ..framework.args import NoArgs
from ..framework.events import ActionType, EventResource
from ..framework.interface import ClusterEvent, ClusterEventWithHint, PreEnqueuePlugin, QueueingHint
from ..framework.status import Code, Status
from ..framework.types import PodInfo
from . import names

__all__ = ["SchedulingGates"]


class SchedulingGates(PreEnqueuePlugin[NoArgs]):
    name = names.SCHEDULING_GATES

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        gates = pod.pod.spec.scheduling_gates
        if not gates:
            return None
        gate_names = [g.name for g in gates]
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"waiting for scheduling gates: [{' '.join(gate_names)}]",
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        event = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
        return [ClusterEventWithHint(event, _gates_removed)]


def _gates_removed(pod: PodInfo, old: object, new: object) -> str:
    """Queue the gated pod itself once its last gate is gone (upstream compares UIDs)."""
    if (
        isinstance(new, PodInfo)
        and (new.uid or new.key) == (pod.uid or pod.key)
        and not new.pod.spec.scheduling_gates
    ):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
