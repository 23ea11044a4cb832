"""ksched.testing's plugin harness: run_filter, run_score and schedule against verdicts,
scores and messages known from kube-scheduler, for built-in (vectorized) plugins and a
third-party per-node one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksched import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    FilterPlugin,
    IntArray,
    NodeInfo,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    ScorePlugin,
    Snapshot,
    Status,
)
from ksched.config import load_config_data
from ksched.plugins import default_registry
from ksched.plugins.noderesources import Fit as NodeResourcesFit
from ksched.plugins.tainttoleration import TaintToleration
from ksched.sim import parse_cluster, simulate
from ksched.testing import (
    ScheduleResult,
    make_node,
    make_pod,
    make_service,
    node_info,
    pod_info,
    run_filter,
    run_score,
    schedule,
)

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
ZONE = "topology.kubernetes.io/zone"


def verdicts(out: dict[str, Status | None]) -> dict[str, Any]:
    return {n: None if st is None else (st.code, st.message()) for n, st in out.items()}


def taint(key: str, effect: str, value: str = "") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


# ---- a third-party plugin with per-node methods only -------------------------------------


class Rack(PreFilterPlugin, FilterPlugin, ScorePlugin):
    """Pods labelled ``rack: X`` fit only nodes labelled so; PreFilter narrows to nodes
    listed in the pod's ``only`` label; nodes score their ``rank`` label, normalized."""

    name = "Rack"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        labels = pod.pod.metadata.labels
        if labels.get("reject") == "yes":
            return None, Status(UU, "rejected at PreFilter")
        only = labels.get("only")
        return (PreFilterResult(set(only.split("."))) if only else None), None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        want = pod.pod.metadata.labels.get("rack")
        assert node.node is not None
        if want == "boom":
            raise RuntimeError("kaput")
        if want and node.node.metadata.labels.get("rack") != want:
            return Status(U, f"node is not in rack {want}")
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        assert node.node is not None
        return int(node.node.metadata.labels.get("rank", "0"))

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        top = int(scores.max()) if len(scores) else 0
        if top:
            scores[:] = scores * MAX_NODE_SCORE // top
        return None


RACKS = [
    make_node("r1-a", labels={"rack": "r1", "rank": "2"}),
    make_node("r1-b", labels={"rack": "r1", "rank": "8"}),
    make_node("r2-a", labels={"rack": "r2", "rank": "4"}),
]


# ---- run_filter --------------------------------------------------------------------------


def test_run_filter_node_resources_fit_verdicts() -> None:
    nodes = [
        make_node("small", cpu="1"),
        make_node("busy", cpu="4"),
        make_node("full", cpu="8", pods="1"),
        make_node("free", cpu="8"),
    ]
    placed = [
        make_pod("hog", cpu="3", node_name="busy"),
        make_pod("one", cpu="100m", node_name="full"),
    ]
    pod = make_pod("p", requests={"cpu": "2", "memory": "1Gi"})
    for plugin in ("NodeResourcesFit", NodeResourcesFit, NodeResourcesFit()):
        assert verdicts(run_filter(plugin, pod, nodes, pods=placed)) == {
            "small": (UU, "Insufficient cpu"),  # more than the node has at all
            "busy": (U, "Insufficient cpu"),  # freed by preemption, maybe
            "full": (U, "Too many pods"),
            "free": None,
        }


