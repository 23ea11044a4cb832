"""kube-scheduler's Prometheus metrics (``pkg/scheduler/metrics``), same names, labels, buckets.

Every ``scheduler_*`` family kube-scheduler registers at the emulated version (``FAMILIES``:
v1.36.3's or v1.37.2's, including those behind feature gates that are on by default:
queueing hints, async preemption) is here with its type,
label names, buckets and help text (with component-base's ``[STABLE]``/``[BETA]``/
``[ALPHA]`` prefix); ``tests/e2e/test_metrics_parity_kube.py`` checks that against the real
binary's ``/metrics``. As there, no ``_created`` series are exposed: ``SchedulerRegistry``
leaves them out (for this registry only, not process-wide).

Each ``SchedulerMetrics`` owns its ``CollectorRegistry``, so several daemons (or tests) can
live in one process. The hot path pays only for what it must:

* counters and histograms of the scheduling loop are fed through cached label children
  (``labels()`` is resolved once per label combination, not per observation);
* gauges (``scheduler_pending_pods``, ``scheduler_unschedulable_pods``,
  ``scheduler_cache_size``, ``scheduler_inflight_events``, ``scheduler_goroutines``) are
  computed from the queue and cache when ``/metrics`` is scraped, never maintained per event;
* ``scheduler_plugin_evaluation_total`` is kept as plain integers per extension point and
  profile (one addition per framework call) and turned into samples at scrape time;
* the framework times its own extension points and, in a sampled 10 % of scheduling
  cycles (upstream's ``pluginMetricsSamplePercent``, flagged in the ``CycleState``), its
  plugins, and tells this recorder (``framework.recorder.FrameworkRecorder``): nothing
  here wraps or replaces a method of the framework or of a plugin;
* the scheduling loop's counters and histograms observe into plain Python numbers (one
  bisect, no lock: the scheduler is one event-loop thread) that are added to
  prometheus_client's values whenever samples are read (a scrape, ``collect()``).

Every attempt is observed at the extension points its cycle went through, as upstream's
(PreEnqueue, PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Unreserve, Permit,
PreBindPreFlight, PreBind, Bind, PostBind, and Sign when the cycle cache signs the pod),
cycles answered by the cycle cache included.
Differences from upstream worth knowing: ``scheduling_algorithm_duration_seconds`` times the
whole scheduling cycle. ``plugin_execution_duration_seconds`` has one observation per call:
a batched Filter or Score plugin judges every node in one call (Filter: ``Success`` when
any node passed), where upstream observes each node. ``plugin_evaluation_total`` counts, per
Filter plugin not skipped, the nodes the cycle examined (ksched evaluates batched plugins
over all of them at once, so upstream's per-node stop at the first rejecting plugin has no
equivalent), and, per Score plugin, the nodes scored; preemption's dry runs and cycles
answered by the cycle cache evaluate no plugin through the framework and are not counted.
The batching families
(``batch_attempts_total``, ``batch_cache_flushed_total``, ``get_node_hint_duration_seconds``,
``store_schedule_results_duration_seconds``, 1.37's ``batch_rescore_*``) report ksched's cycle cache
(``scheduler.cycle_cache``), its equivalent of upstream's OpportunisticBatching; see
``SchedulerMetrics.batch_lookup`` for how its events map onto upstream's labels.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections import Counter as _Tally
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from .features import FeatureGates, default_feature_gates
from .features.versions import minor_key
from .queue.scheduling_queue import plugin_names

if TYPE_CHECKING:
    from .cache import Cache
    from .framework.cycle_state import CycleState
    from .framework.runtime import Framework
    from .queue.scheduling_queue import QueuedPodInfo, SchedulingQueue

__all__ = [
    "CONTENT_TYPE",
    "FAMILIES",
    "FAMILY",
    "PLUGIN_METRICS_SAMPLE_PERCENT",
    "Family",
    "SchedulerMetrics",
    "SchedulerRegistry",
    "Scraped",
    "exponential_buckets",
    "go_float",
    "without_created",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PLUGIN_METRICS_SAMPLE_PERCENT = 10

# component-base's stability levels, which it puts in front of every metric's help text.
STABLE, BETA, ALPHA = "[STABLE] ", "[BETA] ", "[ALPHA] "


def without_created(metrics: Iterable[Metric]) -> Iterator[Metric]:
    """``metrics`` without prometheus_client's ``<name>_created`` samples (kube-scheduler,
    like every Go client, exposes none: dashboards built for it would see extra series)."""
    for m in metrics:
        created = m.name + "_created"
        if any(s.name == created for s in m.samples):
            out = Metric(m.name, m.documentation, m.type, m.unit)
            out.samples.extend(s for s in m.samples if s.name != created)
            m = out
        yield m


class SchedulerRegistry(CollectorRegistry):
    """A ``CollectorRegistry`` whose samples (for exposition, ``collect()`` and
    ``get_sample_value``) carry no ``_created`` series. Per registry, unlike
    ``prometheus_client.disable_created_metrics()``, so a program embedding the scheduler
    keeps its own metrics as it configured them."""

    def collect(self) -> Iterator[Metric]:
        return without_created(super().collect())


class _Exposed:
    """The collector view ``render`` exposes of a registry that is not a SchedulerRegistry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        return without_created(self.registry.collect())


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
        self._les = [go_float(b) for b in self._bounds]
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
        # the buckets come first, one per bound; their ``le`` as kube-scheduler writes it
        samples = list(super()._child_samples())
        for i, le in enumerate(self._les):
            samples[i] = samples[i]._replace(labels={"le": le})
        return tuple(samples)


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


