"""kube-scheduler's metric names, labels and buckets, fed by a real scheduling run."""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ksched.config import default_config
from ksched.features import set_feature_gates
from ksched.metrics import SchedulerMetrics, exponential_buckets, go_float
from ksched.plugins import default_registry
from ksched.sim import Simulation, parse_cluster

from .conftest import CLUSTER, simulated


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
    assert value(m, "scheduler_cache_size", type="nodes") == 2
    assert value(m, "scheduler_cache_size", type="pods") == 2
    assert value(m, "scheduler_cache_size", type="assumed_pods") == 0
    assert value(m, "scheduler_scheduler_cache_size", type="nodes") is None  # the old name
    assert value(m, "scheduler_goroutines", operation="binding") == 0
    assert (
        value(m, "scheduler_queue_incoming_pods_total", queue="active", event="UnscheduledPodAdd")
        == 3
    )
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
    # as upstream's findNodesThatPassFilters: Success unless a plugin erred, fitting or not
    assert value(m, name, extension_point="Filter", status="Success", profile="ksched") == 3
    assert (
        value(m, name, extension_point="Filter", status="Unschedulable", profile="ksched") is None
    )
    assert value(m, name, extension_point="Bind", status="Success", profile="ksched") == 2
    # no PostBind plugin, but each bound pod went through PostBind
    assert value(m, name, extension_point="PostBind", status="Success", profile="ksched") == 2
    assert value(m, name, extension_point="PreBindPreFlight", status="Skip", profile="ksched") == 2
    # each pod entered the queue through PreEnqueue (its status is always Success upstream)
    pre_enqueue = value(m, name, extension_point="PreEnqueue", status="Success", profile="ksched")
    assert pre_enqueue is not None and pre_enqueue >= 3
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
    hits = sum(m.sample_plugins() for _ in range(5000))
    assert 400 < hits < 600


@pytest.mark.parametrize(("flagged", "percent"), [(True, 0), (False, 100)])
def test_the_cycle_states_flag_decides_whether_plugins_are_timed(
    flagged: bool, percent: int
) -> None:
    """The runtime times a cycle's plugins when its CycleState says so
    (``ShouldRecordPluginMetrics``), whatever the recorder would sample; the extension point
    is observed either way."""
    from ksched.framework.cycle_state import CycleState
    from ksched.framework.snapshot import Snapshot
    from ksched.profile import build_frameworks
    from tests.factories import make_pod

    m = SchedulerMetrics(seed=0, process_metrics=False, plugin_sample_percent=percent)
    fw = build_frameworks(default_config(), default_registry(), metrics=m)["ksched"]
    state = CycleState()
    state.record_plugin_metrics = flagged
    _, st, _ = fw.run_pre_filter(state, make_pod("p", cpu="1"), Snapshot())
    assert st.is_success(), st.message()
    point = "scheduler_framework_extension_point_duration_seconds_count"
    assert value(m, point, extension_point="PreFilter", status="Success", profile="ksched") == 1
    timed = {
        labels["plugin"]
        for labels in (
            s.labels
            for fam in m.registry.collect()
            if fam.name == "scheduler_plugin_execution_duration_seconds"
            for s in fam.samples
            if s.name.endswith("_count")
        )
    }
    assert timed == ({p.name for p in fw.pre_filter_plugins} if flagged else set())


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
    assert buckets(m, name) == expected


def test_exponential_buckets_multiply_step_by_step_as_go_does() -> None:
    """Each bound is the previous one times the factor, rounded once (Go's ``start *=
    factor``), not ``start * factor**i``: kube-scheduler's third plugin-duration bound is
    ``2.2500000000000005e-05``, where the power gives ``2.25e-05``."""
    bounds = exponential_buckets(0.00001, 1.5, 20)
    assert len(bounds) == 20 and bounds[0] == 0.00001
    assert all(b == a * 1.5 for a, b in itertools.pairwise(bounds))
    assert repr(bounds[2]) == "2.2500000000000005e-05" != repr(0.00001 * 1.5**2)
    assert exponential_buckets(1, 2, 5) == [1, 2, 4, 8, 16]
    with pytest.raises(ValueError, match="out of range"):
        exponential_buckets(0.1, 1, 3)


