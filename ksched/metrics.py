"""kube-scheduler's Prometheus metrics (``pkg/scheduler/metrics``), same names, labels, buckets.

Each ``SchedulerMetrics`` owns its ``CollectorRegistry``, so several daemons (or tests) can
live in one process. The hot path pays only for what it must:

* counters and histograms of the scheduling loop are fed through cached label children
  (``labels()`` is resolved once per label combination, not per observation);
* gauges (``scheduler_pending_pods``, ``scheduler_unschedulable_pods``,
  ``scheduler_scheduler_cache_size``, ``scheduler_goroutines``) are computed from the queue
  and cache when ``/metrics`` is scraped, never maintained per event;
* extension points are timed with one ``perf_counter`` pair per framework call, and
  individual plugins only in a sampled 10 % of scheduling cycles, as upstream's
  ``pluginMetricsSamplePercent``;
* the scheduling loop's counters and histograms observe into plain Python numbers (one
  bisect, no lock: the scheduler is one event-loop thread) that are added to
  prometheus_client's values whenever samples are read (a scrape, ``collect()``).

Differences from upstream worth knowing: ``framework_extension_point_duration_seconds`` also
has ``extension_point="Filter"`` (ksched filters all nodes in one batched call, which is worth
timing); ``scheduling_algorithm_duration_seconds`` times the whole scheduling cycle.
"""

from __future__ import annotations

import random
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric

from .framework.cycle_state import CycleState
from .framework.interface import extension_points_of
from .framework.status import Code, Status

if TYPE_CHECKING:
    from .framework.runtime import Framework
    from .queue.scheduling_queue import QueuedPodInfo
    from .scheduler.scheduler import Scheduler

__all__ = [
    "CONTENT_TYPE",
    "PLUGIN_METRICS_SAMPLE_PERCENT",
    "SchedulerMetrics",
    "exponential_buckets",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PLUGIN_METRICS_SAMPLE_PERCENT = 10
# CycleState key that marks a cycle whose plugins are timed (binding-cycle plugins read it).
SAMPLED_KEY = "ksched.io/record-plugin-metrics"

_perf = time.perf_counter


class _FastHistogram(Histogram):
    """A Histogram whose ``observe`` costs one bisect and two additions.

    Observations collect in plain Python numbers and are moved into prometheus_client's
    (locked) values when the child's samples are read, so every reader — exposition,
    ``collect()``, ``get_sample_value`` — sees them. Meant for one thread (the event
    loop): an observation racing a scrape from another thread could be lost.
    """

    def _metric_init(self) -> None:
        super()._metric_init()
        self._bounds = list(self._upper_bounds)
        self._pending = [0] * len(self._bounds)
        self._pending_sum = 0.0
        self._dirty = False

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        if exemplar or amount != amount or (self._labelnames and not self._labelvalues):
            self._flush()
            super().observe(amount, exemplar)  # raises for a labelled parent, as before
            return
        self._pending[bisect_left(self._bounds, amount)] += 1
        self._pending_sum += amount
        self._dirty = True

    def _flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        pending = self._pending
        for i, c in enumerate(pending):
            if c:
                self._buckets[i].inc(c)
                pending[i] = 0
        self._sum.inc(self._pending_sum)
        self._pending_sum = 0.0

    def _child_samples(self) -> Any:
        self._flush()
        return super()._child_samples()


class _FastCounter(Counter):
    """A Counter whose ``inc`` adds to a plain number (see ``_FastHistogram``)."""

    def _metric_init(self) -> None:
        super()._metric_init()
        self._pending = 0.0

    def inc(self, amount: float = 1, exemplar: dict[str, str] | None = None) -> None:
        if exemplar or amount < 0 or (self._labelnames and not self._labelvalues):
            super().inc(amount, exemplar)  # raises for a labelled parent or amount < 0
            return
        self._pending += amount

    def _child_samples(self) -> Any:
        if self._pending:
            self._value.inc(self._pending)
            self._pending = 0.0
        return super()._child_samples()

    def reset(self) -> None:
        self._pending = 0.0
        super().reset()


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """``prometheus.ExponentialBuckets``: upper bounds start, start*factor, ... (count of them)."""
    return [start * factor**i for i in range(count)]


def _label(st: Status | None) -> str:
    return "Success" if st is None else st.code.label


# Framework method -> (extension point label, how to read the status from its result).
_FRAMEWORK_POINTS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "run_pre_filter": ("PreFilter", lambda r: _label(r[1])),
    "find_feasible": (
        "Filter",
        lambda r: (
            "Error"
            if r.statuses.absent is not None and r.statuses.absent.code == Code.ERROR
            else ("Success" if len(r.feasible) else "Unschedulable")
        ),
    ),
    "run_post_filter": ("PostFilter", lambda r: _label(r[1])),
    "run_pre_score": ("PreScore", _label),
    "run_score": ("Score", lambda r: _label(r[1])),
    "run_reserve": ("Reserve", _label),
    "run_unreserve": ("Unreserve", lambda r: "Success"),
    "run_permit": ("Permit", _label),
}
_FRAMEWORK_ASYNC_POINTS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "run_post_filter_async": ("PostFilter", lambda r: _label(r[1])),
    "run_pre_bind": ("PreBind", _label),
    "run_bind": ("Bind", _label),
    "run_post_bind": ("PostBind", lambda r: "Success"),
}