def go_float(f: float) -> str:
    """``f`` as client_golang's text exposition writes it (``strconv.FormatFloat(f, 'g',
    -1, 64)``): ``le="1"`` where Python writes ``le="1.0"``, another series to Prometheus.

    The shortest digits that read back as ``f`` are the same in both languages (``repr``);
    Go then writes an exponent from 1e+06 up or below 1e-04, with at least two digits.
    """
    if f != f:
        return "NaN"
    if f in (math.inf, -math.inf):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    t = Decimal(repr(abs(f))).normalize().as_tuple()
    digits = "".join(map(str, t.digits))
    assert isinstance(t.exponent, int)
    nd = len(digits)
    dp = nd + t.exponent  # the decimal point's place after the first digit
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if nd > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= nd:
        return f"{sign}{digits}{'0' * (dp - nd)}"
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """``prometheus.ExponentialBuckets``: ``count`` upper bounds from ``start``, each the one
    before times ``factor``.

    Multiplied step by step as Go does, not ``start * factor**i``: the two round differently
    (``1e-05 * 1.5 * 1.5`` is ``2.2500000000000005e-05``, ``1e-05 * 1.5**2`` is ``2.25e-05``),
    and a bound that differs in the last bit is another ``le`` series in Prometheus.
    """
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError(f"exponential_buckets({start}, {factor}, {count}): out of range")
    bounds = []
    for _ in range(count):
        bounds.append(start)
        start *= factor
    return bounds


@dataclass(frozen=True)
class Family:
    """One ``scheduler_*`` family of kube-scheduler, across the versions ksched emulates.

    ``help`` maps the first version of each text (component-base's stability prefix
    included: a stability change is a help change) to that text; ``None`` from the version
    on that does not expose the family. A family is exposed at an emulated version when
    its text there is not None. ``attr``: the ``SchedulerMetrics`` attribute fed on the hot
    path (``kind``: its class); "" for a family computed when ``/metrics`` is scraped.
    """

    name: str
    help: Mapping[str, str | None]
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] | None = None
    attr: str = ""
    kind: Any = None
    # registered only while this feature gate is on (upstream's RegisterMetrics under it)
    gate: str = ""

    def exposed(self, features: FeatureGates) -> bool:
        """Whether kube-scheduler registers the family under ``features``."""
        if self.help_at(features.emulated_version) is None:
            return False
        return not self.gate or features.enabled_if_known(self.gate)

    def help_at(self, version: str) -> str | None:
        """The help text at emulated ``version``, None if the version does not expose it."""
        at = [v for v in self.help if minor_key(v) <= minor_key(version)]
        return self.help[max(at, key=minor_key)] if at else None


def _buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    return tuple(exponential_buckets(start, factor, count))


