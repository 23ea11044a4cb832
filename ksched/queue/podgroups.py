"""A pod group as one queue entity (upstream's ``QueuedPodGroupInfo``).

With GenericWorkload on, the members of a pod group are not queued one by one: they wait
while their PodGroup is unknown ("incomplete") or while the group is in flight
("pending"), and otherwise ride in one entity that the queue sorts, backs off and pops like
a pod. The pod-group cycle (``ksched.scheduler.schedule_one_podgroup``) gets the entity,
tries all its members together and hands it back with ``add_attempted_pod_group_if_needed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..framework.podgroup import PodGroupInfo
from .scheduling_queue import QueuedPodInfo

__all__ = ["QueuedPodGroupInfo"]


@dataclass(slots=True, eq=False)
class QueuedPodGroupInfo:
    """``members``: the queued pods this entity carries, in the queue's order (priority,
    then arrival); ``info.unscheduled_pods`` mirrors them for plugins. The entity's own
    attempts and timestamps drive its backoff, as a pod's do."""

    info: PodGroupInfo
    profile: str
    members: list[QueuedPodInfo] = field(default_factory=list)
    timestamp: float = 0.0
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    unschedulable_count: int = 0
    consecutive_errors: int = 0

    @property
    def key(self) -> str:
        return self.info.key

    @property
    def priority(self) -> int:
        """The group's priority: its PodGroup's, which every member must share."""
        p = self.info.pod_group.spec.priority
        if p is not None:
            return p
        return self.members[0].priority if self.members else 0