def test_exposition_writes_bucket_bounds_as_go_does() -> None:
    """``le`` as client_golang writes it: the step-by-step bound, ``1`` not ``1.0``."""
    m = SchedulerMetrics()
    m.plugin_execution_duration.labels("NodeResourcesFit", "Filter", "Success").observe(0.00002)
    m.pod_scheduling_attempts.observe(1)
    m.preemption_victims.observe(3)
    text = m.render().decode()
    assert 'le="2.2500000000000005e-05"' in text and 'le="2.25e-05"' not in text
    assert 'scheduler_pod_scheduling_attempts_bucket{le="1"} 1.0' in text
    assert 'scheduler_preemption_victims_bucket{le="64"} 1.0' in text
    assert 'le="1.0"' not in text and 'le="64.0"' not in text
    assert m.registry.get_sample_value("scheduler_pod_scheduling_attempts_bucket", {"le": "1"})


@pytest.mark.parametrize(
    ("value", "go"),
    [
        # strconv.FormatFloat(value, 'g', -1, 64), printed by Go 1.26
        (1.0, "1"),
        (16.0, "16"),
        (0.001, "0.001"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (2.2500000000000005e-05, "2.2500000000000005e-05"),
        (0.00011390625000000003, "0.00011390625000000003"),
        (5242.88, "5242.88"),
        (999999.0, "999999"),
        (1e6, "1e+06"),
        (1048576.0, "1.048576e+06"),
        (1e21, "1e+21"),
        (-2.5, "-2.5"),
        (5e-324, "5e-324"),
        (0.0, "0"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
        (float("nan"), "NaN"),
    ],
)
def test_go_float(value: float, go: str) -> None:
    assert go_float(value) == go


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
        "scheduler_cache_size": ("gauge", {"type"}),
        "scheduler_inflight_events": ("gauge", {"event"}),
        "scheduler_plugin_evaluation": ("counter", {"plugin", "extension_point", "profile"}),
        "scheduler_event_handling_duration_seconds": ("histogram", {"event"}),
        "scheduler_preemption_attempts": ("counter", set()),
        "scheduler_preemption_victims": ("histogram", set()),
        "scheduler_pod_scheduled_after_flush": ("counter", set()),
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


# -- the families added for parity with kube-scheduler v1.36 -----------------------------------

# conftest's two nodes (n1: 2 CPU, n2: 4 CPU), without its pods
NODES = CLUSTER[: CLUSTER.index("- {apiVersion: v1, kind: Pod")]


def _pod(name: str, cpu: str, **spec: Any) -> str:
    """A pod of ``ksched`` as a cluster file item (JSON is YAML)."""
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"schedulerName": "ksched", "containers": [container], **spec},
    }
    return f"- {json.dumps(pod)}\n"


def _replicas(n: int, cpu: str = "500m", prefix: str = "r") -> str:
    return "".join(_pod(f"{prefix}{i}", cpu) for i in range(n))


# n1 holds two 1-CPU pods, n2 one of 4 CPU; "urgent" preempts the one on n2 (fewest victims)
PREEMPTION = (
    NODES
    + _pod("low1", "1", nodeName="n1", priority=0)
    + _pod("low2", "1", nodeName="n1", priority=0)
    + _pod("big", "4", nodeName="n2", priority=0)
    + _pod("urgent", "1500m", priority=1000)
)


def _with_cycle_cache(m: SchedulerMetrics, cluster: str, max_entries: int = 8) -> Simulation:
    """Like ``simulated``, but the cycle cache answers what it can (as in the daemon)."""
    from ksched.config import default_config
    from ksched.plugins import default_registry
    from ksched.sim import parse_cluster

    sim = Simulation(
        parse_cluster(cluster, "test"), default_config(), default_registry(), seed=0, metrics=m
    )
    for fw in sim.sched.frameworks.values():
        fw.cycle_cache.MAX_ENTRIES = max_entries
    anyio.run(sim.run)
    return sim


def test_no_created_series_and_upstream_help_prefixes(
    sim_metrics: tuple[Simulation, SchedulerMetrics],
) -> None:
    _, m = sim_metrics
    text = m.render().decode()
    assert "_created" not in text
    assert all(not s.name.endswith("_created") for f in m.registry.collect() for s in f.samples)
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert fams["scheduler_schedule_attempts"].documentation.startswith("[STABLE] Number of")
    assert fams["scheduler_pod_scheduling_sli_duration_seconds"].documentation.startswith("[BETA] ")
    assert fams["scheduler_cache_size"].documentation.startswith("[ALPHA] Number of nodes")


