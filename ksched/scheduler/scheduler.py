"""The Scheduler: wires config → frameworks, cache, queue, for the loop to run.

Data flows one way: informer events (or simulate's cluster) call the ``on_*``
handlers, which feed the cache and queue; the loop (``loop.run_loop``, the one every
front end runs) pops pods and hands each to ``schedule_one`` (the scheduling cycle,
synchronously, then the binding cycle in the loop's task group with a bound on in-flight
bindings; that module reads top to bottom as upstream's ``schedule_one.go``). This
module keeps what those cycles share: the queue, the cache, the snapshot, the round-robin
start (``rotation``), the binding slots and the wiring, and imports neither cycle: they
import it. Outcomes go to an
``Observer`` (events, status patches, metrics in the daemon; result rows in simulate).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc
import structlog

from ..api.objects import Node
from ..api.workload import PodGroup
from ..cache import Cache, CacheError
from ..framework.cycle_state import CycleState
from ..framework.deadline import (
    DEFAULT_BINDING_TIMEOUT,
    DEFAULT_PLUGIN_TIMEOUT,
    SyncDeadline,
)
from ..framework.handle import EventRecorder
from ..framework.interface import ClusterEvent
from ..framework.preemption import (
    POD_PREEMPTOR,
    PodGroupPreemptor,
    PreemptionInFlight,
    preemption_condition,
)
from ..framework.recorder import FrameworkRecorder
from ..framework.registry import Registry
from ..framework.runtime import Framework
from ..framework.selection import NodeRotation
from ..framework.snapshot import Snapshot
from ..framework.types import PodInfo
from ..framework.waiting_pods import WaitingPods
from ..profile import SchedulerCluster, build_frameworks
from ..queue import events as ev
from ..queue.nominator import Nominator
from ..queue.scheduling_queue import QueuedPodInfo, SchedulingQueue
from ..util.clock import Clock, RealClock
from .cycle_cache import CycleCache
from .cycle_result import CycleResult

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration
    from ..extender.client import ExtenderSet

__all__ = [
    "LoopState",
    "MetricsRecorder",
    "Observer",
    "Progress",
    "Scheduler",
    "build_frameworks",
]

log = structlog.get_logger("ksched.scheduler")


class Observer(Protocol):
    """Receives outcomes; must not block (the daemon queues its API calls).

    An observer whose ``failed`` writes the pod's status may also set a class attribute
    ``writes_nomination = True``: it then records a preemption's nominated node in that
    same write (upstream's ``updatePod``: one patch with the condition and
    ``nominatedNodeName``), and the preemption makes no separate one.
    """

    def scheduled(self, pod: PodInfo, node: str, profile: str, attempts: int) -> None: ...

    def failed(
        self, pod: PodInfo, profile: str, reason: str, message: str, result: CycleResult | None
    ) -> None: ...


class MetricsRecorder(FrameworkRecorder, Protocol):
    """Metrics callbacks (``ksched.metrics.SchedulerMetrics``): the scheduler's, and its
    frameworks' own records; each must be cheap."""

    def cycle_finished(self, fw: Framework, state: CycleState, seconds: float) -> None: ...

    def attempt_finished(
        self, qpi: QueuedPodInfo, result: str, seconds: float, sli_seconds: float | None = None
    ) -> None: ...

    def queue_incoming_entity(
        self, event: str, queue: str, pods: int, kind: str | None
    ) -> None: ...

    def event_handled(self, event: str, seconds: float) -> None: ...

    def hint_executed(self, plugin: str, event: str, hint: str, seconds: float) -> None: ...

    def attach(self, sched: Scheduler) -> None:
        """``sched`` was built with these metrics: read its queue and cache at scrape time."""

    def preemption_finished(self, result: str, seconds: float, preemptor: str = ...) -> None: ...

    def batch_lookup(self, profile: str, hinted: bool, seconds: float) -> None: ...

    def batch_stored(self, profile: str, seconds: float) -> None: ...

    def batch_flushed(self, profile: str, reason: str) -> None: ...

    def batch_rescored(self, profile: str, seconds: float) -> None: ...

    def sample_plugins(self) -> bool: ...

    def pod_group_attempt_finished(self, profile: str, result: str, seconds: float) -> None: ...

    def pod_group_algorithm_finished(self, seconds: float) -> None: ...

    def placements_generated(self, profile: str, count: int) -> None: ...

    def placement_evaluated(self, result: str, profile: str, seconds: float) -> None: ...


