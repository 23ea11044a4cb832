"""PodNameLength, ShortNodeName, Lucky and Sample: args, verdicts, scores, logs."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest
import structlog
from ksched import (
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PluginArgsError,
    PodInfo,
    Snapshot,
    extension_points_of,
)
from ksched.testing import make_node, pod_info, run_filter, run_score, schedule
from ksched.testing import make_pod as pod_manifest
from ksched.testing import node_info as info_of

from ksched_contrib.lucky import ERR_REASON, Lucky
from ksched_contrib.podnamelength import PodNameLength
from ksched_contrib.sample import Sample
from ksched_contrib.shortnodename import ShortNodeName


def make_pod(name: str) -> PodInfo:
    return pod_info(pod_manifest(name))


def node_info(name: str) -> NodeInfo:
    return info_of(make_node(name))


# ---- args --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "data", "expected"),
    [
        (PodNameLength, {}, PodNameLength.Args(4)),
        (PodNameLength, {"maxNameLength": 0}, PodNameLength.Args(0)),
        (Lucky, {}, Lucky.Args(None)),
        (Lucky, {"seed": None}, Lucky.Args(None)),
        (Lucky, {"seed": -3}, Lucky.Args(-3)),
        (Sample, {}, Sample.Args("", 0, "")),
        (
            Sample,
            {"favorite_color": "#326CE5", "favorite_number": 7, "thanks_to": "thockin"},
            Sample.Args("#326CE5", 7, "thockin"),
        ),
    ],
)
def test_args_parse(cls: Any, data: dict[str, Any], expected: Any) -> None:
    assert cls.Args.parse(cls.name, data) == expected


@pytest.mark.parametrize(
    ("cls", "data", "path", "message"),
    [
        (PodNameLength, {"maxNameLength": -1}, "maxNameLength", "must be at least 0, got -1"),
        (PodNameLength, {"maxNameLength": 4.5}, "maxNameLength", "must be an integer, got 4.5"),
        (PodNameLength, {"maxNameLength": False}, "maxNameLength", "must be an integer, got False"),
        (
            PodNameLength,
            {"max_name_length": 3},
            "max_name_length",
            "unknown field (known fields: maxNameLength)",
        ),
        (Lucky, {"seed": "42"}, "seed", "must be an integer or null, got '42'"),
        (Sample, {"favorite_color": 3}, "favorite_color", "must be a string, got 3"),
        (
            Sample,
            {"favorite_number": "seven"},
            "favorite_number",
            "must be an integer, got 'seven'",
        ),
        (Sample, {"thanks_to": ["a"]}, "thanks_to", "must be a string, got ['a']"),
        (
            Sample,
            {"favoriteColor": "red"},
            "favoriteColor",
            "unknown field (known fields: favorite_color, favorite_number, thanks_to)",
        ),
        (ShortNodeName, None, "", ""),
    ],
)
def test_args_errors_name_the_field(
    cls: Any, data: dict[str, Any] | None, path: str, message: str
) -> None:
    if data is None:
        assert getattr(cls, "Args", None) is None  # no args at all
        return
    with pytest.raises(PluginArgsError) as ei:
        cls.Args.parse(cls.name, data)
    assert (ei.value.plugin, ei.value.path) == (cls.name, path)
    assert str(ei.value) == f"plugin {cls.name}: args.{path}: {message}"


def test_plugins_accept_parsed_args_a_dict_or_nothing() -> None:
    assert PodNameLength().max_name_length == 4
    assert PodNameLength({"maxNameLength": 9}).max_name_length == 9
    assert PodNameLength(PodNameLength.Args(2)).max_name_length == 2
    with pytest.raises(PluginArgsError, match=r"args: expected a mapping, got list"):
        PodNameLength([1])


def test_extension_points() -> None:
    assert extension_points_of(PodNameLength) == ["filter"]
    assert extension_points_of(ShortNodeName) == ["score"]
    assert extension_points_of(Lucky) == ["filter", "score"]
    assert extension_points_of(Sample) == ["preFilter", "filter", "preBind"]


# ---- PodNameLength -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fits"), [("pod1", True), ("p", True), ("pod12", False), ("test-pod", False)]
)
def test_pod_name_length_default_limit(name: str, fits: bool) -> None:
    plugin = PodNameLength()
    st = plugin.filter(CycleState(), make_pod(name), node_info("n1"))
    if fits:
        assert st is None
    else:
        assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert st.message() == f"pod name length {len(name)} exceeds 4"


def test_pod_name_length_batch_agrees_with_filter() -> None:
    snap = Snapshot([node_info("a"), node_info("b"), node_info("c")])
    plugin = PodNameLength({"maxNameLength": 5})
    for name in ("abcde", "abcdef"):
        mask = plugin.filter_batch(CycleState(), make_pod(name), snap)
        assert mask.dtype == np.bool_ and len(mask) == 3
        assert bool(mask.all()) == (
            plugin.filter(CycleState(), make_pod(name), node_info("a")) is None
        )
        assert bool(mask.any()) == bool(mask.all())
    assert plugin.events_to_register() == []


def test_pod_name_length_in_the_framework() -> None:
    nodes = [make_node("a"), make_node("b")]
    assert run_filter(PodNameLength, pod_manifest("pod1"), nodes) == {"a": None, "b": None}
    out = run_filter(PodNameLength({"maxNameLength": 3}), pod_manifest("pod1"), nodes)
    assert {n: (st.code, st.message()) for n, st in out.items() if st is not None} == {
        n: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod name length 4 exceeds 3") for n in "ab"
    }
    assert schedule([PodNameLength], pod_manifest("test-pod"), nodes) == (
        None,
        "0/2 nodes are available: 2 pod name length 8 exceeds 4.",
    )


# ---- ShortNodeName -----------------------------------------------------------------------


def test_short_node_name_raw_and_normalized() -> None:
    plugin = ShortNodeName()
    names = ["a", "node-1", "a-very-long-node-name-indeed"]
    raw = np.array(
        [plugin.score(CycleState(), make_pod("p"), node_info(n)) for n in names], dtype=np.int64
    )
    assert raw.tolist() == [19, 14, 0]
    assert plugin.normalize_score(CycleState(), make_pod("p"), raw) is None
    assert raw.tolist() == [100, 73, 0]


def test_short_node_name_in_the_framework() -> None:
    nodes = [make_node(n) for n in ("a", "node-1", "a-very-long-node-name-indeed")]
    assert run_score(ShortNodeName, pod_manifest("p"), nodes) == {
        "a": 100,
        "node-1": 73,
        "a-very-long-node-name-indeed": 0,
    }
    assert schedule([ShortNodeName], pod_manifest("p"), nodes).node == "a"


def test_short_node_name_normalize_edge_cases() -> None:
    plugin = ShortNodeName()
    zeros = np.zeros(3, dtype=np.int64)
    plugin.normalize_score(CycleState(), make_pod("p"), zeros)
    assert zeros.tolist() == [0, 0, 0]
    empty = np.zeros(0, dtype=np.int64)
    assert plugin.normalize_score(CycleState(), make_pod("p"), empty) is None


# ---- Lucky -------------------------------------------------------------------------------


def verdicts(plugin: Lucky, state: CycleState, names: list[str]) -> list[bool]:
    return [plugin.filter(state, make_pod("p"), node_info(n)) is None for n in names]


def test_lucky_seeded_draws_repeat_and_are_fair() -> None:
    names = [f"n{i}" for i in range(400)]
    a = verdicts(Lucky({"seed": 5}), CycleState(), names)
    assert verdicts(Lucky({"seed": 5}), CycleState(), names) == a
    assert verdicts(Lucky({"seed": 6}), CycleState(), names) != a
    assert 150 < sum(a) < 250  # about half pass


def test_lucky_draws_once_per_node_per_attempt() -> None:
    plugin = Lucky({"seed": 1})
    state = CycleState()
    names = [f"n{i}" for i in range(20)]
    first = verdicts(plugin, state, names)
    assert verdicts(plugin, state, names) == first  # diagnosis re-runs Filter
    pod = make_pod("p")
    scores = [plugin.score(state, pod, node_info(n)) for n in names]
    assert scores == [plugin.score(state, pod, node_info(n)) for n in names]
    assert all(0 <= s <= 100 for s in scores) and len(set(scores)) > 5
    # A new attempt flips new coins.
    assert verdicts(plugin, CycleState(), names) != first
    st = plugin.filter(state, pod, node_info(names[first.index(False)]))
    assert st is not None and st.code == Code.UNSCHEDULABLE and st.message() == ERR_REASON


# ---- Sample ------------------------------------------------------------------------------


def test_sample_logs_each_point_with_structured_fields() -> None:
    plugin = Sample({"favorite_color": "blue", "favorite_number": 3, "thanks_to": "you"}, Handle())
    pod, state = make_pod("web"), CycleState()
    with structlog.testing.capture_logs() as logs:
        assert plugin.pre_filter(state, pod, Snapshot([node_info("n1")])) == (None, None)
        assert plugin.filter(state, pod, node_info("n1")) is None
        assert anyio.run(plugin.pre_bind, state, pod, "n1") is None
    assert [(e["event"], e["extension_point"], e["node"]) for e in logs] == [
        ("Sample PreFilter", "PreFilter", None),
        ("Sample Filter", "Filter", "n1"),
        ("Sample PreBind", "PreBind", "n1"),
    ]
    for e in logs:
        assert e["log_level"] == "info"
        assert (e["pod"], e["plugin"], e["profile"]) == ("default/web", "Sample", None)
        assert (e["favorite_color"], e["favorite_number"], e["thanks_to"]) == ("blue", 3, "you")
    assert plugin.events_to_register() == []
