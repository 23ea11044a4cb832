"""The pod-group cycle's families (v1.37 ``pkg/scheduler/metrics``): registered only under
their gates, with upstream's names, labels and buckets."""

from __future__ import annotations

from prometheus_client import generate_latest

from ksched.features import FeatureGates
from ksched.metrics import FAMILY, SchedulerMetrics, exponential_buckets

PODGROUP = (
    "scheduler_podgroup_schedule_attempts_total",
    "scheduler_podgroup_scheduling_attempt_duration_seconds",
    "scheduler_podgroup_scheduling_algorithm_duration_seconds",
)
PLACEMENT = (
    "scheduler_generated_placements_total",
    "scheduler_placement_evaluations_total",
    "scheduler_placement_evaluation_duration_seconds",
)


def _exposed(gates: dict[str, bool], version: str = "1.37") -> str:
    m = SchedulerMetrics(features=FeatureGates(version, gates), process_metrics=False)
    m.pod_group_attempt_finished("ksched", "scheduled", 0.01)
    m.pod_group_algorithm_finished(0.002)
    m.placements_generated("ksched", 3)
    m.placement_evaluated("feasible", "ksched", 0.004)
    return generate_latest(m.registry).decode()


def _has(text: str, family: str) -> bool:
    return f"# TYPE {family} " in text


def test_the_families_follow_their_gates() -> None:
    off = _exposed({})
    assert not any(_has(off, f) for f in PODGROUP + PLACEMENT)
    generic = _exposed({"GenericWorkload": True})
    assert all(_has(generic, f) for f in PODGROUP)
    assert not any(_has(generic, f) for f in PLACEMENT)
    both = _exposed({"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})
    assert all(_has(both, f) for f in PODGROUP + PLACEMENT)
    assert (
        'scheduler_podgroup_schedule_attempts_total{profile="ksched",result="scheduled"} 1.0'
        in both
    )
    assert 'scheduler_generated_placements_total{profile="ksched"} 3.0' in both
    assert 'scheduler_placement_evaluations_total{profile="ksched",result="feasible"} 1.0' in both
    assert not any(_has(_exposed({}, "1.36"), f) for f in PODGROUP + PLACEMENT)


def test_names_labels_and_buckets_are_upstreams() -> None:
    attempts = FAMILY["scheduler_podgroup_schedule_attempts"]
    assert attempts.labels == ("result", "profile") and attempts.gate == "GenericWorkload"
    assert attempts.help_at("1.37") == (
        "[ALPHA] Number of attempts to schedule pod group, by the result. 'unschedulable' "
        "means a pod group could not be scheduled, while 'error' means an internal scheduler "
        "problem."
    )
    assert attempts.help_at("1.36") is None
    for name in (
        "scheduler_podgroup_scheduling_attempt_duration_seconds",
        "scheduler_podgroup_scheduling_algorithm_duration_seconds",
        "scheduler_placement_evaluation_duration_seconds",
    ):
        assert FAMILY[name].buckets == tuple(exponential_buckets(0.001, 2, 15)), name
    assert FAMILY["scheduler_podgroup_scheduling_algorithm_duration_seconds"].labels == ()
    assert FAMILY["scheduler_generated_placements"].labels == ("profile",)
    assert FAMILY["scheduler_placement_evaluations"].labels == ("result", "profile")
    assert FAMILY["scheduler_placement_evaluations"].gate == "TopologyAwareWorkloadScheduling"
