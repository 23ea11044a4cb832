"""DefaultPreemption's victim bookkeeping that changed in v1.37 without a gate: a victim
stops spending PDB budgets at the first one it overdraws (``FilterVictimsWithPDBViolation``),
so a later pod matching a PDB it shares may no longer count as violating."""

from __future__ import annotations

import pytest

from ksched.plugins.defaultpreemption import filter_pods_with_pdb_violation
from tests.plugins.test_defaultpreemption_helpers import FIT, Env, epoch, node, pdb, pod

# "a" matches both budgets and overdraws the empty one first; "b" matches the second only.
PDBS = [
    pdb("empty", match_labels={"x": "1"}, allowed=0),
    pdb("one", match_labels={"y": "1"}, allowed=1),
]
# "a" started first: the more important, so the first whose budgets are looked at.
A = pod("a", node="n0", prio=0, req={"cpu": "1"}, labels={"x": "1", "y": "1"}, start=epoch(1))
B = pod("b", node="n0", prio=0, req={"cpu": "1"}, labels={"y": "1"}, start=epoch(2))


@pytest.mark.parametrize(("stops", "violating"), [(False, ["a", "b"]), (True, ["a"])])
def test_a_pod_overdrawing_one_budget_leaves_its_other_budgets(
    stops: bool, violating: list[str]
) -> None:
    bad, good = filter_pods_with_pdb_violation([A, B], PDBS, first_violation_stops=stops)
    assert [p.name for p in bad] == violating
    assert [p.name for p in good] == [p for p in ("a", "b") if p not in violating]


@pytest.mark.parametrize(("version", "violations"), [("1.36", 2), ("1.37", 1)])
def test_pdb_violations_of_a_node_by_version(version: str, violations: int) -> None:
    env = Env([node("n0", {"cpu": "2", "pods": "10"})], [A, B], [FIT], version=version)
    p = pod("p", prio=1000, req={"cpu": "2"})
    (ni,) = env.snapshot.node_infos
    victims, n, st = env.pl.select_victims_on_node(env.state_for(p), p, ni.clone(), PDBS)
    assert st.is_success() and sorted(v.name for v in victims) == ["a", "b"]
    assert n == violations