def test_run_filter_taint_toleration_verdicts() -> None:
    nodes = [
        make_node("dedicated", taints=[taint("dedicated", "NoSchedule", "gpu")]),
        make_node("draining", taints=[taint("drain", "NoExecute")]),
        make_node("soft", taints=[taint("spot", "PreferNoSchedule")]),
        make_node("plain"),
    ]
    tolerating = make_pod("t", tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert verdicts(run_filter(TaintToleration, tolerating, nodes)) == {
        "dedicated": None,
        "draining": (UU, "node(s) had untolerated taint(s)"),
        "soft": None,
        "plain": None,
    }
    out = run_filter("TaintToleration", make_pod("p"), nodes)
    st = out["dedicated"]
    assert st is not None and st.message() == "node(s) had untolerated taint(s)"
    assert st.plugin == "TaintToleration"


def test_run_filter_vectorized_verdicts_equal_the_per_node_form() -> None:
    """The harness runs filter_batch/filter_statuses; the per-node filter agrees."""
    nodes = [
        make_node("a", cpu="1", taints=[taint("x", "NoSchedule")]),
        make_node("b", cpu="2", memory="1Gi"),
        make_node("c", allocatable={"example.com/gpu": "1"}),
    ]
    pod = make_pod("p", requests={"cpu": "1500m", "example.com/gpu": "1"})
    for plugin in (NodeResourcesFit(), TaintToleration()):
        out = run_filter(plugin, pod, nodes)
        state, pi = CycleState(), pod_info(pod)
        assert hasattr(plugin, "filter_batch")
        if isinstance(plugin, PreFilterPlugin):
            plugin.pre_filter(state, pi, Snapshot([node_info(n) for n in nodes]))
        for n in nodes:
            single = plugin.filter(state, pi, node_info(n))
            got = out[n["metadata"]["name"]]
            assert verdicts({"n": got}) == verdicts({"n": single})
    assert verdicts(run_filter(NodeResourcesFit(), pod, nodes))["a"] == (
        UU,
        "Insufficient cpu, Insufficient example.com/gpu",
    )


def test_run_filter_third_party_per_node_plugin() -> None:
    out = run_filter(Rack(), make_pod("p", labels={"rack": "r1"}), RACKS)
    assert verdicts(out) == {"r1-a": None, "r1-b": None, "r2-a": (U, "node is not in rack r1")}
    assert out["r2-a"] is not None and out["r2-a"].plugin == "Rack"


def test_run_filter_prefilter_narrowing_and_rejection() -> None:
    narrowed = run_filter(Rack, make_pod("p", labels={"only": "r1-b.r2-a"}), RACKS)
    assert verdicts(narrowed) == {
        "r1-a": (UU, "node(s) didn't satisfy plugin(s) [Rack]"),
        "r1-b": None,
        "r2-a": None,
    }
    rejected = run_filter(Rack, make_pod("p", labels={"reject": "yes"}), RACKS)
    assert verdicts(rejected) == dict.fromkeys(
        ["r1-a", "r1-b", "r2-a"], (UU, "rejected at PreFilter")
    )


def test_run_filter_prefilter_only_plugin_and_node_name() -> None:
    class OnlyA(PreFilterPlugin):
        name = "OnlyA"

        def pre_filter(
            self, state: CycleState, pod: PodInfo, snap: Snapshot
        ) -> tuple[PreFilterResult | None, Status | None]:
            return PreFilterResult({"r1-a"}), None

    assert verdicts(run_filter(OnlyA(), make_pod("p"), RACKS)) == {
        "r1-a": None,
        "r1-b": (UU, "node(s) didn't satisfy plugin(s) [OnlyA]"),
        "r2-a": (UU, "node(s) didn't satisfy plugin(s) [OnlyA]"),
    }
    # The pod under test is not part of the cluster, so its nodeName is NodeName's to judge.
    out = verdicts(run_filter("NodeName", make_pod("p", node_name="r1-b"), RACKS))
    assert out == {
        "r1-a": (UU, "node(s) didn't match the requested node name"),
        "r1-b": None,
        "r2-a": (UU, "node(s) didn't match the requested node name"),
    }
    with pytest.raises(ValueError, match="the scheduler never sees such a pod"):
        schedule(CONFIG, make_pod("p", node_name="r1-b"), RACKS)


def test_run_filter_plugin_exception_is_an_error_status_on_every_node() -> None:
    out = run_filter(Rack(), make_pod("p", labels={"rack": "boom"}), RACKS)
    st = out["r1-a"]
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'running Filter plugin "Rack": RuntimeError: kaput'
    assert all(v is st for v in out.values())


def test_run_filter_refuses_a_plugin_without_filter() -> None:
    with pytest.raises(
        ValueError, match="plugin ImageLocality is not a preFilter or filter plugin"
    ):
        run_filter("ImageLocality", make_pod("p"), RACKS)
    with pytest.raises(ValueError, match='unknown plugin "Nope"'):
        run_filter("Nope", make_pod("p"), RACKS)


# ---- run_score ---------------------------------------------------------------------------


def test_run_score_node_resources_fit_least_allocated() -> None:
    # LeastAllocated: mean over cpu and memory of (free - requested) * 100 / allocatable.
    nodes = [
        make_node("a", cpu="4", memory="16Gi"),
        make_node("b", cpu="8", memory="16Gi"),
        make_node("c", cpu="4", memory="8Gi"),
    ]
    pod = make_pod("p", requests={"cpu": "1", "memory": "4Gi"})
    assert run_score(NodeResourcesFit, pod, nodes) == {"a": 75, "b": 81, "c": 62}
    # A bound pod counts with its non-zero requests: 4 cpu, and memory's default 200Mi.
    busy = [make_pod("hog", cpu="4", node_name="b")]
    gi = 1024**3
    memory = (16 * gi - 4 * gi - 200 * 1024**2) * 100 // (16 * gi)
    assert memory == 73
    assert run_score("NodeResourcesFit", pod, nodes, pods=busy)["b"] == (37 + memory) // 2


def test_run_score_taint_toleration_normalized_in_reverse() -> None:
    soft = taint("spot", "PreferNoSchedule")
    nodes = [
        make_node("clean"),
        make_node("one", taints=[soft]),
        make_node("two", taints=[soft, taint("old", "PreferNoSchedule")]),
    ]
    assert run_score(TaintToleration(), make_pod("p"), nodes) == {"clean": 100, "one": 50, "two": 0}
    tolerant = make_pod("t", tolerations=[{"key": "spot", "operator": "Exists"}])
    assert run_score(TaintToleration, tolerant, nodes) == {"clean": 100, "one": 100, "two": 0}


def test_run_score_third_party_plugin_normalized_before_weight() -> None:
    assert run_score(Rack(), make_pod("p"), RACKS) == {"r1-a": 25, "r1-b": 100, "r2-a": 50}


def test_run_score_batch_plugin_agrees_with_its_per_node_form() -> None:
    class BatchRack(Rack):
        def score_batch(
            self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: IntArray
        ) -> IntArray:
            ids, vocab = snap.label_column("rank")
            table = np.array([int(v) for v in sorted(vocab, key=vocab.__getitem__)] + [0])
            out: IntArray = table[ids[rows]].astype(np.int64)
            return out

    assert run_score(BatchRack(), make_pod("p"), RACKS) == run_score(Rack(), make_pod("p"), RACKS)


def test_run_score_refuses_a_plugin_without_score() -> None:
    with pytest.raises(
        ValueError, match="plugin NodeUnschedulable is not a preScore or score plugin"
    ):
        run_score("NodeUnschedulable", make_pod("p"), RACKS)


# ---- schedule ----------------------------------------------------------------------------

CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "ksched"}],
}


