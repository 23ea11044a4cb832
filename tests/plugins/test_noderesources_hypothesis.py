"""Batch forms agree exactly with the per-node forms on random clusters.

Covers NodeResourcesFit (filter_batch, score_batch for every strategy, random weights,
shapes and ignored resources), NodeResourcesBalancedAllocation and ImageLocality.
Amounts stay in realistic ranges (< 2**44), where Go's int64 arithmetic cannot overflow.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.objects import Node, decode
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.plugins.imagelocality import ImageLocality
from ksched.plugins.noderesources import BalancedAllocation, BalancedAllocationArgs, Fit, FitArgs
from tests.factories import make_pod, make_snapshot

GPU = "example.com/gpu"
FOO = "foo.io/bar"
HUGE = "hugepages-2Mi"
IMAGES = ["img/a", "img/b:v1", "gcr.io/c", "d:latest", "e"]
RESOURCE_NAMES = ["cpu", "memory", "ephemeral-storage", GPU, FOO, HUGE, "pods", "storage"]

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

amount = st.one_of(st.just(0), st.integers(1, 16), st.integers(0, 2**44))


@st.composite
def requests(draw: st.DrawFn) -> dict[str, str]:
    out: dict[str, str] = {}
    if draw(st.booleans()):
        out["cpu"] = f"{draw(st.one_of(st.just(0), st.integers(0, 9000)))}m"
    if draw(st.booleans()):
        out["memory"] = str(draw(amount))
    if draw(st.integers(0, 3)) == 0:
        out["ephemeral-storage"] = str(draw(amount))
    for name in (GPU, FOO, HUGE):
        if draw(st.integers(0, 3)) == 0:
            out[name] = str(draw(st.integers(0, 10)))
    return out


@st.composite
def pods(draw: st.DrawFn, node: str = "") -> PodInfo:
    containers = [
        {
            "name": f"c{i}",
            "image": draw(st.sampled_from(IMAGES)),
            "resources": {"requests": draw(requests())},
        }
        for i in range(draw(st.integers(0, 3)))
    ]
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        spec["initContainers"] = [
            {
                "name": "init",
                "image": draw(st.sampled_from(IMAGES)),
                "resources": {"requests": draw(requests())},
                **({"restartPolicy": "Always"} if draw(st.booleans()) else {}),
            }
        ]
    if draw(st.integers(0, 5)) == 0:
        spec["overhead"] = {"cpu": f"{draw(st.integers(0, 500))}m", "memory": str(draw(amount))}
    return make_pod(containers=containers, node_name=node, **spec)


@st.composite
def nodes(draw: st.DrawFn, name: str, dense: bool = False) -> Node:
    """A node; ``dense`` gives it a positive amount of every resource (the batch fast paths)."""
    alloc: dict[str, str] = {}
    if dense:
        alloc = {
            "cpu": f"{draw(st.integers(1, 20000))}m",
            "memory": str(draw(st.integers(1, 2**44))),
            "ephemeral-storage": str(draw(st.integers(1, 2**44))),
            "pods": str(draw(st.integers(1, 6))),
        }
        alloc.update({res: str(draw(st.integers(1, 12))) for res in (GPU, FOO, HUGE)})
    if not dense and draw(st.integers(0, 5)):
        alloc["cpu"] = f"{draw(st.one_of(st.just(0), st.integers(0, 20000)))}m"
    if not dense and draw(st.integers(0, 5)):
        alloc["memory"] = str(draw(amount))
    if not dense and draw(st.booleans()):
        alloc["ephemeral-storage"] = str(draw(amount))
    if not dense and draw(st.integers(0, 5)):
        alloc["pods"] = str(draw(st.integers(0, 6)))
    for res in (GPU, FOO, HUGE):
        if not dense and draw(st.booleans()):
            alloc[res] = str(draw(st.integers(0, 12)))
    images = [
        {
            "names": [img if ":" in img.rsplit("/", 1)[-1] else img + ":latest"],
            "sizeBytes": draw(st.integers(0, 3000 * 2**20)),
        }
        for img in draw(st.lists(st.sampled_from(IMAGES), unique=True, max_size=4))
    ]
    return decode(
        {
            "metadata": {"name": name},
            "status": {"allocatable": alloc, "capacity": alloc, "images": images},
        },
        Node,
    )


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Snapshot, PodInfo]:
    n = draw(st.integers(1, 7))
    dense = draw(st.booleans())
    ns = [draw(nodes(f"node{i}", dense)) for i in range(n)]
    existing = [
        draw(pods(node=f"node{draw(st.integers(0, n - 1))}"))
        for _ in range(draw(st.integers(0, 10)))
    ]
    return make_snapshot(ns, existing), draw(pods())


@st.composite
def fit_args(draw: st.DrawFn) -> dict[str, Any]:
    typ = draw(st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]))
    names = draw(st.lists(st.sampled_from(RESOURCE_NAMES), unique=True, min_size=1, max_size=5))
    strategy: dict[str, Any] = {
        "type": typ,
        "resources": [{"name": n, "weight": draw(st.integers(1, 100))} for n in names],
    }
    if typ == "RequestedToCapacityRatio":
        utils = sorted(draw(st.lists(st.integers(0, 100), unique=True, min_size=1, max_size=5)))
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": draw(st.integers(0, 10))} for u in utils]
        }
    args: dict[str, Any] = {"scoringStrategy": strategy}
    if draw(st.booleans()):
        args["ignoredResources"] = draw(st.lists(st.sampled_from([GPU, FOO]), unique=True))
    if draw(st.booleans()):
        args["ignoredResourceGroups"] = draw(
            st.lists(st.sampled_from(["example.com", "foo.io"]), unique=True)
        )
    return args


def _rows(data: st.DataObject, n: int) -> np.ndarray[Any, np.dtype[np.intp]]:
    """A random subset of the rows in random order (the runtime scores feasible rows only)."""
    perm = data.draw(st.permutations(list(range(n))))
    return np.array(perm[: data.draw(st.integers(0, n))], dtype=np.intp)


@SETTINGS
@given(cluster=clusters(), args=fit_args(), data=st.data())
def test_fit_batch_matches_per_node(
    cluster: tuple[Snapshot, PodInfo], args: dict[str, Any], data: st.DataObject
) -> None:
    snap, pod = cluster
    fit = Fit(FitArgs.parse("NodeResourcesFit", args))
    state = CycleState()
    fit.pre_filter(state, pod, snap)
    mask = fit.filter_batch(state, pod, snap)
    assert mask.shape == (snap.n,)
    for i, ni in enumerate(snap.node_infos):
        st_ = fit.filter(state, pod, ni)
        assert bool(mask[i]) == (st_ is None), (ni.name, st_)
    rows = _rows(data, snap.n)
    batch = fit.score_batch(state, pod, snap, rows)
    assert batch.tolist() == [fit.score(state, pod, snap.node_infos[r]) for r in rows]
    # The FitError's per-node reasons, computed for many rows at once, equal filter's.
    statuses = fit.filter_statuses(state, pod, snap, rows)
    for r, got in zip(rows.tolist(), statuses, strict=True):
        want = fit.filter(state, pod, snap.node_infos[r])
        if want is None:
            assert got is None
        else:
            assert got is not None
            assert (got.code, got.reasons) == (want.code, want.reasons)


@SETTINGS
@given(cluster=clusters(), data=st.data())
def test_balanced_batch_matches_per_node(
    cluster: tuple[Snapshot, PodInfo], data: st.DataObject
) -> None:
    snap, pod = cluster
    names = data.draw(st.lists(st.sampled_from(RESOURCE_NAMES), unique=True, max_size=5))
    plugin = BalancedAllocation(
        BalancedAllocationArgs.parse(
            "NodeResourcesBalancedAllocation", {"resources": [{"name": n} for n in names]}
        )
    )
    state = CycleState()
    plugin.pre_score(state, pod, snap.node_infos)
    rows = _rows(data, snap.n)
    batch = plugin.score_batch(state, pod, snap, rows)
    per_node = [plugin.score(state, pod, snap.node_infos[r]) for r in rows]
    assert batch.tolist() == per_node
    assert all(0 <= s <= 100 for s in per_node)


@SETTINGS
@given(cluster=clusters(), data=st.data())
def test_image_locality_batch_matches_per_node(
    cluster: tuple[Snapshot, PodInfo], data: st.DataObject
) -> None:
    snap, pod = cluster
    plugin = ImageLocality(None, Handle(snapshot=snap))
    rows = _rows(data, snap.n)
    batch = plugin.score_batch(CycleState(), pod, snap, rows)
    per_node = [plugin.score(CycleState(), pod, snap.node_infos[r]) for r in rows]
    assert batch.tolist() == per_node
    assert all(0 <= s <= 100 for s in per_node)


@st.composite
def changing_clusters(draw: st.DrawFn) -> tuple[Any, Snapshot, PodInfo, list[PodInfo]]:
    """A cluster through the real cache, plus pods to add to it one by one afterwards."""
    from ksched.cache import Cache

    n = draw(st.integers(1, 6))
    dense = draw(st.booleans())
    cache = Cache()
    for i in range(n):
        cache.add_node(draw(nodes(f"node{i}", dense)))
    for _ in range(draw(st.integers(0, 6))):
        cache.add_pod(draw(pods(node=f"node{draw(st.integers(0, n - 1))}")))
    snap = Snapshot()
    cache.update_snapshot(snap)
    later = [
        draw(pods(node=f"node{draw(st.integers(0, n - 1))}"))
        for _ in range(draw(st.integers(1, 6)))
    ]
    return cache, snap, draw(pods()), later


@SETTINGS
@given(cluster=changing_clusters(), args=fit_args())
def test_cached_columns_follow_changed_rows(
    cluster: tuple[Any, Snapshot, PodInfo, list[PodInfo]],
    args: dict[str, Any],
) -> None:
    """Filter masks and scores kept per pod request stay equal to the per-node forms as
    the snapshot's rows change (row-by-row updates through the change log)."""
    cache, snap, pod, later = cluster
    fit = Fit(FitArgs.parse("NodeResourcesFit", args))
    balanced = BalancedAllocation(
        BalancedAllocationArgs.parse("NodeResourcesBalancedAllocation", {})
    )
    image = ImageLocality(None, Handle(snapshot=snap))
    # An identical pod (a replica) shares the cached columns; the pod itself is reused too.
    replica = PodInfo(pod.pod, pod.raw)

    def check(p: PodInfo) -> None:
        state = CycleState()
        fit.pre_filter(state, p, snap)
        balanced.pre_score(state, p, snap.node_infos)
        mask = fit.filter_batch(state, p, snap)
        assert [bool(m) for m in mask] == [
            fit.filter(state, p, ni) is None for ni in snap.node_infos
        ]
        rows = np.arange(snap.n, dtype=np.intp)[::-1]
        for plugin in (fit, balanced, image):
            batch = plugin.score_batch(state, p, snap, rows)
            assert batch.tolist() == [plugin.score(state, p, snap.node_infos[r]) for r in rows]

    check(pod)
    epoch = snap.epoch
    for extra in later:
        cache.add_pod(extra)
        cache.update_snapshot(snap)
        assert snap.epoch == epoch  # rows replaced, not rebuilt: the incremental path
        check(replica)
        check(pod)
