"""The snapshot's part in the pod-group cycle (upstream's Snapshot.AssumePod/ForgetPod and
AssumePlacement/ForgetPlacement/ListNodesInPlacement): a simulated pod on a copy of its
node's row, undone in LIFO order; a placement restricting the rows a cycle looks at."""

from __future__ import annotations

import numpy as np
import pytest

from ksched.framework.podgroup import Placement
from ksched.framework.snapshot import Snapshot
from ksched.testing import node_info
from tests.factories import make_node, make_pod


def _snapshot(n: int = 3) -> Snapshot:
    return Snapshot([node_info(make_node(f"n{i}", cpu="4")) for i in range(n)])


def test_an_assumed_pod_counts_on_a_copy_of_its_row_until_forgotten() -> None:
    snap = _snapshot()
    before = list(snap.node_infos)
    pod = make_pod("p", cpu="1", uid="u-p").assumed_on("n1")
    other = make_pod("q", cpu="2", uid="u-q").assumed_on("n1")
    snap.assume_pod(pod, "n1")
    snap.assume_pod(other, "n1")
    assert snap.req_cpu.tolist() == [0, 3000, 0]
    assert before[1].requested.milli_cpu == 0  # the cache's clone is untouched
    assert snap.node_infos[1] is not before[1] and snap.assumed_count == 2
    with pytest.raises(KeyError, match="not the last one assumed"):
        snap.forget_pod(pod)
    snap.forget_pod(other)
    snap.forget_pod(pod)
    assert snap.node_infos == before and snap.req_cpu.tolist() == [0, 0, 0]
    assert snap.assumed_count == 0
    # every change went through the change log (per-row caches see it)
    assert snap.changed_rows(snap.epoch, 0) == [1, 1, 1, 1]


def test_a_placement_restricts_the_rows_and_forgetting_it_restores_them() -> None:
    snap = _snapshot(4)
    assert snap.rows_in_placement() is snap.all_rows and snap.placement is None
    nodes = (snap.node_infos[3], snap.node_infos[1])
    p = Placement("two", nodes)
    snap.assume_placement(p)
    assert snap.placement is p
    assert snap.rows_in_placement().tolist() == [3, 1]  # the placement's order
    assert list(snap.nodes_in_placement()) == list(nodes)
    assert snap.in_placement(1) and not snap.in_placement(0)
    assert snap.placement_mask is not None
    assert snap.placement_mask.tolist() == [False, True, False, True]
    snap.forget_placement()
    assert snap.placement_mask is None and snap.in_placement(0)
    assert np.array_equal(snap.rows_in_placement(), snap.all_rows)
    assert list(snap.nodes_in_placement()) == snap.node_infos


def test_a_placement_of_every_node_is_no_placement() -> None:
    snap = _snapshot(2)
    snap.assume_placement(Placement("all", tuple(snap.node_infos)))
    assert snap.placement is None


def test_a_placement_must_use_the_snapshots_own_nodes() -> None:
    snap = _snapshot(2)
    with pytest.raises(KeyError, match="node n9 in placement is not present in snapshot"):
        snap.assume_placement(Placement("x", (node_info(make_node("n9")),)))
    with pytest.raises(KeyError, match="not the same instance as in the snapshot"):
        snap.assume_placement(Placement("x", (snap.node_infos[0].clone(),)))
    assert snap.placement is None


def test_a_rebuild_drops_what_a_cycle_left() -> None:
    snap = _snapshot(2)
    snap.assume_pod(make_pod("p", cpu="1", uid="u").assumed_on("n0"), "n0")
    snap.assume_placement(Placement("x", (snap.node_infos[0],)))
    snap.rebuild([node_info(make_node("n0"))])
    assert snap.assumed_count == 0 and snap.placement is None
