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
import math
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any

import anyio

from ..api.workload import PodGroup
from ..framework.deadline import PluginTimeout, SyncDeadline
from ..framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    extension_points_of,
)
from ..framework.podgroup import PodGroupInfo, pod_group_key, pod_group_of
from ..framework.runtime import Framework
from ..framework.status import Code, Status
from ..framework.types import PodInfo
from ..util.clock import Clock, RealClock, wall_clock
from . import events as ev
from .nominator import Nominator
from .podgroups import ENTITY_KEY_PREFIX, MemberPods, QueuedPodGroupInfo
from .queued_pod import QueuedPodInfo

__all__ = [
    "ACTIVE_Q",
    "BACKOFF_Q",
    "INVALID_POD_PLUGIN",
    "QUEUE_AFTER_BACKOFF",
    "QUEUE_IMMEDIATELY",
    "QUEUE_SKIP",
    "UNSCHEDULABLE",
    "UNSCHEDULABLE_Q_TIME_INTERVAL",
    "Entity",
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

# ``strategyToQueueLabel``: the queue a strategy stands for, in the incoming metrics.
_STRATEGY_QUEUE = {
    QUEUE_IMMEDIATELY: ACTIVE_Q,
    QUEUE_AFTER_BACKOFF: BACKOFF_Q,
    QUEUE_SKIP: UNSCHEDULABLE,
}

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


# What the queue holds and pops: a pod alone, or a pod group's queued members together.
Entity = QueuedPodInfo | QueuedPodGroupInfo


def _key(pod: PodInfo) -> str:
    return pod.uid or pod.key


def _rejectors(e: Entity) -> set[str]:
    """The plugins whose events may requeue ``e``; a group's are its members'."""
    if isinstance(e, QueuedPodGroupInfo):
        out: set[str] = set()
        for m in e.members:
            out |= m.unschedulable_plugins | m.pending_plugins
        return out
    return e.unschedulable_plugins | e.pending_plugins


def _pods_of(e: Entity) -> list[QueuedPodInfo]:
    """``ForEachPodInfo``: a pod is its own only member."""
    return e.members if isinstance(e, QueuedPodGroupInfo) else [e]


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
        hint_observer: HintObserver | None = None,
        nominator: Nominator | None = None,
    ) -> None:
        """``hint_observer``: told of every queueing hint call (the metrics'
        queueing_hint_execution_duration). ``nominator``: the one the frameworks' handles
        were built with (a new one if not given)."""
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
        self.nominator = nominator if nominator is not None else Nominator()
        fw = next(iter(frameworks.values()))
        self._sort_key = fw.queue_sort_key()
        v1_37 = fw.handle.features.at_least("1.37")
        # SchedulerPopFromBackoffQ: with activeQ empty, the head of backoffQ's rejected pods
        # (errors excluded) is popped at once; PreEnqueue runs on entering backoffQ instead.
        self.pop_from_backoff = fw.handle.features.enabled("SchedulerPopFromBackoffQ")
        # v1.37 splits pending pods' events (TargetPod, UnscheduledPod) and adds ScaleUp.
        self.pending_events = ev.pending_pod_events(v1_37)
        # GenericWorkload (v1.37): pod groups' members are queued as one entity per group
        # (upstream's isPodGroupMember); otherwise a member is an ordinary pod.
        self.generic_workload = v1_37 and fw.handle.features.enabled("GenericWorkload")
        # The PodGroups observed (upstream's workloadForest, without CompositePodGroups).
        self._pod_groups: dict[str, PodGroup] = {}
        # Members whose PodGroup is not observed yet ("incomplete"), and members that came
        # while their group was in flight ("pending", rejoining it when it is requeued).
        self.incomplete = MemberPods()
        self.pending = MemberPods()
        # The group popped last (upstream's lastPoppedEntityKey), until it comes back.
        self._last_popped: str | None = None
        # Told of every entity's move (event, queue, its pods, and "pod" or "podgroup"
        # when it counts as an incoming entity, else None); when set, ``on_move`` is not
        # used. As upstream's recordIncomingEntitiesMetrics: the entity does not count
        # when the queueing strategy that moved it names the queue it lands in.
        self.on_entity_move: Callable[[str, str, int, str | None], None] | None = None
        self._prev_queue: str | None = None
        self._seq = itertools.count()
        # Location of every queued pod, and the pod itself.
        self._where: dict[str, str] = {}
        self._entries: dict[str, Entity] = {}
        # Heaps with lazy deletion: an entry is live iff its token is the pod's current one.
        self._active: list[tuple[Any, int, Entity]] = []
        self._active_tok: dict[str, int] = {}
        self._backoff: list[tuple[float, int, Entity]] = []
        self._backoff_tok: dict[str, int] = {}
        # backoffQ's rejected pods by (expiry, QueueSort), popped when activeQ is empty.
        self._backoff_pop: list[tuple[float, Any, int, Entity]] = []
        # The unschedulable pool (insertion-ordered) and its index by rejecting plugin.
        self._pool: dict[str, Entity] = {}
        self._pool_seq: dict[str, int] = {}
        self._pool_rejectors: dict[str, tuple[str, ...]] = {}
        self._pool_idx: dict[tuple[str, str], set[str]] = {}
        self._pool_any: set[str] = set()
        self._gated: set[str] = set()
        # Queue keys of the queued group entities, and the queues one ever was in.
        self._group_keys: set[str] = set()
        self._group_seen: set[str] = set()
        # The queues a pod entity ever entered ("gated" apart): upstream's queued_entities
        # series of type "pod" appear on first use, as a group's do.
        self._pod_seen: set[str] = set()
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
        # ``_gating_plugin_cares`` per event, then (profile, gating plugin): asked for each
        # gated pod on each event (every victim deletion, for each preemptor waiting).
        self._cares_cache: dict[ClusterEvent, dict[tuple[str, str], bool]] = {}
        self.hint_observer = hint_observer

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
        self._cares_cache.clear()

    # -- helpers ------------------------------------------------------------------------
    def _notify(self) -> None:
        self._wakeup.set()

    def _count(self, event: str, queue: str, entity: Entity) -> None:
        group = isinstance(entity, QueuedPodGroupInfo)
        if not group:
            self._pod_seen.add("gated" if queue == UNSCHEDULABLE and entity.gated else queue)
        if self.on_entity_move is not None:
            kind = ("podgroup" if group else "pod") if self._prev_queue != queue else None
            self.on_entity_move(event, queue, entity.size(), kind)
        elif self._on_move is not None and not group:
            self._on_move(event, queue)

    def backoff_duration(self, qpi: Entity) -> float:
        """``calculateBackoffDuration``: initial * 2^(count-1) capped at max, where count is
        the errors in a row if the last attempts erred, else the rejections (an error
        after rejections backs off as a first error); 0 if never failed. An entity of
        several pods may back off longer: the max times the square root of its size."""
        count = qpi.consecutive_errors or qpi.unschedulable_count
        if count == 0:
            return 0.0
        cap = self.max_backoff
        size = qpi.size()
        if size > 1:
            cap *= math.sqrt(size)
        d = self.initial_backoff
        for _ in range(1, count):
            if d > cap - d:
                return cap
            d += d
        return d

    def backoff_expiry(self, qpi: Entity) -> float:
        """``getBackoffTime``: truncated to the ordering window with SchedulerPopFromBackoffQ.
        A group's is computed once (at its size then) until its next attempt's outcome, as
        upstream caches ``BackoffExpiration``."""
        if isinstance(qpi, QueuedPodGroupInfo):
            if qpi.backoff_expiration is None:
                if not (qpi.consecutive_errors or qpi.unschedulable_count):
                    return qpi.timestamp  # never failed: nothing to cache
                qpi.backoff_expiration = self._expiry(qpi)
            return qpi.backoff_expiration
        return self._expiry(qpi)

    def _expiry(self, qpi: Entity) -> float:
        t = qpi.timestamp + self.backoff_duration(qpi)
        if self.pop_from_backoff:
            return t - t % BACKOFF_ORDERING_WINDOW
        return t

    def backoff_release(self, qpi: Entity) -> float:
        """When ``qpi`` stops backing off. With SchedulerPopFromBackoffQ upstream's
        ``isEntityBackingoff`` compares the truncated expiry with the window the clock is
        in (``!boTime.Before(alignToWindow(now))``), so an entity that has failed leaves
        backoff one window after its truncated expiry: a pod group that failed at 13.06 s
        with a 1 s backoff is flushed at 15.0 s, not at 14.0 s."""
        t = self.backoff_expiry(qpi)
        if self.pop_from_backoff and (qpi.consecutive_errors or qpi.unschedulable_count):
            t += BACKOFF_ORDERING_WINDOW
        return t

    def is_backing_off(self, qpi: Entity) -> bool:
        if qpi.gated:
            return False
        return self.backoff_release(qpi) > self.clock.now()

    def _push_active(self, qpi: Entity, event: str) -> None:
        key = qpi.queue_key
        tok = next(self._seq)
        self._where[key] = ACTIVE_Q
        self._entries[key] = qpi
        if isinstance(qpi, QueuedPodGroupInfo):
            self._track_group(key, ACTIVE_Q, qpi.gated)
        self._active_tok[key] = tok
        heapq.heappush(self._active, (self._sort_key(qpi), tok, qpi))
        if len(self._active) > 2 * len(self._active_tok) + 64:
            self._active = [e for e in self._active if self._active_tok.get(e[2].queue_key) == e[1]]
            heapq.heapify(self._active)
        self._count(event, ACTIVE_Q, qpi)
        self._notify()

    def _push_backoff(self, qpi: Entity, event: str) -> bool:
        """``moveToBackoffQ``; False when PreEnqueue (run here with SchedulerPopFromBackoffQ)
        gated the pod into the pool instead."""
        if self.pop_from_backoff and not self._gate(qpi):
            self._push_unschedulable(qpi, event)
            return False
        key = qpi.queue_key
        tok = next(self._seq)
        self._where[key] = BACKOFF_Q
        self._entries[key] = qpi
        if isinstance(qpi, QueuedPodGroupInfo):
            self._track_group(key, BACKOFF_Q, qpi.gated)
        self._backoff_tok[key] = tok
        expiry = self.backoff_release(qpi)
        heapq.heappush(self._backoff, (expiry, tok, qpi))
        if len(self._backoff) > 2 * len(self._backoff_tok) + 64:
            self._backoff = [
                e for e in self._backoff if self._backoff_tok.get(e[2].queue_key) == e[1]
            ]
            heapq.heapify(self._backoff)
        if self.pop_from_backoff and (qpi.unschedulable_plugins or qpi.pending_plugins):
            heapq.heappush(self._backoff_pop, (expiry, self._sort_key(qpi), tok, qpi))
            if len(self._backoff_pop) > 2 * len(self._backoff_tok) + 64:
                live = self._backoff_tok
                self._backoff_pop = [
                    e for e in self._backoff_pop if live.get(e[3].queue_key) == e[2]
                ]
                heapq.heapify(self._backoff_pop)
        self._count(event, BACKOFF_Q, qpi)
        if self.pop_from_backoff:
            self._notify()  # an idle pop takes it now
        return True

    def _push_unschedulable(self, qpi: Entity, event: str) -> None:
        key = qpi.queue_key
        self._where[key] = UNSCHEDULABLE
        self._entries[key] = qpi
        if isinstance(qpi, QueuedPodGroupInfo):
            self._track_group(key, UNSCHEDULABLE, qpi.gated)
        self._pool[key] = qpi
        self._pool_seq[key] = next(self._seq)
        rejectors = tuple(_rejectors(qpi))
        self._pool_rejectors[key] = rejectors
        if rejectors:
            for plugin in rejectors:
                self._pool_idx.setdefault((qpi.profile, plugin), set()).add(key)
        else:
            self._pool_any.add(key)
        if qpi.gated:
            self._gated.add(key)
        self._count(event, UNSCHEDULABLE, qpi)

    def _track_group(self, key: str, where: str, gated: bool) -> None:
        self._group_keys.add(key)
        self._group_seen.add("gated" if gated and where == UNSCHEDULABLE else where)

    def _remove(self, key: str) -> Entity | None:
        """Take a pod out of whichever queue holds it (heap entries die lazily)."""
        where = self._where.pop(key, None)
        if where is None:
            return None
        self._group_keys.discard(key)
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

    def _gate(self, qpi: Entity) -> bool:
        """Run PreEnqueue; True when the entity may enter activeQ (``runPreEnqueuePlugins``).
        Every member of a group is asked (each records its own gate); any gated member
        gates the whole group."""
        if isinstance(qpi, QueuedPodGroupInfo):
            gating: QueuedPodInfo | None = None
            shared: dict[str, Status] = {}  # verdicts that hold for every member
            with self.deadline:  # one deadline for the group's members
                for m in qpi.members:
                    if not self._gate_pod(m, shared):
                        gating = m
            if gating is None:
                qpi.gated, qpi.gating_plugin, qpi.gating_status = False, "", None
                return True
            qpi.gated, qpi.gating_plugin = True, gating.gating_plugin
            qpi.gating_status = gating.gating_status
            return False
        return self._gate_pod(qpi)

    def _gate_pod(self, qpi: QueuedPodInfo, group: dict[str, Status] | None = None) -> bool:
        """PreEnqueue for one pod; ``group``: a group's member, its deadline already armed
        and the group-wide verdicts shared (``run_pre_enqueue``)."""
        fw = self.frameworks.get(qpi.profile)
        st: Status | None = None
        if fw is not None:
            try:
                if group is None:
                    with self.deadline:
                        st = fw.run_pre_enqueue(qpi.pod_info)
                else:
                    st = fw.run_pre_enqueue(qpi.pod_info, group)
            except PluginTimeout as e:  # as a PreEnqueue error: wait in the pool
                st = Status(Code.ERROR, str(e))
        if st is None or st.is_success():
            qpi.gated, qpi.gating_plugin, qpi.gating_status = False, "", None
            return True
        qpi.gated, qpi.gating_plugin, qpi.gating_status = True, st.plugin, st
        if st.plugin:
            qpi.unschedulable_plugins.add(st.plugin)
        return False

    def _move_to_active(self, qpi: Entity, event: str, from_backoff: bool = False) -> bool:
        """``moveToActiveQ`` for a pod in no queue: activeQ, or the pool if PreEnqueue gates it
        (not asked again for a pod leaving backoffQ with SchedulerPopFromBackoffQ)."""
        if not (from_backoff and self.pop_from_backoff) and not self._gate(qpi):
            self._push_unschedulable(qpi, event)
            return False
        now = self.clock.now()
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = now
        if isinstance(qpi, QueuedPodGroupInfo):
            for m in qpi.members:  # a member may join after the group's first attempt
                if m.initial_attempt_timestamp is None:
                    m.initial_attempt_timestamp = now
        self._push_active(qpi, event)
        if event == self.pending_events.add.label and isinstance(qpi, QueuedPodInfo):
            self.nominator.add(qpi.pod_info)
        return True

    def _requeue(self, qpi: Entity, strategy: int, event: str) -> str:
        """``requeueEntityWithQueueingStrategy`` for an entity in no queue; returns where
        it went."""
        self._prev_queue = _STRATEGY_QUEUE[strategy]
        try:
            if strategy == QUEUE_SKIP:
                self._push_unschedulable(qpi, event)
                return UNSCHEDULABLE
            if strategy == QUEUE_AFTER_BACKOFF and self.is_backing_off(qpi):
                return BACKOFF_Q if self._push_backoff(qpi, event) else UNSCHEDULABLE
            return ACTIVE_Q if self._move_to_active(qpi, event) else UNSCHEDULABLE
        finally:
            self._prev_queue = None

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

    def _worth_requeuing(self, qpi: Entity, event: ClusterEvent, old: Any, new: Any) -> int:
        """``isEntityWorthRequeuing``: a group is worth it when any member is, at the
        strongest strategy its members' hints give."""
        if isinstance(qpi, QueuedPodInfo):
            return self._pod_worth_requeuing(qpi, event, old, new)
        best = QUEUE_SKIP
        # Only a pending plugin's Queue queues immediately: without one, the first member
        # worth a retry after backoff settles it (members of a gang rejected by
        # GangScheduling would otherwise be asked in turn on every sibling's arrival).
        top = (
            QUEUE_IMMEDIATELY
            if any(m.pending_plugins for m in qpi.members)
            else QUEUE_AFTER_BACKOFF
        )
        for m in qpi.members:
            best = max(best, self._pod_worth_requeuing(m, event, old, new))
            if best >= top:
                break
        return best

    def _pod_worth_requeuing(
        self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> int:
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

    def _gating_plugins_caring(self, event: ClusterEvent) -> dict[tuple[str, str], bool]:
        """Per (profile, gating plugin), whether it registered ``event``: filled as gated
        pods ask (``_gating_plugin_cares``), kept per event."""
        got = self._cares_cache.get(event)
        if got is None:
            got = self._cares_cache[event] = {}
        return got

    def _gating_plugin_cares(
        self, qpi: Entity, event: ClusterEvent, known: dict[tuple[str, str], bool] | None = None
    ) -> bool:
        """``known``: ``_gating_plugins_caring(event)``, looked up once per event."""
        if known is None:
            known = self._gating_plugins_caring(event)
        key = (qpi.profile, qpi.gating_plugin)
        got = known.get(key)
        if got is None:
            regs = self._plugin_events.get(key, ())
            got = known[key] = any(ev.matches(r, event) for r in regs)
        return got

    def _still_gated(self, qpi: Entity) -> bool:
        """Whether the plugin that gated a pooled pod still gates it: then requeueing it
        could only bring it back to the pool, whatever the hints say (activeQ and, with
        SchedulerPopFromBackoffQ, backoffQ ask PreEnqueue first), so it is left there
        without running them. A preemptor waiting for its victims is one: every victim
        deletion would otherwise re-evaluate each of them (kube-scheduler does, and
        counts a move to the pool each time)."""
        if not isinstance(qpi, QueuedPodInfo) or not self.pop_from_backoff:
            return False
        fw = self.frameworks.get(qpi.profile)
        if fw is None:
            return False
        try:
            with self.deadline:
                # the gating plugin first, as upstream: while it gates, the others are not asked
                st = fw.run_pre_enqueue_gate(qpi.pod_info, qpi.gating_plugin)
                if st is None:
                    st = fw.run_pre_enqueue(qpi.pod_info)
        except PluginTimeout:
            return False  # the requeue words it as it always has
        if st.is_success() or st.code == Code.ERROR or st.plugin != qpi.gating_plugin:
            return False
        qpi.gating_status = st
        return True

    def _candidates(self, event: ClusterEvent) -> list[Entity]:
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
        pods: Iterable[Entity],
        event: ClusterEvent,
        old: Any,
        new: Any,
        pre_check: Callable[[PodInfo], bool] | None = None,
    ) -> int:
        """``movePodsToActiveOrBackoffQueue``: requeue the pool pods the event may help."""
        moved = 0
        cares = self._gating_plugins_caring(event)
        for qpi in pods:
            if pre_check is not None and not any(pre_check(p.pod_info) for p in _pods_of(qpi)):
                continue
            if qpi.gated and (
                not self._gating_plugin_cares(qpi, event, cares) or self._still_gated(qpi)
            ):
                continue
            strategy = self._worth_requeuing(qpi, event, old, new)
            if strategy == QUEUE_SKIP:
                continue
            self._remove(qpi.queue_key)
            if self._requeue(qpi, strategy, event.label) != UNSCHEDULABLE:
                moved += 1
        if self._in_flight:
            self._event_seq += 1
            self._events.append((self._event_seq, event, old, new))
        return moved

    # -- pod lifecycle -----------------------------------------------------------------
    def is_member(self, pod: PodInfo) -> bool:
        """``isPodGroupMember``: queued with its group (GenericWorkload on, v1.37)."""
        return self.generic_workload and pod_group_of(pod.pod) is not None

    def _known(self, key: str, pod: PodInfo) -> QueuedPodInfo | None:
        """The queued version of a pod anywhere in the queue (in flight excluded)."""
        e = self._entries.get(key)
        if isinstance(e, QueuedPodInfo):
            return e
        gkey = pod_group_of(pod.pod) if self.generic_workload else None
        if gkey is None:
            return None
        group = self._entries.get(ENTITY_KEY_PREFIX + gkey)
        m = group.member(key) if isinstance(group, QueuedPodGroupInfo) else None
        return m or self.incomplete.get(key) or self.pending.get(key)

    def add(self, pod: PodInfo, profile: str) -> None:
        """A new pending pod: activeQ, or the pool when a PreEnqueue plugin gates it; a pod
        group's member joins its group's entity (``addPodGroupMember``)."""
        key = _key(pod)
        cur = self._known(key, pod)
        if cur is not None or key in self._in_flight:
            old = cur.pod_info if cur is not None else self._in_flight_latest.get(key, pod)
            self.update(old, pod)
            return
        qpi = QueuedPodInfo(pod, profile, self.clock.now())
        if self.is_member(pod):
            self.nominator.add(pod)
            self._add_member(qpi)
            return
        self._move_to_active(qpi, self.pending_events.add.label)

    def _add_member(self, qpi: QueuedPodInfo) -> None:
        """``addPodGroupMember``: "incomplete" while the PodGroup is unknown; into the
        group's queued entity (requeued where it was, PreEnqueue asked again); "pending"
        while the group is in flight; else a new entity, to activeQ."""
        gkey = pod_group_of(qpi.pod_info.pod)
        assert gkey is not None
        pg = self._pod_groups.get(gkey)
        if pg is None:
            self.incomplete.add(gkey, qpi)
            return
        label = self.pending_events.add.label
        ekey = ENTITY_KEY_PREFIX + gkey
        where = self._where.get(ekey)
        if where is not None:
            entity = self._remove(ekey)
            assert isinstance(entity, QueuedPodGroupInfo)
            entity.add_member(qpi)
            self._requeue_entity(entity, where, label)
            return
        if self._last_popped == gkey:
            self.pending.add(gkey, qpi)
            return
        ns, _, name = gkey.partition("/")
        group = QueuedPodGroupInfo(PodGroupInfo(ns, name, pg), qpi.profile)
        group.add_member(qpi)
        group.timestamp = qpi.timestamp
        group.initial_attempt_timestamp = qpi.initial_attempt_timestamp
        self._move_to_active(group, label)

    def _requeue_entity(self, entity: Entity, where: str, event: str) -> str:
        """``requeueEntityWithQueueingStrategy`` with the strategy of the queue the entity
        was taken from."""
        strategy = {ACTIVE_Q: QUEUE_IMMEDIATELY, BACKOFF_Q: QUEUE_AFTER_BACKOFF}.get(
            where, QUEUE_SKIP
        )
        return self._requeue(entity, strategy, event)

    def update(self, old: PodInfo, new: PodInfo) -> None:
        """``Update``: an unassigned pod changed.

        In flight: remember the change as an in-flight event (and the newest
        version). In activeQ/backoffQ: replace it in place. In the pool: requeue
        it if a rejecting plugin's hint says the change may help. Elsewhere: add it.
        A group member is updated inside its entity (whose hints then decide), or where it
        waits (incomplete, pending).
        """
        rv = new.pod.metadata.resource_version
        if old is not new and rv and rv == old.pod.metadata.resource_version:
            return  # a resync carrying the same object
        key = _key(new)
        pe = self.pending_events
        events = ev.pod_update_events(old, new, pe.target, scale_up=pe.scale_up)
        if self.is_member(old):
            gkey = pod_group_of(old.pod)
            if gkey not in self._pod_groups:
                m = self.incomplete.get(key)
                if m is not None:
                    m.pod_info = new
                    self.nominator.update(old, new)
                return
        if key in self._in_flight:
            self._in_flight_latest[key] = new
            for e in events:
                self._event_seq += 1
                self._events.append((self._event_seq, e, old, new))
            return
        if self.is_member(old):
            self._update_member(old, new, events)
            return
        where = self._where.get(key)
        if where is None:
            profile = self.profile_of(new)
            if profile is not None:
                self.add(new, profile)
            return
        qpi = self._entries[key]
        assert isinstance(qpi, QueuedPodInfo)
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
        self._requeue_updated(qpi, events, old, new)

    def _requeue_updated(
        self, qpi: Entity, events: list[ClusterEvent], old: PodInfo, new: PodInfo
    ) -> None:
        """A pool entity's pod changed: requeue it on the first event its hints accept."""
        for e in events:
            strategy = self._worth_requeuing(qpi, e, old, new)
            if strategy == QUEUE_SKIP:
                continue
            self._remove(qpi.queue_key)
            if self._requeue(qpi, strategy, e.label) != UNSCHEDULABLE:
                return

    def _update_member(self, old: PodInfo, new: PodInfo, events: list[ClusterEvent]) -> None:
        key = _key(new)
        gkey = pod_group_of(old.pod)
        ekey = ENTITY_KEY_PREFIX + (gkey or "")
        group = self._entries.get(ekey)
        m = group.member(key) if isinstance(group, QueuedPodGroupInfo) else None
        if isinstance(group, QueuedPodGroupInfo) and m is not None:
            m.pod_info = new
            group.refresh_member(m)
            self.nominator.update(old, new)
            if self._where.get(ekey) == UNSCHEDULABLE:
                self._requeue_updated(group, events, old, new)
            return
        m = self.pending.get(key)
        if m is not None:
            m.pod_info = new
            self.nominator.update(old, new)
            return
        profile = self.profile_of(new)
        if profile is not None:
            self.add(new, profile)

    def delete(self, pod: PodInfo) -> None:
        """The pod is gone (or bound): out of every queue, and not requeued if in flight.
        A member leaves its entity, which is requeued where it was while members remain
        (``deletePodGroupMember``)."""
        key = _key(pod)
        self.nominator.delete(pod)
        if self.is_member(pod):
            self._delete_member(pod, key)
        elif self._remove(key) is not None:
            return
        if key in self._in_flight:
            self._in_flight_deleted.add(key)

    def _delete_member(self, pod: PodInfo, key: str) -> None:
        gkey = pod_group_of(pod.pod)
        assert gkey is not None
        if gkey not in self._pod_groups:
            self.incomplete.delete(key)
            return
        ekey = ENTITY_KEY_PREFIX + gkey
        where = self._where.get(ekey)
        if where is None:
            self.pending.delete(key)
            return
        entity = self._remove(ekey)
        assert isinstance(entity, QueuedPodGroupInfo)
        entity.remove_member(key)
        if entity.members:
            self._requeue_entity(entity, where, self.pending_events.add.label)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """``Activate``: pods in the pool or backoffQ go straight to activeQ (e.g. a gang's
        siblings), a member with its whole group; for an in-flight pod a targeted
        ForceActivate is recorded instead."""
        for pod in pods:
            key = _key(pod)
            ekey = key
            if self.is_member(pod):
                gkey = pod_group_of(pod.pod)
                if gkey not in self._pod_groups:
                    continue
                ekey = ENTITY_KEY_PREFIX + str(gkey)
            where = self._where.get(ekey)
            if where in (UNSCHEDULABLE, BACKOFF_Q):
                qpi = self._remove(ekey)
                assert qpi is not None
                self._move_to_active(qpi, ev.FORCE_ACTIVATE.label, where == BACKOFF_Q)
            elif key in self._in_flight:
                self._event_seq += 1
                self._events.append((self._event_seq, ev.FORCE_ACTIVATE, None, pod))

    # -- pod groups --------------------------------------------------------------------------
    def add_pod_group(self, pg: PodGroup) -> None:
        """``AddPodGroup``: the PodGroup is observed; its incomplete members join the queue."""
        gkey = pod_group_key(pg.metadata.namespace, pg.metadata.name)
        self._pod_groups[gkey] = pg
        for qpi in self.incomplete.clear(gkey):
            self._add_member(qpi)

    def update_pod_group(self, old: PodGroup, new: PodGroup) -> None:
        """``UpdatePodGroup``: the queued entity (not one in flight) sees the new version."""
        gkey = pod_group_key(new.metadata.namespace, new.metadata.name)
        self._pod_groups[gkey] = new
        entity = self._entries.get(ENTITY_KEY_PREFIX + gkey)
        if isinstance(entity, QueuedPodGroupInfo):
            entity.info.pod_group = new

    def delete_pod_group(self, pg: PodGroup) -> None:
        """``DeletePodGroup``: the group's queued (or pending) members go back to
        "incomplete", until a PodGroup of that name shows up again."""
        gkey = pod_group_key(pg.metadata.namespace, pg.metadata.name)
        if self._pod_groups.pop(gkey, None) is None:
            return
        ekey = ENTITY_KEY_PREFIX + gkey
        entity = self._remove(ekey)
        if entity is None:
            if self._last_popped == gkey:
                for qpi in self.pending.clear(gkey):
                    self.incomplete.add(gkey, qpi)
            return
        for qpi in _pods_of(entity):
            self.incomplete.add(gkey, qpi)

    def pod_group(self, key: str) -> PodGroup | None:
        """The observed PodGroup ``namespace/name``, as the queue knows it."""
        return self._pod_groups.get(key)

    def add_attempted_pod_group_if_needed(
        self, group: QueuedPodGroupInfo, cycle: int, status: Status | None
    ) -> None:
        """``AddAttemptedPodGroupIfNeeded``: after a pod-group cycle, the members that
        came back (failed ones through ``add_unschedulable_if_not_present``, new ones
        meanwhile) are queued again as the group, with the popped entity's queueing state.

        ``status`` success (or None): straight to activeQ, counts reset, and the timestamp
        kept when some member failed (so preemption is tried next at once); rejected: one
        more rejection; otherwise an error. Then backoffQ if backing off, else activeQ.
        ``cycle`` is for the log only, as upstream's.
        """
        del cycle
        if group.queue_key in self._where:
            return
        self._last_popped = None
        pending = self.pending.clear(group.key)
        if not pending:
            return
        attempted = {m.key for m in group.members}
        had_failures = any(p.key in attempted for p in pending)
        pg = self._pod_groups.get(group.key)
        if pg is None:  # the group was deleted meanwhile: its pods wait for it again
            for qpi in pending:
                self.incomplete.add(group.key, qpi)
            return
        entity = QueuedPodGroupInfo(
            PodGroupInfo(group.info.namespace, group.info.name, pg),
            group.profile,
            timestamp=group.timestamp,
            initial_attempt_timestamp=group.initial_attempt_timestamp,
            attempts=group.attempts,
            unschedulable_plugins=set(group.unschedulable_plugins),
            pending_plugins=set(group.pending_plugins),
            unschedulable_count=group.unschedulable_count,
            consecutive_errors=group.consecutive_errors,
            gated=group.gated,
            gating_plugin=group.gating_plugin,
            gating_status=group.gating_status,
        )
        for qpi in pending:
            entity.add_member(qpi)
        without_backoff = preserve = False
        if status is None or status.is_success():
            without_backoff, preserve = True, had_failures
            entity.consecutive_errors = entity.unschedulable_count = 0
            entity.backoff_expiration = group.backoff_expiration
        elif status.is_rejected():
            entity.unschedulable_count += 1
            entity.consecutive_errors = 0
        else:
            entity.consecutive_errors += 1
        if not preserve:
            entity.timestamp = self.clock.now()
        entity.flushed = False
        if not without_backoff and self.is_backing_off(entity):
            self._push_backoff(entity, ev.SCHEDULE_ATTEMPT_FAILURE)
        else:
            self._move_to_active(entity, ev.SCHEDULE_ATTEMPT_FAILURE)

    # -- popping ----------------------------------------------------------------------
    def pop_nowait(self) -> Entity | None:
        """The head of activeQ (after moving pods whose backoff ended), now in flight; with
        activeQ empty and SchedulerPopFromBackoffQ, backoffQ's first rejected pod. A pod
        group's entity comes with all its queued members in flight."""
        self.flush_backoff_completed()
        while self._active:
            _, tok, qpi = heapq.heappop(self._active)
            if self._active_tok.get(qpi.queue_key) == tok and self._take(qpi):
                return qpi
        while self._backoff_pop:
            _, _, tok, qpi = heapq.heappop(self._backoff_pop)
            if self._backoff_tok.get(qpi.queue_key) == tok:
                self._count(POP_FROM_BACKOFF_Q, ACTIVE_Q, qpi)
                if self._take(qpi):
                    return qpi
        return None

    def _take(self, qpi: Entity) -> bool:
        """Out of its queue and in flight; False for a pod already in flight (a group
        drops such members, and is dropped when none is left)."""
        self._remove(qpi.queue_key)
        if isinstance(qpi, QueuedPodGroupInfo):
            for m in list(qpi.members):
                if m.key in self._in_flight:
                    qpi.remove_member(m.key)
            if not qpi.members:
                return False
            self._last_popped = qpi.key
        elif qpi.key in self._in_flight:
            return False  # tracked twice: drop the duplicate, as upstream does
        else:
            self._last_popped = None
        qpi.attempts += 1
        qpi.unschedulable_plugins = set()
        qpi.pending_plugins = set()
        for m in _pods_of(qpi):
            if m is not qpi:
                m.attempts += 1
                m.unschedulable_plugins = set()
                m.pending_plugins = set()
            self._in_flight[m.key] = self._event_seq
        self.scheduling_cycle += 1
        return True

    async def pop(self) -> Entity | None:
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
            if self.is_member(qpi.pod_info):
                # ``addUnschedulablePodGroupMember``: out of flight first, then back with
                # its group (pending while the group's own attempt is not over).
                self._done(key)
                self._add_member(qpi)
                return
            self._last_popped = None
            self._requeue(qpi, self._in_flight_strategy(qpi), ev.SCHEDULE_ATTEMPT_FAILURE)
        finally:
            self._done(key)

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
            if toks.get(qpi.queue_key) != tok:
                heapq.heappop(heap)
                continue
            if t > now:
                break
            heapq.heappop(heap)
            self._remove(qpi.queue_key)
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
            if toks.get(qpi.queue_key) == tok:
                return t
            heapq.heappop(heap)
        return None

    def has_active(self) -> bool:
        """Whether a pop would find a pod now (activeQ, or backoffQ's rejected pods when
        SchedulerPopFromBackoffQ pops those)."""
        if self._active_tok:
            return True
        heap, toks = self._backoff_pop, self._backoff_tok
        while heap and toks.get(heap[0][3].queue_key) != heap[0][2]:
            heapq.heappop(heap)
        return bool(heap)

    def location(self, pod: PodInfo) -> str | None:
        """Where the pod is: active, backoff, unschedulable, "inFlight" or None; a group
        member is where its entity is, or "incomplete" or "pending"."""
        key = _key(pod)
        where = self._where.get(key)
        if where is None and key in self._in_flight:
            return "inFlight"
        if where is None and self.is_member(pod):
            gkey = pod_group_of(pod.pod)
            ekey = ENTITY_KEY_PREFIX + str(gkey)
            group = self._entries.get(ekey)
            if isinstance(group, QueuedPodGroupInfo) and group.member(key) is not None:
                return self._where[ekey]
            if self.incomplete.get(key) is not None:
                return "incomplete"
            if self.pending.get(key) is not None:
                return "pending"
        return where

    def outside_queues(self, keys: AbstractSet[str]) -> set[str]:
        """The ``keys`` (``pod.uid or pod.key``) not in activeQ, backoffQ or the pool
        themselves: only for those can ``location`` say anything but where they are (in
        flight, a group member, gone). One set difference instead of a call per pod."""
        return keys - self._where.keys()

    def get(self, pod: PodInfo) -> QueuedPodInfo | None:
        """The queued pod (a group member inside its entity, or waiting), or None."""
        return self._known(_key(pod), pod)

    def get_entity(self, key: str) -> Entity | None:
        """The queued entity under queue key ``key`` (``queue_key``), or None."""
        return self._entries.get(key)

    def _entity_counts(self) -> dict[tuple[str, str], int]:
        """(queue, "pod" | "podgroup") -> (entities, pods), the gated apart."""
        out: dict[tuple[str, str], int] = {}
        for key in self._group_keys:
            e = self._entries[key]
            where = "gated" if key in self._gated else self._where[key]
            out[(where, "podgroup")] = out.get((where, "podgroup"), 0) + e.size()
            out[(where, "groups")] = out.get((where, "groups"), 0) + 1
        return out

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue as ``scheduler_pending_pods{queue}`` counts them (gated apart);
        with GenericWorkload, the group members kept aside ("incomplete", "pending")."""
        gated = len(self._gated)
        counts = {
            ACTIVE_Q: len(self._active_tok),
            BACKOFF_Q: len(self._backoff_tok),
            UNSCHEDULABLE: len(self._pool) - gated,
            "gated": gated,
        }
        if self._group_keys:
            for (where, kind), n in self._entity_counts().items():
                if kind == "podgroup":
                    counts[where] += n
                elif kind == "groups":
                    counts[where] -= n
        if self.generic_workload:
            counts["incomplete"] = len(self.incomplete)
            counts["pending"] = len(self.pending)
        return counts

    def entity_counts(self) -> dict[tuple[str, str], int]:
        """``scheduler_queued_entities{queue,type}``: entities per queue and type, for the
        queues an entity of the type ever was in (upstream's series appear on first use)."""
        gated = len(self._gated)
        groups = self._entity_counts()
        out: dict[tuple[str, str], int] = {}
        for where, n in (
            (ACTIVE_Q, len(self._active_tok)),
            (BACKOFF_Q, len(self._backoff_tok)),
            (UNSCHEDULABLE, len(self._pool) - gated),
            ("gated", gated),
        ):
            g = groups.get((where, "groups"), 0)
            if where in self._pod_seen:
                out[(where, "pod")] = n - g
            if where in self._group_seen:
                out[(where, "podgroup")] = g
        return out

    def unschedulable_pods(self) -> list[QueuedPodInfo]:
        """The pool's pods, a group's members each."""
        return [m for e in self._pool.values() for m in _pods_of(e)]

    def active_pods(self) -> list[QueuedPodInfo]:
        """activeQ's pods in pop order, a group's members together (for debugging and
        tests; O(n log n))."""
        live = [e for e in self._active if self._active_tok.get(e[2].queue_key) == e[1]]
        return [m for e in sorted(live, key=lambda e: (e[0], e[1])) for m in _pods_of(e[2])]

    def backoff_pods(self) -> list[QueuedPodInfo]:
        live = [e for e in self._backoff if self._backoff_tok.get(e[2].queue_key) == e[1]]
        return [m for e in sorted(live, key=lambda e: (e[0], e[1])) for m in _pods_of(e[2])]

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

        pool = sorted(self.unschedulable_pods(), key=lambda q: q.pod_info.key)
        return {
            "now": wall(self.clock.now()),
            "counts": self.pending_counts(),
            "schedulingCycle": self.scheduling_cycle,
            ACTIVE_Q: [row(q) for q in self.active_pods()],
            BACKOFF_Q: [row(q) for q in self.backoff_pods()],
            UNSCHEDULABLE: [row(q) for q in pool if not q.gated],
            "gated": [row(q) for q in pool if q.gated],
            "inFlight": list(self._in_flight),
            "incomplete": [row(q) for q in self.incomplete],
            "pendingGroupMembers": [row(q) for q in self.pending],
            "inFlightEvents": [e[1].label for e in self._events],
            "nominated": {
                n: [p.key for p in ps] for n, ps in sorted(self.nominator.nodes().items())
            },
        }
