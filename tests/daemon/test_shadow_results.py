"""How shadow mode classes a binding against ksched's decision: a node ksched scored as
high as its own choice is a ``tie``, never a ``disagree``."""

from __future__ import annotations

import pytest

from ksched.daemon.shadow import RESULTS, Decision, _bound_result


def _decision(node: str | None, totals: dict[str, int | None]) -> Decision:
    d = Decision(node, "" if node else "0/3 nodes are available", 0.0)
    d.scores = {n: {"total": t, "scores": {}} for n, t in totals.items()}
    d.rejected = {"full": {"NodeResourcesFit": "Unschedulable: Insufficient cpu"}}
    return d


@pytest.mark.parametrize(
    ("node", "totals", "there", "want"),
    [
        ("a", {"a": 445, "b": 445, "c": 300}, "a", "agree"),
        ("a", {"a": 445, "b": 445, "c": 300}, "b", "tie"),
        ("a", {"a": 445, "b": 445, "c": 300}, "c", "disagree"),  # scored lower here
        ("a", {"a": 445, "b": 445, "c": 300}, "full", "disagree"),  # infeasible here
        ("a", {"a": 445, "b": 445, "c": 300}, "elsewhere", "disagree"),  # not evaluated
        ("a", {"a": None}, "b", "disagree"),  # the only feasible node: nothing to tie with
        (None, {}, "a", "unschedulable_here"),
    ],
)
def test_bound_result(
    node: str | None, totals: dict[str, int | None], there: str, want: str
) -> None:
    assert want in RESULTS
    assert _bound_result(_decision(node, totals), there) == want
