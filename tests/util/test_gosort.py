"""``sort_slice`` against Go itself: the cases in data/gosort_cases.json were produced by
Go's ``sort.Slice`` (program: data/gosort_cases.go.txt) with a comparator that is not a
strict weak order, the kind upstream's MoreImportantPod is on unstarted pods. Any other
algorithm, or the same one asking in another order, gives other permutations and call
counts. Converter from the Go program's output: each case becomes
``{"keys", "ties" ("0"/"1" per item), "out" (ids in sorted order), "calls"}``."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from ksched.util.gosort import sort_slice

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "gosort_cases.json").read_text()
)


def test_the_recorded_cases_cover_every_branch_of_pdqsort() -> None:
    sizes = {len(c["keys"]) for c in CASES}
    assert {0, 1, 12, 13, 50, 257} <= sizes  # insertion sort, pdqsort, ninther pivots
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"n{len(c['keys'])}-{c['calls']}")
def test_same_permutation_and_same_questions_as_go(case: dict[str, Any]) -> None:
    items = list(range(len(case["keys"])))
    keys, ties = case["keys"], case["ties"]
    calls = 0

    def less(a: int, b: int) -> bool:
        nonlocal calls
        calls += 1
        if keys[a] != keys[b]:
            return bool(keys[a] < keys[b])
        return ties[b] == "1"

    sort_slice(items, less)
    assert items == case["out"]
    assert calls == case["calls"]


@pytest.mark.parametrize("n", [0, 1, 7, 12, 13, 60, 300])
def test_a_strict_order_sorts(n: int) -> None:
    rng = random.Random(n)
    data = [rng.randrange(50) for _ in range(n)]
    sort_slice(data, lambda a, b: a < b)
    assert data == sorted(data)


def test_short_tie_groups_come_out_reversed() -> None:
    """Insertion sort (up to 12 items) moves each element past every earlier one it is
    "less" than: with "always less" among ties, a tie group ends up reversed."""
    data = [("a", 0), ("b", 1), ("c", 0), ("d", 0)]
    sort_slice(data, lambda x, y: x[1] < y[1] or x[1] == y[1])
    assert data == [("d", 0), ("c", 0), ("a", 0), ("b", 1)]
