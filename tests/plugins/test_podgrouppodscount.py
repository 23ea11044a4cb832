"""PodGroupPodsCount: upstream's TestScorePlacement and TestNormalizePlacementScore
(podgroup_pods_count_test.go, the PodGroup cases) and the edges around them."""

from __future__ import annotations

import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import PlacementScorePlugin
from ksched.framework.podgroup import (
    Placement,
    PlacementScore,
    PodGroupAssignments,
    ProposedAssignment,
)
from ksched.framework.status import Code, StatusError
from ksched.plugins import builtin_plugin
from ksched.plugins.podgrouppodscount import NO_PODS, PodGroupPodsCount
from tests.factories import make_pod
from tests.plugins.podgroups import FakeState, group_info, handle_with, scheduled_pod

PLACEMENT = Placement("p", [])


def proposed(n: int) -> PodGroupAssignments:
    return PodGroupAssignments(
        PLACEMENT,
        [
            ProposedAssignment(make_pod(f"proposed-pod-{i}"), f"node{i}", CycleState())
            for i in range(1, n + 1)
        ],
    )


@pytest.mark.parametrize(
    ("assigned", "assumed", "want"),
    [
        (["node2", "node3"], ["node1"], 5),  # 1 assumed + 2 assigned + 2 proposed
        (["node1"], [], 3),  # no assumed pods
        ([], ["node1"], 3),  # no assigned pods
        ([], [], 2),  # only the 2 proposed
    ],
    ids=["assigned and assumed", "no assumed", "no assigned", "neither"],
)
def test_score_counts_scheduled_and_proposed_members(
    assigned: list[str], assumed: list[str], want: int
) -> None:
    state = FakeState(
        assigned=[scheduled_pod(f"assigned-pod{i}", n) for i, n in enumerate(assigned)],
        assumed=[scheduled_pod(f"assumed-pod{i}", n) for i, n in enumerate(assumed)],
    )
    plugin = PodGroupPodsCount(None, handle_with(state))
    assert plugin.score_placement(CycleState(), group_info(), proposed(2)) == want


def test_score_of_a_group_the_snapshot_does_not_know_is_an_error() -> None:
    plugin = PodGroupPodsCount(None, handle_with(None))
    with pytest.raises(StatusError) as e:
        plugin.score_placement(CycleState(), group_info(), proposed(1))
    assert e.value.status.code == Code.ERROR
    assert e.value.status.message() == "pod group state not found for pod group default/root"


def test_score_reads_the_state_of_its_own_group() -> None:
    handle = handle_with(FakeState(assigned=[scheduled_pod("x", "n")]), key="other/g")
    handle.snapshot.test_states["other/root"] = FakeState()  # type: ignore[attr-defined]
    plugin = PodGroupPodsCount(None, handle)
    assert plugin.score_placement(CycleState(), group_info("g", "other"), proposed(1)) == 2


@pytest.mark.parametrize(
    ("scores", "want"),
    [
        # score * (100 - 0) / max, in integer division: 10*100/110 = 9, 50*100/110 = 45
        ([10, 50, 110], [9, 45, 100]),
        ([50, 50], [100, 100]),
        ([50], [100]),
        # a low outlier is not spread over the range: only the max matters
        ([11, 100, 101, 102], [10, 98, 99, 100]),
        ([0, 4], [0, 100]),
    ],
    ids=["distinct", "equal", "single", "far minimum", "zero among others"],
)
def test_normalize_divides_by_the_best_count(scores: list[int], want: list[int]) -> None:
    ps = [PlacementScore(PLACEMENT, s) for s in scores]
    assert PodGroupPodsCount().normalize_placement_score(CycleState(), group_info(), ps) is None
    assert [p.score for p in ps] == want


@pytest.mark.parametrize("scores", [[0, 0], []], ids=["zero scores", "no placements"])
def test_normalize_without_any_member_placed_is_an_error(scores: list[int]) -> None:
    ps = [PlacementScore(PLACEMENT, s) for s in scores]
    st = PodGroupPodsCount().normalize_placement_score(CycleState(), group_info(), ps)
    assert st is not None and st.code == Code.ERROR
    assert st.message() == NO_PODS
    assert NO_PODS == "no pods from pod group are assigned to any of the candidate placements"


def test_registered_as_a_builtin_placement_scorer_with_normalization() -> None:
    cls = builtin_plugin("PodGroupPodsCount")
    assert cls is PodGroupPodsCount
    assert issubclass(cls, PlacementScorePlugin)
    assert PodGroupPodsCount.normalize_placement_score is not None
