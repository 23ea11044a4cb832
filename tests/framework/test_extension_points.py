"""One extension-point table (``framework.interface.EXTENSION_POINTS``): config's plugin
sets, the runtime's plugin lists, metrics' labels and plugin discovery all follow it."""

from __future__ import annotations

import dataclasses

from ksched import default_registry, extension_points_of
from ksched.config import PLUGIN_SETS, WORKLOAD_PLUGIN_SETS, Plugins, load_config_data
from ksched.framework import runtime
from ksched.framework.interface import _BASE_METHODS, EXTENSION_POINTS, POINTS
from ksched.profile import build_frameworks

KEYS = [
    "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
    "reserve", "permit", "preBind", "bind", "postBind",
]  # fmt: skip
# workload-aware scheduling's (v1 ``Plugins`` fields after multiPoint), then PlacementFeasible
WORKLOAD_KEYS = ["placementGenerate", "placementScore", "podGroupPostFilter", "placementFeasible"]


def test_the_table_is_upstreams_points_in_framework_order() -> None:
    assert [p.key for p in EXTENSION_POINTS] == KEYS + WORKLOAD_KEYS
    assert list(POINTS) == KEYS + WORKLOAD_KEYS
    for p in EXTENSION_POINTS:
        assert p.label == p.key[0].upper() + p.key[1:]
        assert all(m in _BASE_METHODS or m == "sort_key" for m in p.methods), p
    assert [(p.since, p.configured) for p in EXTENSION_POINTS[len(KEYS) :]] == [
        ("1.36", True),
        ("1.36", True),
        ("1.37", True),
        ("1.37", False),
    ]


def test_config_plugin_sets_follow_the_table_then_multi_point() -> None:
    base = [p for p in EXTENSION_POINTS if not p.since]
    assert PLUGIN_SETS[:-1] == tuple((p.attr, p.key) for p in base)
    assert PLUGIN_SETS[-1] == ("multi_point", "multiPoint")
    # then workload-aware scheduling's sets: the table's configured points with a version
    assert [(w.attr, w.key, w.since) for w in WORKLOAD_PLUGIN_SETS] == [
        (p.attr, p.key, p.since) for p in EXTENSION_POINTS if p.since and p.configured
    ]
    assert [w.label for w in WORKLOAD_PLUGIN_SETS] == [
        "PlacementGeneratePlugin",
        "PlacementScorePlugin",
        "PodGroupPostFilterPlugin",
    ]
    assert [f.name for f in dataclasses.fields(Plugins)] == [attr for attr, _ in PLUGIN_SETS] + [
        w.attr for w in WORKLOAD_PLUGIN_SETS
    ]


def test_the_runtime_keeps_one_plugin_list_per_point() -> None:
    reg = default_registry(entry_points=False)
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "<test>", set(reg.names()))
    fw = build_frameworks(cfg, reg)["ksched"]
    for p in EXTENSION_POINTS:
        plugins = (
            [fw.queue_sort_plugin] if p.key == "queueSort" else getattr(fw, f"{p.attr}_plugins")
        )
        assert all(p.key in extension_points_of(pl) for pl in plugins), p.key


def test_metrics_label_points_from_the_table() -> None:
    """The runtime records each point under the table's label (and upstream's labels for
    the parts of a point: Unreserve, ScoreExtensionNormalize, PreFilterExtension*,
    PreBindPreFlight, Sign and PlacementScoreExtensionNormalize)."""
    parts = {
        "Unreserve",
        "ScoreExtensionNormalize",
        "PreBindPreFlight",
        "Sign",
        "PlacementScoreExtensionNormalize",
    }
    used = {
        v for k, v in vars(runtime).items() if k.isupper() and k.startswith("_") and type(v) is str
    }
    table = {p.label for p in EXTENSION_POINTS}
    assert table - {"QueueSort"} <= used
    assert used - table == parts


class _Everything:
    """A plugin with one method of every point (queueSort through ``sort_key``)."""

    name = "Everything"


for _p in EXTENSION_POINTS:
    setattr(_Everything, _p.methods[-1], lambda self, *a: None)


def test_discovery_names_every_point_a_plugin_implements_in_table_order() -> None:
    assert extension_points_of(_Everything) == KEYS + WORKLOAD_KEYS
