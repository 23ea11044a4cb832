"""The framework's workload-aware points (v1.37 ``RunPlacement*Plugins``,
``RunPodGroupPostFilterPlugins``): how several plugins' answers combine, weights and
normalization, upstream's error texts, the metrics' labels, and which plugin upstream runs at
PlacementFeasible (GangScheduling, with GenericWorkload only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ksched.config import load_config_data
from ksched.features import FeatureGates
from ksched.framework.cycle_state import CycleState
from ksched.framework.podgroup import (
    GeneratePlacementsResult,
    NominatingInfo,
    Placement,
    PlacementProgress,
    PlacementScore,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
)
from ksched.framework.registry import Registry
from ksched.framework.runtime import Framework, FrameworkError
from ksched.framework.status import Code, Status
from ksched.plugins import BUILTIN_PLUGINS, builtin_plugin
from ksched.profile import build_frameworks

# the built-in plugins, but GangScheduling: a fake here
BUILTINS = tuple(n for n in BUILTIN_PLUGINS if n != "GangScheduling")

# -- fakes --------------------------------------------------------------------------------


class Gen:
    name = "Gen"
    answer: Any = None

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.parents: list[Placement] = []

    def generate_placements(
        self, state: CycleState, group: PodGroupInfo, parent: Placement
    ) -> tuple[GeneratePlacementsResult | None, Status | None]:
        self.parents.append(parent)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class Gen2(Gen):
    name = "Gen2"


class Feasible:
    """A PlacementFeasible plugin answering ``answer``; counts its calls."""

    def __init__(self, name: str, answer: Status | None) -> None:
        self.name = name
        self.answer = answer
        self.calls = 0

    def placement_feasible(
        self, state: CycleState, group: PodGroupInfo, progress: PlacementProgress
    ) -> Status | None:
        self.calls += 1
        return self.answer


class GangScheduling:
    name = "GangScheduling"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def placement_feasible(
        self, state: CycleState, group: PodGroupInfo, progress: PlacementProgress
    ) -> Status | None:
        return None


class ByNodes:
    """PlacementScore: 10 per node the placement has; normalized to 100 for the best."""

    name = "ByNodes"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.normalized: list[list[int]] = []

    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> int:
        return 10 * len(assignments.placement.nodes)

    def normalize_placement_score(
        self, state: CycleState, group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        self.normalized.append([s.score for s in scores])
        top = max(s.score for s in scores)
        for s in scores:
            s.score = s.score * 100 // top
        return None


class Flat:
    """PlacementScore: ``value`` for every placement."""

    name = "Flat"
    value = 30

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> int:
        return self.value


class Post:
    """PodGroupPostFilter answering ``answer``."""

    def __init__(self, name: str, answer: tuple[Any, Status | None]) -> None:
        self.name = name
        self.answer = answer
        self.calls = 0

    def pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: Any
    ) -> tuple[Any, Status | None]:
        self.calls += 1
        return self.answer


class Recording:
    """A FrameworkRecorder keeping the extension points' observations."""

    def __init__(self) -> None:
        self.points: list[tuple[str, str]] = []
        self.plugins: list[tuple[str, str, str]] = []

    def plugins_listed(self, profile: str, point: str, plugins: Sequence[str]) -> None:
        return None

    def extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        self.points.append((point, status))

    def plugin(self, point: str, plugin: str, status: str, seconds: float) -> None:
        self.plugins.append((point, plugin, status))

    def evaluated(self, *a: Any) -> None:
        return None

    def sample_plugins(self) -> bool:
        return False

    def permit_waited(self, status: str, seconds: float) -> None:
        return None

    def preemption_attempted(self) -> None:
        return None


def framework(
    plugins: dict[str, Any], *, version: str = "1.37", gates: dict[str, bool] | None = None
) -> Framework:
    reg = Registry()
    for builtin in BUILTINS:
        reg.register(builtin, builtin_plugin(builtin))
    for cls in (Gen, Gen2, GangScheduling, ByNodes, Flat):
        reg.register(cls.name, cls, "tests")
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "ksched",
                "plugins": {
                    "multiPoint": {"disabled": [{"name": "*"}]},
                    "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                    "bind": {"enabled": [{"name": "DefaultBinder"}]},
                    **plugins,
                },
            }
        ],
    }
    g = {"GenericWorkload": True} if gates is None else gates
    cfg, _ = load_config_data(data, "test", None, FeatureGates(version, g))
    return build_frameworks(cfg, reg)["ksched"]