def test_a_registry_passed_in_is_exposed_without_created_series_too() -> None:
    from prometheus_client import CollectorRegistry

    reg = CollectorRegistry()
    m = SchedulerMetrics(reg, process_metrics=False)
    simulated(m)
    assert reg.get_sample_value("scheduler_preemption_attempts_created") is not None
    assert "_created" not in m.render().decode()


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_preemption_attempts_victims_and_evictions(version: str) -> None:
    gates = set_feature_gates([], [version])
    m = SchedulerMetrics(seed=0, process_metrics=False, features=gates)
    sim = simulated(m, PREEMPTION)
    assert sim.sched.preemptions == {"urgent": ["default/big"]}
    # one PostFilter call of DefaultPreemption; its candidate had one victim
    assert value(m, "scheduler_preemption_attempts_total") == 1
    assert value(m, "scheduler_preemption_victims_count") == 1
    assert value(m, "scheduler_preemption_victims_sum") == 1
    assert value(m, "scheduler_preemption_goroutines_execution_total", result="success") == 1
    # deprecated (ALPHA) in 1.37.0, so hidden by component-base from 1.37 on
    duration = value(m, "scheduler_preemption_goroutines_duration_seconds_count", result="success")
    assert duration == (1 if version == "1.36" else None)


def _families(m: SchedulerMetrics) -> dict[str, str]:
    """Exposed family name (as exposed: counters with ``_total``) -> help text."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(m.render().decode()):
        name = fam.name + ("_total" if fam.type == "counter" else "")
        out[name] = fam.documentation
    return out


def test_each_version_exposes_its_own_families_and_texts() -> None:
    """What changed in v1.37.2's pkg/scheduler/metrics, family by family."""
    old = _families(SchedulerMetrics(seed=0, features=set_feature_gates([], ["1.36"])))
    new = _families(SchedulerMetrics(seed=0))
    added = {
        "scheduler_queue_incoming_entities_total",
        "scheduler_pre_queueing_hint_evaluations_total",
        "scheduler_batch_rescore_attempts_total",
        "scheduler_batch_rescore_duration_seconds",
        "scheduler_queued_entities",
    }
    assert set(new) - set(old) == added
    assert set(old) - set(new) == {"scheduler_preemption_goroutines_duration_seconds"}
    for name in (
        "scheduler_scheduling_algorithm_duration_seconds",
        "scheduler_plugin_execution_duration_seconds",
    ):
        assert old[name].startswith("[ALPHA] ") and new[name].startswith("[BETA] "), name
    assert old["scheduler_preemption_victims"] == "[STABLE] Number of selected preemption victims"
    assert new["scheduler_preemption_victims"].endswith("for preemption initiated by a single pod")
    assert "unschedulablePods" in old["scheduler_pending_pods"]
    assert "unschedulableEntities" in new["scheduler_pending_pods"]
    assert "'incomplete'" in new["scheduler_pending_pods"]
    assert old["scheduler_store_schedule_results_duration_seconds"].endswith("getting a no.")
    assert new["scheduler_store_schedule_results_duration_seconds"].endswith("scheduling results.")


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_queue_moves_count_pods_and_from_1_37_entities(version: str) -> None:
    """Every pod is its own entity (ksched has no pod groups): 1.37 counts an entity of type
    ``pod`` wherever it counts a pod, and shows the queues' pods as entities too."""
    m = SchedulerMetrics(seed=0, process_metrics=False, features=set_feature_gates([], [version]))
    simulated(m)
    # a new pending pod's event: UnschedulablePodAdd in 1.36, UnscheduledPodAdd in 1.37
    event = "UnscheduledPodAdd" if version == "1.37" else "UnschedulablePodAdd"
    pods = value(m, "scheduler_queue_incoming_pods_total", queue="active", event=event)
    assert pods is not None and pods >= 3
    entities = value(
        m,
        "scheduler_queue_incoming_entities_total",
        queue="active",
        event=event,
        type="pod",
    )
    assert entities == (pods if version == "1.37" else None)
    unschedulable = value(m, "scheduler_pending_pods", queue="unschedulable")
    assert unschedulable == 1  # huge
    queued = value(m, "scheduler_queued_entities", queue="unschedulable", type="pod")
    assert queued == (1 if version == "1.37" else None)
    if version == "1.37":
        # as upstream's, a queue's series appears once a pod entered it: none was gated
        assert value(m, "scheduler_queued_entities", queue="active", type="pod") == 0
        assert value(m, "scheduler_queued_entities", queue="gated", type="pod") is None


