"""The snapshot's per-node columns of scalar (extended) resources: kept for the most
recently asked names only, and refreshed on a row replacement for the names that node
has, so pods asking each for a resource of their own (SchedulingWithExtendedResource)
cost neither memory nor time per name ever asked."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework import snapshot as snapshot_mod
from ksched.framework.snapshot import MAX_SCALAR_COLUMNS, Snapshot
from ksched.testing import node_info
from tests.factories import make_node, make_pod


def _res(i: int) -> str:
    return f"foo.com/bar-{i}"


def _snapshot(n: int) -> Snapshot:
    """Node ``i`` has two of ``foo.com/bar-i`` and one of ``foo.com/shared``."""
    return Snapshot(
        [
            node_info(make_node(f"n{i}", allocatable={_res(i): "2", "foo.com/shared": "1"}))
            for i in range(n)
        ]
    )


def _fresh(snap: Snapshot, name: str) -> tuple[list[int], list[int]]:
    """The columns as a new snapshot of the same rows builds them."""
    alloc, req = Snapshot(list(snap.node_infos)).scalar_columns(name)
    return alloc.tolist(), req.tolist()


def _kept(snap: Snapshot, name: str) -> tuple[list[int], list[int]]:
    alloc, req = snap.scalar_columns(name)
    return alloc.tolist(), req.tolist()


def test_replaced_rows_keep_every_kept_column_exact() -> None:
    """Pods added and removed on copies of rows, and a row put back as it was: every kept
    column (the node's own resource, another node's, one no node has) equals a fresh
    build, including a resource the old row requested and the new one does not."""
    snap = _snapshot(4)
    names = [_res(0), _res(1), _res(3), "foo.com/shared", "foo.com/none"]
    for name in names:
        snap.scalar_columns(name)
    p0 = make_pod("p0", uid="u0", requests={_res(1): "1", "foo.com/shared": "1"})
    p1 = make_pod("p1", uid="u1", requests={_res(1): "1"})
    snap.assume_pod(p0.assumed_on("n1"), "n1")
    snap.assume_pod(p1.assumed_on("n1"), "n1")
    snap.assume_pod(make_pod("p2", uid="u2", requests={_res(3): "2"}).assumed_on("n3"), "n3")
    for name in names:
        assert _kept(snap, name) == _fresh(snap, name), name
    assert _kept(snap, _res(1))[1] == [0, 2, 0, 0]
    # put back: the restored rows request nothing, the kept columns say 0 again
    snap.forget_pod(make_pod("p2", uid="u2"))
    snap.forget_pod(p1)
    snap.forget_pod(p0)
    for name in names:
        assert _kept(snap, name) == _fresh(snap, name), name
    assert _kept(snap, _res(1))[1] == [0, 0, 0, 0]
    assert _kept(snap, "foo.com/shared") == ([1, 1, 1, 1], [0, 0, 0, 0])


def test_only_the_most_recently_asked_columns_are_kept() -> None:
    """Asking for more names than ``MAX_SCALAR_COLUMNS`` drops the least recently asked;
    one asked again is built afresh and is exact; asking keeps a name recent."""
    n = MAX_SCALAR_COLUMNS + 8
    snap = _snapshot(n)
    first = snap.scalar_columns(_res(0))
    for i in range(1, n):
        snap.scalar_columns(_res(i))
        snap.scalar_columns(_res(0))  # kept recent: never the one dropped
    kept = snap._scalars
    assert len(kept) == MAX_SCALAR_COLUMNS
    assert _res(0) in kept and snap.scalar_columns(_res(0)) is first
    assert _res(1) not in kept and _res(n - 1) in kept
    # a row replaced while a name was not kept: built again, it reflects the change
    snap.assume_pod(make_pod("p", uid="u", requests={_res(1): "1"}).assumed_on("n1"), "n1")
    assert _kept(snap, _res(1)) == _fresh(snap, _res(1))
    assert _kept(snap, _res(1))[1][1] == 1


def test_a_replacement_touches_only_the_nodes_own_resources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refresh of a replaced row visits the names of its old and new NodeInfo, not
    every kept column (the cost that grew with every resource name ever asked)."""
    snap = _snapshot(MAX_SCALAR_COLUMNS)
    for i in range(MAX_SCALAR_COLUMNS):
        snap.scalar_columns(_res(i))
    visited: list[str] = []
    real = snapshot_mod._refresh_scalars

    def spy(cols: Any, which: int, i: int, old: dict[str, int], new: dict[str, int]) -> None:
        visited.extend(old.keys() | new.keys())
        real(cols, which, i, old, new)

    monkeypatch.setattr(snapshot_mod, "_refresh_scalars", spy)
    snap.assume_pod(make_pod("p", uid="u", requests={_res(5): "1"}).assumed_on("n5"), "n5")
    assert set(visited) == {_res(5)}
    assert _kept(snap, _res(5))[1][5] == 1


def test_a_name_first_asked_after_rows_changed_is_built_exact() -> None:
    """Columns of a new name come from the rows known to have it: rows that gained it
    after the first column was built (a pod requesting a resource no node offers, a node
    object that now offers one) are among them."""
    snap = _snapshot(5)
    snap.scalar_columns(_res(0))  # the rows of every name are known from here on
    snap.assume_pod(make_pod("p", uid="u", requests={"foo.com/late": "3"}).assumed_on("n2"), "n2")
    cache_ni = snap.node_infos[4].clone()
    cache_ni.set_node(make_node("n4", allocatable={"foo.com/new": "7"}))
    snap.replace(4, cache_ni)
    assert _kept(snap, "foo.com/late") == _fresh(snap, "foo.com/late") == ([0] * 5, [0, 0, 3, 0, 0])
    assert _kept(snap, "foo.com/new") == _fresh(snap, "foo.com/new")
    assert _kept(snap, "foo.com/new")[0] == [0, 0, 0, 0, 7]
    # n4's own resource is gone with its old node object: 0 everywhere, as built afresh
    assert _kept(snap, _res(4)) == _fresh(snap, _res(4)) == ([0] * 5, [0] * 5)
    assert _kept(snap, "foo.com/shared") == _fresh(snap, "foo.com/shared")