# Plugin method -> (extension point label, status reader); the scheduling-cycle ones are
# swapped in only for sampled cycles, the binding-cycle (async) ones check the CycleState.
_PLUGIN_SYNC: dict[str, tuple[str, str, Callable[[Any], str]]] = {
    "pre_filter": ("preFilter", "PreFilter", lambda r: _label(r[1])),
    "filter": ("filter", "Filter", _label),
    # a batch call covers every node: Success when any node passed
    "filter_batch": ("filter", "Filter", lambda r: "Success" if r.any() else "Unschedulable"),
    "post_filter": ("postFilter", "PostFilter", lambda r: _label(r[1])),
    "pre_score": ("preScore", "PreScore", _label),
    "score": ("score", "Score", lambda r: "Success"),
    "score_batch": ("score", "Score", lambda r: "Success"),
    "normalize_score": ("score", "ScoreExtensionNormalize", _label),
    "reserve": ("reserve", "Reserve", _label),
    "unreserve": ("reserve", "Unreserve", lambda r: "Success"),
    "permit": ("permit", "Permit", lambda r: _label(r[0])),
}
_PLUGIN_ASYNC: dict[str, tuple[str, str, Callable[[Any], str]]] = {
    "pre_bind": ("preBind", "PreBind", _label),
    "bind": ("bind", "Bind", _label),
    "post_bind": ("postBind", "PostBind", lambda r: "Success"),
}


