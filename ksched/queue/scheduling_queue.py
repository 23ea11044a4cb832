"""PriorityQueue (``pkg/scheduler/backend/queue/scheduling_queue.go``), queueing hints on.

Three places a pending pod can be: activeQ (a heap in QueueSort order, popped by
the scheduling loop), backoffQ (a heap by backoff expiry) and the unschedulable
pool. A pod rejected by some plugins waits in the pool until a cluster event that
one of those plugins registered for (and whose queueing hint says Queue) arrives.
Events seen while a pod's attempt is in flight are kept and replayed when the
attempt ends, so none is lost. PreEnqueue plugins gate pods out of activeQ.
With SchedulerPopFromBackoffQ (on by default) an idle scheduler pops backoffQ's rejected
pods without waiting out their backoff, and PreEnqueue runs as they enter backoffQ.

Two ksched-specific choices, both behaviour-preserving:

* the pool is indexed by (profile, rejecting plugin), so an event only looks at
  pods rejected by plugins that registered it, not at every unschedulable pod;
* a pod deleted or updated while in flight is remembered here (upstream asks the
  informer when the attempt fails), so a deleted pod is not requeued and an
  updated one comes back in its latest version.

Time comes from the injected clock; nothing here sleeps on the wall clock.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..framework.deadline import PluginTimeout, SyncDeadline
from ..framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    extension_points_of,
)
from ..framework.runtime import Framework
from ..framework.status import Code, Status
from ..framework.types import PodInfo
from ..util.clock import Clock, RealClock, wall_clock
from . import events as ev
from .nominator import Nominator

__all__ = [
    "ACTIVE_Q",
    "BACKOFF_Q",
    "INVALID_POD_PLUGIN",
    "QUEUE_AFTER_BACKOFF",
    "QUEUE_IMMEDIATELY",
    "QUEUE_SKIP",
    "UNSCHEDULABLE",
    "UNSCHEDULABLE_Q_TIME_INTERVAL",
    "QueuedPodInfo",
    "SchedulingQueue",
    "plugin_names",
]

UNSCHEDULABLE_Q_TIME_INTERVAL = 5 * 60.0  # DefaultPodMaxInUnschedulablePodsDuration
BACKOFF_FLUSH_PERIOD = 1.0
# SchedulerPopFromBackoffQ: backoff expiries are truncated to this window, within which
# backoffQ orders pods as activeQ does (backoffQOrderingWindowDuration).
BACKOFF_ORDERING_WINDOW = 1.0
# scheduler_queue_incoming_pods_total's event of a pod popped from backoffQ.
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
LEFTOVER_FLUSH_PERIOD = 30.0
ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE = "active", "backoff", "unschedulable"

# queueingStrategy, in increasing strength.
QUEUE_SKIP, QUEUE_AFTER_BACKOFF, QUEUE_IMMEDIATELY = 0, 1, 2

# Pseudo rejector the scheduler records for pods whose own fields are broken: only
# an update of the pod itself (or the periodic flush) can help them.
INVALID_POD_PLUGIN = "__invalid__"


def plugin_names(names: Iterable[str]) -> list[str]:
    """Rejecting plugins for people and metrics: sorted, without internal pseudo-plugins."""
    return sorted(n for n in names if n != INVALID_POD_PLUGIN)


# Extension points whose plugins never reject a pod, so never need queueing hints.
_NON_REJECTING = frozenset({"queueSort", "preScore", "score", "postBind"})

HintFn = Callable[[PodInfo, Any, Any], str]
_Registration = tuple[ClusterEvent, str, HintFn | None]
# (plugin, event label, "Queue" | "QueueSkip" | "Error", seconds): a queueing hint ran.
HintObserver = Callable[[str, str, str, float], None]
# scheduler_inflight_events's label for the in-flight pods themselves.
POD_POPPED = "PodPopped"


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
    def priority(self) -> int:
        return self.pod_info.priority


def _key(pod: PodInfo) -> str:
    return pod.uid or pod.key


def _same_pod_updated(pod: PodInfo, old: Any, new: Any) -> str:
    """Hint of INVALID_POD_PLUGIN: only an update of this very pod may fix it."""
    if isinstance(new, PodInfo) and _key(new) == _key(pod):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


_NODE_TAINT_UPDATE = ClusterEvent("Node", "UpdateNodeTaint")


def _registrations(fw: Framework, taint_for_node_add: bool) -> list[_Registration]:
    """``buildQueueingHintMap`` for one profile.

    A plugin without ``events_to_register`` may be helped by anything, so it gets
    the wildcard event (``defaultEnqueueExtension``); one that registers nothing is
    only helped by the periodic flush. ``taint_for_node_add`` (v1.36, removed in v1.37
    with preCheck): a plugin registering Node/Add but not UpdateNodeTaint also hears
    UpdateNodeTaint, without a hint (kubernetes#109437).
    """
    out: list[_Registration] = []
    for name, plugin in fw.plugins.items():
        if set(extension_points_of(plugin)) <= _NON_REJECTING:
            continue
        reg = getattr(plugin, "events_to_register", None)
        if reg is None:
            out.append((ev.WILDCARD, name, None))
            continue
        node_add = node_taint = False
        for item in reg() or ():
            if isinstance(item, ClusterEventWithHint):
                event, hint = item.event, item.hint
            else:
                event, hint = item, None
            out.append((event, name, hint))
            if event.resource == "Node":
                node_add |= event.action in ("Add", "*")
                node_taint |= event.action in ("UpdateNodeTaint", "Update", "*")
        if taint_for_node_add and node_add and not node_taint:
            out.append((_NODE_TAINT_UPDATE, name, None))
    out.append((ClusterEvent("Pod", "Update"), INVALID_POD_PLUGIN, _same_pod_updated))
    return out


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
        self.clock: Clock = clock or RealClock()
        # The profile of a pod that is not queued yet; the Scheduler sets its own (which
        # knows the other schedulers' names it adopts).
        self.profile_of: Callable[[PodInfo], str | None] = self._own_profile
        # PreEnqueue plugins and queueing hints are plugin code too (the Scheduler sets
        # its deadline here; unbounded by default).
        self.deadline = SyncDeadline(None)
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.nominator = Nominator()
        fw = next(iter(frameworks.values()))
        self._sort_key = fw.queue_sort_key()
        v1_37 = fw.handle.features.at_least("1.37")
        # SchedulerPopFromBackoffQ: with activeQ empty, the head of backoffQ's rejected pods
        # (errors excluded) is popped at once; PreEnqueue runs on entering backoffQ instead.
        self.pop_from_backoff = fw.handle.features.enabled("SchedulerPopFromBackoffQ")
        # v1.37 splits pending pods' events (TargetPod, UnscheduledPod) and adds ScaleUp.
        self.pending_events = ev.pending_pod_events(v1_37)
        self._seq = itertools.count()
        # Location of every queued pod, and the pod itself.
        self._where: dict[str, str] = {}
        self._entries: dict[str, QueuedPodInfo] = {}
        # Heaps with lazy deletion: an entry is live iff its token is the pod's current one.
        self._active: list[tuple[Any, int, QueuedPodInfo]] = []
        self._active_tok: dict[str, int] = {}
        self._backoff: list[tuple[float, int, QueuedPodInfo]] = []
        self._backoff_tok: dict[str, int] = {}
        # backoffQ's rejected pods by (expiry, QueueSort), popped when activeQ is empty.
        self._backoff_pop: list[tuple[float, Any, int, QueuedPodInfo]] = []
        # The unschedulable pool (insertion-ordered) and its index by rejecting plugin.
        self._pool: dict[str, QueuedPodInfo] = {}
        self._pool_seq: dict[str, int] = {}
        self._pool_rejectors: dict[str, tuple[str, ...]] = {}
        self._pool_idx: dict[tuple[str, str], set[str]] = {}
        self._pool_any: set[str] = set()
        self._gated: set[str] = set()
        # In-flight pods (popped, Done not called yet), oldest first, with the event
        # sequence number at pop time; events seen meanwhile, in arrival order.
        self._in_flight: OrderedDict[str, int] = OrderedDict()
        self._in_flight_latest: dict[str, PodInfo] = {}
        self._in_flight_deleted: set[str] = set()
        self._events: deque[tuple[int, ClusterEvent, Any, Any]] = deque()
        self._event_seq = 0
        self.scheduling_cycle = 0
        self._wakeup = anyio.Event()
        self._closed = False
        self._on_move = on_move
        # Queueing hints per profile, and per (profile, plugin) its registered events.
        self._regs: dict[str, list[_Registration]] = {
            p: _registrations(f, not v1_37) for p, f in frameworks.items()
        }
        self._plugin_events: dict[tuple[str, str], list[ClusterEvent]] = {}
        for prof, regs in self._regs.items():
            for event, plugin, _ in regs:
                self._plugin_events.setdefault((prof, plugin), []).append(event)
        self._match_cache: dict[tuple[str, ClusterEvent], dict[str, list[HintFn | None]]] = {}
        # Told of every queueing hint call (the metrics' queueing_hint_execution_duration).
        self.hint_observer: HintObserver | None = None

    def _own_profile(self, pod: PodInfo) -> str | None:
        name = pod.pod.spec.scheduler_name
        return name if name in self.frameworks else None

    def register_wildcard(self, name: str) -> None:
        """Let any cluster event requeue pods rejected by ``name`` in every profile.

        For rejectors that are not plugins (HTTP extenders): upstream registers them with
        the wildcard event, having no queueing hints.
        """
        for prof, regs in self._regs.items():
            if any(plugin == name for _, plugin, _ in regs):
                continue
            regs.append((ev.WILDCARD, name, None))
            self._plugin_events.setdefault((prof, name), []).append(ev.WILDCARD)
        self._match_cache.clear()

    # -- helpers ------------------------------------------------------------------------
    def _notify(self) -> None:
        self._wakeup.set()

    def _count(self, event: str, queue: str) -> None:
        if self._on_move is not None:
            self._on_move(event, queue)

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """``calculateBackoffDuration``: initial * 2^(count-1) capped at max, where count is
        the errors in a row if the last attempts erred, else the rejections (an error
        after rejections backs off as a first error); 0 if never failed."""
        count = qpi.consecutive_errors or qpi.unschedulable_count
        if count == 0:
            return 0.0
        d = self.initial_backoff
        for _ in range(1, count):
            if d > self.max_backoff - d:
                return self.max_backoff
            d += d
        return d

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """``getBackoffTime``: truncated to the ordering window with SchedulerPopFromBackoffQ."""
        t = qpi.timestamp + self.backoff_duration(qpi)
        if self.pop_from_backoff:
            return t - t % BACKOFF_ORDERING_WINDOW
        return t

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        if qpi.gated:
            return False
        return self.backoff_expiry(qpi) > self.clock.now()

    def _push_active(self, qpi: QueuedPodInfo, event: str) -> None:
        key = qpi.key
        tok = next(self._seq)
        self._where[key] = ACTIVE_Q
        self._entries[key] = qpi
        self._active_tok[key] = tok
        heapq.heappush(self._active, (self._sort_key(qpi), tok, qpi))
        if len(self._active) > 2 * len(self._active_tok) + 64:
            self._active = [e for e in self._active if self._active_tok.get(e[2].key) == e[1]]
            heapq.heapify(self._active)
        self._count(event, ACTIVE_Q)
        self._notify()

    def _push_backoff(self, qpi: QueuedPodInfo, event: str) -> bool:
        """``moveToBackoffQ``; False when PreEnqueue (run here with SchedulerPopFromBackoffQ)
        gated the pod into the pool instead."""
        if self.pop_from_backoff and not self._gate(qpi):
            self._push_unschedulable(qpi, event)
            return False
        key = qpi.key
        tok = next(self._seq)
        self._where[key] = BACKOFF_Q
        self._entries[key] = qpi
        self._backoff_tok[key] = tok
        expiry = self.backoff_expiry(qpi)
        heapq.heappush(self._backoff, (expiry, tok, qpi))
        if len(self._backoff) > 2 * len(self._backoff_tok) + 64:
            self._backoff = [e for e in self._backoff if self._backoff_tok.get(e[2].key) == e[1]]
            heapq.heapify(self._backoff)
        if self.pop_from_backoff and (qpi.unschedulable_plugins or qpi.pending_plugins):
            heapq.heappush(self._backoff_pop, (expiry, self._sort_key(qpi), tok, qpi))
            if len(self._backoff_pop) > 2 * len(self._backoff_tok) + 64:
                live = self._backoff_tok
                self._backoff_pop = [e for e in self._backoff_pop if live.get(e[3].key) == e[2]]
                heapq.heapify(self._backoff_pop)
        self._count(event, BACKOFF_Q)
        if self.pop_from_backoff:
            self._notify()  # an idle pop takes it now
        return True

    def _push_unschedulable(self, qpi: QueuedPodInfo, event: str) -> None:
        key = qpi.key
        self._where[key] = UNSCHEDULABLE
        self._entries[key] = qpi
        self._pool[key] = qpi
        self._pool_seq[key] = next(self._seq)
        rejectors = tuple(qpi.unschedulable_plugins | qpi.pending_plugins)
        self._pool_rejectors[key] = rejectors
        if rejectors:
            for plugin in rejectors:
                self._pool_idx.setdefault((qpi.profile, plugin), set()).add(key)
        else:
            self._pool_any.add(key)
        if qpi.gated:
            self._gated.add(key)
        self._count(event, UNSCHEDULABLE)

    def _remove(self, key: str) -> QueuedPodInfo | None:
        """Take a pod out of whichever queue holds it (heap entries die lazily)."""
        where = self._where.pop(key, None)
        if where is None:
            return None
        qpi = self._entries.pop(key)
        if where == ACTIVE_Q:
            del self._active_tok[key]
        elif where == BACKOFF_Q:
            del self._backoff_tok[key]
        else:
            del self._pool[key]
            del self._pool_seq[key]
            self._gated.discard(key)
            rejectors = self._pool_rejectors.pop(key)
            if not rejectors:
                self._pool_any.discard(key)
            for plugin in rejectors:
                idx = self._pool_idx[(qpi.profile, plugin)]
                idx.discard(key)
                if not idx:
                    del self._pool_idx[(qpi.profile, plugin)]
        return qpi

    def _gate(self, qpi: QueuedPodInfo) -> bool:
        """Run PreEnqueue; True when the pod may enter activeQ (``runPreEnqueuePlugins``)."""
        fw = self.frameworks.get(qpi.profile)
        st: Status | None = None
        if fw is not None:
            try:
                with self.deadline:
                    st = fw.run_pre_enqueue(qpi.pod_info)
            except PluginTimeout as e:  # as a PreEnqueue error: wait in the pool
                st = Status(Code.ERROR, str(e))
        if st is None or st.is_success():
            qpi.gated, qpi.gating_plugin, qpi.gating_status = False, "", None
            return True
        qpi.gated, qpi.gating_plugin, qpi.gating_status = True, st.plugin, st
        if st.plugin:
            qpi.unschedulable_plugins.add(st.plugin)
        return False

    def _move_to_active(self, qpi: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        """``moveToActiveQ`` for a pod in no queue: activeQ, or the pool if PreEnqueue gates it
        (not asked again for a pod leaving backoffQ with SchedulerPopFromBackoffQ)."""
        if not (from_backoff and self.pop_from_backoff) and not self._gate(qpi):
            self._push_unschedulable(qpi, event)
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self.clock.now()
        self._push_active(qpi, event)
        if event == self.pending_events.add.label:
            self.nominator.add(qpi.pod_info)
        return True

    def _requeue(self, qpi: QueuedPodInfo, strategy: int, event: str) -> str:
        """``requeuePodWithQueueingStrategy`` for a pod in no queue; returns where it went."""
        if strategy == QUEUE_SKIP:
            self._push_unschedulable(qpi, event)
            return UNSCHEDULABLE
        if strategy == QUEUE_AFTER_BACKOFF and self.is_backing_off(qpi):
            return BACKOFF_Q if self._push_backoff(qpi, event) else UNSCHEDULABLE
        return ACTIVE_Q if self._move_to_active(qpi, event) else UNSCHEDULABLE

    # -- queueing hints -------------------------------------------------------------------
    def _matching(self, profile: str, event: ClusterEvent) -> dict[str, list[HintFn | None]]:
        """Plugins of ``profile`` that registered ``event``, with their hints (cached)."""
        ck = (profile, event)
        m = self._match_cache.get(ck)
        if m is None:
            m = {}
            for reg, plugin, hint in self._regs.get(profile, ()):
                if ev.matches(reg, event):
                    m.setdefault(plugin, []).append(hint)
            self._match_cache[ck] = m
        return m

    def _event_of_interest(self, event: ClusterEvent) -> bool:
        return ev.is_wildcard(event) or any(self._matching(p, event) for p in self._regs)

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> int:
        """``isPodWorthRequeuing``: the strongest strategy among the rejectors' hints."""
        unsched, pending = qpi.unschedulable_plugins, qpi.pending_plugins
        if not unsched and not pending:
            return QUEUE_AFTER_BACKOFF
        if ev.is_wildcard(event):
            # A wildcard event carrying an object targets only that pod (ForceActivate).
            if new is not None and not (isinstance(new, PodInfo) and _key(new) == qpi.key):
                return QUEUE_SKIP
            return QUEUE_AFTER_BACKOFF
        matching = self._matching(qpi.profile, event)
        if not matching:
            return QUEUE_SKIP
        strategy = QUEUE_SKIP
        for plugin in (unsched | pending) if pending else unsched:
            hints = matching.get(plugin)
            if not hints:
                continue
            for hint in hints:
                if hint is not None and self._hint_skips(plugin, hint, qpi, event, old, new):
                    continue
                if plugin in pending:
                    return QUEUE_IMMEDIATELY
                if not pending:
                    return QUEUE_AFTER_BACKOFF
                strategy = QUEUE_AFTER_BACKOFF
        return strategy

    def _hint_skips(
        self,
        plugin: str,
        hint: HintFn,
        qpi: QueuedPodInfo,
        event: ClusterEvent,
        old: Any,
        new: Any,
    ) -> bool:
        """Whether ``plugin``'s hint says QueueSkip; a failing hint means Queue."""
        observer = self.hint_observer
        t0 = time.perf_counter() if observer is not None else 0.0
        try:
            with self.deadline:
                skip = hint(qpi.pod_info, old, new) == QueueingHint.SKIP
            label = "QueueSkip" if skip else "Queue"
        except (Exception, PluginTimeout):
            skip, label = False, "Error"
        if observer is not None and plugin != INVALID_POD_PLUGIN:
            observer(plugin, event.label, label, time.perf_counter() - t0)
        return skip

    def _gating_plugin_cares(self, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        regs = self._plugin_events.get((qpi.profile, qpi.gating_plugin), ())
        return any(ev.matches(r, event) for r in regs)

    def _candidates(self, event: ClusterEvent) -> list[QueuedPodInfo]:
        """Pool pods some rejector of which registered ``event``, in pool order."""
        pool = self._pool
        if ev.is_wildcard(event):
            return list(pool.values())
        keys: set[str] = set(self._pool_any)
        for profile in self._regs:
            for plugin in self._matching(profile, event):
                s = self._pool_idx.get((profile, plugin))
                if s:
                    keys |= s
        if not keys:
            return []
        if 2 * len(keys) >= len(pool):
            return [q for k, q in pool.items() if k in keys]
        seq = self._pool_seq
        return [pool[k] for k in sorted(keys, key=seq.__getitem__)]

    def _move_pods(
        self,
        pods: Iterable[QueuedPodInfo],
        event: ClusterEvent,
        old: Any,
        new: Any,
        pre_check: Callable[[PodInfo], bool] | None = None,
    ) -> int:
        """``movePodsToActiveOrBackoffQueue``: requeue the pool pods the event may help."""
        moved = 0
        for qpi in pods:
            if pre_check is not None and not pre_check(qpi.pod_info):
                continue
            if qpi.gated and not self._gating_plugin_cares(qpi, event):
                continue
            strategy = self._worth_requeuing(qpi, event, old, new)
            if strategy == QUEUE_SKIP:
                continue
            self._remove(qpi.key)
            if self._requeue(qpi, strategy, event.label) != UNSCHEDULABLE:
                moved += 1
        if self._in_flight:
            self._event_seq += 1
            self._events.append((self._event_seq, event, old, new))
        return moved

    # -- pod lifecycle -----------------------------------------------------------------
    def add(self, pod: PodInfo, profile: str) -> None:
        """A new pending pod: activeQ, or the pool when a PreEnqueue plugin gates it."""
        key = _key(pod)
        if key in self._where or key in self._in_flight:
            cur = self._entries.get(key)
            old = cur.pod_info if cur is not None else self._in_flight_latest.get(key, pod)
            self.update(old, pod)
            return
        qpi = QueuedPodInfo(pod, profile, self.clock.now())
        self._move_to_active(qpi, self.pending_events.add.label)

    def update(self, old: PodInfo, new: PodInfo) -> None:
        """``Update``: an unassigned pod changed.

        In flight: remember the change as an in-flight event (and the newest
        version). In activeQ/backoffQ: replace it in place. In the pool: requeue
        it if a rejecting plugin's hint says the change may help. Elsewhere: add it.
        """
        rv = new.pod.metadata.resource_version
        if old is not new and rv and rv == old.pod.metadata.resource_version:
            return  # a resync carrying the same object
        key = _key(new)
        pe = self.pending_events
        events = ev.pod_update_events(old, new, pe.target, scale_up=pe.scale_up)
        if key in self._in_flight:
            self._in_flight_latest[key] = new
            for e in events:
                self._event_seq += 1
                self._events.append((self._event_seq, e, old, new))
            return
        where = self._where.get(key)
        if where is None:
            profile = self.profile_of(new)
            if profile is not None:
                self.add(new, profile)
            return
        qpi = self._entries[key]
        qpi.pod_info = new
        self.nominator.update(old, new)
        if where == ACTIVE_Q:
            # Re-heap under a new token: the QueueSort key may depend on what changed.
            tok = next(self._seq)
            self._active_tok[key] = tok
            heapq.heappush(self._active, (self._sort_key(qpi), tok, qpi))
            return
        if where == BACKOFF_Q:
            return
        for e in events:
            strategy = self._worth_requeuing(qpi, e, old, new)
            if strategy == QUEUE_SKIP:
                continue
            self._remove(key)
            if self._requeue(qpi, strategy, e.label) != UNSCHEDULABLE:
                return

    def delete(self, pod: PodInfo) -> None:
        """The pod is gone (or bound): out of every queue, and not requeued if in flight."""
        key = _key(pod)
        self.nominator.delete(pod)
        if self._remove(key) is None and key in self._in_flight:
            self._in_flight_deleted.add(key)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """``Activate``: pods in the pool or backoffQ go straight to activeQ (e.g. a gang's
        siblings); for an in-flight pod a targeted ForceActivate is recorded instead."""
        for pod in pods:
            key = _key(pod)
            where = self._where.get(key)
            if where in (UNSCHEDULABLE, BACKOFF_Q):
                qpi = self._remove(key)
                assert qpi is not None
                self._move_to_active(qpi, ev.FORCE_ACTIVATE.label, where == BACKOFF_Q)
            elif key in self._in_flight:
                self._event_seq += 1
                self._events.append((self._event_seq, ev.FORCE_ACTIVATE, None, pod))

    # -- popping ----------------------------------------------------------------------
    def pop_nowait(self) -> QueuedPodInfo | None:
        """The head of activeQ (after moving pods whose backoff ended), now in flight; with
        activeQ empty and SchedulerPopFromBackoffQ, backoffQ's first rejected pod."""
        self.flush_backoff_completed()
        while self._active:
            _, tok, qpi = heapq.heappop(self._active)
            if self._active_tok.get(qpi.key) == tok and self._take(qpi):
                return qpi
        while self._backoff_pop:
            _, _, tok, qpi = heapq.heappop(self._backoff_pop)
            if self._backoff_tok.get(qpi.key) == tok:
                self._count(POP_FROM_BACKOFF_Q, ACTIVE_Q)
                if self._take(qpi):
                    return qpi
        return None

    def _take(self, qpi: QueuedPodInfo) -> bool:
        """Out of its queue and in flight; False for a pod already in flight."""
        key = qpi.key
        self._remove(key)
        if key in self._in_flight:
            return False  # tracked twice: drop the duplicate, as upstream does
        qpi.attempts += 1
        qpi.unschedulable_plugins = set()
        qpi.pending_plugins = set()
        self.scheduling_cycle += 1
        self._in_flight[key] = self._event_seq
        return True

    async def pop(self) -> QueuedPodInfo | None:
        """Next pod by QueueSort; waits (on the injected clock) for one. None once closed."""
        while not self._closed:
            qpi = self.pop_nowait()
            if qpi is not None:
                return qpi
            self._wakeup = anyio.Event()
            expiry = self.next_backoff_expiry()
            if expiry is None:
                await self._wakeup.wait()
                continue
            async with anyio.create_task_group() as tg:

                async def timer(delay: float) -> None:
                    await self.clock.sleep(delay)
                    self._notify()

                tg.start_soon(timer, expiry - self.clock.now())
                await self._wakeup.wait()
                tg.cancel_scope.cancel()
        return None

    def close(self) -> None:
        self._closed = True
        self._notify()

    def done(self, pod: PodInfo) -> None:
        """The attempt is over (bound, or requeued already); drop events nobody needs."""
        self._done(_key(pod))

    def _done(self, key: str) -> None:
        self._in_flight_latest.pop(key, None)
        self._in_flight_deleted.discard(key)
        if self._in_flight.pop(key, None) is None:
            return
        if not self._in_flight:
            self._events.clear()
            return
        oldest = next(iter(self._in_flight.values()))
        events = self._events
        while events and events[0][0] <= oldest:
            events.popleft()

    def _in_flight_strategy(self, qpi: QueuedPodInfo) -> int:
        """``determineSchedulingHintForInFlightPod``: did an event during the attempt help?"""
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            return QUEUE_AFTER_BACKOFF  # an error, not a rejection: retry after backoff
        start = self._in_flight.get(qpi.key)
        if start is None:
            return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_SKIP
        for seq, event, old, new in self._events:
            if seq <= start:
                continue
            s = self._worth_requeuing(qpi, event, old, new)
            if s == QUEUE_IMMEDIATELY:
                return s
            if s == QUEUE_AFTER_BACKOFF:
                strategy = s
                if not qpi.pending_plugins:
                    return s
        return strategy

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, *, error: bool = False) -> None:
        """``AddUnschedulableIfNotPresent``: back from a failed attempt.

        To the pool, unless an event seen during the attempt may help (then backoffQ
        or activeQ). ``error`` means no plugin rejected it (an internal or API
        error): retried after backoff whatever happens in the cluster. A pod deleted
        during the attempt is dropped; one updated comes back in its latest version.
        """
        key = qpi.key
        try:
            if key in self._where or key in self._in_flight_deleted:
                return
            latest = self._in_flight_latest.get(key)
            if latest is not None:
                qpi.pod_info = latest
            if error:
                qpi.unschedulable_plugins = set()
                qpi.pending_plugins = set()
            if qpi.unschedulable_plugins or qpi.pending_plugins:
                qpi.unschedulable_count += 1
                qpi.consecutive_errors = 0
            else:
                qpi.consecutive_errors += 1
            qpi.timestamp = self.clock.now()
            qpi.flushed = False
            self._requeue(qpi, self._in_flight_strategy(qpi), ev.SCHEDULE_ATTEMPT_FAILURE)
        finally:
            self._done(key)

    # STUB (wC): wQ's pod-group queue replaces this at the merge; the pod-group cycle
    # hands every attempted group back through it.
    def add_attempted_pod_group_if_needed(
        self, group: Any, scheduling_cycle: int, status: Any
    ) -> None:
        """``AddAttemptedPodGroupIfNeeded`` (stub: does nothing)."""

    # -- events -----------------------------------------------------------------------
    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[PodInfo], bool] | None = None,
    ) -> int:
        """A cluster event: requeue every pool pod it may help; returns how many left the pool.

        ``pre_check`` (upstream ``PreEnqueueCheck``) can exclude pods up front.
        """
        if not self._event_of_interest(event):
            return 0
        moved = self._move_pods(self._candidates(event), event, old, new, pre_check)
        if moved:
            self._notify()
        return moved

    def flush_backoff_completed(self) -> int:
        """``flushBackoffQCompleted``: pods whose backoff ended go to activeQ."""
        now = self.clock.now()
        moved = 0
        heap, toks = self._backoff, self._backoff_tok
        while heap:
            t, tok, qpi = heap[0]
            if toks.get(qpi.key) != tok:
                heapq.heappop(heap)
                continue
            if t > now:
                break
            heapq.heappop(heap)
            self._remove(qpi.key)
            if self._move_to_active(qpi, ev.BACKOFF_COMPLETE, from_backoff=True):
                moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        """``flushUnschedulablePodsLeftover``: pods pooled longer than the limit are retried."""
        now = self.clock.now()
        limit = self.max_in_unschedulable
        stale = [q for q in self._pool.values() if now - q.timestamp > limit]
        if not stale:
            return 0
        for q in stale:
            q.flushed = True
        moved = self._move_pods(stale, ev.UNSCHEDULABLE_TIMEOUT, None, None)
        if moved:
            self._notify()
        return moved

    async def run_flushers(self) -> None:
        """The periodic flushes (backoff every 1 s, leftover every 30 s), on the injected clock."""

        async def every(period: float, fn: Callable[[], int]) -> None:
            while not self._closed:
                await self.clock.sleep(period)
                if fn():
                    self._notify()

        async with anyio.create_task_group() as tg:
            tg.start_soon(every, BACKOFF_FLUSH_PERIOD, self.flush_backoff_completed)
            tg.start_soon(every, LEFTOVER_FLUSH_PERIOD, self.flush_unschedulable_leftover)

    # -- introspection ---------------------------------------------------------------------
    def next_backoff_expiry(self) -> float | None:
        heap, toks = self._backoff, self._backoff_tok
        while heap:
            t, tok, qpi = heap[0]
            if toks.get(qpi.key) == tok:
                return t
            heapq.heappop(heap)
        return None

    def has_active(self) -> bool:
        """Whether a pop would find a pod now (activeQ, or backoffQ's rejected pods when
        SchedulerPopFromBackoffQ pops those)."""
        if self._active_tok:
            return True
        heap, toks = self._backoff_pop, self._backoff_tok
        while heap and toks.get(heap[0][3].key) != heap[0][2]:
            heapq.heappop(heap)
        return bool(heap)

    def location(self, pod: PodInfo) -> str | None:
        """Where the pod is: active, backoff, unschedulable, "inFlight" or None."""
        key = _key(pod)
        where = self._where.get(key)
        if where is None and key in self._in_flight:
            return "inFlight"
        return where

    def get(self, pod: PodInfo) -> QueuedPodInfo | None:
        return self._entries.get(_key(pod))

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue as ``scheduler_pending_pods{queue}`` counts them (gated apart)."""
        gated = len(self._gated)
        return {
            ACTIVE_Q: len(self._active_tok),
            BACKOFF_Q: len(self._backoff_tok),
            UNSCHEDULABLE: len(self._pool) - gated,
            "gated": gated,
        }

    def unschedulable_pods(self) -> list[QueuedPodInfo]:
        return list(self._pool.values())

    def active_pods(self) -> list[QueuedPodInfo]:
        """activeQ in pop order (for debugging and tests; O(n log n))."""
        live = [e for e in self._active if self._active_tok.get(e[2].key) == e[1]]
        return [e[2] for e in sorted(live, key=lambda e: (e[0], e[1]))]

    def backoff_pods(self) -> list[QueuedPodInfo]:
        live = [e for e in self._backoff if self._backoff_tok.get(e[2].key) == e[1]]
        return [e[2] for e in sorted(live, key=lambda e: (e[0], e[1]))]

    def in_flight(self) -> int:
        return len(self._in_flight)

    def in_flight_event_counts(self) -> dict[str, int]:
        """``scheduler_inflight_events``: the pods in flight (``PodPopped``) and, by label,
        the events kept for them (seen while some pod was in flight)."""
        out: dict[str, int] = Counter(e[1].label for e in self._events)
        out[POD_POPPED] = len(self._in_flight)
        return out

    def dump(self) -> dict[str, Any]:
        """JSON-ready view for /debug/queue: every pending pod, where and why."""

        wall = wall_clock(self.clock)

        def row(q: QueuedPodInfo) -> dict[str, Any]:
            d: dict[str, Any] = {
                "pod": q.pod_info.key,
                "uid": q.pod_info.uid,
                "profile": q.profile,
                "priority": q.priority,
                "attempts": q.attempts,
                "timestamp": wall(q.timestamp),
                "initialAttemptTimestamp": wall(q.initial_attempt_timestamp),
                "unschedulablePlugins": plugin_names(q.unschedulable_plugins),
                "pendingPlugins": plugin_names(q.pending_plugins),
            }
            if q.pod_info.error is not None:
                d["podError"] = q.pod_info.error  # only an update of the pod can help
            if q.gated:
                d["gatingPlugin"] = q.gating_plugin
                d["gatingMessage"] = q.gating_status.message() if q.gating_status else ""
            if q.attempts:
                d["backoffExpiry"] = wall(self.backoff_expiry(q))
            return d

        pool = sorted(self._pool.values(), key=lambda q: q.pod_info.key)
        return {
            "now": wall(self.clock.now()),
            "counts": self.pending_counts(),
            "schedulingCycle": self.scheduling_cycle,
            ACTIVE_Q: [row(q) for q in self.active_pods()],
            BACKOFF_Q: [row(q) for q in self.backoff_pods()],
            UNSCHEDULABLE: [row(q) for q in pool if not q.gated],
            "gated": [row(q) for q in pool if q.gated],
            "inFlight": list(self._in_flight),
            "inFlightEvents": [e[1].label for e in self._events],
            "nominated": {
                n: [p.key for p in ps] for n, ps in sorted(self.nominator.nodes().items())
            },
        }
