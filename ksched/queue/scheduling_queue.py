"""PriorityQueue (``internal/queue/scheduling_queue.go``).

Three places a pending pod can be: activeQ (a heap in QueueSort order, popped by
the scheduling loop), backoffQ (a heap by backoff expiry) and the unschedulable
pool. A rejected pod waits in the pool until a cluster event that one of its
rejecting plugins registered for (and whose queueing hint says Queue) arrives;
events seen while the pod's attempt was in flight are replayed when it comes back,
so none is lost. Time comes from the injected clock.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..framework.interface import ClusterEvent, ClusterEventWithHint, QueueingHint
from ..framework.runtime import Framework
from ..framework.status import Status
from ..framework.types import PodInfo
from ..util.clock import Clock, RealClock
from . import events as ev
from .nominator import Nominator

__all__ = ["QueuedPodInfo", "SchedulingQueue"]

UNSCHEDULABLE_Q_TIME_INTERVAL = 5 * 60.0  # podMaxInUnschedulablePodsDuration
ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE = "active", "backoff", "unschedulable"


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
    gating_status: Status | None = None
    # True when the last failure was an error/bind failure: back off on requeue.
    backoff_on_requeue: bool = True

    @property
    def pod(self) -> PodInfo:
        return self.pod_info

    @property
    def key(self) -> str:
        return self.pod_info.uid or self.pod_info.key

    @property
    def priority(self) -> int:
        return self.pod_info.priority


def _pod_updated_meaningfully(old: PodInfo, new: PodInfo) -> bool:
    """Changes that can alter scheduling (``isPodUpdated`` minus status/metadata noise)."""
    o, n = old.pod, new.pod
    return (
        o.metadata.labels != n.metadata.labels
        or o.spec != n.spec
        or o.metadata.annotations != n.metadata.annotations
    )


class SchedulingQueue:
    def __init__(
        self,
        frameworks: dict[str, Framework],
        *,
        clock: Clock | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = UNSCHEDULABLE_Q_TIME_INTERVAL,
        on_move: Callable[[str, str], None] | None = None,
    ) -> None:
        self.frameworks = frameworks
        self.clock = clock or RealClock()
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.nominator = Nominator()
        fw = next(iter(frameworks.values()))
        self._sort_key = fw.queue_sort_key()
        self._seq = itertools.count()
        self._active: list[tuple[Any, int, QueuedPodInfo]] = []
        self._backoff: list[tuple[float, int, QueuedPodInfo]] = []
        self._where: dict[str, str] = {}
        self._entries: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, int] = {}
        self._event_log: list[tuple[int, ClusterEvent, Any, Any]] = []
        self._event_seq = 0
        self._cycle = 0
        self._wakeup = anyio.Event()
        self._closed = False
        self._on_move = on_move
        # plugin name -> registered events (profile-qualified), from EnqueueExtensions.
        self._plugin_events: dict[tuple[str, str], list[ClusterEventWithHint] | None] = {}
        for prof, f in frameworks.items():
            for name, p in f.plugins.items():
                reg = getattr(p, "events_to_register", None)
                self._plugin_events[(prof, name)] = list(reg()) if reg is not None else None

    # -- helpers ------------------------------------------------------------------------
    def _notify(self) -> None:
        self._wakeup.set()

    def _count(self, event: str, queue: str) -> None:
        if self._on_move is not None:
            self._on_move(event, queue)

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """initial × 2^(attempts-1), capped at max (``calculateBackoffDuration``)."""
        d = self.initial_backoff
        for _ in range(1, qpi.attempts):
            d *= 2
            if d > self.max_backoff:
                return self.max_backoff
        return min(d, self.max_backoff)

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self.backoff_duration(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        if qpi.gated or not qpi.backoff_on_requeue or qpi.attempts == 0:
            return False
        return self.backoff_expiry(qpi) > self.clock.now()

    def _push_active(self, qpi: QueuedPodInfo, event: str) -> None:
        self._where[qpi.key] = ACTIVE_Q
        self._entries[qpi.key] = qpi
        heapq.heappush(self._active, (self._sort_key(qpi), next(self._seq), qpi))
        self._count(event, ACTIVE_Q)
        self._notify()

    def _push_backoff(self, qpi: QueuedPodInfo, event: str) -> None:
        self._where[qpi.key] = BACKOFF_Q
        self._entries[qpi.key] = qpi
        heapq.heappush(self._backoff, (self.backoff_expiry(qpi), next(self._seq), qpi))
        self._count(event, BACKOFF_Q)

    def _push_unschedulable(self, qpi: QueuedPodInfo, event: str) -> None:
        self._where[qpi.key] = UNSCHEDULABLE
        self._entries[qpi.key] = qpi
        self._unschedulable[qpi.key] = qpi
        self._count(event, UNSCHEDULABLE)

    def _remove(self, key: str) -> QueuedPodInfo | None:
        where = self._where.pop(key, None)
        qpi = self._entries.pop(key, None)
        if where == UNSCHEDULABLE:
            self._unschedulable.pop(key, None)
        # Heap entries are dropped lazily: _where no longer points at them.
        return qpi

    def _gate(self, qpi: QueuedPodInfo) -> bool:
        """Run PreEnqueue; True when the pod may enter activeQ."""
        fw = self.frameworks[qpi.profile]
        st = fw.run_pre_enqueue(qpi.pod_info)
        qpi.gated = not st.is_success()
        qpi.gating_status = None if st.is_success() else st
        if qpi.gated and st.plugin:
            qpi.unschedulable_plugins = {st.plugin}
        return not qpi.gated

    # -- pod lifecycle -----------------------------------------------------------------
    def add(self, pod: PodInfo, profile: str) -> None:
        """A new pending pod."""
        qpi = QueuedPodInfo(pod, profile, self.clock.now())
        key = qpi.key
        if key in self._where or key in self._in_flight:
            self.update(self._entries[key].pod_info if key in self._entries else pod, pod)
            return
        if pod.pod.status.nominated_node_name:
            self.nominator.add(pod)
        if self._gate(qpi):
            self._push_active(qpi, "PodAdd")
        else:
            self._push_unschedulable(qpi, "PodAdd")

    def update(self, old: PodInfo, new: PodInfo) -> None:
        key = new.uid or new.key
        qpi = self._entries.get(key)
        self.nominator.update(old, new)
        if qpi is None:
            return
        where = self._where.get(key)
        meaningful = _pod_updated_meaningfully(qpi.pod_info, new)
        qpi.pod_info = new
        if where == UNSCHEDULABLE and meaningful:
            self._remove(key)
            if not self._gate(qpi):
                self._push_unschedulable(qpi, ev.UNSCHEDULED_POD_UPDATE.label)
            elif self.is_backing_off(qpi):
                self._push_backoff(qpi, ev.UNSCHEDULED_POD_UPDATE.label)
            else:
                self._push_active(qpi, ev.UNSCHEDULED_POD_UPDATE.label)
        elif where == ACTIVE_Q:
            # Re-heap: the sort key may have changed (priority).
            self._remove(key)
            self._push_active(qpi, ev.UNSCHEDULED_POD_UPDATE.label)

    def delete(self, pod: PodInfo) -> None:
        key = pod.uid or pod.key
        self._remove(key)
        self.nominator.delete(pod)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move pods (e.g. a gang's siblings) straight to activeQ."""
        for pod in pods:
            key = pod.uid or pod.key
            where = self._where.get(key)
            if where in (UNSCHEDULABLE, BACKOFF_Q):
                qpi = self._remove(key)
                assert qpi is not None
                if self._gate(qpi):
                    self._push_active(qpi, ev.FORCE_ACTIVATE.label)
                else:
                    self._push_unschedulable(qpi, ev.FORCE_ACTIVATE.label)

    # -- popping ----------------------------------------------------------------------
    def pop_nowait(self) -> QueuedPodInfo | None:
        self.flush_backoff_completed()
        while self._active:
            _, _, qpi = heapq.heappop(self._active)
            if self._where.get(qpi.key) != ACTIVE_Q or self._entries.get(qpi.key) is not qpi:
                continue
            self._remove(qpi.key)
            qpi.attempts += 1
            if qpi.initial_attempt_timestamp is None:
                qpi.initial_attempt_timestamp = self.clock.now()
            self._cycle += 1
            self._in_flight[qpi.key] = self._event_seq
            return qpi
        return None

    async def pop(self) -> QueuedPodInfo | None:
        """Next pod by QueueSort; waits for one. None once closed."""
        while not self._closed:
            qpi = self.pop_nowait()
            if qpi is not None:
                return qpi
            self._wakeup = anyio.Event()
            with anyio.move_on_after(1.0):  # re-check backoffQ at least every second
                await self._wakeup.wait()
        return None

    def close(self) -> None:
        self._closed = True
        self._notify()

    def done(self, pod: PodInfo) -> None:
        """The attempt is over (scheduled, or re-queued already)."""
        self._in_flight.pop(pod.uid or pod.key, None)
        if not self._in_flight:
            self._event_log.clear()
        elif self._event_log:
            oldest = min(self._in_flight.values())
            self._event_log = [e for e in self._event_log if e[0] > oldest]

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, *, error: bool = False) -> None:
        """Back from a failed attempt: to the pool, or straight on if an event already helped."""
        key = qpi.key
        if key in self._where:
            return
        qpi.timestamp = self.clock.now()
        qpi.backoff_on_requeue = True
        start = self._in_flight.get(key)
        moved_by: ClusterEvent | None = None
        if error or (not qpi.unschedulable_plugins and not qpi.pending_plugins):
            # Errors are retried after backoff, whatever happens in the cluster.
            self._push_backoff(qpi, "ScheduleAttemptFailure")
            self.done(qpi.pod_info)
            return
        if start is not None:
            for seq, event, old, new in self._event_log:
                if seq > start and self._worth_requeuing(qpi, event, old, new):
                    moved_by = event
                    break
        if moved_by is not None:
            if self.is_backing_off(qpi):
                self._push_backoff(qpi, moved_by.label or "ScheduleAttemptFailure")
            else:
                self._push_active(qpi, moved_by.label or "ScheduleAttemptFailure")
        else:
            self._push_unschedulable(qpi, "ScheduleAttemptFailure")
        self.done(qpi.pod_info)

    # -- events -----------------------------------------------------------------------
    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> bool:
        """``isPodWorthRequeuing``: some rejecting plugin registered the event and its hint says Queue."""
        if event.resource == "*":
            return True
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return True
        for plugin in rejectors:
            regs = self._plugin_events.get((qpi.profile, plugin))
            if regs is None:
                return True  # no EnqueueExtensions: every event may help
            for reg in regs:
                if not reg.event.matches(event):
                    continue
                if reg.hint is None:
                    return True
                try:
                    if reg.hint(qpi.pod_info, old, new) == QueueingHint.QUEUE:
                        return True
                except Exception:
                    return True  # upstream queues on hint errors
        return False

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old: Any = None, new: Any = None) -> int:
        """A cluster event: move every unschedulable pod it may help; returns how many moved."""
        if self._in_flight:
            self._event_seq += 1
            self._event_log.append((self._event_seq, event, old, new))
        moved = 0
        for key, qpi in list(self._unschedulable.items()):
            if qpi.gated:
                continue
            if not self._worth_requeuing(qpi, event, old, new):
                continue
            self._remove(key)
            if self.is_backing_off(qpi):
                self._push_backoff(qpi, event.label)
            else:
                self._push_active(qpi, event.label)
            moved += 1
        return moved

    def flush_backoff_completed(self) -> int:
        now = self.clock.now()
        moved = 0
        while self._backoff and self._backoff[0][0] <= now:
            _, _, qpi = heapq.heappop(self._backoff)
            if self._where.get(qpi.key) != BACKOFF_Q or self._entries.get(qpi.key) is not qpi:
                continue
            self._remove(qpi.key)
            self._push_active(qpi, "BackoffComplete")
            moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        now = self.clock.now()
        stale = [q for q in self._unschedulable.values()
                 if not q.gated and now - q.timestamp > self.max_in_unschedulable]
        for qpi in stale:
            self._remove(qpi.key)
            if self.is_backing_off(qpi):
                self._push_backoff(qpi, ev.UNSCHEDULABLE_TIMEOUT.label)
            else:
                self._push_active(qpi, ev.UNSCHEDULABLE_TIMEOUT.label)
        return len(stale)

    async def run_flushers(self) -> None:
        """Periodic flushes (1 s backoff, 30 s leftover), owned by the caller's task group."""
        tick = 0
        while not self._closed:
            await self.clock.sleep(1.0)
            if self.flush_backoff_completed():
                self._notify()
            tick += 1
            if tick % 30 == 0 and self.flush_unschedulable_leftover():
                self._notify()

    # -- introspection ---------------------------------------------------------------------
    def next_backoff_expiry(self) -> float | None:
        while self._backoff:
            t, _, qpi = self._backoff[0]
            if self._where.get(qpi.key) == BACKOFF_Q and self._entries.get(qpi.key) is qpi:
                return t
            heapq.heappop(self._backoff)
        return None

    def has_active(self) -> bool:
        return any(self._where.get(q.key) == ACTIVE_Q and self._entries.get(q.key) is q
                   for _, _, q in self._active)

    def pending_counts(self) -> dict[str, int]:
        counts = {ACTIVE_Q: 0, BACKOFF_Q: 0, UNSCHEDULABLE: 0, "gated": 0}
        for key, where in self._where.items():
            if where == UNSCHEDULABLE and self._entries[key].gated:
                counts["gated"] += 1
            else:
                counts[where] += 1
        return counts

    def unschedulable_pods(self) -> list[QueuedPodInfo]:
        return list(self._unschedulable.values())

    def in_flight(self) -> int:
        return len(self._in_flight)

    def dump(self) -> dict[str, Any]:
        def row(q: QueuedPodInfo) -> dict[str, Any]:
            return {
                "pod": q.pod_info.key,
                "profile": q.profile,
                "attempts": q.attempts,
                "unschedulablePlugins": sorted(q.unschedulable_plugins),
                "gated": q.gated,
                "gatingMessage": q.gating_status.message() if q.gating_status else "",
                "backoffExpiry": self.backoff_expiry(q) if q.attempts else None,
            }

        out: dict[str, Any] = {ACTIVE_Q: [], BACKOFF_Q: [], UNSCHEDULABLE: []}
        for key, where in sorted(self._where.items()):
            out[where].append(row(self._entries[key]))
        out["inFlight"] = sorted(self._in_flight)
        out["nominated"] = {n: [p.key for p in ps] for n, ps in sorted(self.nominator.nodes().items())}
        return out