def _group() -> PodGroupInfo:
    from ksched.api.workload import PodGroup

    return PodGroupInfo("default", "g", PodGroup())


def _nodes(n: int) -> tuple[Any, ...]:
    from ksched.testing import node_info
    from tests.factories import make_node

    return tuple(node_info(make_node(f"n{i}")) for i in range(n))


# -- PlacementGenerate -----------------------------------------------------------------------


def test_without_a_generator_all_nodes_are_the_one_placement() -> None:
    fw = framework({})
    nodes = _nodes(3)
    placements, st = fw.run_placement_generate(CycleState(), _group(), nodes)
    assert st.is_success() and len(placements) == 1
    assert list(placements[0].nodes) == list(nodes)


def test_the_generator_gets_all_nodes_as_its_parent_and_none_generated_is_unschedulable() -> None:
    fw = framework({"placementGenerate": {"enabled": [{"name": "Gen"}]}})
    gen = fw.plugins["Gen"]
    nodes = _nodes(2)
    gen.answer = (GeneratePlacementsResult([Placement("x", nodes[:1])]), None)
    placements, st = fw.run_placement_generate(CycleState(), _group(), nodes)
    assert st.is_success() and [p.name for p in placements] == ["x"]
    assert list(gen.parents[0].nodes) == list(nodes)
    gen.answer = (GeneratePlacementsResult([]), None)
    placements, st = fw.run_placement_generate(CycleState(), _group(), nodes)
    assert (st.code, st.message(), st.plugin) == (
        Code.UNSCHEDULABLE,
        "no feasible placements found",
        "Gen",
    )
    gen.answer = (None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no topology"))
    _, st = fw.run_placement_generate(CycleState(), _group(), nodes)
    assert (st.code, st.message(), st.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "no topology",
        "Gen",
    )
    gen.answer = RuntimeError("boom")
    _, st = fw.run_placement_generate(CycleState(), _group(), nodes)
    assert st.code == Code.ERROR and "boom" in st.message()


def test_a_profile_has_at_most_one_placement_generator() -> None:
    with pytest.raises(FrameworkError, match="at most one placement generate plugin"):
        framework({"placementGenerate": {"enabled": [{"name": "Gen"}, {"name": "Gen2"}]}})


# -- PlacementFeasible ------------------------------------------------------------------------


def _feasible(*plugins: Feasible) -> tuple[Framework, Status]:
    fw = framework({})
    rec = Recording()
    fw.record_to(rec)
    fw.placement_feasible_plugins = list(plugins)
    st = fw.run_placement_feasible(CycleState(), _group(), PlacementProgress(1, 0))
    assert rec.points == [("PlacementFeasible", st.code.label)]
    return fw, st


def test_placement_feasible_remembers_a_wait_and_stops_at_unschedulable() -> None:
    a, b = Feasible("A", Status(Code.WAIT, "later")), Feasible("B", None)
    _, st = _feasible(a, b)
    assert (st.code, st.plugin, st.message()) == (Code.WAIT, "A", "later")
    assert b.calls == 1
    a, b = Feasible("A", Status(Code.UNSCHEDULABLE, "never")), Feasible("B", None)
    _, st = _feasible(a, b)
    assert (st.code, st.plugin, st.message()) == (Code.UNSCHEDULABLE, "A", "never")
    assert b.calls == 0
    _, st = _feasible(Feasible("A", None), Feasible("B", None))
    assert st.is_success()


def test_placement_feasible_errors_and_other_codes_are_errors() -> None:
    _, st = _feasible(Feasible("A", Status(Code.ERROR, "boom")))
    assert (st.code, st.plugin, st.message()) == (
        Code.ERROR,
        "A",
        "running PlacementFeasible plugin: boom",
    )
    _, st = _feasible(Feasible("A", Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "x")))
    assert st.message() == (
        "unexpected status from PlacementFeasible plugin: UnschedulableAndUnresolvable"
    )


def test_gang_scheduling_is_the_placement_feasible_plugin_with_generic_workload_only() -> None:
    permit = {"permit": {"enabled": []}, "multiPoint": {"enabled": [{"name": "GangScheduling"}]}}
    on = framework(permit)
    assert [p.name for p in on.placement_feasible_plugins] == ["GangScheduling"]
    assert framework(permit, gates={}).placement_feasible_plugins == []
    assert framework(permit, version="1.36", gates={}).placement_feasible_plugins == []
    # not a config key: nothing else gets there, whatever it implements
    assert framework({}).placement_feasible_plugins == []


