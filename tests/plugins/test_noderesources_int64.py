"""NodeResourcesFit, NodeResourcesBalancedAllocation and ImageLocality with amounts at the
int64 boundaries (issue 16, item 1): 2**63 - 1 millicores, 1e18, 8Ei, negative amounts, 1n.

Upstream converts each quantity saturating and then computes in Go's int64, which wraps
round; the expected values below are worked out that way. Where the wrapped arithmetic
would give a score outside 0..100 upstream fails the cycle ("invalid score"); ksched
clamps. A hypothesis test throws arbitrary quantities at every strategy and checks both
forms agree, nothing raises and every score is within 0..100.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.objects import Node, decode
from ksched.cache import Cache
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.plugins.imagelocality import ImageLocality
from ksched.plugins.noderesources import BalancedAllocation, BalancedAllocationArgs, Fit, FitArgs
from tests.factories import make_node, make_pod, make_snapshot

from .test_noderesources_hypothesis import fit_args

MAX64, MIN64 = 2**63 - 1, -(2**63)
GI, MI = 2**30, 2**20
GPU = "example.com/gpu"
RTCR = {
    "type": "RequestedToCapacityRatio",
    "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    },
}


def fit(strategy: dict[str, Any] | None = None) -> Fit:
    args = {"scoringStrategy": strategy} if strategy else {}
    return Fit(FitArgs.parse("NodeResourcesFit", args))


def balanced() -> BalancedAllocation:
    return BalancedAllocation(BalancedAllocationArgs.parse("NodeResourcesBalancedAllocation", {}))


def both_forms(plugin: Any, pod: PodInfo, snap: Snapshot) -> list[int]:
    """Per-node scores of every row, checked equal to the batch form's."""
    state = CycleState()
    if isinstance(plugin, Fit):
        plugin.pre_filter(state, pod, snap)
    if hasattr(plugin, "pre_score"):
        plugin.pre_score(state, pod, snap.node_infos)
    per_node = [plugin.score(state, pod, ni) for ni in snap.node_infos]
    batch = plugin.score_batch(state, pod, snap, snap.all_rows)
    assert batch.tolist() == per_node
    assert all(0 <= s <= 100 for s in per_node), per_node
    return per_node


def filter_both(pod: PodInfo, snap: Snapshot) -> list[tuple[str, ...] | None]:
    """Fit's reasons per row (None when the pod fits), checked against every batch form."""
    f = fit()
    state = CycleState()
    f.pre_filter(state, pod, snap)
    per_node = [f.filter(state, pod, ni) for ni in snap.node_infos]
    mask = f.filter_batch(state, pod, snap)
    assert mask.tolist() == [s is None for s in per_node]
    statuses = f.filter_statuses(state, pod, snap, snap.all_rows)
    for got, want in zip(statuses, per_node, strict=True):
        assert (got and (got.code, got.reasons)) == (want and (want.code, want.reasons))
    return [None if s is None else tuple(s.reasons) for s in per_node]


# ---- the upstream values --------------------------------------------------------------------


