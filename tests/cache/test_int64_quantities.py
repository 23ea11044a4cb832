"""Quantities at the int64 boundaries through the cache and the snapshot (issue 16, item 1).

A pod bound by nodeName with ``requests.cpu: 1e18``, or a node reporting
``allocatable.cpu: 8Ei``, used to make ``Snapshot._fill`` raise OverflowError on every
cycle. Upstream converts each quantity saturating (``MilliValue``/``Value``) and adds
them into NodeInfo with Go's int64 ``+=``, which wraps round; ksched does the same.
"""

from __future__ import annotations

import pytest

from ksched.cache import Cache
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import NodeInfo
from tests.factories import make_node, make_pod

MAX64, MIN64 = 2**63 - 1, -(2**63)
GPU = "example.com/gpu"


def snapshot_row(cache: Cache, snap: Snapshot, name: str) -> dict[str, int]:
    cache.update_snapshot(snap)
    i = snap.row(name)
    assert i is not None
    ni = snap.node_infos[i]
    cols = {
        "alloc_cpu": int(snap.alloc_cpu[i]),
        "alloc_mem": int(snap.alloc_mem[i]),
        "alloc_pods": int(snap.alloc_pods[i]),
        "req_cpu": int(snap.req_cpu[i]),
        "req_mem": int(snap.req_mem[i]),
        "nz_cpu": int(snap.nz_cpu[i]),
        "gpu_alloc": int(snap.scalar_columns(GPU)[0][i]),
        "gpu_req": int(snap.scalar_columns(GPU)[1][i]),
    }
    # the columns are the NodeInfo's own values
    assert cols["alloc_cpu"] == ni.allocatable.milli_cpu
    assert cols["req_cpu"] == ni.requested.milli_cpu
    assert cols["nz_cpu"] == ni.non_zero_requested.milli_cpu
    return cols


@pytest.mark.parametrize(
    ("cpu", "memory", "want_cpu", "want_mem"),
    [
        ("1e18", "1e18", MAX64, 10**18),
        ("9223372036854775807m", "9223372036854775807", MAX64, MAX64),
        ("8Ei", "8Ei", MAX64, MAX64),
        ("-1e18", "-8Ei", MIN64, -MAX64),
        ("1n", "1n", 1, 1),
    ],
)
def test_bound_pod_with_extreme_requests(
    cpu: str, memory: str, want_cpu: int, want_mem: int
) -> None:
    cache = Cache()
    cache.add_node(make_node("n", cpu="4", memory="8Gi"))
    hog = make_pod("hog", node_name="n", requests={"cpu": cpu, "memory": memory, GPU: memory})
    cache.add_pod(hog)
    snap = Snapshot()
    row = snapshot_row(cache, snap, "n")
    assert (row["req_cpu"], row["req_mem"], row["nz_cpu"]) == (want_cpu, want_mem, want_cpu)
    assert row["gpu_req"] == want_mem
    cache.remove_pod(hog)
    row = snapshot_row(cache, snap, "n")  # the incremental path
    assert (row["req_cpu"], row["req_mem"], row["gpu_req"]) == (0, 0, 0)


@pytest.mark.parametrize(
    ("alloc", "want_milli", "want_whole"),
    [
        ("8Ei", MAX64, MAX64),
        ("1e18", MAX64, 10**18),
        ("9223372036854775807m", MAX64, 9_223_372_036_854_776),
        ("-1", -1000, -1),
        ("-8Ei", MIN64, -MAX64),
        ("1n", 1, 1),
    ],
)
def test_node_with_extreme_allocatable(alloc: str, want_milli: int, want_whole: int) -> None:
    cache = Cache()
    cache.add_node(make_node("n", cpu=alloc, memory=alloc, allocatable={"pods": alloc, GPU: alloc}))
    snap = Snapshot()
    row = snapshot_row(cache, snap, "n")
    assert row["alloc_cpu"] == want_milli
    assert (row["alloc_mem"], row["alloc_pods"], row["gpu_alloc"]) == (want_whole,) * 3
    # an ordinary node replacing it (UpdateNodeAllocatable) takes the same row
    cache.update_node(make_node("n", cpu="4"))
    assert snapshot_row(cache, snap, "n")["alloc_cpu"] == 4000


def test_sums_wrap_round_like_int64_and_unwind_exactly() -> None:
    """Two pods of 2**63 - 1 millicores: upstream's ``Requested.MilliCPU += ...`` wraps to
    -2 (kube-scheduler then sees room on the node); removing them unwinds it exactly."""
    ni = NodeInfo()
    ni.set_node(make_node("n"))
    pods = [make_pod(f"p{i}", node_name="n", cpu="1e18") for i in range(3)]
    for p in pods:
        ni.add_pod(p)
    # 3 * (2**63 - 1) mod 2**64, as an int64
    assert ni.requested.milli_cpu == MAX64 - 2
    assert ni.non_zero_requested.milli_cpu == MAX64 - 2
    for p in pods[:2]:
        ni.remove_pod(p)
    assert ni.requested.milli_cpu == MAX64
    ni.remove_pod(pods[2])
    assert ni.requested.milli_cpu == 0 and ni.non_zero_requested.milli_cpu == 0
    snap = Snapshot([ni])
    assert int(snap.req_cpu[0]) == 0


def test_many_hogs_on_many_nodes_build_a_snapshot() -> None:
    cache = Cache()
    for i in range(4):
        cache.add_node(make_node(f"n{i}", cpu=["4", "8Ei", "1n", "-1"][i]))
    for i in range(12):
        cache.add_pod(make_pod(f"p{i}", node_name=f"n{i % 4}", cpu=["1e18", "-1e18", "1n"][i % 3]))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.n == 4
    for ni in snap.node_infos:
        for v in (ni.requested.milli_cpu, ni.allocatable.milli_cpu):
            assert MIN64 <= v <= MAX64