_ATTEMPT = ("result", "profile")
#: THE table: every family below, per version (``tests/e2e/test_metrics_parity_kube.py``
#: checks it against each real binary's ``/metrics``). 1.37 renamed unschedulablePods to
#: unschedulableEntities in two help texts, moved two histograms to BETA, hid the
#: deprecated preemption_goroutines_duration_seconds (ALPHA, deprecated in 1.37.0: hidden at
#: once) and added the entity, rescoring and pre-queueing-hint families. Those of
#: workload-aware scheduling are registered only under their gates (``Family.gate``):
#: podgroup_* and workload preemption's under GenericWorkload, the placement families
#: under TopologyAwareWorkloadScheduling.
FAMILIES: tuple[Family, ...] = (
    Family(
        "scheduler_schedule_attempts",
        {
            "1.36": STABLE + "Number of attempts to schedule pods, by the result. "
            "'unschedulable' means a pod could not be scheduled, while 'error' means an "
            "internal scheduler problem."
        },
        _ATTEMPT,
        attr="schedule_attempts",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_scheduling_attempt_duration_seconds",
        {"1.36": STABLE + "Scheduling attempt latency in seconds (scheduling algorithm + binding)"},
        _ATTEMPT,
        _buckets(0.001, 2, 15),
        "scheduling_attempt_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_scheduling_algorithm_duration_seconds",
        {
            "1.36": ALPHA + "Scheduling algorithm latency in seconds",
            "1.37": BETA + "Scheduling algorithm latency in seconds",
        },
        (),
        _buckets(0.001, 2, 15),
        "scheduling_algorithm_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_event_handling_duration_seconds",
        {"1.36": ALPHA + "Event handling latency in seconds."},
        ("event",),
        _buckets(0.0001, 2, 12),
        "event_handling_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_preemption_victims",
        {
            "1.36": STABLE + "Number of selected preemption victims",
            "1.37": STABLE
            + "Number of selected preemption victims for preemption initiated by a single pod",
        },
        (),
        _buckets(1, 2, 7),
        "preemption_victims",
        _FastHistogram,
    ),
    Family(
        "scheduler_preemption_attempts",
        {"1.36": STABLE + "Total preemption attempts in the cluster till now"},
        attr="preemption_attempts",
        kind=_FastCounter,
    ),
    # ksched's preemption always runs asynchronously (upstream SchedulerAsyncPreemption).
    Family(
        "scheduler_preemption_goroutines_duration_seconds",
        {
            "1.36": ALPHA + "Duration in seconds for running goroutines for the preemption.",
            "1.37": None,
        },
        ("result",),
        _buckets(0.01, 2, 20),
        "preemption_goroutines_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_preemption_goroutines_execution",
        {"1.36": ALPHA + "Number of preemption goroutines executed."},
        ("result",),
        attr="preemption_goroutines_execution",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_pod_scheduling_sli_duration_seconds",
        {
            "1.36": BETA + "E2e latency for a pod being scheduled, from the time the pod enters "
            "the scheduling queue and might involve multiple scheduling attempts."
        },
        ("attempts",),
        _buckets(0.01, 2, 20),
        "pod_scheduling_sli_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_pod_scheduling_attempts",
        {"1.36": STABLE + "Number of attempts to successfully schedule a pod."},
        (),
        _buckets(1, 2, 5),
        "pod_scheduling_attempts",
        _FastHistogram,
    ),
    Family(
        "scheduler_pod_scheduled_after_flush",
        {
            version: ALPHA + "Number of pods that were successfully scheduled after being "
            f"flushed from {queue} due to timeout. This metric helps detect potential queueing "
            "hint misconfigurations or event handling issues."
            for version, queue in (("1.36", "unschedulablePods"), ("1.37", "unschedulableEntities"))
        },
        attr="pod_scheduled_after_flush",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_framework_extension_point_duration_seconds",
        {"1.36": STABLE + "Latency for running all plugins of a specific extension point."},
        ("extension_point", "status", "profile"),
        _buckets(0.0001, 2, 12),
        "framework_extension_point_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_plugin_execution_duration_seconds",
        {
            "1.36": ALPHA + "Duration for running a plugin at a specific extension point.",
            "1.37": BETA + "Duration for running a plugin at a specific extension point.",
        },
        ("plugin", "extension_point", "status"),
        _buckets(0.00001, 1.5, 20),
        "plugin_execution_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_queueing_hint_execution_duration_seconds",
        {"1.36": ALPHA + "Duration for running a queueing hint function of a plugin."},
        ("plugin", "event", "hint"),
        _buckets(0.00001, 1.5, 20),
        "queueing_hint_execution_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_pre_queueing_hint_evaluations",
        {
            "1.37": ALPHA + "Number of PreQueueingHint evaluations, labeled by plugin and result "
            "(all_pods or narrowed)."
        },
        ("plugin", "result"),
        attr="pre_queueing_hint_evaluations",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_queue_incoming_pods",
        {"1.36": STABLE + "Number of pods added to scheduling queues by event and queue type."},
        ("queue", "event"),
        attr="queue_incoming_pods",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_queue_incoming_entities",
        {
            "1.37": ALPHA + "Number of scheduling entities added to scheduling queues by event, "
            "queue type, and entity type. Entity types are either 'pod' (for individual pods "
            "that are not members of any podgroup) or 'podgroup'."
        },
        ("queue", "event", "type"),
        attr="queue_incoming_entities",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_permit_wait_duration_seconds",
        {"1.36": BETA + "Duration of waiting on permit."},
        ("result",),
        _buckets(0.001, 2, 15),
        "permit_wait_duration",
        _FastHistogram,
    ),
    # OpportunisticBatching's families, fed by ksched's cycle cache (see batch_lookup).
    Family(
        "scheduler_batch_attempts",
        {"1.36": ALPHA + "Counts of results when we attempt to use batching."},
        ("profile", "result"),
        attr="batch_attempts",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_batch_cache_flushed",
        {"1.36": ALPHA + "Counts of cache flushes by reason."},
        ("profile", "reason"),
        attr="batch_cache_flushed",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_batch_rescore_attempts",
        {"1.37": ALPHA + "Counts of rescore attempts during opportunistic batching."},
        ("profile",),
        attr="batch_rescore_attempts",
        kind=_FastCounter,
    ),
    Family(
        "scheduler_batch_rescore_duration_seconds",
        {"1.37": ALPHA + "Latency for rescoring a node during opportunistic batching."},
        ("profile",),
        _buckets(0.00001, 2, 12),
        "batch_rescore_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_get_node_hint_duration_seconds",
        {"1.36": ALPHA + "Latency for getting a node hint."},
        ("hinted", "profile"),
        _buckets(0.00001, 2, 12),
        "get_node_hint_duration",
        _FastHistogram,
    ),
    Family(
        "scheduler_store_schedule_results_duration_seconds",
        # sic: v1.36's help text
        {
            "1.36": ALPHA + "Latency for getting a no.",
            "1.37": ALPHA + "Latency for storing scheduling results.",
        },
        ("profile",),
        _buckets(0.00001, 2, 12),
        "store_schedule_results_duration",
        _FastHistogram,
    ),
    # workload-aware preemption (GenericWorkload): upstream observes these for a single
    # pod's preemption too (``preemptor`` "pod"), once the gate registers them
    Family(
        "scheduler_workload_preemption_attempts",
        {
            "1.37": ALPHA + "Total preemption attempts initiated by workload (including pod "
            "groups) in the cluster till now."
        },
        ("result",),
        attr="workload_preemption_attempts",
        kind=_FastCounter,
        gate="GenericWorkload",
    ),
    Family(
        "scheduler_workload_preemption_victims",
        {"1.37": ALPHA + "Number of pod preemption victims caused by workload preemption."},
        (),
        _buckets(1, 2, 11),
        "workload_preemption_victims",
        _FastHistogram,
        gate="GenericWorkload",
    ),
    Family(
        "scheduler_preemption_workload_disruptions",
        {
            "1.37": ALPHA + "Number of workload preemption units being preempted. A single "
            "preemption unit can be all pods in a pod group (in case of DisruptionMode=all), "
            "or a single pod (in case of DisruptionMode=single)."
        },
        ("preemptor",),
        _buckets(1, 2, 11),
        "preemption_workload_disruptions",
        _FastHistogram,
        gate="GenericWorkload",
    ),
    Family(
        "scheduler_preemption_evaluation_duration_seconds",
        {"1.37": ALPHA + "Duration in seconds for identifying the target preemption victims."},
        ("preemptor", "result"),
        _buckets(0.001, 2, 16),
        "preemption_evaluation_duration",
        _FastHistogram,
        gate="GenericWorkload",
    ),
    Family(
        "scheduler_preemption_execution_duration_seconds",
        {
            "1.37": ALPHA + "Duration in seconds for preempting the target preemption victims. "
            "With async preemption enabled, preemption execution does not block the scheduling "
            "of other pods."
        },
        ("preemptor", "result"),
        _buckets(0.001, 2, 16),
        "preemption_execution_duration",
        _FastHistogram,
        gate="GenericWorkload",
    ),
    Family(
        "scheduler_preemption_pdb_violations",
        {"1.37": ALPHA + "Total number of pod disruption budget violations caused by preemption."},
        ("preemptor",),
        attr="preemption_pdb_violations",
        kind=_FastCounter,
        gate="GenericWorkload",
    ),
    # workload-aware scheduling (v1.37): the pod-group cycle
    Family(
        "scheduler_podgroup_schedule_attempts",
        {
            "1.37": ALPHA + "Number of attempts to schedule pod group, by the result. "
            "'unschedulable' means a pod group could not be scheduled, while 'error' means an "
            "internal scheduler problem."
        },
        _ATTEMPT,
        attr="podgroup_schedule_attempts",
        kind=_FastCounter,
        gate="GenericWorkload",
    ),
    Family(
        "scheduler_podgroup_scheduling_attempt_duration_seconds",
        {"1.37": ALPHA + "Pod group scheduling attempt latency in seconds"},
        _ATTEMPT,
        _buckets(0.001, 2, 15),
        "podgroup_scheduling_attempt_duration",
        _FastHistogram,
        gate="GenericWorkload",
    ),
    Family(
        "scheduler_podgroup_scheduling_algorithm_duration_seconds",
        {"1.37": ALPHA + "Pod group scheduling algorithm latency in seconds"},
        (),
        _buckets(0.001, 2, 15),
        "podgroup_scheduling_algorithm_duration",
        _FastHistogram,
        gate="GenericWorkload",
    ),
    Family(
        "scheduler_generated_placements",
        {"1.37": ALPHA + "Number of candidate placements generated when scheduling pod groups."},
        ("profile",),
        attr="generated_placements",
        kind=_FastCounter,
        gate="TopologyAwareWorkloadScheduling",
    ),
    Family(
        "scheduler_placement_evaluations",
        {
            "1.37": ALPHA + "Number of candidate placements evaluated when scheduling pod "
            "groups, by result. 'feasible' means the pod group fit into the placement, while "
            "'infeasible' means it did not."
        },
        _ATTEMPT,
        attr="placement_evaluations",
        kind=_FastCounter,
        gate="TopologyAwareWorkloadScheduling",
    ),
    Family(
        "scheduler_placement_evaluation_duration_seconds",
        {
            "1.37": ALPHA + "Latency in seconds of evaluating a single candidate placement "
            "when scheduling pod groups, by result. 'feasible' means the pod group fit into "
            "the placement, while 'infeasible' means it did not."
        },
        _ATTEMPT,
        _buckets(0.001, 2, 15),
        "placement_evaluation_duration",
        _FastHistogram,
        gate="TopologyAwareWorkloadScheduling",
    ),
    # computed when scraped (``_StateCollector``)
    Family(
        "scheduler_pending_pods",
        {
            "1.36": STABLE + "Number of pending pods, by the queue type. 'active' means number "
            "of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' "
            "means number of pods in unschedulablePods that the scheduler attempted to schedule "
            "and failed; 'gated' is the number of unschedulable pods that the scheduler never "
            "attempted to schedule because they are gated.",
            "1.37": STABLE + "Number of pending pods, by the queue type. 'active' means number "
            "of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' "
            "means number of pods in unschedulableEntities that the scheduler attempted to "
            "schedule and failed; 'gated' is the number of unschedulable pods that the "
            "scheduler never attempted to schedule because they are gated; 'incomplete' means "
            "number of pods in incompletePodGroupPods; 'pending' means number of pods in "
            "pendingPodGroupPods.",
        },
        ("queue",),
    ),
    Family(
        "scheduler_queued_entities",
        {
            "1.37": ALPHA + "Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' "
            "stands for individual pods that are not members of any podgroup) by the queue "
            "type. 'active' means number of entities in activeQ; 'backoff' means number of "
            "entities in backoffQ; 'unschedulable' means number of entities in "
            "unschedulableEntities that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable entities that the scheduler never "
            "attempted to schedule because they are gated."
        },
        ("queue", "type"),
    ),
)
FAMILY: dict[str, Family] = {f.name: f for f in FAMILIES}