def test_family_help_follows_the_newest_version_at_or_below() -> None:
    from ksched.metrics import FAMILY

    fam = FAMILY["scheduler_preemption_goroutines_duration_seconds"]
    assert fam.help_at("1.36") and fam.help_at("1.37") is None
    assert fam.help_at("1.40") is None  # not back later
    new = FAMILY["scheduler_queued_entities"]
    assert new.help_at("1.36") is None and new.help_at("1.38") == new.help_at("1.37")


def _shadowed_methods(obj: object) -> list[str]:
    """Instance attributes hiding a method of the object's class (a wrapper put there)."""
    own = getattr(obj, "__dict__", {})
    return [k for k, v in own.items() if callable(v) and callable(getattr(type(obj), k, None))]


def test_metrics_replace_no_method_of_the_framework_or_its_plugins() -> None:
    """Every cycle sampled, preemption included: the framework times itself, so neither it
    nor any plugin has a method replaced on the live object (there used to be wrappers in
    the instances' ``__dict__``), and plugin durations are recorded all the same."""
    m = SchedulerMetrics(seed=0, plugin_sample_percent=100, process_metrics=False)
    sim = simulated(m, PREEMPTION)
    assert sim.sched.preemptions == {"urgent": ["default/big"]}
    fw = sim.sched.frameworks["ksched"]
    assert _shadowed_methods(fw) == []
    for name, inst in fw.plugins.items():
        assert _shadowed_methods(inst) == [], name
    name = "scheduler_plugin_execution_duration_seconds_count"
    assert value(
        m, name, plugin="DefaultPreemption", extension_point="PostFilter", status="Success"
    )
    assert value(m, name, plugin="DefaultBinder", extension_point="Bind", status="Success")


def test_the_runtime_methods_are_the_class_functions_after_setup() -> None:
    """As the daemon builds it (``Scheduler(metrics=...)``): every ``run_*`` and
    ``find_feasible`` the scheduler calls is the class's own function, the queue's and the
    scheduler's metrics are those handed in, nothing wrapped."""
    m = SchedulerMetrics(seed=0, process_metrics=False)
    sim = simulated(m, PREEMPTION)
    fw = sim.sched.frameworks["ksched"]
    runs = [n for n in dir(type(fw)) if n.startswith("run_")] + ["find_feasible", "sign_pod"]
    assert len(runs) > 15
    for name in runs:
        assert getattr(fw, name).__func__ is getattr(type(fw), name), name
    assert fw.recorder is m and sim.sched.metrics is m
    assert sim.sched.queue.hint_observer == m.hint_executed


def test_attach_refuses_a_scheduler_built_with_other_metrics() -> None:
    """The metrics are a constructor argument of the Scheduler; ``attach`` (the Scheduler's
    own call) sets nothing on it, so a scheduler built without them stays without."""
    m = SchedulerMetrics(seed=0, process_metrics=False)
    sim = Simulation(parse_cluster(CLUSTER, "test"), default_config(), default_registry())
    with pytest.raises(ValueError, match="other metrics"):
        m.attach(sim.sched)
    assert sim.sched.metrics is None and sim.sched.queue.hint_observer is None


def _foreign_writes(tree: ast.AST) -> list[str]:
    """Writes of an attribute of another object than ``self`` (``x.attr = ...``,
    ``setattr(x, ...)``, ``del x.attr``), and any use of ``__dict__`` or ``vars()``.
    Storing into a container (``self.children[key] = c``) writes no attribute."""
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        while targets:
            t = targets.pop()
            if isinstance(t, ast.Tuple | ast.List):
                targets.extend(t.elts)
            elif isinstance(t, ast.Starred):
                targets.append(t.value)
            elif isinstance(t, ast.Attribute) and not (
                isinstance(t.value, ast.Name) and t.value.id == "self"
            ):
                found.append(f"{node.lineno}: {ast.unparse(t)} =")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            first = node.args[0] if node.args else None
            if node.func.id in ("setattr", "delattr") and not (
                isinstance(first, ast.Name) and first.id == "self"
            ):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
            if node.func.id == "vars":
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_metrics_module_is_a_leaf_that_wraps_nothing() -> None:
    """``ksched/metrics.py`` defines families and records what it is told: it writes no
    attribute of another object (no method replaced, no ``sched.metrics = self``) and
    imports no plugin nor the scheduler or runtime it is handed to (type names aside)."""
    import ksched.metrics

    source = Path(ksched.metrics.__file__).read_text()
    tree = ast.parse(source)
    assert _foreign_writes(tree) == []
    # the scan does find such writes
    bad = "x.run_filter_plugins = f\nsetattr(fw, 'run', f)\ninst.__dict__['f'] = f\n"
    bad += "a, self.q.hint_observer = 1, g\n"
    assert sorted(w.split(":")[0] for w in _foreign_writes(ast.parse(bad))) == ["1", "2", "3", "4"]
    imported = set()
    for node in tree.body:  # module level: the imports the module runs (not TYPE_CHECKING)
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add("." * node.level + node.module)
    assert not any(".plugins" in m or m.startswith("plugins") for m in imported), imported
    assert not imported & {".framework.runtime", ".scheduler.scheduler", ".scheduler"}, imported


