"""Pods parked at Permit (``framework.WaitingPod``).

A waiting pod holds one pending entry per plugin that answered Wait; any plugin can
allow or reject it through the handle. It is released when every pending plugin has
allowed it, rejected on the first rejection, and rejected on timeout by the binding
cycle that waits for it (timing uses the injectable clock).
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio

from .status import Code, Status
from .types import PodInfo

__all__ = ["MAX_PERMIT_TIMEOUT", "WaitingPod", "WaitingPods"]

MAX_PERMIT_TIMEOUT = 15 * 60.0


class WaitingPod:
    def __init__(
        self,
        pod: PodInfo,
        node_name: str,
        timeouts: dict[str, float],
        created: float | None = None,
    ) -> None:
        self.pod = pod
        self.node_name = node_name
        self.pending: dict[str, float] = {
            p: min(t, MAX_PERMIT_TIMEOUT) for p, t in timeouts.items()
        }
        # Clock time at Permit: timeouts run from here (upstream starts its timers in
        # newWaitingPod), not from whenever the binding cycle gets to wait.
        self.created = created
        self.status: Status | None = None
        self._done = anyio.Event()

    def allow(self, plugin: str) -> None:
        self.pending.pop(plugin, None)
        if not self.pending and self.status is None:
            self.status = Status(Code.SUCCESS)
            self._done.set()

    def reject(self, plugin: str, message: str) -> None:
        if self.status is None:
            self.status = Status(Code.UNSCHEDULABLE, message, plugin=plugin)
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    async def wait(self) -> Status:
        await self._done.wait()
        assert self.status is not None
        return self.status


class WaitingPods:
    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod.uid or wp.pod.key] = wp

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