_perf = time.perf_counter


class _NullObserver:
    def scheduled(self, pod: PodInfo, node: str, profile: str, attempts: int) -> None:
        return None

    def failed(
        self, pod: PodInfo, profile: str, reason: str, message: str, result: CycleResult | None
    ) -> None:
        return None


class Scheduler:
    #: How many pods' explanations (``explain=True``) are kept; the oldest go first.
    explanations_kept = 1000

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        registry: Registry,
        *,
        cluster: SchedulerCluster,
        clock: Clock | None = None,
        observer: Observer | None = None,
        recorder: EventRecorder | None = None,
        seed: int | None = None,
        max_in_flight_bindings: int = 64,
        explain: bool = False,
        assumed_ttl: float = 30.0,
        plugin_timeout: float | None = DEFAULT_PLUGIN_TIMEOUT,
        binding_timeout: float | None = DEFAULT_BINDING_TIMEOUT,
        metrics: MetricsRecorder | None = None,
        adopt: Mapping[str, str] | None = None,
        before_pod_update: Callable[[PodInfo, PodInfo], None] | None = None,
        tie_breaks: Mapping[str, str] | None = None,
        placement_orders: Mapping[str, list[list[str]]] | None = None,
    ) -> None:
        """``metrics``: where the attempts, the queueing hints and (handed to each
        framework as it is built) the frameworks' timings go; it is told of this scheduler
        once built, to read its queue and cache when scraped. ``adopt``: other schedulers'
        pods scheduled here anyway, schedulerName -> profile, ``"*"`` for any name
        (simulate's --scheduler-name/--all-pending, run's --shadow-of).
        ``before_pod_update`` is called with (old, new) before a pod update is applied
        (shadow mode compares another scheduler's binding with its own decision there).
        ``tie_breaks`` (pod key -> the node a tie of best totals goes to instead of a random
        draw) and ``placement_orders`` (PodGroup key -> placement names in the order to try
        them, one list per run of the placement algorithm, the last one staying) are the
        differential oracle's: replaying a pod group, whose later members depend on where
        the earlier ones went, it follows kube-scheduler's draws and Go map orders."""
        self.config = config
        self.clock: Clock = clock or RealClock()
        self.cluster = cluster
        self.snapshot = Snapshot()
        self.waiting_pods = WaitingPods()
        # The loop's state (``loop.run_loop`` sets it; stop() and fence() end it).
        self.loop = LoopState()
        # HTTP extenders (config.extenders); None keeps every cycle synchronous.
        self.extenders: ExtenderSet | None = None
        if config.extenders:
            from ..extender.client import ExtenderSet, apply_ignored_resources

            apply_ignored_resources(config)  # before the NodeResourcesFit args are parsed
            self.extenders = ExtenderSet.from_config(config.extenders)
        features = config.features
        # GenericWorkload (v1.37): pod groups' members are tracked per group and queued
        # as one entity (at v1.36 or with the gate off they are ordinary pods).
        self.generic_workload = features.at_least("1.37") and features.enabled("GenericWorkload")
        self.cache = Cache(
            self.clock, assumed_ttl=assumed_ttl, generic_workload=self.generic_workload
        )
        self.rng = random.Random(seed)
        # Preemptor keys whose victims are still being evicted (to the eviction's token):
        # DefaultPreemption's PreEnqueue holds them back meanwhile (async preemption).
        self.preempting: dict[str, PreemptionInFlight] = {}
        nominator = Nominator()
        self.frameworks = build_frameworks(
            config,
            registry,
            cluster=cluster,
            recorder=recorder,
            clock=self.clock,
            snapshot=self.snapshot,
            waiting_pods=self.waiting_pods,
            metrics=metrics,
            rng=self.rng,
            nominator=nominator,
            preempting=self.preempting,
            pod_group_manager=self.cache,
            extenders=self.extenders,
        )
        self.queue = SchedulingQueue(
            self.frameworks,
            clock=self.clock,
            initial_backoff=float(config.pod_initial_backoff_seconds),
            max_backoff=float(config.pod_max_backoff_seconds),
            hint_observer=metrics.hint_executed if metrics is not None else None,
            nominator=nominator,
        )
        self.queue.on_entity_move = self._on_entity_move
        for fw in self.frameworks.values():
            fw.handle.activator = self.queue  # upstream's SetPodActivator: the queue needs them
            fw.handle.on_park = self.loop.progress.notify
            # ksched's exact stand-in for OpportunisticBatching: decides as a full cycle
            # would, so the gate only says whether the batching metrics are fed.
            if config.features.enabled("OpportunisticBatching"):
                fw.cycle_cache = CycleCache(fw)
        if self.extenders is not None:
            self.extenders.register_requeue(self.queue)
        self.observer: Observer = observer or _NullObserver()
        self.adopted: dict[str, str] = dict(adopt or {})
        self.queue.profile_of = self.profile_of
        self.before_pod_update = before_pod_update
        # Upstream's nextStartNodeIndex; only ``find_nodes_that_fit_pod`` moves it.
        self.rotation = NodeRotation()
        self.tie_breaks: dict[str, str] = dict(tie_breaks or {})
        self.placement_orders: dict[str, list[list[str]]] = {
            k: list(v) for k, v in (placement_orders or {}).items()
        }
        self.explain = explain
        self.explanations: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.binding_slots = anyio.Semaphore(max_in_flight_bindings)
        self.in_flight_bindings = 0
        self.metrics: MetricsRecorder | None = metrics
        # preemptor uid -> victims it evicted ("ns/name"), for simulate's output.
        self.preemptions: dict[str, list[str]] = {}
        # A plugin that hangs fails its pod's attempt (see framework.deadline).
        self._plugin_index: dict[int, str] | None = None
        self.deadline = SyncDeadline(plugin_timeout, self.plugin_index)
        self.queue.deadline = self.deadline
        self.overdue = _Overdue(binding_timeout)
        if metrics is not None:
            metrics.attach(self)

    def plugin_index(self) -> dict[int, str]:
        """id(plugin instance) -> name, to say which plugin a timeout interrupted."""
        if self._plugin_index is None:
            self._plugin_index = {
                id(inst): name
                for fw in self.frameworks.values()
                for name, inst in fw.plugins.items()
            }
        return self._plugin_index

    # -- informer handlers (cluster → cache/queue) ------------------------------------------
    def profile_of(self, pod: PodInfo) -> str | None:
        """The profile that schedules ``pod``: its ``schedulerName``'s, else the one
        ``adopted`` maps that name (or ``"*"``, any name) to; None: another scheduler's."""
        name = pod.pod.spec.scheduler_name
        if name in self.frameworks:
            return name
        adopted = self.adopted
        return adopted.get(name, adopted.get("*")) if adopted else None

    def responsible_for(self, pod: PodInfo) -> bool:
        return self.profile_of(pod) is not None

    @staticmethod
    def cache_op(op: Callable[..., Any], *args: Any) -> bool:
        """Apply an informer event to the cache; like upstream, a rejected one is logged."""
        try:
            op(*args)
        except CacheError as e:
            log.error("scheduler cache update failed", error=str(e))
            return False
        return True

    # Each handler reports its time per event label, as upstream's eventhandlers.go does in
    # scheduler_event_handling_duration_seconds: an update per specific event it raised.
    def _handled(self, event: ClusterEvent, seconds: float) -> None:
        m = self.metrics
        if m is not None:
            m.event_handled(event.label, seconds)

    def on_node_add(self, node: Node) -> None:
        t0 = _perf()
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff(ev.NODE_ADD, None, node)
        self._handled(ev.NODE_ADD, _perf() - t0)

    def on_node_update(self, old: Node, new: Node) -> None:
        t0 = _perf()
        self.cache.update_node(new)
        updating = _perf() - t0
        for e in ev.node_update_events(old, new):
            t1 = _perf()
            self.queue.move_all_to_active_or_backoff(e, old, new)
            self._handled(e, updating + _perf() - t1)

    def on_node_delete(self, node: Node) -> None:
        t0 = _perf()
        self.cache_op(self.cache.remove_node, node.metadata.name)
        self._handled(ev.NODE_DELETE, _perf() - t0)

    def on_pod_add(self, pod: PodInfo) -> None:
        t0 = _perf()
        if pod.node_name:
            self.cache_op(self.cache.add_pod, pod)
            self.queue.nominator.delete(pod)
            self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, None, pod)
            self._handled(ev.ASSIGNED_POD_ADD, _perf() - t0)
        elif (profile := self.profile_of(pod)) is not None:
            self.cache.add_pod_group_member(pod)
            self.queue.add(pod, profile)
            # A new sibling can unblock pods rejected for want of peers (gangs, affinity).
            added = self.queue.pending_events.add
            self.queue.move_all_to_active_or_backoff(added, None, pod)
            self._handled(added, _perf() - t0)

    def on_pod_update(self, old: PodInfo, new: PodInfo) -> None:
        t0 = _perf()
        if self.before_pod_update is not None:
            self.before_pod_update(old, new)
        if new.node_name:
            if not old.node_name:
                # Just bound (by us or someone else): leave the queue, confirm in cache
                # (upstream's informer handlers see a delete for the queue, an add for the
                # cache, and time them so).
                self.queue.delete(old)
                t1 = _perf()
                if self.responsible_for(old):
                    self._handled(self.queue.pending_events.delete, t1 - t0)
                self.cache_op(self.cache.add_pod, new)
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, None, new)
                self._handled(ev.ASSIGNED_POD_ADD, _perf() - t1)
            else:
                self.cache_op(self.cache.update_pod, old, new)
                updating = _perf() - t0
                scale_up = self.queue.pending_events.scale_up
                for e in ev.pod_update_events(old, new, scale_up=scale_up):
                    t1 = _perf()
                    self.queue.move_all_to_active_or_backoff(e, old, new)
                    self._handled(e, updating + _perf() - t1)
                self._handled(ev.ASSIGNED_POD_UPDATE, _perf() - t0)
        elif (
            self.responsible_for(new)
            and self._update_pending(old, new)
            and self.metrics is not None
        ):
            seconds = _perf() - t0
            pe = self.queue.pending_events
            self._handled(pe.update, seconds)
            for e in ev.pod_update_events(old, new, pe.other, scale_up=pe.scale_up):
                if e.label != pe.update.label:
                    self._handled(e, seconds)

    def _update_pending(self, old: PodInfo, new: PodInfo) -> bool:
        """A pending pod of ours changed; False for a resync carrying the same version."""
        rv = new.pod.metadata.resource_version
        if old is not new and rv and rv == old.pod.metadata.resource_version:
            return False
        self.cache.update_pod_group_member(old, new)
        if self.cache.is_assumed(new):
            return True  # being bound: upstream ignores updates of assumed pods
        self.queue.update(old, new)
        nominated = old.pod.status.nominated_node_name
        if nominated and nominated != new.pod.status.nominated_node_name:
            # Lower-or-equal priority pods treated it as already on that node.
            self.queue.move_all_to_active_or_backoff(
                ev.ASSIGNED_POD_DELETE, old, None, _le_priority(new.priority)
            )
        return True

    def on_pod_delete(self, pod: PodInfo) -> None:
        t0 = _perf()
        self._delete_pod(pod)
        if pod.node_name:
            self._handled(ev.ASSIGNED_POD_DELETE, _perf() - t0)
        elif self.responsible_for(pod):
            self._handled(self.queue.pending_events.delete, _perf() - t0)

    def _delete_pod(self, pod: PodInfo) -> None:
        assumed = self.cache.is_assumed(pod)
        if pod.node_name or assumed:
            # An assumed pod (binding in flight, or bound but not yet observed: the event
            # may carry a stale unbound version) frees its node now; its failing binding
            # cycle then has nothing left to forget.
            self.cache_op(self.cache.remove_pod, pod)
            self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, pod, None)
            if pod.node_name:
                return
        else:
            self.cache.remove_pod_group_member(pod)
        self.queue.delete(pod)
        wp = self.waiting_pods.get(pod.uid or pod.key)
        if wp is not None:
            wp.reject("", "pod deleted")
        elif not assumed and pod.pod.status.nominated_node_name:
            # Lower-or-equal priority pods treated it as already on its nominated node.
            self.queue.move_all_to_active_or_backoff(
                ev.ASSIGNED_POD_DELETE, pod, None, _le_priority(pod.priority)
            )

    def on_pod_group_add(self, pg: PodGroup) -> None:
        """``addPodGroup``: cache, queue (incomplete members join), then the event."""
        t0 = _perf()
        self.cache.add_pod_group(pg)
        self.queue.add_pod_group(pg)
        self.queue.move_all_to_active_or_backoff(ev.POD_GROUP_ADD, None, pg)
        self._handled(ev.POD_GROUP_ADD, _perf() - t0)

    def on_pod_group_update(self, old: PodGroup, new: PodGroup) -> None:
        rv = new.metadata.resource_version
        if rv and rv == old.metadata.resource_version:
            return
        t0 = _perf()
        self.cache.update_pod_group(old, new)
        self.queue.update_pod_group(old, new)
        self.queue.move_all_to_active_or_backoff(ev.POD_GROUP_UPDATE, old, new)
        self._handled(ev.POD_GROUP_UPDATE, _perf() - t0)

    def on_pod_group_delete(self, pg: PodGroup) -> None:
        """``deletePodGroup``: its queued members wait (incomplete) for a new one."""
        t0 = _perf()
        self.cache.remove_pod_group(pg)
        self.queue.delete_pod_group(pg)
        self.queue.move_all_to_active_or_backoff(ev.POD_GROUP_DELETE, pg, None)
        self._handled(ev.POD_GROUP_DELETE, _perf() - t0)

    def on_other_event(self, event: Any, old: Any = None, new: Any = None) -> None:
        """Custom resources (PodGroups, ...) plugins registered for."""
        t0 = _perf()
        self.queue.move_all_to_active_or_backoff(event, old, new)
        self._handled(event, _perf() - t0)

    # -- the loop (``loop.run_loop``) ----------------------------------------------------------
    def stop(self) -> None:
        """Take no more pods; the loop lets in-flight bindings finish (its policy's
        ``drain_timeout``) and returns."""
        self.loop.stopping = True
        self.queue.close()

    def fence(self, until: float | None) -> None:
        """Leadership is lost: cancel the running cycle, pop nothing more, and let the
        bindings already started run only until ``until`` (anyio time: when the lease
        could expire for the others); their writes are refused by the cluster client."""
        loop = self.loop
        loop.stopping = True
        if loop.cycles is not None:
            loop.cycles.cancel()
        if until is not None:
            loop.fence_deadline = until
            if loop.bindings is not None:
                loop.bindings.deadline = min(loop.bindings.deadline, until)

    @property
    def next_start_node_index(self) -> int:
        """Where the next cycle's round-robin walk over the nodes starts (``rotation``)."""
        return self.rotation.next_start

    async def acquire_binding_slot(self) -> None:
        """Wait for one of the ``max_in_flight_bindings`` slots; the binding cycle frees it."""
        limit = self.binding_slots
        if limit.value > 0:
            limit.acquire_nowait()  # no event-loop round trip while slots are free
        else:
            await limit.acquire()
        self.in_flight_bindings += 1

    def start_binding(self, tg: anyio.abc.TaskGroup, cycle: Coroutine[Any, Any, Any]) -> None:
        """Run a binding cycle in ``tg`` beside the next scheduling cycles."""
        loop = self.loop
        runner = loop.runner
        if runner is None or runner.tg is not tg or runner.finished:
            runner = loop.runner = _BindingRunner(tg, self.overdue)
        runner.start(cycle)

    def describe(self, res: CycleResult, **kw: Any) -> dict[str, Any]:
        """The explanation model of a cycle over the current snapshot (``explanation``)."""
        from .explanation import describe

        return describe(res, [ni.name for ni in self.snapshot.node_infos], **kw)

    def remember_explanation(self, key: str, data: dict[str, Any]) -> None:
        self.explanations[key] = data
        self.explanations.move_to_end(key)
        while len(self.explanations) > self.explanations_kept:
            self.explanations.popitem(last=False)

    def preempt_pod_group(
        self, fw: Framework, preemptor: PodGroupPreemptor, victims: list[PodInfo]
    ) -> PreemptionInFlight | None:
        """Start evicting a pod group's victims (``actuatePodGroupPreemption``, async), on
        upstream's pseudo-node ``cluster``; call it after a successful PodGroupPostFilter,
        before the members go back to the queue. Victims already terminating are left
        alone. From here until the last victim is on its way out the members wait in
        PreEnqueue (DefaultPreemption, keyed by the PodGroup's uid). Returns the evictions
        in flight (None: none needed, or no task group to run them in)."""
        victims = [v for v in victims if v.pod.metadata.deletion_timestamp is None]
        tg = self.loop.task_group
        if not victims or tg is None:
            return None
        token = PreemptionInFlight()
        self.preempting[preemptor.uid or preemptor.key] = token
        tg.start_soon(self.preempt, fw, preemptor, "cluster", victims, token)
        return token

    async def preempt(
        self,
        fw: Framework,
        preemptor: PodInfo | PodGroupPreemptor,
        node: str,
        victims: list[PodInfo],
        token: PreemptionInFlight | None = None,
    ) -> None:
        """Record the nomination, then evict the victims (``prepareCandidateAsync``): all
        but the last at once, then the last.

        Lower-priority pods nominated to the node lose that nomination (they may no
        longer fit). Just before the last victim goes, ``token`` names it: from then on
        the preemptor is let into the queue as soon as that victim is seen terminating or
        gone (``PreemptionInFlight``), so the deletion events can requeue it; if an
        eviction fails it is activated rather than left waiting for events that may not
        come, and so (v1.37) if the last victim was only rejected at Permit, which
        deletes nothing. A pod group (``PodGroupPreemptor``) has no nomination of its own
        here (the cycle nominates each member) and its members are what is activated.
        """
        key = preemptor.uid or preemptor.key
        group = preemptor if isinstance(preemptor, PodGroupPreemptor) else None
        failed = activate = False
        # The evictions' own span, timed as upstream times its preemption goroutine.
        started: float | None = None
        try:
            if isinstance(preemptor, PodInfo) and not getattr(
                self.observer, "writes_nomination", False
            ):
                try:
                    await self.cluster.set_nominated_node(preemptor, node)
                except Exception as e:
                    log.warning(
                        "setting nominatedNodeName failed",
                        pod=preemptor.key,
                        node=node,
                        error=str(e),
                    )
            if not victims:
                return
            started = _perf()
            for p in self.queue.nominator.pods_for_node(node):
                if p.priority < preemptor.priority and p.pod.status.nominated_node_name:
                    try:
                        await self.cluster.set_nominated_node(p, "")
                    except Exception as e:
                        failed = True
                        log.warning("clearing nominatedNodeName failed", pod=p.key, error=str(e))
            # All but the last victim at once (upstream's Parallelizer, ``parallelism`` at
            # a time), then the last, skipped once an eviction failed.
            *head, last = victims
            evicted: list[bool] = []
            if head:
                limit = anyio.CapacityLimiter(max(1, fw.handle.parallelism))

                async def evict(v: PodInfo) -> None:
                    async with limit:
                        evicted.append((await self._evict(fw, preemptor, node, v))[0])

                async with anyio.create_task_group() as tg:
                    for v in head:
                        tg.start_soon(evict, v)
            if not all(evicted):
                failed = True
            else:
                if token is not None:
                    token.last_victim = last
                ok, in_memory = await self._evict(fw, preemptor, node, last)
                failed = not ok
                activate = in_memory and fw.handle.features.at_least("1.37")
        finally:
            self._done_preempting(key, token)
            if failed or activate:
                self.queue.activate(
                    list(preemptor.pods)
                    if isinstance(preemptor, PodGroupPreemptor)
                    else [preemptor]
                )
            if started is not None and self.metrics is not None:
                # upstream's deferred calls evaluate label and duration when deferred, so it
                # reports every run as "success" taking ~0 s; here, as its code intends,
                # the real result and the evictions' duration
                result = "error" if failed else "success"
                kind = group.type if group is not None else POD_PREEMPTOR
                self.metrics.preemption_finished(result, _perf() - started, kind)

    def _done_preempting(self, key: str, token: PreemptionInFlight | None) -> None:
        """Un-gate the preemptor, unless a newer preemption of it has started meanwhile."""
        if key in self.preempting and self.preempting[key] is token:
            del self.preempting[key]
            self.loop.progress.notify()
        if token is not None:
            token.finished.set()

    async def _evict(
        self, fw: Framework, preemptor: PodInfo | PodGroupPreemptor, node: str, victim: PodInfo
    ) -> tuple[bool, bool]:
        """``PreemptPod``: reject a victim still waiting at Permit (in memory only); else
        mark it DisruptionTarget (unless it already is), then delete it. A victim gone
        before it could be marked needs neither the deletion nor the event. Returns
        (success, preempted in memory only)."""
        if isinstance(preemptor, PodGroupPreemptor):
            kind, scheduler_name = preemptor.type, preemptor.scheduler_name
        else:
            kind, scheduler_name = POD_PREEMPTOR, preemptor.pod.spec.scheduler_name
        wp = self.waiting_pods.get(victim.uid or victim.key)
        in_memory = wp is not None and not wp.done
        if wp is not None and in_memory:
            wp.reject("DefaultPreemption", "preempted")
        else:
            cond = preemption_condition(victim, scheduler_name, kind)
            try:
                if cond is not None and not await self.cluster.set_pod_condition(victim, cond):
                    return True, False
                await self.cluster.delete_pod(victim)
            except Exception as e:
                log.warning(
                    "evicting preemption victim failed",
                    pod=victim.key,
                    preemptor=preemptor.key,
                    error=str(e),
                )
                return False, False
        self.preemptions.setdefault(preemptor.uid or preemptor.key, []).append(victim.key)
        note = f"Preempted by {kind} {preemptor.uid} on node {node}"
        fw.handle.recorder.event(
            victim,
            "Normal",
            "Preempted",
            "Preempting",
            note + " (in kube-scheduler memory)." if in_memory else note,
        )
        return True, in_memory

    def _on_entity_move(self, event: str, queue: str, pods: int, kind: str | None) -> None:
        if self.metrics is not None:
            self.metrics.queue_incoming_entity(event, queue, pods, kind)