def test_plugin_evaluations_by_plugin_point_and_profile(
    sim_metrics: tuple[Simulation, SchedulerMetrics],
) -> None:
    _, m = sim_metrics
    name = "scheduler_plugin_evaluation_total"

    def evaluations(plugin: str, point: str) -> float | None:
        return value(m, name, plugin=plugin, extension_point=point, profile="ksched")

    # PreFilter: once per cycle (3 pods); a plugin answering Skip is not counted, but listed
    assert evaluations("NodeResourcesFit", "PreFilter") == 3
    assert evaluations("InterPodAffinity", "PreFilter") == 0
    # Filter: the nodes each cycle examined (both, every time), per plugin not skipped
    assert evaluations("NodeResourcesFit", "Filter") == 6
    assert evaluations("TaintToleration", "Filter") == 6
    assert evaluations("InterPodAffinity", "Filter") == 0
    # PreScore and Score: only "small" had more than one feasible node to score
    assert evaluations("NodeResourcesFit", "PreScore") == 1
    assert evaluations("NodeResourcesFit", "Score") == 2
    assert evaluations("ImageLocality", "Score") == 2
    assert evaluations("DefaultBinder", "Bind") is None  # only the four points


def test_plugin_evaluations_stop_at_the_plugin_that_stopped_the_point() -> None:
    from ksched.metrics import _Evaluations

    ev = _Evaluations("p", "PreFilter", ["A", "B", "C"])
    ev.add(1, set())
    ev.add(1, {"B"})  # B answered Skip
    ev.add(1, set(), "A")  # A rejected: B and C never ran
    ev.add(2, {"C"}, "B")  # C skipped, B failed
    assert dict(ev.samples()) == {"A": 5, "B": 3, "C": 2}


def test_event_handling_durations_by_upstream_event_label(
    sim_metrics: tuple[Simulation, SchedulerMetrics],
) -> None:
    _, m = sim_metrics
    count = "scheduler_event_handling_duration_seconds_count"
    assert value(m, count, event="NodeAdd") == 2
    assert value(m, count, event="UnscheduledPodAdd") == 3
    # a binding seen by the informer: out of the queue, into the cache
    assert value(m, count, event="UnscheduledPodDelete") == 2
    assert value(m, count, event="AssignedPodAdd") == 2


def test_event_handling_of_updates_and_deletions() -> None:
    m = SchedulerMetrics(seed=0, process_metrics=False)
    simulated(m, PREEMPTION)
    count = "scheduler_event_handling_duration_seconds_count"
    # the victim deleted; the preemptor's nomination (a pending pod's update)
    assert value(m, count, event="AssignedPodDelete") == 1
    assert value(m, count, event="UnscheduledPodUpdate") == 1
    # the victim's DisruptionTarget condition, then its deletionTimestamp (a graceful
    # deletion: its kubelet finishes it later): each observed for the handler and, as no
    # specific change was made, for the plain AssignedPodUpdate event it raised (upstream
    # does both)
    assert value(m, count, event="AssignedPodUpdate") == 4


