"""A pod group as one queue entity (upstream's ``QueuedPodGroupInfo``).

With GenericWorkload on, the members of a pod group are not queued one by one: they wait
while their PodGroup is unknown ("incomplete") or while the group is in flight
("pending"), and otherwise ride in one entity that the queue sorts, backs off and pops like
a pod. The pod-group cycle (``ksched.scheduler.schedule_one_podgroup``) gets the entity,
tries all its members together and hands it back with ``add_attempted_pod_group_if_needed``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..framework.podgroup import PodGroupInfo, pod_group_of
from ..framework.status import Status
from .queued_pod import QueuedPodInfo

__all__ = ["ENTITY_KEY_PREFIX", "MemberPods", "QueuedPodGroupInfo", "member_order"]

# Queue keys of group entities: "PodGroup/ns/name" never equals a pod's (uid or "ns/name").
ENTITY_KEY_PREFIX = "PodGroup/"


def member_order(q: QueuedPodInfo) -> tuple[int, int, float, str]:
    """``PodGroupMemberPodsOrderingFunc``: priority (high first), attempts (more first, as
    timestamps are renewed every cycle), timestamp, then name."""
    return (-q.priority, -q.attempts, q.timestamp, q.pod_info.pod.metadata.name)


@dataclass(slots=True, eq=False)
class QueuedPodGroupInfo:
    """``members``: the queued pods this entity carries, in the queue's order (priority,
    then arrival); ``info.unscheduled_pods`` mirrors them for plugins. The entity's own
    attempts and timestamps drive its backoff, as a pod's do; the gating fields say which
    PreEnqueue plugin holds the whole group back (any gated member gates it)."""

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
    gated: bool = False
    gating_plugin: str = ""
    gating_status: Status | None = None
    flushed: bool = False
    # The cached backoff expiry (upstream's BackoffExpiration), reset by an attempt.
    backoff_expiration: float | None = None

    @property
    def key(self) -> str:
        return self.info.key

    @property
    def queue_key(self) -> str:
        """The key the queue files the entity under (apart from every pod's)."""
        return ENTITY_KEY_PREFIX + self.info.key

    @property
    def priority(self) -> int:
        """``PodGroupPriority``: the PodGroup's resolved priority, 0 when unset."""
        p = self.info.pod_group.spec.priority
        return p if p is not None else 0

    def size(self) -> int:
        return len(self.members)

    def add_member(self, qpi: QueuedPodInfo) -> None:
        """``AddPod``: in member order; a pod of another group is ignored."""
        if pod_group_of(qpi.pod_info.pod) != self.key:
            return
        keys = [member_order(m) for m in self.members]
        i = bisect.bisect_left(keys, member_order(qpi))
        self.members.insert(i, qpi)
        self.info.unscheduled_pods.insert(i, qpi.pod_info)

    def remove_member(self, key: str) -> QueuedPodInfo | None:
        """``RemovePod``: the member with queue key ``key``, taken out; None if absent."""
        for i, m in enumerate(self.members):
            if m.key == key:
                del self.members[i]
                del self.info.unscheduled_pods[i]
                return m
        return None

    def member(self, key: str) -> QueuedPodInfo | None:
        return next((m for m in self.members if m.key == key), None)

    def refresh_member(self, qpi: QueuedPodInfo) -> None:
        """Mirror a member's new pod version into ``info.unscheduled_pods``."""
        for i, m in enumerate(self.members):
            if m is qpi:
                self.info.unscheduled_pods[i] = qpi.pod_info


class MemberPods:
    """``podGroupMemberPods``: member pods kept aside by group key, then pod key (the
    queue's incomplete and pending members)."""

    def __init__(self) -> None:
        self._by_group: dict[str, dict[str, QueuedPodInfo]] = {}
        self._group_of: dict[str, str] = {}

    def add(self, group: str, qpi: QueuedPodInfo) -> None:
        self._by_group.setdefault(group, {})[qpi.key] = qpi
        self._group_of[qpi.key] = group

    def get(self, key: str) -> QueuedPodInfo | None:
        group = self._group_of.get(key)
        return None if group is None else self._by_group[group][key]

    def delete(self, key: str) -> QueuedPodInfo | None:
        group = self._group_of.pop(key, None)
        if group is None:
            return None
        pods = self._by_group[group]
        qpi = pods.pop(key)
        if not pods:
            del self._by_group[group]
        return qpi

    def clear(self, group: str) -> list[QueuedPodInfo]:
        """Take out every member of ``group``."""
        pods = self._by_group.pop(group, {})
        for key in pods:
            del self._group_of[key]
        return list(pods.values())

    def __len__(self) -> int:
        return len(self._group_of)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        for pods in self._by_group.values():
            yield from pods.values()
