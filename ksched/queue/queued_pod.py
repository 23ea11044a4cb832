"""A pod as the scheduling queue holds it (upstream's ``QueuedPodInfo``): its own module,
below both the queue and the pod-group entities whose members it is."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..framework.status import Status
from ..framework.types import PodInfo

__all__ = ["QueuedPodInfo"]


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    pod_info: PodInfo
    profile: str
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""
    gating_status: Status | None = None
    # Moved out of the pool by the periodic flush (not by an event) since its last attempt:
    # scheduler_pod_scheduled_after_flush_total counts such pods that then get scheduled.
    flushed: bool = False
    # Failed attempts that plugins rejected, and errors in a row since the last rejection:
    # the backoff counts the errors while there are some, else the rejections.
    unschedulable_count: int = 0
    consecutive_errors: int = 0

    @property
    def pod(self) -> PodInfo:
        return self.pod_info

    @property
    def key(self) -> str:
        return self.pod_info.uid or self.pod_info.key

    @property
    def queue_key(self) -> str:
        """The key the queue files the entity under (a pod is its own entity)."""
        return self.pod_info.uid or self.pod_info.key

    @property
    def priority(self) -> int:
        return self.pod_info.priority

    def size(self) -> int:
        return 1