def test_inflight_events_are_read_from_the_queue_at_scrape_time() -> None:
    from tests.factories import make_node, make_pod

    m = SchedulerMetrics(seed=0, process_metrics=False)
    sched = simulated(m).sched
    assert value(m, "scheduler_inflight_events", event="PodPopped") == 0
    sched.on_pod_add(make_pod("late", uid="late", schedulerName="ksched"))
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    sched.on_node_add(make_node("n3"))
    assert value(m, "scheduler_inflight_events", event="PodPopped") == 1
    assert value(m, "scheduler_inflight_events", event="NodeAdd") == 1
    sched.queue.done(qpi.pod_info)
    # gone, but still reported (at 0), as a Prometheus gauge child stays
    assert value(m, "scheduler_inflight_events", event="PodPopped") == 0
    assert value(m, "scheduler_inflight_events", event="NodeAdd") == 0


def test_queueing_hint_durations_by_plugin_event_and_hint() -> None:
    from tests.factories import make_node

    m = SchedulerMetrics(seed=0, process_metrics=False)
    sched = simulated(m).sched  # "huge" (8 CPU) waits in the pool, rejected by NodeResourcesFit
    sched.on_node_add(make_node("tiny", cpu="1"))
    name = "scheduler_queueing_hint_execution_duration_seconds_count"
    labels = {"plugin": "NodeResourcesFit", "event": "NodeAdd"}
    assert value(m, name, hint="QueueSkip", **labels) == 1
    sched.on_node_add(make_node("big", cpu="16"))
    assert value(m, name, hint="Queue", **labels) == 1


def test_pods_scheduled_after_the_unschedulable_flush_are_counted() -> None:
    m = SchedulerMetrics(seed=0, process_metrics=False)
    sched = simulated(m).sched
    q = sched.queue
    q.max_in_unschedulable = -1.0  # everything in the pool is overdue
    assert q.flush_unschedulable_leftover() == 1
    sched.clock.advance(60)  # type: ignore[attr-defined]
    qpi = q.pop_nowait()
    assert qpi is not None and qpi.flushed
    m.attempt_finished(qpi, "scheduled", 0.01)
    assert value(m, "scheduler_pod_scheduled_after_flush_total") == 1
    # a failed attempt clears the mark: the next flush decides again
    q.add_unschedulable_if_not_present(qpi)
    assert not qpi.flushed


def test_permit_wait_is_timed_only_for_pods_that_waited() -> None:
    from ksched.framework.waiting_pods import WaitingPod
    from tests.factories import make_pod

    m = SchedulerMetrics(seed=0, process_metrics=False)
    fw = simulated(m).sched.frameworks["ksched"]

    async def main() -> None:
        for name, allow in (("allowed", True), ("rejected", False)):
            pod = make_pod(name, uid=name)
            wp = WaitingPod(pod, "n1", {"Gate": 30.0}, fw.handle.clock.now())
            fw.handle.waiting_pods.add(wp)
            if allow:
                wp.allow("Gate")
            else:
                wp.reject("Gate", "no")
            await fw.wait_on_permit(pod)
        await fw.wait_on_permit(make_pod("never-waited", uid="x"))

    anyio.run(main)
    count = "scheduler_permit_wait_duration_seconds_count"
    assert value(m, count, result="Success") == 1
    assert value(m, count, result="Unschedulable") == 1


def test_batching_families_report_the_cycle_cache() -> None:
    m = SchedulerMetrics(seed=0, process_metrics=False)
    sim = _with_cycle_cache(m, NODES + _replicas(6))
    assert sim.sched.frameworks["ksched"].cycle_cache.hits == 6
    assert value(m, "scheduler_batch_attempts_total", profile="ksched", result="hint_used") == 6
    assert (
        value(m, "scheduler_get_node_hint_duration_seconds_count", hinted="hint", profile="ksched")
        == 6
    )
    assert (
        value(m, "scheduler_store_schedule_results_duration_seconds_count", profile="ksched") == 6
    )
    assert buckets(m, "scheduler_get_node_hint_duration_seconds") == pytest.approx(
        exponential_buckets(0.00001, 2, 12)
    )


def test_batching_flushes_by_reason() -> None:
    m = SchedulerMetrics(seed=0, process_metrics=False)
    # one entry only: each new signature evicts the last; 8 CPU fits on no node
    _with_cycle_cache(m, NODES + _replicas(1) + _replicas(1, "1", "b") + _replicas(1, "8", "x"), 1)
    flushed = "scheduler_batch_cache_flushed_total"
    assert value(m, flushed, profile="ksched", reason="pod_incompatible") == 1
    assert value(m, flushed, profile="ksched", reason="empty_list") == 1
    assert value(m, "scheduler_batch_attempts_total", profile="ksched", result="no_hint") == 1