class Progress:
    """Wakes whoever waits for the bindings to get somewhere: a binding cycle ended, a
    preemption's evictions ended, a binding cycle parked on the clock. The simulator
    waits on it (``until``) before it moves virtual time, instead of polling."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event: anyio.Event | None = None

    def notify(self) -> None:
        ev, self._event = self._event, None
        if ev is not None:
            ev.set()

    async def until(self, done: Callable[[], bool]) -> None:
        """Return once ``done()`` holds, checking it after each notification."""
        while not done():
            if self._event is None:
                self._event = anyio.Event()
            await self._event.wait()


class LoopState:
    """The scheduling loop's state, which only ``scheduler/`` writes: ``run_loop`` while it
    runs, ``Scheduler.stop``/``fence`` to end it."""

    __slots__ = (
        "bindings",
        "cycles",
        "fence_deadline",
        "progress",
        "runner",
        "stopping",
        "task_group",
    )

    def __init__(self) -> None:
        self.stopping = False
        # Where binding cycles, preemptions and plugins' API calls run (None: nothing is
        # bound or evicted, as in a dry run); drained, not cancelled, when the loop stops.
        self.task_group: anyio.abc.TaskGroup | None = None
        # Cancelled by fence(): the running cycle (and the wait for the next pod).
        self.cycles: anyio.CancelScope | None = None
        self.bindings: anyio.CancelScope | None = None
        # When fenced before the bindings' group existed: their deadline once it does.
        self.fence_deadline: float | None = None
        self.progress = Progress()
        # The binding cycles of ``task_group`` (``Scheduler.start_binding``).
        self.runner: _BindingRunner | None = None


class _Overdue:
    """Binding steps running past the binding timeout, found by a sweep.

    No timer per pod: a step registers its task and due time (a dict entry), and the
    binding runner's own task sweeps every ``interval`` while bindings are in flight,
    cancelling overdue tasks; ``absorb`` tells the step whether a cancellation was this
    one (anything else, a shutdown or a lost lease, propagates as ever).
    """

    __slots__ = ("due", "expired", "interval", "limit")

    def __init__(self, limit: float | None) -> None:
        self.limit = limit if limit is not None and limit > 0 else None
        self.interval = None if self.limit is None else min(1.0, self.limit / 4)
        self.due: dict[asyncio.Task[Any], float] = {}
        self.expired: set[asyncio.Task[Any]] = set()

    def begin(self) -> asyncio.Task[Any] | None:
        if self.limit is None:
            return None
        task = asyncio.current_task()
        if task is not None:
            self.due[task] = time.monotonic() + self.limit
        return task

    def end(self, task: asyncio.Task[Any] | None) -> None:
        if task is not None:
            self.due.pop(task, None)
            if task in self.expired:  # cancelled, but the step finished regardless
                self.expired.discard(task)
                task.uncancel()

    def absorb(self, task: asyncio.Task[Any] | None) -> bool:
        if task is None or task not in self.expired:
            return False
        self.expired.discard(task)
        return task.uncancel() == 0

    def sweep(self) -> None:
        now = time.monotonic()
        for task, due in list(self.due.items()):
            if due <= now and task not in self.expired:
                self.expired.add(task)
                task.cancel()


class _BindingRunner:
    """Binding cycles of one task group, as plain asyncio tasks under one anyio task.

    Spawning an anyio task costs several times what the cycle's own bookkeeping does, at
    one per pod. The cycles therefore run as asyncio tasks, and a single task in ``tg``
    stands for them all: it lives while any runs (so the group waits for them, as for
    its own tasks), cancels them when it is cancelled (a deadline on the group, a lost
    lease) and waits for them to unwind, and re-raises the first one that failed (so a
    failing cycle fails the group as before). Once it has finished, the next cycle
    starts a new runner.
    """

    __slots__ = ("_error", "_overdue", "_started", "_wake", "finished", "tasks", "tg")

    def __init__(self, tg: anyio.abc.TaskGroup, overdue: _Overdue | None = None) -> None:
        self.tg = tg
        self._overdue = overdue
        self.tasks: set[asyncio.Task[Any]] = set()
        self.finished = False
        self._started = False
        self._error: BaseException | None = None
        self._wake: asyncio.Event | None = None

    def start(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._done)
        if not self._started:
            self._started = True
            self.tg.start_soon(self._run, name="binding cycles")

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None and self._error is None:
            self._error = task.exception()
        if (not self.tasks or self._error is not None) and self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        try:
            overdue = self._overdue
            interval = None if overdue is None else overdue.interval
            while self.tasks and self._error is None:
                wake = self._wake = asyncio.Event()
                if interval is None:
                    await wake.wait()
                    continue
                # Also the binding timeout's sweep: wake every interval while cycles run.
                timer = asyncio.get_running_loop().call_later(interval, wake.set)
                try:
                    await wake.wait()
                finally:
                    timer.cancel()
                assert overdue is not None
                overdue.sweep()
        except BaseException:
            await self._stop()
            raise
        finally:
            self.finished = True
        if self._error is not None:
            await self._stop()
            raise self._error

    async def _stop(self) -> None:
        self.finished = True
        tasks = list(self.tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            with anyio.CancelScope(shield=True):
                await asyncio.wait(tasks)


def _le_priority(priority: int) -> Callable[[PodInfo], bool]:
    """``getLEPriorityPreCheck``: only pods that a nominated pod of ``priority`` could block."""
    return lambda p: p.priority <= priority
