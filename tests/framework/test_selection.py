"""The one node-selection routine: the nodes a cycle takes from known verdicts are the ones
a node-by-node round-robin walk (upstream's ``findNodesThatPassFilters``) finds."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ksched.framework.selection import NodeRotation, passing_in_rotation


def _walk(passing: list[bool], start: int, num_to_find: int) -> tuple[list[int], int]:
    """Node by node from ``start``: the first ``num_to_find`` that pass, and how far the walk
    went: to the last of them when more would have passed, else through every node."""
    n = len(passing)
    order = [(start + k) % n for k in range(n)]
    positions = [k for k, row in enumerate(order) if passing[row]]
    found = [order[k] for k in positions[:num_to_find]]
    return found, positions[num_to_find - 1] + 1 if len(positions) > num_to_find else n


@given(
    passing=st.lists(st.booleans(), min_size=1, max_size=300),
    start=st.integers(0, 10_000),
    num_to_find=st.integers(1, 300),
)
def test_passing_in_rotation_is_the_round_robin_walk(
    passing: list[bool], start: int, num_to_find: int
) -> None:
    n = len(passing)
    rows, processed = passing_in_rotation(np.array(passing), start % n, n, num_to_find)
    assert (rows.tolist(), processed) == _walk(passing, start % n, num_to_find)


def test_rotation_advances_past_the_processed_nodes_and_a_copy_is_independent() -> None:
    r = NodeRotation()
    r.advance(7, 10)
    assert r.next_start == 7
    r.advance(5, 10)
    assert r.next_start == 2  # wraps around the snapshot's nodes
    dry = r.copy()
    dry.advance(3, 10)
    assert (r.next_start, dry.next_start) == (2, 5)
    r.advance(4, 0)  # no nodes: nothing to move past
    assert r.next_start == 2