# pkg/scheduler/metrics' extension point labels, and the queue's "PreEnqueue"
UPSTREAM_POINTS = {
    "PreEnqueue", "PreFilter", "Filter", "PreFilterExtensionAddPod",
    "PreFilterExtensionRemovePod", "PostFilter", "PreScore", "Score", "ScoreExtensionNormalize",
    "PreBind", "PreBindPreFlight", "Bind", "PostBind", "Reserve", "Unreserve", "Permit", "Sign",
}  # fmt: skip
# fwk.Code's String()
UPSTREAM_CODES = {
    "Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending",
}  # fmt: skip


def _plugin_series(m: SchedulerMetrics) -> set[tuple[str, str, str]]:
    return {
        (s.labels["plugin"], s.labels["extension_point"], s.labels["status"])
        for fam in m.registry.collect()
        if fam.name == "scheduler_plugin_execution_duration_seconds"
        for s in fam.samples
        if s.name.endswith("_count")
    }


@pytest.mark.parametrize("cached", [False, True])
def test_plugin_execution_series_are_labelled_as_upstreams(cached: bool) -> None:
    """Every cycle sampled: each plugin is timed at every point upstream times it (the
    queue's PreEnqueue, the signature's Sign and PreBindPreFlight included), under
    upstream's extension point labels and status codes, a rejection under its own code.
    With the cycle cache answering, the plugin calls it makes for the cycle (refreshing
    the rows the last binding changed) are timed too."""
    m = SchedulerMetrics(seed=0, plugin_sample_percent=100, process_metrics=False)
    cf = parse_cluster(CLUSTER, "test", validate=False)
    sim = Simulation(cf, default_config(), default_registry(), seed=0, metrics=m)
    fw = sim.sched.frameworks["ksched"]
    if not cached:
        fw.cycle_cache = None
    anyio.run(sim.run)
    series = _plugin_series(m)
    assert {point for _, point, _ in series} <= UPSTREAM_POINTS
    assert {status for _, _, status in series} <= UPSTREAM_CODES
    timed = {(plugin, point) for plugin, point, _ in series}
    every_plugin_of = {
        "PreEnqueue": fw.pre_enqueue_plugins,
        "PreFilter": fw.pre_filter_plugins,
        "PreScore": fw.pre_score_plugins,
        "Reserve": fw.reserve_plugins,
        "PreBindPreFlight": fw.pre_bind_plugins,
        "PreBind": fw.pre_bind_plugins,
        "PostFilter": fw.post_filter_plugins,
    }
    if cached:
        signers = {*fw.pre_filter_plugins, *fw.filter_plugins, *fw.score_plugins}
        every_plugin_of["Sign"] = [p for p in signers if hasattr(p, "sign_pod")]
    for point, plugins in every_plugin_of.items():
        assert plugins, point
        for p in plugins:
            assert (p.name, point) in timed, (p.name, point)
    assert ("DefaultBinder", "Bind", "Success") in series
    # huge fits nowhere: the plugin that rejects it is timed with upstream's code
    assert ("NodeResourcesFit", "Filter", "Unschedulable") in series
    for point, plugins in (("Filter", fw.filter_plugins), ("Score", fw.score_plugins)):
        names = {p.name for p in plugins}
        ran = {plugin for plugin, at in timed if at == point}
        assert ran and ran <= names, point


def test_frameworks_built_with_the_metrics_record_from_the_start() -> None:
    """Handed over as the frameworks are built (as the daemon's Scheduler does), the metrics
    list every plugin's evaluations at 0 and take the first PreEnqueue."""
    from ksched.profile import build_frameworks
    from tests.factories import make_pod

    m = SchedulerMetrics(seed=0, process_metrics=False)
    fw = build_frameworks(default_config(), default_registry(), metrics=m)["ksched"]
    assert fw.recorder is m
    evaluations = "scheduler_plugin_evaluation_total"
    for p in fw.filter_plugins:
        labels = {"plugin": p.name, "extension_point": "Filter", "profile": "ksched"}
        assert m.registry.get_sample_value(evaluations, labels) == 0
    assert fw.run_pre_enqueue(make_pod("p")).is_success()
    name = "scheduler_framework_extension_point_duration_seconds_count"
    assert value(m, name, extension_point="PreEnqueue", status="Success", profile="ksched") == 1