class _Swap:
    """Per-plugin timing wrappers, installed only for the duration of a sampled cycle."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        # (plugin instance, attribute, wrapper, original-if-it-was-an-instance-attribute)
        self.entries: list[tuple[Any, str, Any, Any]] = []

    def install(self) -> None:
        for inst, attr, wrapper, _ in self.entries:
            setattr(inst, attr, wrapper)

    def uninstall(self) -> None:
        for inst, attr, _, own in self.entries:
            if own is None:
                delattr(inst, attr)
            else:
                setattr(inst, attr, own)


class SchedulerMetrics:
    """The scheduler's metrics; ``attach(scheduler)`` wires them into a running scheduler."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        plugin_sample_percent: int = PLUGIN_METRICS_SAMPLE_PERCENT,
        seed: int | None = None,
        process_metrics: bool = True,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.plugin_sample_percent = plugin_sample_percent
        self._rng = random.Random(seed)
        self.schedule_attempts = _FastCounter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.scheduling_attempt_duration = _FastHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.scheduling_algorithm_duration = _FastHistogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.pod_scheduling_sli_duration = _FastHistogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
            "queue and might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=exponential_buckets(0.01, 2, 20),
            registry=r,
        )
        self.pod_scheduling_attempts = _FastHistogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5),
            registry=r,
        )
        self.framework_extension_point_duration = _FastHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=exponential_buckets(0.0001, 2, 12),
            registry=r,
        )
        self.plugin_execution_duration = _FastHistogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=exponential_buckets(0.00001, 1.5, 20),
            registry=r,
        )
        self.queue_incoming_pods = _FastCounter(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=r,
        )
        # client-go's leader election metrics (component-base's leaderelection adapter).
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ["name"],
            registry=r,
        )
        self.leader_election_slowpath = Counter(
            "leader_election_slowpath",
            "Total number of slow path exercised in renewing leader leases. 'name' is the "
            "string used to identify the lease. Please make sure to group by name.",
            ["name"],
            registry=r,
        )
        if process_metrics:
            ProcessCollector(registry=r)
        self._children: dict[tuple[Any, ...], Any] = {}
        self._swaps: dict[int, _Swap] = {}
        self._sampled: _Swap | None = None
        self._paused = False
        self._state = _StateCollector()
        r.register(self._state)

    # -- wiring ------------------------------------------------------------------------------
    def attach(self, sched: Scheduler) -> None:
        """Report ``sched``'s attempts, queue moves, framework and plugin timings, and gauges."""
        sched.metrics = self
        self._state.schedulers.append(sched)
        for fw in sched.frameworks.values():
            self.instrument_framework(fw)

    def instrument_framework(self, fw: Framework) -> None:
        """Time ``fw``'s extension points; prepare its plugins' sampled timing wrappers."""
        if getattr(fw, "_ksched_metrics", None) is self:
            return
        fw._ksched_metrics = self  # type: ignore[attr-defined]
        profile = fw.profile_name
        for attr, (point, status_of) in _FRAMEWORK_POINTS.items():
            setattr(fw, attr, self._timed(getattr(fw, attr), point, profile, status_of))
        for attr, (point, status_of) in _FRAMEWORK_ASYNC_POINTS.items():
            setattr(fw, attr, self._timed_async(getattr(fw, attr), point, profile, status_of))
        swap = _Swap()
        for name, inst in fw.plugins.items():
            if not hasattr(inst, "__dict__"):
                continue  # __slots__ plugins cannot be wrapped; they go untimed
            points = set(extension_points_of(inst))
            for attr, (ep, label, status_of) in _PLUGIN_SYNC.items():
                if ep in points and callable(getattr(inst, attr, None)):
                    own = inst.__dict__.get(attr)
                    wrapper = self._plugin_timer(getattr(inst, attr), name, label, status_of)
                    swap.entries.append((inst, attr, wrapper, own))
            for attr, (ep, label, status_of) in _PLUGIN_ASYNC.items():
                if ep in points and callable(getattr(inst, attr, None)):
                    inst.__dict__[attr] = self._plugin_timer_async(
                        getattr(inst, attr), name, label, status_of
                    )
        self._swaps[id(fw)] = swap

    # -- hooks called by the Scheduler ------------------------------------------------------
    def cycle_started(self, fw: Framework, state: CycleState) -> None:
        """Decide whether this cycle's plugins are timed (upstream samples 10 %)."""
        if self._rng.random() * 100 < self.plugin_sample_percent:
            state.write(SAMPLED_KEY, True)
            swap = self._swaps.get(id(fw))
            if swap is not None:
                swap.install()
                self._sampled = swap

    def cycle_finished(self, fw: Framework, state: CycleState, seconds: float) -> None:
        swap, self._sampled = self._sampled, None
        if swap is not None:
            swap.uninstall()
        self.scheduling_algorithm_duration.observe(seconds)

    def attempt_finished(
        self, qpi: QueuedPodInfo, result: str, seconds: float, sli_seconds: float | None = None
    ) -> None:
        """One attempt ended: ``scheduled``, ``unschedulable`` or ``error``."""
        c = self._child(("attempt", result, qpi.profile))
        if c is None:
            c = self._set_child(
                ("attempt", result, qpi.profile),
                (
                    self.schedule_attempts.labels(result, qpi.profile),
                    self.scheduling_attempt_duration.labels(result, qpi.profile),
                ),
            )
        c[0].inc()
        c[1].observe(seconds)
        if result == "scheduled":
            attempts = qpi.attempts
            self.pod_scheduling_attempts.observe(attempts)
            if sli_seconds is not None:
                # upstream getAttemptsLabel: capped to keep the cardinality low
                label = str(attempts) if attempts < 15 else "15+"
                key = ("sli", label)
                sli = self._child(key)
                if sli is None:
                    sli = self._set_child(key, self.pod_scheduling_sli_duration.labels(label))
                sli.observe(sli_seconds)

    def queue_incoming(self, event: str, queue: str) -> None:
        key = ("incoming", queue, event)
        c = self._child(key)
        if c is None:
            c = self._set_child(key, self.queue_incoming_pods.labels(queue, event))
        c.inc()

    # -- the leader elector's hooks (``ksched.cluster.leaderelection.LeaderMetrics``) ------
    def leader_on(self, name: str) -> None:
        self.leader_election_master_status.labels(name).set(1)

    def leader_off(self, name: str) -> None:
        self.leader_election_master_status.labels(name).set(0)

    def slowpath_exercised(self, name: str) -> None:
        self.leader_election_slowpath.labels(name).inc()

    def paused(self, on: bool) -> None:
        """Stop (or resume) timing framework calls, e.g. while /debug/explain re-runs a cycle."""
        self._paused = on

    # -- exposition ---------------------------------------------------------------------------
    def render(self) -> bytes:
        """The Prometheus text exposition of every metric in this registry."""
        return bytes(generate_latest(self.registry))

    # -- internals ----------------------------------------------------------------------------
    def _child(self, key: tuple[Any, ...]) -> Any:
        return self._children.get(key)

    def _set_child(self, key: tuple[Any, ...], child: Any) -> Any:
        self._children[key] = child
        return child

    def _ep_child(self, point: str, status: str, profile: str) -> Any:
        key = ("ep", point, status, profile)
        c = self._children.get(key)
        if c is None:
            c = self._children[key] = self.framework_extension_point_duration.labels(
                point, status, profile
            )
        return c

    def _plugin_child(self, plugin: str, point: str, status: str) -> Any:
        key = ("plugin", plugin, point, status)
        c = self._children.get(key)
        if c is None:
            c = self._children[key] = self.plugin_execution_duration.labels(plugin, point, status)
        return c

    def _timed(
        self, fn: Callable[..., Any], point: str, profile: str, status_of: Callable[[Any], str]
    ) -> Callable[..., Any]:
        children: dict[str, Any] = {}

        def child(status: str) -> Any:
            c = children[status] = self._ep_child(point, status, profile)
            return c

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._paused:
                return fn(*args, **kwargs)
            t0 = _perf()
            try:
                out = fn(*args, **kwargs)
            except BaseException:
                self._ep_child(point, "Error", profile).observe(_perf() - t0)
                raise
            t1 = _perf()
            status = status_of(out)
            c = children.get(status)
            (c if c is not None else child(status)).observe(t1 - t0)
            return out

        return timed

    def _timed_async(
        self,
        fn: Callable[..., Awaitable[Any]],
        point: str,
        profile: str,
        status_of: Callable[[Any], str],
    ) -> Callable[..., Awaitable[Any]]:
        children: dict[str, Any] = {}

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = _perf()
            try:
                out = await fn(*args, **kwargs)
            except BaseException:
                self._ep_child(point, "Error", profile).observe(_perf() - t0)
                raise
            t1 = _perf()
            status = status_of(out)
            c = children.get(status)
            if c is None:
                c = children[status] = self._ep_child(point, status, profile)
            c.observe(t1 - t0)
            return out

        return timed

    def _plugin_timer(
        self, fn: Callable[..., Any], plugin: str, point: str, status_of: Callable[[Any], str]
    ) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = _perf()
            try:
                out = fn(*args, **kwargs)
            except BaseException:
                self._plugin_child(plugin, point, "Error").observe(_perf() - t0)
                raise
            self._plugin_child(plugin, point, status_of(out)).observe(_perf() - t0)
            return out

        return timed

    def _plugin_timer_async(
        self,
        fn: Callable[..., Awaitable[Any]],
        plugin: str,
        point: str,
        status_of: Callable[[Any], str],
    ) -> Callable[..., Awaitable[Any]]:
        async def sampled(state: CycleState, *args: Any, **kwargs: Any) -> Any:
            t0 = _perf()
            try:
                out = await fn(state, *args, **kwargs)
            except BaseException:
                self._plugin_child(plugin, point, "Error").observe(_perf() - t0)
                raise
            self._plugin_child(plugin, point, status_of(out)).observe(_perf() - t0)
            return out

        def timed(state: CycleState, *args: Any, **kwargs: Any) -> Awaitable[Any]:
            # An unsampled cycle awaits the plugin's own coroutine: no extra frame.
            if not state.get(SAMPLED_KEY):
                return fn(state, *args, **kwargs)
            return sampled(state, *args, **kwargs)

        return timed


