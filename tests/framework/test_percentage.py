"""numFeasibleNodesToFind: how many feasible nodes are enough before scoring.

Table from schedule_one_test.go (TestNumFeasibleNodesToFind), plus boundary cases.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.scheduler.schedule_one import (
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
    MIN_FEASIBLE_NODES_TO_FIND,
    num_feasible_nodes_to_find,
)


@pytest.mark.parametrize(
    ("global_pct", "profile_pct", "num_all", "want"),
    [
        pytest.param(None, None, 10, 10, id="not set, nodes number not more than 50"),
        pytest.param(None, 40, 10, 10, id="set profile, nodes number not more than 50"),
        pytest.param(None, None, 1000, 420, id="not set, nodes number more than 50"),
        pytest.param(None, 40, 1000, 400, id="set profile, nodes number more than 50"),
        pytest.param(100, 40, 1000, 400, id="set global and profile, profile wins"),
        pytest.param(40, None, 1000, 400, id="set global, nodes number more than 50"),
        pytest.param(None, None, 6000, 300, id="not set, nodes number more than 50*125"),
        pytest.param(None, 40, 6000, 2400, id="set profile, nodes number more than 50*125"),
        pytest.param(30, None, 500, 150, id="TestFairEvaluationForNodes' 30% of 500"),
    ],
)
def test_upstream_table(
    global_pct: int | None, profile_pct: int | None, num_all: int, want: int
) -> None:
    assert num_feasible_nodes_to_find(profile_pct, global_pct, num_all) == want


@pytest.mark.parametrize(
    ("num_all", "want"),
    [
        (0, 0),
        (1, 1),
        (99, 99),  # fewer than 100 nodes: all of them
        (100, 100),  # 50% of 100 is 50, but at least 100
        (199, 100),
        (200, 100),
        (250, 120),  # 50 - 2 = 48%
        (1250, 500),  # 50 - 10 = 40%
        (5000, 500),  # 50 - 40 = 10%
        (5624, 337),  # 50 - 44 = 6%
        (5625, 281),  # 50 - 45 = 5%
        (6249, 312),  # 50 - 49 = 1% -> clamped to 5%
        (6250, 312),  # 50 - 50 = 0% -> clamped to 5%
        (100_000, 5000),  # negative adaptive percentage -> 5%
    ],
)
def test_adaptive_percentage(num_all: int, want: int) -> None:
    assert num_feasible_nodes_to_find(None, None, num_all) == want
    # An explicit 0 (profile or global) also means adaptive.
    assert num_feasible_nodes_to_find(0, None, num_all) == want
    assert num_feasible_nodes_to_find(None, 0, num_all) == want


def test_profile_zero_is_adaptive_even_with_a_global_value() -> None:
    # Upstream takes the profile's pointer when set, even to 0, then adapts.
    assert num_feasible_nodes_to_find(0, 40, 1000) == 420


def test_fixed_percentage_still_finds_at_least_100() -> None:
    assert num_feasible_nodes_to_find(1, None, 1000) == 100
    assert num_feasible_nodes_to_find(5, None, 1000) == 100
    assert num_feasible_nodes_to_find(11, None, 1000) == 110
    assert num_feasible_nodes_to_find(100, None, 1000) == 1000
    assert num_feasible_nodes_to_find(None, 100, 150) == 150


def test_constants() -> None:
    assert MIN_FEASIBLE_NODES_TO_FIND == 100
    assert MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND == 5


@given(
    st.integers(min_value=0, max_value=200_000),
    st.one_of(st.none(), st.integers(min_value=0, max_value=100)),
    st.one_of(st.none(), st.integers(min_value=0, max_value=100)),
)
def test_properties(num_all: int, profile: int | None, glob: int | None) -> None:
    n = num_feasible_nodes_to_find(profile, glob, num_all)
    if num_all < 100:
        assert n == num_all
    else:
        assert 100 <= n <= num_all
        pct = profile if profile is not None else (glob or 0)
        if pct == 0:
            pct = max(50 - num_all // 125, 5)
        assert n == max(num_all * pct // 100, 100)