# -- PlacementScore ---------------------------------------------------------------------------


def _assignments(*sizes: int) -> list[PodGroupAssignments]:
    return [PodGroupAssignments(Placement(f"p{n}", _nodes(n)), []) for n in sizes]


def test_placement_scores_are_normalized_then_weighted_and_summed() -> None:
    fw = framework(
        {
            "placementScore": {
                "enabled": [{"name": "ByNodes", "weight": 3}, {"name": "Flat", "weight": 2}]
            }
        }
    )
    rec = Recording()
    fw.record_to(rec)
    a = _assignments(1, 2, 4)
    scores, st = fw.run_placement_score(CycleState(), _group(), a, [CycleState()] * 3)
    assert st.is_success()
    assert fw.plugins["ByNodes"].normalized == [[10, 20, 40]]
    # ByNodes normalized 25, 50, 100 (x3), Flat 30 (x2)
    assert [(s.placement.name, s.score) for s in scores] == [
        ("p1", 75 + 60),
        ("p2", 150 + 60),
        ("p4", 300 + 60),
    ]
    assert rec.points == [("PlacementScore", "Success")]


def test_placement_score_errors() -> None:
    fw = framework({"placementScore": {"enabled": [{"name": "Flat"}]}})
    a = _assignments(1)
    _, st = fw.run_placement_score(CycleState(), _group(), a, [])
    assert st.message() == (
        "expected one PlacementCycleState per PodGroupAssignments, got 0 placement states for "
        "1 assignments"
    )
    fw.plugins["Flat"].value = 101
    _, st = fw.run_placement_score(CycleState(), _group(), a, [CycleState()])
    assert st.message() == (
        'applying score defaultWeights on PlacementScore plugins: plugin "Flat" returns an '
        "invalid score 101, it should in the range of [0, 100] after normalizing"
    )


# -- PodGroupPostFilter -----------------------------------------------------------------------


def _post(*plugins: Post, gates: dict[str, bool] | None = None) -> tuple[Any, Status]:
    fw = framework({}, gates=gates)
    fw.pod_group_post_filter_plugins = list(plugins)
    return fw.run_pod_group_post_filter(CycleState(), _group(), lambda: (None, None))


def test_pod_group_post_filter_first_success_wins_else_the_reasons_of_all() -> None:
    res = PodGroupPostFilterResult({"default/p": NominatingInfo("n1")})
    a = Post("A", (None, Status(Code.UNSCHEDULABLE, "a says no")))
    b = Post("B", (res, None))
    got, st = _post(a, b)
    assert got is res and st.is_success()
    a = Post("A", (None, Status(Code.UNSCHEDULABLE, "a says no")))
    b = Post("B", (None, Status(Code.UNSCHEDULABLE, "b says no")))
    got, st = _post(a, b)
    assert got is None
    assert (st.code, st.plugin, st.message()) == (
        Code.UNSCHEDULABLE,
        "A",
        "a says no, b says no",
    )
    a = Post("A", (None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "hopeless")))
    b = Post("B", (res, None))
    _, st = _post(a, b)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and b.calls == 0
    _, st = _post(Post("A", (None, Status(Code.ERROR, "boom"))))
    assert (st.code, st.message()) == (
        Code.ERROR,
        'error in "A" PodGroupPostFilter plugins: boom',
    )
    # none at all: Unschedulable without a reason
    _, st = _post()
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE, "")


def test_pod_group_post_filter_refuses_without_generic_workload() -> None:
    a = Post("A", (None, None))
    _, st = _post(a, gates={})
    assert st.message() == "generic workload feature is disabled, cannot perform PodGroupPostFilter"
    assert a.calls == 0


def test_upstreams_in_tree_pod_group_post_filters_run_where_configured() -> None:
    """DynamicResources and DefaultPreemption extend PodGroupPostFilter, as upstream's; a
    plugin that does not is refused there."""
    fw = framework({"podGroupPostFilter": {"enabled": [{"name": "DynamicResources"}]}})
    assert [p.name for p in fw.pod_group_post_filter_plugins] == ["DynamicResources"]
    with pytest.raises(FrameworkError, match='"Flat" does not extend podGroupPostFilter'):
        framework({"podGroupPostFilter": {"enabled": [{"name": "Flat"}]}})