class _StateCollector:
    """Gauges read from the scheduler's queue and cache at scrape time (free on the hot path)."""

    def __init__(self) -> None:
        self.schedulers: list[Scheduler] = []
        self._seen_unschedulable: set[tuple[str, str]] = set()

    def describe(self) -> Iterable[Metric]:
        return list(self._families())

    def collect(self) -> Iterator[Metric]:
        yield from self._families(fill=True)

    def _families(self, fill: bool = False) -> Iterator[Metric]:
        pending = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
            "schedule because they are gated.",
            labels=["queue"],
        )
        unsched = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment "
            "the gauge for all plugins that caused it to not schedule and so this metric have "
            "meaning only when broken down by plugin.",
            labels=["plugin", "profile"],
        )
        cache = GaugeMetricFamily(
            "scheduler_scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            labels=["type"],
        )
        goroutines = GaugeMetricFamily(
            "scheduler_goroutines",
            "Number of running goroutines split by the work they do such as binding.",
            labels=["operation"],
        )
        if fill:
            counts: dict[str, int] = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
            by_plugin: dict[tuple[str, str], int] = dict.fromkeys(self._seen_unschedulable, 0)
            nodes = pods = assumed = binding = 0
            for s in self.schedulers:
                for k, v in s.queue.pending_counts().items():
                    counts[k] = counts.get(k, 0) + v
                for q in s.queue.unschedulable_pods():
                    plugins = q.unschedulable_plugins | q.pending_plugins
                    if q.gated and q.gating_plugin:
                        plugins = plugins | {q.gating_plugin}
                    for p in plugins:
                        if p.startswith("__"):
                            continue  # internal pseudo-plugins (an invalid pod)
                        by_plugin[(p, q.profile)] = by_plugin.get((p, q.profile), 0) + 1
                nodes += s.cache.node_count()
                pods += len(s.cache.pod_states)
                assumed += len(s.cache.assumed)
                binding += s.in_flight_bindings
            self._seen_unschedulable.update(by_plugin)
            for k, v in counts.items():
                pending.add_metric([k], v)
            for (plugin, profile), v in sorted(by_plugin.items()):
                unsched.add_metric([plugin, profile], v)
            cache.add_metric(["nodes"], nodes)
            cache.add_metric(["pods"], pods)
            cache.add_metric(["assumed_pods"], assumed)
            goroutines.add_metric(["binding"], binding)
        yield pending
        yield unsched
        yield cache
        yield goroutines
