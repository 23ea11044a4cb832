"""NodeResourcesFit's PlacementScore: upstream's TestScorePlacement_Resources (fit_test.go)
and what it implies: MostAllocated whatever the configured strategy's type, the
placement's nodes as one node, only with TopologyAwareWorkloadScheduling."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.api.objects import Node
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import PlacementScorePlugin, extension_points_of
from ksched.framework.podgroup import Placement, PodGroupAssignments, ProposedAssignment
from ksched.framework.status import Code, StatusError
from ksched.framework.types import PodInfo
from ksched.plugins.noderesources import Fit
from tests.factories import make_node, make_node_info, make_pod
from tests.plugins.podgroups import group_info

WORKLOAD = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
GPU = "nvidia.com/gpu"


def gates(*flags: str) -> Handle:
    return Handle(features=set_feature_gates(list(flags), ["1.37"]))


def fit(resources: list[dict[str, Any]], type_: str = "LeastAllocated", *flags: str) -> Fit:
    args = {"scoringStrategy": {"type": type_, "resources": resources}}
    if type_ == "RequestedToCapacityRatio":
        shape = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
        args["scoringStrategy"]["requestedToCapacityRatio"] = {"shape": shape}
    return Fit(args, gates(*(flags or (WORKLOAD,))))


def node(name: str, gpu: str | None = None) -> Node:
    return make_node(name, cpu="5000m", memory="5000", allocatable={GPU: gpu} if gpu else None)


def pod(cpu: str, memory: str, gpu: str | None = None, **kw: Any) -> PodInfo:
    requests = {"cpu": cpu, "memory": memory, **({GPU: gpu} if gpu is not None else {})}
    return make_pod(requests=requests, **kw)


def score(
    plugin: Fit,
    nodes: list[Node],
    group: list[tuple[PodInfo, str]],
    existing: dict[str, list[PodInfo]] | None = None,
) -> int:
    infos = [make_node_info(n, (existing or {}).get(n.metadata.name, [])) for n in nodes]
    assignments = PodGroupAssignments(
        Placement("p", infos), [ProposedAssignment(p, n, CycleState()) for p, n in group]
    )
    return plugin.score_placement(CycleState(), group_info(), assignments)


TWO = [node("node1"), node("node2")]


def test_score_is_the_total_requests_over_the_total_capacity() -> None:
    # CPU (1000m + 2000m) / 10000m = 0.3, memory (0 + 2000) / 10000 = 0.2: 100 * 0.5 / 2
    group = [(pod("1000m", "0"), "node1"), (pod("2000m", "2000"), "node2")]
    assert score(fit(CPU_MEM), TWO, group) == 25


def test_score_uses_the_resources_weights() -> None:
    group = [(pod("1000m", "0"), "node1"), (pod("2000m", "2000"), "node2")]
    weighted = [{"name": "cpu", "weight": 4}, {"name": "memory", "weight": 1}]
    assert score(fit(weighted), TWO, group) == 28  # 100 * (4 * 0.3 + 0.2) / 5


def test_several_pods_on_one_node_count_the_same() -> None:
    group = [(pod("1000m", "0"), "node1"), (pod("2000m", "2000"), "node1")]
    weighted = [{"name": "cpu", "weight": 4}, {"name": "memory", "weight": 1}]
    assert score(fit(weighted), TWO, group) == 28


def test_pods_already_on_the_nodes_count() -> None:
    group = [(pod("1000m", "0"), "node1"), (pod("2000m", "2000"), "node2")]
    existing = {"node1": [pod("1000m", "0", node_name="node1")]}
    assert score(fit(CPU_MEM), TWO, group, existing) == 30  # cpu 0.4, memory 0.2


def test_an_extended_resource_counts_when_some_member_requests_it() -> None:
    nodes = [node("node1", gpu="5"), node("node2", gpu="5")]
    group = [(pod("1000m", "0", "0"), "node1"), (pod("1000m", "2000", "1"), "node2")]
    existing = {"node1": [pod("1000m", "0", "0", node_name="node1")]}
    resources = [*CPU_MEM, {"name": GPU, "weight": 1}]
    # cpu 0.3, memory 0.2, gpu (0 + 1 + 0) / 10 = 0.1
    assert score(fit(resources), nodes, group, existing) == 20


def test_an_extended_resource_no_member_requests_is_left_out() -> None:
    nodes = [node("node1", gpu="5"), node("node2", gpu="5")]
    group = [(pod("1000m", "0", "0"), "node1"), (pod("1000m", "2000", "0"), "node2")]
    existing = {"node1": [pod("1000m", "0", "1", node_name="node1")]}
    resources = [*CPU_MEM, {"name": GPU, "weight": 1}]
    assert score(fit(resources), nodes, group, existing) == 25  # gpu not counted


def test_a_node_without_the_extended_resource_adds_no_capacity() -> None:
    nodes = [node("node1", gpu="4"), node("node2")]
    group = [(pod("0", "0", "1"), "node1")]
    gpu_only = [{"name": GPU, "weight": 1}]
    assert score(fit(gpu_only), nodes, group) == 25  # 1 of 4


@pytest.mark.parametrize("type_", ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
def test_always_most_allocated_whatever_the_strategy_type(type_: str) -> None:
    group = [(pod("1000m", "0"), "node1"), (pod("2000m", "2000"), "node2")]
    assert score(fit(CPU_MEM, type_), TWO, group) == 25


def test_members_without_requests_count_the_non_zero_defaults() -> None:
    # 100m of 10000m cpu (1), 200Mi capped at the 10000 bytes of memory (100): (1 + 100) / 2
    group = [(make_pod(), "node1")]
    assert score(fit(CPU_MEM), TWO, group) == 50


def test_a_placement_the_group_overfills_scores_full() -> None:
    group = [(pod("20", "20000"), "node1")]
    assert score(fit(CPU_MEM), TWO, group) == 100


def test_no_assignments_scores_what_the_nodes_hold() -> None:
    existing = {"node1": [pod("5000m", "5000", node_name="node1")]}
    assert score(fit(CPU_MEM), TWO, [], existing) == 50


def test_empty_placement_scores_zero() -> None:
    assert score(fit(CPU_MEM), [], [(pod("1", "1"), "x")]) == 0


def test_without_topology_aware_scheduling_there_is_no_placement_scorer() -> None:
    plugin = fit(CPU_MEM, "LeastAllocated", "GenericWorkload=true")
    assert plugin.placement_scorer is None
    with pytest.raises(StatusError) as e:
        score(plugin, TWO, [(pod("1", "1"), "node1")])
    assert e.value.status.code == Code.ERROR
    assert Fit(None).placement_scorer is None  # no handle: the default gates, off


def test_fit_serves_placement_score_and_keeps_its_other_points() -> None:
    assert isinstance(fit(CPU_MEM), PlacementScorePlugin)
    points = extension_points_of(Fit)
    for p in ("preFilter", "filter", "preScore", "score"):
        assert p in points
    assert Fit.normalize_placement_score is None  # upstream: no PlacementScoreExtensions


@settings(max_examples=100, deadline=None)
@given(
    node_cpu=st.integers(1, 2**20),
    node_mem=st.integers(1, 2**40),
    node_gpu=st.sampled_from([None, 1, 8]),
    used=st.tuples(st.integers(0, 2**20), st.integers(0, 2**40), st.sampled_from([None, 0, 2])),
    req=st.tuples(st.integers(0, 2**20), st.integers(0, 2**40), st.sampled_from([None, 0, 3])),
    weights=st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5)),
)
def test_a_one_node_placement_scores_as_most_allocated_scores_that_node(
    node_cpu: int,
    node_mem: int,
    node_gpu: int | None,
    used: tuple[int, int, int | None],
    req: tuple[int, int, int | None],
    weights: tuple[int, int, int],
) -> None:
    """Upstream's scorePlacement over one node is calculateNodeAllocatableRequest plus the
    scorer, exactly what MostAllocated's Score computes for the pod on that node."""
    resources = [
        {"name": n, "weight": w} for n, w in zip(("cpu", "memory", GPU), weights, strict=True)
    ]
    ext = {GPU: str(node_gpu)} if node_gpu is not None else None
    n = make_node("n", cpu=f"{node_cpu}m", memory=str(node_mem), allocatable=ext)

    def p(cpu: int, mem: int, gpu: int | None, **kw: Any) -> PodInfo:
        return pod(f"{cpu}m", str(mem), None if gpu is None else str(gpu), **kw)

    existing = p(*used, node_name="n")
    member = p(*req)
    most = fit(resources, "MostAllocated")
    ni = make_node_info(n, [existing])
    per_node = most.scorer.score(ni, most.scorer.pod_requests(member))
    assert score(fit(resources), [n], [(member, "n")], {"n": [existing]}) == per_node