def test_8ei_node_scores_as_upstreams_int64_arithmetic() -> None:
    """A node with 8Ei of cpu has 2**63 - 1 millicores. LeastAllocated's
    ``(capacity - requested) * 100`` wraps to a small negative number there, so cpu scores
    0 (not 99); MostAllocated's ``requested * 100 / capacity`` is 0; RequestedToCapacityRatio
    uses a 128-bit product upstream (utilization 0)."""
    snap = make_snapshot(
        [make_node("huge", cpu="8Ei", memory="32Gi"), make_node("plain", cpu="4", memory="32Gi")]
    )
    pod = make_pod(cpu="100m", memory="200Mi")
    # memory: (32Gi - 200Mi) * 100 / 32Gi = 99; cpu on "plain": 3900 * 100 / 4000 = 97
    assert both_forms(fit(), pod, snap) == [(0 + 99) // 2, (97 + 99) // 2]
    # memory: 200Mi * 100 / 32Gi = 0; cpu on "plain": 100 * 100 / 4000 = 2
    assert both_forms(fit({"type": "MostAllocated"}), pod, snap) == [0, (2 + 0) // 2]
    # utilization 0 and 2: shape scores 0 and 2 (only scores above 0 count)
    assert both_forms(fit(RTCR), pod, snap) == [0, 2]
    # fractions cpu ~0 and memory 200/32768: with the pod 99 on both nodes, 100 without
    assert both_forms(balanced(), pod, snap) == [50 + (50 + 99 - 100) // 2] * 2
    # and the pod fits
    assert filter_both(pod, snap) == [None, None]


def test_pod_of_1e18_cpu() -> None:
    """1e18 cpu is 2**63 - 1 millicores: it fits only a node of at least as much."""
    snap = make_snapshot([make_node("huge", cpu="8Ei"), make_node("plain", cpu="4")])
    pod = make_pod(cpu="1e18", memory="1Gi")
    assert filter_both(pod, snap) == [None, ("Insufficient cpu",)]
    # LeastAllocated: cpu (MAX - MAX) * 100 / MAX = 0 on "huge", and 0 (over capacity)
    # on "plain"; memory (32Gi - 1Gi) * 100 / 32Gi = 96.
    assert both_forms(fit(), pod, snap) == [48, 48]
    # MostAllocated, memory 3; cpu: on "plain" capped at capacity, 100; on "huge"
    # (2**63 - 1) * 100 wraps to -100, and -100 / (2**63 - 1) is 0.
    assert both_forms(fit({"type": "MostAllocated"}), pod, snap) == [(0 + 3) // 2, (100 + 3) // 2]
    both_forms(fit(RTCR), pod, snap)
    both_forms(balanced(), pod, snap)


def test_bound_hogs_fill_a_node_and_two_wrap_round() -> None:
    """One bound pod of 1e18 cpu leaves no room. Two wrap ``Requested.MilliCPU`` round to
    -2, and upstream then sees 4002 millicores free on a 4-cpu node: so does ksched."""
    node = make_node("n", cpu="4")
    small = make_pod(cpu="100m")
    one = make_snapshot([node], [make_pod("h1", node_name="n", cpu="1e18")])
    assert filter_both(small, one) == [("Insufficient cpu",)]
    two = make_snapshot([node], [make_pod(f"h{i}", node_name="n", cpu="1e18") for i in range(2)])
    assert int(two.req_cpu[0]) == -2
    assert filter_both(small, two) == [None]
    for plugin in (fit(), fit({"type": "MostAllocated"}), fit(RTCR), balanced()):
        both_forms(plugin, small, one)
        both_forms(plugin, small, two)


def test_2_pow_63_minus_1_millicores_and_1n() -> None:
    snap = make_snapshot(
        [make_node("max", cpu="9223372036854775807m"), make_node("nano", cpu="1n", memory="1n")]
    )
    exact = make_pod(cpu="9223372036854775807m")
    assert filter_both(exact, snap) == [None, ("Insufficient cpu",)]
    nano = make_pod(cpu="1n", memory="1n")  # 1 millicore, 1 byte
    assert filter_both(nano, snap) == [None, None]
    full = make_snapshot(
        [make_node("nano", cpu="1n", memory="1n")], [make_pod("p", node_name="nano", cpu="1n")]
    )
    assert filter_both(nano, full) == [("Insufficient cpu",)]
    for plugin in (fit(), fit({"type": "MostAllocated"}), fit(RTCR), balanced()):
        both_forms(plugin, exact, snap)
        both_forms(plugin, nano, snap)
        both_forms(plugin, nano, full)


@pytest.mark.parametrize("strategy", [None, {"type": "MostAllocated"}, RTCR, "balanced"])
def test_negative_amounts_score_in_range(strategy: Any) -> None:
    """Negative quantities (kube-apiserver rejects them in pods, but not every input went
    through one): fractions below 0 push the formulas out of range; the score is clamped."""
    snap = make_snapshot(
        [
            make_node("neg", cpu="-4", memory="-8Gi"),
            make_node("plain", cpu="4", memory="8Gi"),
            make_node("min", cpu="-8Ei", memory="1n"),
        ],
        [make_pod("hog", node_name="plain", cpu="-1e18", memory="-8Ei")],
    )
    plugin = balanced() if strategy == "balanced" else fit(strategy)
    for pod in (make_pod(cpu="-1", memory="-1Gi"), make_pod(cpu="1e18"), make_pod()):
        both_forms(plugin, pod, snap)
        filter_both(pod, snap)


def test_huge_image_sizes() -> None:
    """ImageLocality: an image of 2**63 - 1 bytes on every node scales to 2**63, beyond
    int64: it saturates (as Go does on arm64), and sums wrap round."""
    img = [{"names": ["big:latest"], "sizeBytes": MAX64}]
    snap = make_snapshot([make_node("a", images=img), make_node("b", images=img)])
    plugin = ImageLocality(None, Handle(snapshot=snap))
    one = make_pod(containers=[{"name": "c", "image": "big"}])
    assert both_forms(plugin, one, snap) == [100, 100]
    two = make_pod(containers=[{"name": f"c{i}", "image": "big"} for i in range(2)])
    # MAX + MAX wraps to -2: below the 23MB floor
    assert both_forms(plugin, two, snap) == [0, 0]


# ---- arbitrary quantities --------------------------------------------------------------------

_SUFFIXES = ["", "m", "n", "u", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_BOUNDARY = [
    "9223372036854775807m",
    "9223372036854775808m",
    "1e18",
    "-1e18",
    "8Ei",
    "-8Ei",
    "1n",
    "-1n",
    "0",
    "-1",
    "9223372036854775807",
    "1e100",
]


@st.composite
def quantities(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(_BOUNDARY))
    sign = draw(st.sampled_from(["", "", "-", "+"]))
    mantissa = str(draw(st.integers(0, 2**70)))
    if draw(st.booleans()):
        frac = str(draw(st.integers(0, 10**12)))
        mantissa = f"{mantissa}.{frac}"
    if draw(st.booleans()):
        suffix = f"e{draw(st.integers(-40, 40))}"
    else:
        suffix = draw(st.sampled_from(_SUFFIXES))
    return sign + mantissa + suffix


RESOURCES = ["cpu", "memory", "ephemeral-storage", GPU]


@st.composite
def resource_lists(draw: st.DrawFn) -> dict[str, str]:
    return {r: draw(quantities()) for r in RESOURCES if draw(st.booleans())}


@st.composite
def extreme_pods(draw: st.DrawFn, node: str = "") -> PodInfo:
    containers = [
        {"name": f"c{i}", "image": "pause", "resources": {"requests": draw(resource_lists())}}
        for i in range(draw(st.integers(0, 3)))
    ]
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        spec["overhead"] = draw(resource_lists())
    return make_pod(containers=containers, node_name=node, **spec)


@st.composite
def extreme_nodes(draw: st.DrawFn, name: str) -> Node:
    alloc = draw(resource_lists())
    if draw(st.integers(0, 3)):
        alloc["pods"] = draw(st.sampled_from(["10", "0", "8Ei", "-1", "1n"]))
    images = [{"names": ["pause:latest"], "sizeBytes": draw(st.sampled_from([0, 2**30, MAX64]))}]
    return decode(
        {
            "metadata": {"name": name},
            "status": {"allocatable": alloc, "capacity": alloc, "images": images},
        },
        Node,
    )


@st.composite
def extreme_clusters(draw: st.DrawFn) -> tuple[Cache, Snapshot, PodInfo, list[PodInfo]]:
    """A cluster through the real cache, plus bound pods to add to it afterwards."""
    names = [f"node{i}" for i in range(draw(st.integers(1, 5)))]
    bound = st.sampled_from(names).flatmap(lambda node: extreme_pods(node=node))
    cache = Cache()
    for name in names:
        cache.add_node(draw(extreme_nodes(name)))
    for p in draw(st.lists(bound, max_size=6)):
        cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap, draw(extreme_pods()), draw(st.lists(bound, max_size=3))


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cluster=extreme_clusters(), args=fit_args())
def test_arbitrary_quantities_never_crash_and_score_in_range(
    cluster: tuple[Cache, Snapshot, PodInfo, list[PodInfo]], args: dict[str, Any]
) -> None:
    cache, snap, pod, later = cluster
    plugins = [
        fit(args["scoringStrategy"]),
        fit(),
        fit({"type": "MostAllocated"}),
        fit(RTCR),
        balanced(),
        ImageLocality(None, Handle(snapshot=snap)),
    ]

    def check() -> None:
        filter_both(pod, snap)
        for plugin in plugins:
            both_forms(plugin, pod, snap)
        for i, ni in enumerate(snap.node_infos):
            for v in (ni.requested.milli_cpu, ni.allocatable.memory, ni.non_zero_requested.memory):
                assert MIN64 <= v <= MAX64
            assert int(snap.req_cpu[i]) == ni.requested.milli_cpu

    check()
    for extra in later:  # rows replaced one by one: the incremental (per-row) paths
        cache.add_pod(extra)
        cache.update_snapshot(snap)
        check()
    assert np.all(snap.valid | ~snap.valid)  # the snapshot is still usable


def test_nominated_pods_columns_sum_and_wrap_per_row() -> None:
    """``_added_columns`` (what the nominated pods add per row, for the first pass beside
    them) against the plain per-pod sum wrapped once per row, amounts near the int64
    limits, scalar resources and empty rows included."""
    import random

    from ksched.api.quantity import wrap_int64
    from ksched.plugins.noderesources.fit import _added_columns

    rng = random.Random(16)
    amounts = [0, 1, 250, 2**40, MAX64 // 1000, MAX64 // 2 + 1]
    names = ["cpu", "memory", "ephemeral-storage", "pods", GPU, "example.com/none"]
    for _ in range(60):
        added = [
            [
                make_pod(
                    requests={
                        "cpu": f"{rng.choice(amounts)}m",
                        "memory": str(rng.choice(amounts)),
                        "ephemeral-storage": str(rng.choice(amounts)),
                        GPU: str(rng.choice(amounts)),
                    }
                )
                for _ in range(rng.randrange(4))
            ]
            for _ in range(rng.randrange(1, 6))
        ]
        want = [
            [wrap_int64(sum(p.requests.get(n) for p in pods)) for pods in added] for n in names
        ] + [[len(pods) for pods in added]]
        got = _added_columns(added, names)
        assert [col.tolist() for col in got] == want
        assert all(col.dtype == np.int64 for col in got)