def test_schedule_picks_the_best_node_of_the_plugins() -> None:
    pod = make_pod("p", labels={"rack": "r1"})
    assert schedule([Rack()], pod, RACKS) == ScheduleResult("r1-b", "")
    assert schedule([Rack(), "NodeResourcesFit"], make_pod("q"), RACKS).node == "r1-b"
    node, message = schedule([Rack], make_pod("x", labels={"rack": "r9"}), RACKS)
    assert node is None
    assert message == "0/3 nodes are available: 3 node is not in rack r9."


def fit_error_cluster() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    nodes = [
        make_node("tainted", taints=[taint("dedicated", "NoSchedule", "db")]),
        make_node("cordoned", unschedulable=True),
        make_node("small", cpu="1"),
        make_node("busy", cpu="4"),
    ]
    placed = [make_pod("hog", cpu="3", node_name="busy", priority=1000)]
    pod = make_pod("big", cpu="2", scheduler_name="ksched")
    return nodes, placed, pod


def test_schedule_fit_error_text_is_the_schedulers() -> None:
    nodes, placed, pod = fit_error_cluster()
    node, message = schedule(CONFIG, pod, nodes, pods=placed)
    expected = (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable, 2 Insufficient cpu. "
        "preemption: 0/4 nodes are "
        "available: 1 No preemption victims found for incoming pod, 3 Preemption is not "
        "helpful for scheduling."
    )
    assert (node, message) == (None, expected)
    # ksched simulate, the whole scheduler offline, says the same.
    cluster = parse_cluster(json.dumps([*nodes, *placed, pod]), "test")
    cfg, _ = load_config_data(CONFIG)
    results = {r.name: r for r in simulate(cluster, cfg, default_registry(entry_points=False))}
    assert results["big"].message == expected
    # A loaded configuration and a pod naming no profile give the same.
    assert schedule(cfg, make_pod("big", cpu="2"), nodes, pods=placed).message == expected


def test_schedule_with_default_plugins_spreads_and_reads_objects() -> None:
    nodes = [make_node(f"n-{z}", labels={ZONE: z}) for z in ("a", "b")]
    peers = [make_pod("web-1", labels={"app": "web"}, node_name="n-a")]
    svc = make_service("web", {"app": "web"})
    pod = make_pod("web-2", labels={"app": "web"})
    # Default spreading (PodTopologySpread over the Service's pods) prefers the other zone.
    assert schedule(CONFIG, pod, nodes, pods=peers, objects=[svc]).node == "n-b"


def test_schedule_gated_pod_reports_its_gates() -> None:
    pod = make_pod("g", schedulingGates=[{"name": "example.com/wait"}])
    res = schedule(CONFIG, pod, RACKS)
    assert res == ScheduleResult(None, "waiting for scheduling gates: [example.com/wait]")


# ---- the guide's example ------------------------------------------------------------------


def test_the_guides_plugin_and_its_test_run_in_under_40_lines() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text()
    found = re.search(r"<!-- example: a plugin and its test -->\s*```python\n(.*?)```", guide, re.S)
    assert found is not None
    code = found.group(1)
    assert len(code.splitlines()) < 40
    imports = [line for line in code.splitlines() if line.startswith(("from ", "import "))]
    assert [line.split()[1] for line in imports] == ["ksched", "ksched.testing"]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/plugins.md", "exec"), namespace)
    namespace["test_same_team"]()  # its assertions hold


class _GangLike:
    """A Permit plugin that also judges pod groups (PlacementFeasible, no config key)."""

    name = "GangLike"

    def permit(self, state: Any, pod: Any, node_name: str) -> tuple[Status | None, float]:
        return None, 0.0

    def placement_feasible(self, state: Any, group: Any, progress: Any) -> Status | None:
        return None


def test_schedule_enables_a_plugin_at_its_configurable_points_only() -> None:
    """PlacementFeasible is no plugin set: the profile lists the plugin at Permit."""
    assert schedule([_GangLike(), Rack()], make_pod("p"), RACKS).node is not None