class Scraped(Protocol):
    """What these metrics read of the ``Scheduler`` they are attached to (its metrics, and
    its queue and cache for the gauges): declared here, so the metrics stay below the
    scheduler that feeds them."""

    @property
    def metrics(self) -> object: ...

    @property
    def queue(self) -> SchedulingQueue: ...

    @property
    def cache(self) -> Cache: ...

    @property
    def in_flight_bindings(self) -> int: ...


class SchedulerMetrics:
    """The scheduler's metrics, handed to the ``Scheduler`` that feeds them
    (``Scheduler(metrics=...)``).

    The families registered are those of ``features``' emulated version (``FAMILIES``).
    """

    schedule_attempts: _FastCounter
    scheduling_attempt_duration: _FastHistogram
    scheduling_algorithm_duration: _FastHistogram
    event_handling_duration: _FastHistogram
    preemption_victims: _FastHistogram
    preemption_attempts: _FastCounter
    preemption_goroutines_duration: _FastHistogram
    preemption_goroutines_execution: _FastCounter
    pod_scheduling_sli_duration: _FastHistogram
    pod_scheduling_attempts: _FastHistogram
    pod_scheduled_after_flush: _FastCounter
    framework_extension_point_duration: _FastHistogram
    plugin_execution_duration: _FastHistogram
    queueing_hint_execution_duration: _FastHistogram
    pre_queueing_hint_evaluations: _FastCounter
    queue_incoming_pods: _FastCounter
    queue_incoming_entities: _FastCounter
    permit_wait_duration: _FastHistogram
    batch_attempts: _FastCounter
    batch_cache_flushed: _FastCounter
    batch_rescore_attempts: _FastCounter
    batch_rescore_duration: _FastHistogram
    get_node_hint_duration: _FastHistogram
    store_schedule_results_duration: _FastHistogram
    workload_preemption_attempts: _FastCounter
    workload_preemption_victims: _FastHistogram
    preemption_workload_disruptions: _FastHistogram
    preemption_evaluation_duration: _FastHistogram
    preemption_execution_duration: _FastHistogram
    preemption_pdb_violations: _FastCounter
    podgroup_schedule_attempts: _FastCounter
    podgroup_scheduling_attempt_duration: _FastHistogram
    podgroup_scheduling_algorithm_duration: _FastHistogram
    generated_placements: _FastCounter
    placement_evaluations: _FastCounter
    placement_evaluation_duration: _FastHistogram

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        features: FeatureGates | None = None,
        plugin_sample_percent: int = PLUGIN_METRICS_SAMPLE_PERCENT,
        seed: int | None = None,
        process_metrics: bool = True,
    ) -> None:
        self.registry = registry if registry is not None else SchedulerRegistry()
        r = self.registry
        self.plugin_sample_percent = plugin_sample_percent
        self._rng = random.Random(seed)
        self.features = features or default_feature_gates()
        version = self.features.emulated_version
        for fam in FAMILIES:
            if not fam.attr:
                continue
            text = fam.help_at(version)
            kwargs: dict[str, Any] = {"registry": r if fam.exposed(self.features) else None}
            if fam.buckets is not None:
                kwargs["buckets"] = fam.buckets
            # a family the version does not expose is still made (unregistered), so the
            # code recording into it needs no version checks
            setattr(self, fam.attr, fam.kind(fam.name, text or fam.name, fam.labels, **kwargs))
        # client-go's leader election metrics (component-base's leaderelection adapter).
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            ALPHA + "Gauge of if the reporting system is master of the relevant lease, 0 "
            "indicates backup, 1 indicates master. 'name' is the string used to identify the "
            "lease. Please make sure to group by name.",
            ["name"],
            registry=r,
        )
        self.leader_election_slowpath = Counter(
            "leader_election_slowpath",
            ALPHA + "Total number of slow path exercised in renewing leader leases. 'name' is "
            "the string used to identify the lease. Please make sure to group by name.",
            ["name"],
            registry=r,
        )
        if process_metrics:
            ProcessCollector(registry=r)
        self._children: dict[tuple[Any, ...], Any] = {}
        self._paused = False
        self._state = _StateCollector(version)
        r.register(self._state)

    # -- wiring ------------------------------------------------------------------------------
    def attach(self, sched: Scraped) -> None:
        """Read ``sched``'s queue and cache when scraped. The Scheduler calls this once built
        with these metrics (``Scheduler(metrics=...)``), which already feed its attempts,
        queueing hints and frameworks: nothing is set on the scheduler from here."""
        if sched.metrics is not self:
            raise ValueError("attach: the scheduler was built with other metrics")
        if sched not in self._state.schedulers:
            self._state.schedulers.append(sched)

    def attach_recorder(self, recorder: Any) -> None:
        """Report ``recorder.events_dropped`` as ``ksched_events_dropped_total``."""
        self._state.recorders.append(recorder)

    # -- the framework's records (``framework.recorder.FrameworkRecorder``) -----------------
    def plugins_listed(self, profile: str, point: str, plugins: Sequence[str]) -> None:
        """Every plugin of the point listed from the start, at 0, as upstream."""
        self._state.evaluations[(profile, point)] = _Evaluations(profile, point, list(plugins))

    def extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        if not self._paused:
            self._ep_child(point, status, profile).observe(seconds)

    def plugin(self, point: str, plugin: str, status: str, seconds: float) -> None:
        if not self._paused:
            self._plugin_child(plugin, point, status).observe(seconds)

    def evaluated(
        self, profile: str, point: str, n: int, skipped: Collection[str], stopped_at: str
    ) -> None:
        ev = self._state.evaluations.get((profile, point))
        if ev is not None and not self._paused:
            ev.add(n, skipped, stopped_at)

    def sample_plugins(self) -> bool:
        """Upstream's ``rand.Intn(100) < pluginMetricsSamplePercent``."""
        return self._rng.random() * 100 < self.plugin_sample_percent

    def permit_waited(self, status: str, seconds: float) -> None:
        self._child_of(self.permit_wait_duration, status).observe(seconds)

    def preemption_attempted(self) -> None:
        self.preemption_attempts.inc()

    def workload_preemption_attempted(self, result: str) -> None:
        self._child_of(self.workload_preemption_attempts, result).inc()

    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None:
        self._child_of(self.preemption_evaluation_duration, preemptor, result).observe(seconds)

    def preemption_victims_chosen(
        self, preemptor: str, victims: int, disruptions: int, pdb_violations: int
    ) -> None:
        """``observeVictims``, as DefaultPreemption chose its candidate (whether or not
        its victims are terminating already); disruptions and PDB violations only when
        there are some."""
        if preemptor == "pod":
            self.preemption_victims.observe(victims)
        else:
            self.workload_preemption_victims.observe(victims)
        if disruptions > 0:
            self._child_of(self.preemption_workload_disruptions, preemptor).observe(disruptions)
        if pdb_violations > 0:
            self._child_of(self.preemption_pdb_violations, preemptor).inc(pdb_violations)

    # -- hooks called by the Scheduler ------------------------------------------------------
    def cycle_finished(self, fw: Framework, state: CycleState, seconds: float) -> None:
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
            if qpi.flushed:
                self.pod_scheduled_after_flush.inc()

    def queue_incoming(self, event: str, queue: str) -> None:
        """A pod moved to ``queue``, counted as an entity of type ``pod`` too."""
        self.queue_incoming_entity(event, queue, 1, "pod")

    def queue_incoming_entity(self, event: str, queue: str, pods: int, kind: str | None) -> None:
        """As upstream's ``recordIncomingEntitiesMetrics``: an entity (a pod, or a pod
        group's ``pods`` members) moved to ``queue``; every pod is an incoming pod, and
        (1.37) the entity counts under its type ``kind``, "pod" or "podgroup" (None: it
        does not count, see ``SchedulingQueue.on_entity_move``)."""
        self._child_of(self.queue_incoming_pods, queue, event).inc(pods)
        if kind is not None:
            self._child_of(self.queue_incoming_entities, queue, event, kind).inc()

    def event_handled(self, event: str, seconds: float) -> None:
        """An informer event (labelled as upstream's ``ClusterEvent.Label()``) took
        ``seconds`` to apply to the cache and queue."""
        self._child_of(self.event_handling_duration, event).observe(seconds)

    def hint_executed(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        """A plugin's queueing hint ran: ``Queue``, ``QueueSkip`` or ``Error``."""
        self._child_of(self.queueing_hint_execution_duration, plugin, event, hint).observe(seconds)

    def preemption_finished(self, result: str, seconds: float, preemptor: str = "pod") -> None:
        """The asynchronous evictions of one preemption ended: ``success`` or ``error``."""
        self._child_of(self.preemption_goroutines_execution, result).inc()
        self._child_of(self.preemption_goroutines_duration, result).observe(seconds)
        self._child_of(self.preemption_execution_duration, preemptor, result).observe(seconds)

    # -- the pod-group cycle (GenericWorkload) ------------------------------------------------
    def pod_group_attempt_finished(self, profile: str, result: str, seconds: float) -> None:
        """One pod-group attempt: ``scheduled``, ``unschedulable``, ``waiting_on_preemption``
        or ``error`` (upstream ``PodGroupScheduled`` and its siblings)."""
        self._child_of(self.podgroup_schedule_attempts, result, profile).inc()
        self._child_of(self.podgroup_scheduling_attempt_duration, result, profile).observe(seconds)

    def pod_group_algorithm_finished(self, seconds: float) -> None:
        self.podgroup_scheduling_algorithm_duration.observe(seconds)

    def placements_generated(self, profile: str, count: int) -> None:
        """``RecordGeneratedPlacements``."""
        self._child_of(self.generated_placements, profile).inc(count)

    def placement_evaluated(self, result: str, profile: str, seconds: float) -> None:
        """``ObservePlacementEvaluation``: ``feasible`` or ``infeasible``."""
        self._child_of(self.placement_evaluations, result, profile).inc()
        self._child_of(self.placement_evaluation_duration, result, profile).observe(seconds)

    def batch_lookup(self, profile: str, hinted: bool, seconds: float) -> None:
        """The cycle cache was asked for the pod's placement (upstream's ``GetNodeHint``).

        ksched's cache is exact: an answer is the node the full cycle would choose, and it
        is taken (``hint_used``); otherwise the full cycle runs (``no_hint``).
        ``hint_not_used`` cannot happen and stays absent.
        """
        result = "hint_used" if hinted else "no_hint"
        self._child_of(self.batch_attempts, profile, result).inc()
        hint = "hint" if hinted else "no_hint"
        self._child_of(self.get_node_hint_duration, hint, profile).observe(seconds)

    def batch_stored(self, profile: str, seconds: float) -> None:
        """The cycle cache brought a signature's stored per-node results up to date (rebuilt
        or refreshed them): upstream's ``StoreScheduleResults``."""
        self._child_of(self.store_schedule_results_duration, profile).observe(seconds)

    def batch_rescored(self, profile: str, seconds: float) -> None:
        """The cycle cache re-scored the rows a change left feasible for a signature
        (upstream's ``rescoreHintedNode``, which re-scores the node the last pod went to):
        ``batch_rescore_attempts_total`` and ``batch_rescore_duration_seconds`` (1.37)."""
        self._child_of(self.batch_rescore_attempts, profile).inc()
        self._child_of(self.batch_rescore_duration, profile).observe(seconds)

    def batch_flushed(self, profile: str, reason: str) -> None:
        """The cycle cache threw stored results away. Of upstream's reasons, ksched's cache
        (one entry per signature, refreshed row by row) has ``expired`` (too much changed
        to refresh: rebuilt), ``pod_incompatible`` (evicted for another signature) and
        ``empty_list`` (no node was feasible: nothing to keep); ``pod_failed``,
        ``pod_skipped``, ``node_missing``, ``node_not_full`` (1.36) and ``pod_not_batchable``
        describe upstream's single-entry, previous-pod-only state and never occur here,
        nor do 1.37's ``pod_nominated`` (a cycle with a nominated pod does not ask the
        cache) and its rescoring errors (``filter_error``, ``prescore_error``,
        ``rescore_error``, ``normalize_error``: a plugin error refreshing an entry
        rebuilds it, ``expired``)."""
        self._child_of(self.batch_cache_flushed, profile, reason).inc()

    # -- the leader elector's hooks (``ksched.cluster.leaderelection.LeaderMetrics``) ------
    def leader_on(self, name: str) -> None:
        self.leader_election_master_status.labels(name).set(1)

    def leader_off(self, name: str) -> None:
        self.leader_election_master_status.labels(name).set(0)

    def slowpath_exercised(self, name: str) -> None:
        self.leader_election_slowpath.labels(name).inc()

    def paused(self, on: bool) -> None:
        """Stop (or resume) taking the framework's records, e.g. while /debug/explain re-runs
        a cycle."""
        self._paused = on

    # -- exposition ---------------------------------------------------------------------------
    def render(self) -> bytes:
        """The Prometheus text exposition of every metric in this registry (no ``_created``)."""
        r = self.registry
        return bytes(generate_latest(r if isinstance(r, SchedulerRegistry) else _Exposed(r)))

    # -- internals ----------------------------------------------------------------------------
    def _child(self, key: tuple[Any, ...]) -> Any:
        return self._children.get(key)

    def _set_child(self, key: tuple[Any, ...], child: Any) -> Any:
        self._children[key] = child
        return child

    def _child_of(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, resolved once per label combination."""
        key = (id(metric), *labels)
        c = self._children.get(key)
        if c is None:
            c = self._children[key] = metric.labels(*labels)
        return c

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


class _Evaluations:
    """``scheduler_plugin_evaluation_total`` of one profile's extension point, as plain ints:
    ``runs`` counts every evaluation the point made, ``missed[plugin]`` those the plugin sat
    out (skipped, or after the plugin that stopped the point); a plugin's count is the
    difference. One addition per framework call, however many plugins there are."""

    __slots__ = ("missed", "names", "point", "profile", "runs")

    def __init__(self, profile: str, point: str, names: list[str]) -> None:
        self.profile = profile
        self.point = point
        self.names = names
        self.runs = 0
        self.missed = dict.fromkeys(names, 0)

    def add(self, n: int, skipped: Collection[str], stopped_at: str = "") -> None:
        self.runs += n
        missed = self.missed
        if skipped:
            for name in skipped:
                if name in missed:
                    missed[name] += n
        if stopped_at and stopped_at in missed:
            after = False
            for name in self.names:
                if after and name not in skipped:
                    missed[name] += n
                after = after or name == stopped_at

    def samples(self) -> Iterator[tuple[str, int]]:
        runs, missed = self.runs, self.missed
        for name in self.names:
            yield name, runs - missed[name]


class _StateCollector:
    """Gauges read from the scheduler's queue and cache at scrape time (free on the hot path),
    and the plugin evaluation counts kept as plain integers."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.schedulers: list[Scraped] = []
        # (profile, extension point) -> its counts
        self.evaluations: dict[tuple[str, str], _Evaluations] = {}
        # event recorders with an ``events_dropped`` count (the daemon's StatusReporter)
        self.recorders: list[Any] = []
        self._seen_unschedulable: set[tuple[str, str]] = set()
        self._seen_events: set[str] = set()

    def _declared(self, kind: Any, name: str) -> Any:
        """``FAMILY[name]`` as a ``kind`` metric family at this version, None if the
        version does not expose it."""
        fam = FAMILY[name]
        text = fam.help_at(self.version)
        return None if text is None else kind(name, text, labels=list(fam.labels))

    def describe(self) -> Iterable[Metric]:
        return list(self._families())

    def collect(self) -> Iterator[Metric]:
        yield from self._families(fill=True)

    def _families(self, fill: bool = False) -> Iterator[Metric]:
        pending = self._declared(GaugeMetricFamily, "scheduler_pending_pods")
        entities = self._declared(GaugeMetricFamily, "scheduler_queued_entities")
        unsched = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            BETA + "The number of unschedulable pods broken down by plugin name. A pod will "
            "increment the gauge for all plugins that caused it to not schedule and so this "
            "metric have meaning only when broken down by plugin.",
            labels=["plugin", "profile"],
        )
        cache = GaugeMetricFamily(
            "scheduler_cache_size",
            ALPHA + "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            labels=["type"],
        )
        inflight = GaugeMetricFamily(
            "scheduler_inflight_events",
            ALPHA + "Number of events currently tracked in the scheduling queue.",
            labels=["event"],
        )
        goroutines = GaugeMetricFamily(
            "scheduler_goroutines",
            BETA + "Number of running goroutines split by the work they do such as binding.",
            labels=["operation"],
        )
        evaluations = CounterMetricFamily(
            "scheduler_plugin_evaluation",
            BETA + "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            labels=["plugin", "extension_point", "profile"],
        )
        dropped = CounterMetricFamily(
            "ksched_events_dropped",
            "Events not recorded because the event queue was full (client-go's event "
            "broadcaster drops them the same way).",
        )
        if fill:
            dropped.add_metric([], sum(r.events_dropped for r in self.recorders))
            counts: dict[str, int] = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
            if entities is not None:  # v1.37: the queue's pod-group members kept aside
                counts.update(incomplete=0, pending=0)
            by_entity: dict[tuple[str, str], int] = {}
            by_plugin: dict[tuple[str, str], int] = dict.fromkeys(self._seen_unschedulable, 0)
            events: _Tally[str] = _Tally(dict.fromkeys(self._seen_events, 0))
            nodes = pods = assumed = binding = 0
            for s in self.schedulers:
                for k, v in s.queue.pending_counts().items():
                    counts[k] = counts.get(k, 0) + v
                for ek, v in s.queue.entity_counts().items():
                    by_entity[ek] = by_entity.get(ek, 0) + v
                for q in s.queue.unschedulable_pods():
                    plugins = q.unschedulable_plugins | q.pending_plugins
                    if q.gated and q.gating_plugin:
                        plugins = plugins | {q.gating_plugin}
                    for p in plugin_names(plugins):  # not an invalid pod's pseudo-plugin
                        by_plugin[(p, q.profile)] = by_plugin.get((p, q.profile), 0) + 1
                events.update(s.queue.in_flight_event_counts())
                nodes += s.cache.node_count()
                pods += len(s.cache.pod_states)
                assumed += len(s.cache.assumed)
                binding += s.in_flight_bindings
            self._seen_unschedulable.update(by_plugin)
            self._seen_events.update(events)
            for k, v in counts.items():
                pending.add_metric([k], v)
            if entities is not None:
                for (where, kind), v in by_entity.items():
                    entities.add_metric([where, kind], v)
            for (plugin, profile), v in sorted(by_plugin.items()):
                unsched.add_metric([plugin, profile], v)
            cache.add_metric(["nodes"], nodes)
            cache.add_metric(["pods"], pods)
            cache.add_metric(["assumed_pods"], assumed)
            for event, v in sorted(events.items()):
                inflight.add_metric([event], v)
            goroutines.add_metric(["binding"], binding)
            for ev in self.evaluations.values():
                for plugin, v in ev.samples():
                    evaluations.add_metric([plugin, ev.point, ev.profile], v)
        yield pending
        if entities is not None:
            yield entities
        yield unsched
        yield cache
        yield inflight
        yield goroutines
        yield evaluations
        yield dropped
