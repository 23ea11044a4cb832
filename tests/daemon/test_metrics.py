"""kube-scheduler's metric names, labels and buckets, fed by a real scheduling run."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ksched.metrics import SchedulerMetrics, exponential_buckets
from ksched.sim import Simulation

from .conftest import simulated


def value(m: SchedulerMetrics, name: str, **labels: str) -> float | None:
    v = m.registry.get_sample_value(name, labels)
    return None if v is None else float(v)


def buckets(m: SchedulerMetrics, name: str) -> list[float]:
    for fam in m.registry.collect():
        if fam.name == name:
            les = sorted({float(s.labels["le"]) for s in fam.samples if "le" in s.labels})
            return [b for b in les if b != float("inf")]
    raise AssertionError(name)


def test_attempt_outcomes(sim_metrics: tuple[Simulation, SchedulerMetrics]) -> None:
    _, m = sim_metrics
    assert value(m, "scheduler_schedule_attempts_total", result="scheduled", profile="ksched") == 2
    assert (
        value(m, "scheduler_schedule_attempts_total", result="unschedulable", profile="ksched") == 1
    )
    assert (
        value(
            m,
            "scheduler_scheduling_attempt_duration_seconds_count",
            result="scheduled",
            profile="ksched",
        )
        == 2
    )
    assert value(m, "scheduler_pod_scheduling_attempts_count") == 2
    assert value(m, "scheduler_pod_scheduling_attempts_sum") == 2
    assert value(m, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 2
    assert value(m, "scheduler_scheduling_algorithm_duration_seconds_count") == 3


def test_queue_and_cache_gauges_are_read_at_scrape_time(
    sim_metrics: tuple[Simulation, SchedulerMetrics],
) -> None:
    _, m = sim_metrics
    assert value(m, "scheduler_pending_pods", queue="unschedulable") == 1
    for q in ("active", "backoff", "gated"):
        assert value(m, "scheduler_pending_pods", queue=q) == 0
    assert (
        value(m, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile="ksched") == 1
    )
    assert value(m, "scheduler_scheduler_cache_size", type="nodes") == 2
    assert value(m, "scheduler_scheduler_cache_size", type="pods") == 2
    assert value(m, "scheduler_scheduler_cache_size", type="assumed_pods") == 0
    assert value(m, "scheduler_goroutines", operation="binding") == 0
    assert value(m, "scheduler_queue_incoming_pods_total", queue="active", event="PodAdd") == 3
    assert (
        value(
            m,
            "scheduler_queue_incoming_pods_total",
            queue="unschedulable",
            event="ScheduleAttemptFailure",
        )
        == 1
    )


def test_extension_points_timed_with_status_and_profile(
    sim_metrics: tuple[Simulation, SchedulerMetrics],
) -> None:
    _, m = sim_metrics
    name = "scheduler_framework_extension_point_duration_seconds_count"
    assert value(m, name, extension_point="PreFilter", status="Success", profile="ksched") == 3
    assert value(m, name, extension_point="Filter", status="Success", profile="ksched") == 2
    assert value(m, name, extension_point="Filter", status="Unschedulable", profile="ksched") == 1
    assert value(m, name, extension_point="Bind", status="Success", profile="ksched") == 2
    assert value(m, name, extension_point="Reserve", status="Success", profile="ksched") == 2
    assert value(m, name, extension_point="Permit", status="Success", profile="ksched") == 2
    assert (
        value(m, name, extension_point="PostFilter", status="Unschedulable", profile="ksched") == 1
    )


def test_plugins_timed_when_sampled_and_left_unwrapped(
    sim_metrics: tuple[Simulation, SchedulerMetrics],
) -> None:
    sim, m = sim_metrics
    name = "scheduler_plugin_execution_duration_seconds_count"
    assert (
        value(m, name, plugin="NodeResourcesFit", extension_point="Filter", status="Success") == 2
    )
    assert (
        value(m, name, plugin="NodeResourcesFit", extension_point="PreFilter", status="Success")
        == 3
    )
    assert value(m, name, plugin="DefaultBinder", extension_point="Bind", status="Success") == 2
    # the sampled cycles' wrappers are gone again: plugins are called directly
    fw = sim.sched.frameworks["ksched"]
    fit = fw.plugins["NodeResourcesFit"]
    assert "filter_batch" not in vars(fit) and "pre_filter" not in vars(fit)


def test_unsampled_cycles_record_no_plugin_durations() -> None:
    m = SchedulerMetrics(seed=0, plugin_sample_percent=0)
    simulated(m)
    fams = {f.name: f for f in m.registry.collect()}
    assert not fams["scheduler_plugin_execution_duration_seconds"].samples
    assert value(m, "scheduler_schedule_attempts_total", result="scheduled", profile="ksched") == 2


def test_sampling_rate_is_about_ten_percent() -> None:
    m = SchedulerMetrics(seed=1)
    hits = 0
    from ksched.framework.cycle_state import CycleState
    from ksched.metrics import SAMPLED_KEY

    class _FW:
        profile_name = "p"

    for _ in range(5000):
        st = CycleState()
        m.cycle_started(_FW(), st)  # type: ignore[arg-type]
        hits += bool(st.get(SAMPLED_KEY))
        m.cycle_finished(_FW(), st, 0.0)  # type: ignore[arg-type]
    assert 400 < hits < 600


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("scheduler_scheduling_attempt_duration_seconds", exponential_buckets(0.001, 2, 15)),
        ("scheduler_pod_scheduling_sli_duration_seconds", exponential_buckets(0.01, 2, 20)),
        ("scheduler_pod_scheduling_attempts", [1, 2, 4, 8, 16]),
        (
            "scheduler_framework_extension_point_duration_seconds",
            exponential_buckets(0.0001, 2, 12),
        ),
        ("scheduler_plugin_execution_duration_seconds", exponential_buckets(0.00001, 1.5, 20)),
    ],
)
def test_upstream_bucket_layouts(
    sim_metrics: tuple[Simulation, SchedulerMetrics],
    name: str,
    expected: list[float],
) -> None:
    _, m = sim_metrics
    assert buckets(m, name) == pytest.approx(expected)


def test_exposition_names_types_and_label_sets(
    sim_metrics: tuple[Simulation, SchedulerMetrics],
) -> None:
    _, m = sim_metrics
    text = m.render().decode()
    fams: dict[str, Any] = {f.name: f for f in text_string_to_metric_families(text)}
    expect = {
        "scheduler_schedule_attempts": ("counter", {"result", "profile"}),
        "scheduler_scheduling_attempt_duration_seconds": ("histogram", {"result", "profile"}),
        "scheduler_pending_pods": ("gauge", {"queue"}),
        "scheduler_queue_incoming_pods": ("counter", {"event", "queue"}),
        "scheduler_framework_extension_point_duration_seconds": (
            "histogram",
            {"extension_point", "profile", "status"},
        ),
        "scheduler_plugin_execution_duration_seconds": (
            "histogram",
            {"plugin", "extension_point", "status"},
        ),
        "scheduler_pod_scheduling_sli_duration_seconds": ("histogram", {"attempts"}),
        "scheduler_pod_scheduling_attempts": ("histogram", set()),
        "scheduler_unschedulable_pods": ("gauge", {"plugin", "profile"}),
        "scheduler_scheduler_cache_size": ("gauge", {"type"}),
    }
    for name, (typ, labels) in expect.items():
        fam = fams[name]
        assert fam.type == typ, name
        assert fam.samples, name
        for s in fam.samples:
            assert set(s.labels) - {"le"} == labels, (name, s)
    assert "scheduler_schedule_attempts_total{" in text


def test_several_instances_do_not_collide() -> None:
    a, b = SchedulerMetrics(), SchedulerMetrics()
    simulated(a)
    assert value(a, "scheduler_schedule_attempts_total", result="scheduled", profile="ksched") == 2
    assert (
        value(b, "scheduler_schedule_attempts_total", result="scheduled", profile="ksched") is None
    )


def test_unschedulable_gauge_keeps_reporting_zero_once_seen() -> None:
    m = SchedulerMetrics()
    sim = simulated(m)
    assert (
        value(m, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile="ksched") == 1
    )
    huge = next(q.pod_info for q in sim.sched.queue.unschedulable_pods())
    sim.sched.on_pod_delete(huge)
    assert (
        value(m, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile="ksched") == 0
    )
