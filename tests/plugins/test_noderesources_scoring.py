"""NodeResourcesFit scoring strategies: upstream least_allocated_test.go,
most_allocated_test.go, requested_to_capacity_ratio_test.go and fit_test.go
(TestFitScore) tables, ported. Every case runs per node and in batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.api.objects import Node, decode
from ksched.framework.cycle_state import CycleState
from ksched.framework.types import PodInfo
from ksched.plugins.noderesources import Fit, FitArgs, ScoringStrategy
from ksched.plugins.noderesources.requested_to_capacity_ratio import broken_linear_function
from ksched.plugins.noderesources.resource_allocation import ResourceSpec
from tests.factories import make_pod, make_snapshot

DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT_RES = "abc.com/xyz"
EXTENDED_SET = [*DEFAULT, {"name": EXT_RES, "weight": 1}]


def pod(
    *reqs: dict[str, str], node: str = "", sidecars: tuple[dict[str, str], ...] = ()
) -> PodInfo:
    """st.MakePod().Req(r1).Req(r2)...: one container per request map, none if no maps."""
    spec: dict[str, Any] = {}
    if sidecars:
        spec["initContainers"] = [
            {"name": f"s{i}", "restartPolicy": "Always", "resources": {"requests": r}}
            for i, r in enumerate(sidecars)
        ]
    return make_pod(
        containers=[{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(reqs)],
        node_name=node,
        **spec,
    )


def cap_node(name: str, alloc: dict[str, str] | None) -> Node:
    """st.MakeNode().Name(n).Capacity(alloc) (32 pods), or no allocatable at all for None."""
    status: dict[str, Any] = {}
    if alloc is not None:
        a = {"pods": "32", **alloc}
        status = {"allocatable": a, "capacity": a}
    return decode({"metadata": {"name": name}, "status": status}, Node)


def milli_node(name: str, milli_cpu: int, memory: int, ext: dict[str, int] | None = None) -> Node:
    """test_util makeNode: cpu in millicores, memory in bytes, extended resources, no pods."""
    a = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    a.update({k: str(v) for k, v in (ext or {}).items()})
    return decode({"metadata": {"name": name}, "status": {"allocatable": a, "capacity": a}}, Node)


def scores(
    args: dict[str, Any] | FitArgs,
    p: PodInfo,
    nodes: list[Node],
    existing: list[PodInfo],
    pre_score: bool = True,
) -> list[int]:
    fit = Fit(args if isinstance(args, FitArgs) else FitArgs.parse("NodeResourcesFit", args))
    snap = make_snapshot(nodes, existing)
    state = CycleState()
    if pre_score:
        assert fit.pre_score(state, p, snap.node_infos) is None
    per_node = []
    for n in nodes:
        ni = snap.get(n.metadata.name)
        assert ni is not None
        per_node.append(fit.score(state, p, ni))
    rows = np.array([snap.row(n.metadata.name) for n in nodes], dtype=np.intp)
    batch = fit.score_batch(state, p, snap, rows)
    assert batch.dtype == np.int64
    assert batch.tolist() == per_node
    return per_node


def strategy(
    typ: str, resources: list[dict[str, Any]], shape: list[tuple[int, int]] | None = None
) -> dict[str, Any]:
    s: dict[str, Any] = {"type": typ, "resources": resources}
    if shape is not None:
        s["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": sc} for u, sc in shape]
        }
    return {"scoringStrategy": s}


N4_10 = {"cpu": "4000", "memory": "10000"}
N6_10 = {"cpu": "6000", "memory": "10000"}
N10_20 = {"cpu": "10000", "memory": "20000"}
R12 = {"cpu": "1000", "memory": "2000"}
R23 = {"cpu": "2000", "memory": "3000"}
R30 = {"cpu": "3000", "memory": "0"}
R35 = {"cpu": "3000", "memory": "5000"}
N_R24 = {"cpu": "2000", "memory": "4000"}

# (name, pod, nodes, existing, resources, want) -- TestLeastAllocatedScoringStrategy
LEAST: list[tuple[str, Any, Any, Any, list[dict[str, Any]], list[int]]] = [
    (
        "nothing scheduled, nothing requested",
        lambda: pod(),
        [("node1", N4_10), ("node2", N4_10)],
        [],
        DEFAULT,
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        lambda: pod(R12, R23),
        [("node1", N4_10), ("node2", N6_10)],
        [],
        DEFAULT,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        lambda: pod(),
        [("node1", N4_10), ("node2", N4_10)],
        [((), "node1"), ((), "node1"), ((), "node2"), ((), "node2")],
        DEFAULT,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        lambda: pod(),
        [("node1", N10_20), ("node2", N10_20)],
        [((R30,), "node1"), ((R30,), "node1"), ((R30,), "node2"), ((R35,), "node2")],
        DEFAULT,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        lambda: pod(R12, R23),
        [("node1", N10_20), ("node2", N10_20)],
        [((R30,), "node1"), ((R35,), "node2")],
        DEFAULT,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        lambda: pod(R12, R23),
        [("node1", N10_20), ("node2", {"cpu": "10000", "memory": "50000"})],
        [((R30,), "node1"), ((R35,), "node2")],
        DEFAULT,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        lambda: pod(R30),
        [("node1", N4_10), ("node2", N4_10)],
        [((R30,), "node1"), ((R35,), "node2")],
        DEFAULT,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        lambda: pod(),
        [("node1", None), ("node2", None)],
        [((R30,), "node1"), ((R35,), "node2")],
        DEFAULT,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory, "
        "differently sized nodes",
        lambda: pod(R12, R23),
        [("node1", N4_10), ("node2", N6_10)],
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        lambda: pod(R12, R23),
        [("node1", N6_10), ("node2", {**N6_10, EXT_RES: "4"})],
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        lambda: pod({"cpu": "3000", "memory": "5000", EXT_RES: "2"}),
        [("node1", {**N6_10, EXT_RES: "4"}), ("node2", {**N6_10, EXT_RES: "10"})],
        [],
        EXTENDED_SET,
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        lambda: pod({"cpu": "3000", "memory": "4000"}),
        [("node1", N6_10), ("node2", {**N6_10, EXT_RES: "4"})],
        [],
        [
            {"name": EXT_RES, "weight": 2},
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1},
        ],
        [55, 55],
    ),
]

# TestMostAllocatedScoringStrategy
MOST: list[tuple[str, Any, Any, Any, list[dict[str, Any]], list[int]]] = [
    (
        "nothing scheduled, nothing requested",
        lambda: pod(),
        [("node1", N4_10), ("node2", N4_10)],
        [],
        DEFAULT,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        lambda: pod(R12, R23),
        [("node1", N4_10), ("node2", N6_10)],
        [],
        DEFAULT,
        [62, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        lambda: pod(),
        [("node1", N10_20), ("node2", N10_20)],
        [((R30,), "node1"), ((R30,), "node1"), ((R30,), "node2"), ((R35,), "node2")],
        DEFAULT,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        lambda: pod(R12, R23),
        [("node1", N10_20), ("node2", N10_20)],
        [((R30,), "node1"), ((R35,), "node2")],
        DEFAULT,
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        lambda: pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [
            ("node1", {"cpu": "5000", "memory": "10000"}),
            ("node2", {"cpu": "10000", "memory": "9000"}),
        ],
        [],
        DEFAULT,
        [95, 75],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (weights)",
        lambda: pod(R12, R23),
        [("node1", N4_10), ("node2", N6_10)],
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [58, 50],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        lambda: pod({}),
        [
            ("node1", {"cpu": "250m", "memory": "1000Mi"}),
            ("node2", {"cpu": "250m", "memory": "1000Mi"}),
        ],
        [(({},), "node1"), (({},), "node1")],
        DEFAULT,
        [80, 30],
    ),
    (
        "bypass extended resource if the pod does not request",
        lambda: pod(R12, R23),
        [("node1", N6_10), ("node2", {**N6_10, EXT_RES: "4"})],
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod request",
        lambda: pod({"cpu": "3000", "memory": "5000", EXT_RES: "2"}),
        [("node1", {**N6_10, EXT_RES: "4"}), ("node2", {**N6_10, EXT_RES: "10"})],
        [],
        EXTENDED_SET,
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        lambda: pod({"cpu": "3000", "memory": "4000"}),
        [("node1", N6_10), ("node2", {**N6_10, EXT_RES: "4"})],
        [],
        [
            {"name": EXT_RES, "weight": 2},
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1},
        ],
        [45, 45],
    ),
]


def _run_table(
    typ: str,
    make: Any,
    nodes: Any,
    existing: Any,
    resources: Any,
    shape: list[tuple[int, int]] | None = None,
) -> list[int]:
    ns = [cap_node(n, a) for n, a in nodes]
    ex = [pod(*reqs, node=nn) for reqs, nn in existing]
    return scores(strategy(typ, resources, shape), make(), ns, ex)


@pytest.mark.parametrize(
    ("name", "make", "nodes", "existing", "resources", "want"), LEAST, ids=[c[0] for c in LEAST]
)
def test_least_allocated(
    name: str, make: Any, nodes: Any, existing: Any, resources: Any, want: list[int]
) -> None:
    assert _run_table("LeastAllocated", make, nodes, existing, resources) == want


@pytest.mark.parametrize(
    ("name", "make", "nodes", "existing", "resources", "want"), MOST, ids=[c[0] for c in MOST]
)
def test_most_allocated(
    name: str, make: Any, nodes: Any, existing: Any, resources: Any, want: list[int]
) -> None:
    assert _run_table("MostAllocated", make, nodes, existing, resources) == want


@pytest.mark.parametrize("typ", ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
def test_resources_not_set_is_an_error(typ: str) -> None:
    """Un-defaulted args without resources: Score fails ("resources not found")."""
    args = FitArgs(scoring_strategy=ScoringStrategy(typ, (), ((0, 10), (100, 0))))
    with pytest.raises(ValueError, match="resources not found"):
        scores(args, pod(R12, R23), [cap_node("node1", N4_10), cap_node("node2", N6_10)], [])


# TestRequestedToCapacityRatioScoringStrategy
SHAPE = [(0, 10), (100, 0)]


@pytest.mark.parametrize(
    ("name", "make", "nodes", "existing", "want"),
    [
        (
            "nothing scheduled, nothing requested (default - least requested nodes have priority)",
            lambda: pod(),
            [("node1", N4_10), ("node2", N4_10)],
            [((), "node1"), ((), "node1")],
            [100, 100],
        ),
        (
            "nothing scheduled, resources requested, differently sized nodes (default - least "
            "requested nodes have priority)",
            lambda: pod(R12, R23),
            [("node1", N4_10), ("node2", N6_10)],
            [((), "node1"), ((), "node1")],
            [38, 50],
        ),
        (
            "no resources requested, pods scheduled with resources (default - least requested nodes "
            "have priority)",
            lambda: pod(),
            [("node1", N4_10), ("node2", N6_10)],
            [((R35,), "node1"), ((R35,), "node2")],
            [38, 50],
        ),
    ],
)
def test_requested_to_capacity_ratio(
    name: str, make: Any, nodes: Any, existing: Any, want: list[int]
) -> None:
    assert _run_table("RequestedToCapacityRatio", make, nodes, existing, DEFAULT, SHAPE) == want


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        ),
        (
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        ),
    ],
)
def test_broken_linear_function(
    points: list[tuple[int, int]], assertions: list[tuple[int, int]]
) -> None:
    for p, want in assertions:
        assert broken_linear_function(points, p) == want


def test_broken_linear_function_truncates_toward_zero() -> None:
    # Go: 10 + (0-10)*(15-0)/(20-0) = 10 + (-150/20) = 10 - 7 = 3 (Python floor would give 2).
    assert broken_linear_function([(0, 10), (20, 0)], 15) == 3


GiB10 = 10000 * 1024 * 1024


def _ext_scores(
    resources: list[dict[str, Any]], p: PodInfo, nodes: list[Node], existing: list[PodInfo]
) -> list[int]:
    return scores(
        strategy("RequestedToCapacityRatio", resources, [(0, 0), (100, 1)]), p, nodes, existing
    )


FOO = "intel.com/foo"
BAR = "intel.com/bar"


@pytest.mark.parametrize(
    ("name", "make", "existing", "want"),
    [
        ("nothing scheduled, nothing requested", lambda: pod(), [], [0, 0]),
        (
            "resources requested, pods scheduled with less resources",
            lambda: pod({FOO: "2"}),
            [((), "")],
            [2, 5],
        ),
        (
            "resources requested, pods scheduled with resources, on node with existing pod running",
            lambda: pod({FOO: "2"}),
            [(({FOO: "2"},), "node2")],
            [2, 10],
        ),
        (
            "resources requested, pods scheduled with more resources",
            lambda: pod({FOO: "4"}),
            [((), "")],
            [5, 10],
        ),
    ],
)
def test_resource_bin_packing_single_extended(
    name: str, make: Any, existing: Any, want: list[int]
) -> None:
    nodes = [milli_node("node1", 4000, GiB10, {FOO: 8}), milli_node("node2", 4000, GiB10, {FOO: 4})]
    ex = [pod(*r, node=n) for r, n in existing if n]
    assert _ext_scores([{"name": FOO, "weight": 1}], make(), nodes, ex) == want


@pytest.mark.parametrize(
    ("name", "make", "existing", "want"),
    [
        ("nothing scheduled, nothing requested", lambda: pod(), [], [0, 0]),
        (
            "resources requested, pods scheduled with less resources",
            lambda: pod({FOO: "2", BAR: "2"}),
            [],
            [4, 3],
        ),
        (
            "resources requested, pods scheduled with resources, on node with existing pod running",
            lambda: pod({FOO: "2", BAR: "2"}),
            [(({FOO: "4", BAR: "2"},), "node2")],
            [4, 7],
        ),
        (
            "resources requested, pods scheduled with more resources",
            lambda: pod({FOO: "4", BAR: "2"}),
            [],
            [5, 5],
        ),
    ],
)
def test_resource_bin_packing_multiple_extended(
    name: str, make: Any, existing: Any, want: list[int]
) -> None:
    nodes = [
        milli_node("node1", 4000, GiB10, {FOO: 8, BAR: 4}),
        milli_node("node2", 4000, GiB10, {FOO: 4, BAR: 8}),
    ]
    ex = [pod(*r, node=n) for r, n in existing]
    resources = [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}]
    assert _ext_scores(resources, make(), nodes, ex) == want


# TestFitScore
@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
@pytest.mark.parametrize(
    ("name", "make", "node2", "existing", "args", "want"),
    [
        (
            "RequestedToCapacityRatio case1",
            lambda: pod(R35),
            N6_10,
            [((N_R24,), "node1"), ((R12,), "node2")],
            strategy("RequestedToCapacityRatio", DEFAULT, [(0, 10), (100, 0)]),
            [10, 32],
        ),
        (
            "RequestedToCapacityRatio case2",
            lambda: pod(R35),
            N6_10,
            [((N_R24,), "node1"), ((R12,), "node2")],
            strategy("RequestedToCapacityRatio", DEFAULT, [(0, 0), (100, 10)]),
            [95, 68],
        ),
        (
            "MostAllocated",
            lambda: pod(R12),
            N6_10,
            [((N_R24,), "node1"), ((R12,), "node2")],
            strategy("MostAllocated", DEFAULT),
            [67, 36],
        ),
        (
            "LeastAllocated",
            lambda: pod(R12),
            N6_10,
            [((N_R24,), "node1"), ((R12,), "node2")],
            strategy("LeastAllocated", DEFAULT),
            [32, 63],
        ),
    ],
)
def test_fit_score(
    pre_score: bool,
    name: str,
    make: Any,
    node2: dict[str, str],
    existing: Any,
    args: dict[str, Any],
    want: list[int],
) -> None:
    nodes = [cap_node("node1", N4_10), cap_node("node2", node2)]
    ex = [pod(*r, node=n) for r, n in existing]
    assert scores(args, make(), nodes, ex, pre_score=pre_score) == want


@pytest.mark.parametrize(
    ("typ", "want"), [("MostAllocated", [67, 45]), ("LeastAllocated", [32, 55])]
)
def test_fit_score_with_sidecar(typ: str, want: list[int]) -> None:
    nodes = [cap_node("node1", N4_10), cap_node("node2", N4_10)]
    ex = [pod(R12, node="node1", sidecars=(R12,)), pod(R12, node="node2")]
    assert scores(strategy(typ, DEFAULT), pod(R12), nodes, ex) == want


def test_default_args_are_least_allocated_cpu_memory() -> None:
    fit = Fit()
    assert fit.args == FitArgs.parse("NodeResourcesFit", {})
    default = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    assert fit.args.scoring_strategy.resources == default


# ---- pod-level resources ---------------------------------------------------------------


def pl_pod(*reqs: dict[str, str], pod_level: dict[str, str], node: str = "") -> PodInfo:
    """``pod(*reqs)`` with pod-level requests (spec.resources.requests)."""
    return make_pod(
        containers=[{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(reqs)],
        node_name=node,
        resources={"requests": pod_level},
    )


N_4C_1000MI = {"cpu": "4", "memory": "1000Mi"}
LEAST_DEFAULT = strategy("LeastAllocated", DEFAULT)


def test_fit_scorer_ignores_pod_level_cpu() -> None:
    # Upstream's Fit scorer never enables pod-level resources (kube-scheduler v1.36.3,
    # differential harness): cpu 100m (the container default, not the pod's 1000m): 97;
    # memory 200Mi (default): 80.
    p = pl_pod({}, pod_level={"cpu": "1"})
    assert scores(LEAST_DEFAULT, p, [cap_node("n1", N_4C_1000MI)], []) == [88]


def test_incoming_pod_level_pod_gets_a_default_per_container() -> None:
    # cpu 100m + 100m (both containers' defaults): 95; memory 100Mi + 200Mi (the second
    # container's default): 70.
    p = pl_pod({"memory": "100Mi"}, {}, pod_level={"cpu": "1"})
    assert scores(LEAST_DEFAULT, p, [cap_node("n1", N_4C_1000MI)], []) == [82]


def test_assigned_pod_level_pod_is_accounted_without_per_container_defaults() -> None:
    # The node holds cpu 2000m and memory 100Mi only (no default for the second container,
    # the pod requesting memory): with the incoming 1000m/100Mi, cpu 25 and memory 80.
    existing = pl_pod({"memory": "100Mi"}, {}, pod_level={"cpu": "2"}, node="n1")
    p = pod({"cpu": "1", "memory": "100Mi"})
    assert scores(LEAST_DEFAULT, p, [cap_node("n1", N_4C_1000MI)], [existing]) == [52]
