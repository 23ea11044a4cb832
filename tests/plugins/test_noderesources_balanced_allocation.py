"""NodeResourcesBalancedAllocation: upstream balanced_allocation_test.go table, ported.

Expected scores are upstream's current ones (kube-scheduler >= v1.36, kubernetes#135573:
``50 + (50 + balance_with_pod - balance_without_pod) / 2``); every case runs per node and
in batch. The DRA-backed extended resource cases are not ported (DRAExtendedResource).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.api.objects import Node, decode
from ksched.framework.cycle_state import CycleState
from ksched.framework.registry import PluginArgsError
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins.noderesources import BalancedAllocation, BalancedAllocationArgs
from ksched.plugins.noderesources import balanced_allocation as ba
from ksched.plugins.noderesources.resource_allocation import ResourceSpec
from tests.factories import make_pod, make_snapshot

GPU = "nvidia.com/gpu"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_GPU = [*DEFAULT, {"name": GPU, "weight": 1}]


def cpu_only(c: str) -> dict[str, str]:
    return {"cpu": c}


def cpu_mem(c: str, m: str) -> dict[str, str]:
    return {"cpu": c, "memory": m}


def cpu_mem_gpu(c: str, m: str, g: str) -> dict[str, str]:
    return {"cpu": c, "memory": m, GPU: g}


def pod(*reqs: dict[str, str], node: str = "") -> PodInfo:
    return make_pod(
        containers=[{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(reqs)],
        node_name=node,
    )


def mk_node(name: str, milli_cpu: int, memory: int, gpu: int | None = None) -> Node:
    a = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    if gpu is not None:
        a[GPU] = str(gpu)
    return decode({"metadata": {"name": name}, "status": {"allocatable": a, "capacity": a}}, Node)


def run(
    resources: list[dict[str, Any]],
    p: PodInfo,
    nodes: list[Node],
    existing: list[PodInfo],
    pre_score: bool = True,
) -> list[int] | None:
    plugin = BalancedAllocation(
        BalancedAllocationArgs.parse("NodeResourcesBalancedAllocation", {"resources": resources})
    )
    snap = make_snapshot(nodes, existing)
    state = CycleState()
    if pre_score:
        st = plugin.pre_score(state, p, snap.node_infos)
        if st is not None:
            assert st.code == Code.SKIP
            return None
    per_node = []
    for n in nodes:
        ni = snap.get(n.metadata.name)
        assert ni is not None
        per_node.append(plugin.score(state, p, ni))
    rows = np.array([snap.row(n.metadata.name) for n in nodes], dtype=np.intp)
    assert plugin.score_batch(state, p, snap, rows).tolist() == per_node
    return per_node


CASES: list[tuple[str, Any, Any, Any, list[dict[str, Any]], list[int] | None]] = [
    (
        "nothing scheduled, nothing requested, skip in PreScore",
        lambda: pod(),
        [("node1", 4000, 10000, None), ("node2", 4000, 10000, None)],
        [],
        DEFAULT,
        None,
    ),
    # Node1 CPU 0 -> 75%, memory 0 -> 50%: 100 -> 87 = 68; node2 100 -> 100 = 75.
    (
        "nothing scheduled, resources requested, differently sized nodes",
        lambda: pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")),
        [("node1", 4000, 10000, None), ("node2", 6000, 10000, None)],
        [],
        DEFAULT,
        [68, 75],
    ),
    (
        "resources requested, pods scheduled with resources",
        lambda: pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")),
        [("node1", 10000, 20000, None), ("node2", 10000, 20000, None)],
        [
            ((cpu_only("1000m"), cpu_only("2000m")), "node1"),
            ((cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")), "node2"),
        ],
        DEFAULT,
        [73, 74],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        lambda: pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")),
        [("node1", 10000, 20000, None), ("node2", 10000, 50000, None)],
        [
            ((cpu_only("1000m"), cpu_only("2000m")), "node1"),
            ((cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")), "node2"),
        ],
        DEFAULT,
        [73, 70],
    ),
    (
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        lambda: pod({"memory": "2000"}, {"memory": "3000"}),
        [("node1", 3000, 5000, None), ("node2", 3000, 5000, None)],
        [((cpu_only("1000m"), cpu_only("2000m")), "node1")],
        DEFAULT,
        [100, 50],
    ),
    (
        "requested resources at node capacity",
        lambda: pod(cpu_only("1000m"), cpu_only("2000m")),
        [("node1", 6000, 10000, None), ("node2", 6000, 10000, None)],
        [
            ((cpu_only("1000m"), cpu_only("2000m")), "node1"),
            ((cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")), "node2"),
        ],
        DEFAULT,
        [62, 62],
    ),
    (
        "scalar resource is included in the score computation if pod requests the scalar resource",
        lambda: pod(cpu_mem_gpu("0", "0", "1")),
        [("node1", 3500, 40000, 8), ("node2", 3500, 40000, 8)],
        [
            ((cpu_mem("1000m", "2000"), cpu_mem_gpu("2000m", "3000", "3")), "node1"),
            ((cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")), "node2"),
        ],
        WITH_GPU,
        [75, 76],
    ),
    (
        "scalar resource is not included in the score computation if pod doesn't request the "
        "scalar resource",
        lambda: pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")),
        [("node1", 3500, 40000, 8), ("node2", 3500, 40000, None)],
        [],
        WITH_GPU,
        [56, 56],
    ),
]


@pytest.mark.parametrize(
    ("name", "make", "nodes", "existing", "resources", "want"), CASES, ids=[c[0] for c in CASES]
)
def test_balanced_allocation(
    name: str,
    make: Any,
    nodes: Any,
    existing: Any,
    resources: list[dict[str, Any]],
    want: list[int] | None,
) -> None:
    ns = [mk_node(*n) for n in nodes]
    ex = [pod(*r, node=nn) for r, nn in existing]
    assert run(resources, make(), ns, ex) == want


def test_balanced_allocation_without_prescore() -> None:
    """'if PreScore not called': same scores; a best-effort pod scores 0 everywhere."""
    nodes = [mk_node("node1", 10000, 20000), mk_node("node2", 10000, 20000)]
    ex = [
        pod(cpu_only("1000m"), cpu_only("2000m"), node="node1"),
        pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"), node="node2"),
    ]
    p = pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"))
    assert run(DEFAULT, p, nodes, ex, pre_score=False) == [73, 74]
    assert run(DEFAULT, pod(), nodes, ex, pre_score=False) == [0, 0]


def test_previous_formula(monkeypatch: pytest.MonkeyPatch) -> None:
    """kube-scheduler <= v1.35 scored the balance with the pod only ((1 - std) * 100)."""
    monkeypatch.setattr(ba, "SCORE_BALANCE_CHANGE", False)
    nodes = [mk_node("node1", 4000, 10000), mk_node("node2", 6000, 10000)]
    p = pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"))
    assert run(DEFAULT, p, nodes, []) == [87, 100]
    nodes = [mk_node("node1", 3500, 40000, 8), mk_node("node2", 3500, 40000, 8)]
    ex = [
        pod(cpu_mem("1000m", "2000"), cpu_mem_gpu("2000m", "3000", "3"), node="node1"),
        pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"), node="node2"),
    ]
    assert run(WITH_GPU, pod(cpu_mem_gpu("0", "0", "1")), nodes, ex) == [70, 65]


def test_balanced_resource_score() -> None:
    # One resource: std 0; none: std 0; three: sqrt of the population variance.
    assert ba.balanced_resource_score([5], [10]) == 100
    assert ba.balanced_resource_score([], []) == 100
    assert ba.balanced_resource_score([1, 0, 0], [1, 1, 1]) == 52  # std = 0.4714
    assert ba.balanced_resource_score([30, 0], [10, 0]) == 100  # capped at 1, zero cap skipped


def test_args() -> None:
    name = "NodeResourcesBalancedAllocation"
    assert BalancedAllocationArgs.parse(name, {}).resources == (
        ResourceSpec("cpu", 1),
        ResourceSpec("memory", 1),
    )
    assert BalancedAllocationArgs.parse(name, {"resources": [{"name": GPU}]}).resources == (
        ResourceSpec(GPU, 1),
    )
    with pytest.raises(PluginArgsError) as e:
        BalancedAllocationArgs.parse(name, {"resources": [{"name": "cpu", "weight": 2}]})
    assert str(e.value) == f"plugin {name}: args.resources[0].weight: Invalid value: 2: must be 1"
    with pytest.raises(PluginArgsError) as e:
        BalancedAllocationArgs.parse(name, {"resources": [{"name": "cpu"}, {"name": "cpu"}]})
    assert str(e.value) == f'plugin {name}: args.resources[1].name: Duplicate value: "cpu"'
    with pytest.raises(PluginArgsError) as e:
        BalancedAllocationArgs.parse(
            name, {"resources": [{"name": "cpu"}, {"name": "cpu", "weight": 3}]}
        )
    assert str(e.value) == (
        f'plugin {name}: args: [resources[1].name: Duplicate value: "cpu", '
        "resources[1].weight: Invalid value: 3: must be 1]"
    )
    with pytest.raises(PluginArgsError, match="unknown field"):
        BalancedAllocationArgs.parse(name, {"resource": []})


def test_registered_with_framework() -> None:
    from ksched.plugins import default_registry

    spec = default_registry(entry_points=False).get("NodeResourcesBalancedAllocation")
    assert spec is not None and spec.cls is BalancedAllocation
    assert spec.points == ["preScore", "score"]


def pl_pod(*reqs: dict[str, str], pod_level: dict[str, str], node: str = "") -> PodInfo:
    return make_pod(
        containers=[{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(reqs)],
        node_name=node,
        resources={"requests": pod_level},
    )


def test_pod_level_requests_replace_the_containers() -> None:
    """The pod and the node's pods are scored by their pod-level requests, as if their
    containers asked for them; a pod whose containers request nothing is not best-effort."""
    nodes = [mk_node("node1", 4000, 10000), mk_node("node2", 6000, 10000)]
    level = {"cpu": "3000m", "memory": "2000"}
    got = run(
        DEFAULT,
        pl_pod(cpu_mem("100m", "100"), pod_level=level),
        nodes,
        [pl_pod(cpu_mem("100m", "100"), pod_level={"cpu": "1000m"}, node="node1")],
    )
    want = run(DEFAULT, pod(level), nodes, [pod(cpu_mem("1000m", "100"), node="node1")])
    containers_only = run(
        DEFAULT, pod(cpu_mem("100m", "100")), nodes, [pod(cpu_mem("100m", "100"), node="node1")]
    )
    assert got == want != containers_only
    assert run(DEFAULT, pl_pod({}, pod_level={"cpu": "1000m"}), nodes, []) is not None


def test_signature_follows_pod_level_requests() -> None:
    plugin = BalancedAllocation()
    a = pl_pod(cpu_only("100m"), pod_level={"cpu": "1"})
    assert plugin.sign_pod(a) == plugin.sign_pod(pl_pod(cpu_only("100m"), pod_level={"cpu": "1"}))
    assert plugin.sign_pod(a) != plugin.sign_pod(pl_pod(cpu_only("100m"), pod_level={"cpu": "2"}))
    assert plugin.sign_pod(a) != plugin.sign_pod(pod(cpu_only("100m")))
