"""examples/placement-plugin-package: the PlacementCost example of docs/plugins.md ("Pod
groups") ranks placements as the guide says, and the guide quotes its code, entry point and
config as they are."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from ksched.framework.cycle_state import CycleState
from ksched.framework.podgroup import (
    Placement,
    PlacementScore,
    PodGroupAssignments,
    ProposedAssignment,
)
from ksched.framework.registry import ENTRY_POINT_GROUP
from ksched.plugins.topologyaware import TopologyPlacement
from ksched.testing import make_node, make_pod, node_info, pod_info
from tests.plugins.podgroups import FakeState, group_info, handle_with

from ._install import ROOT

PACKAGE = ROOT / "examples" / "placement-plugin-package"
GUIDE = ROOT / "docs" / "plugins.md"


@pytest.fixture
def pc(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The example's module, imported from the source tree as an installed copy would be."""
    import importlib
    import sys

    monkeypatch.syspath_prepend(str(PACKAGE))
    importlib.invalidate_caches()
    yield importlib.import_module("ksched_placementcost")
    for m in [m for m in sys.modules if m.split(".")[0] == "ksched_placementcost"]:
        del sys.modules[m]


def zone_nodes(prices: dict[str, list[str | None]]) -> list[Any]:
    """Two-member-wide zones: ``{"zone": [price of each node, None: no cost label]}``."""
    out = []
    for zone, costs in prices.items():
        for i, cost in enumerate(costs):
            labels = {"zone": zone, **({"cost": cost} if cost is not None else {})}
            out.append(node_info(make_node(f"{zone}-{i}", labels=labels)))
    return out


def fill(placement: Placement, members: int = 2) -> PodGroupAssignments:
    """Members proposed round-robin over the placement's nodes, as a cycle might."""
    nodes = list(placement.nodes)
    return PodGroupAssignments(
        placement,
        [
            ProposedAssignment(
                pod_info(make_pod(f"m{i}")), nodes[i % len(nodes)].name, CycleState()
            )
            for i in range(members)
        ],
    )


def ranked(pc: ModuleType, prices: dict[str, list[str | None]]) -> list[tuple[str, int, int]]:
    """(placement, raw, normalized) best first, with TopologyPlacementGenerator's
    placements of a group constrained to ``zone``."""
    nodes = zone_nodes(prices)
    gen = TopologyPlacement(None, handle_with(FakeState()))
    result, status = gen.generate_placements(
        CycleState(), group_info(topology=["zone"]), Placement("all", nodes)
    )
    assert status is None and result is not None
    plugin = pc.PlacementCost()
    state, group = CycleState(), group_info(topology=["zone"])
    raw = [(p, plugin.score_placement(state, group, fill(p))) for p in result.placements]
    scores = [PlacementScore(p, s) for p, s in raw]
    assert plugin.normalize_placement_score(state, group, scores) is None
    rows = [(p.name, r, s.score) for (p, r), s in zip(raw, scores, strict=True)]
    return sorted(rows, key=lambda row: -row[2])


def test_the_cheapest_zone_wins_and_the_priciest_scores_zero(pc: ModuleType) -> None:
    rows = ranked(pc, {"a": ["0.30", "0.30"], "b": ["0.10", "0.10"], "c": ["0.50", "0.50"]})
    assert rows == [("b", 100, 100), ("a", 300, 50), ("c", 500, 0)]


def test_a_placement_costs_the_mean_price_of_its_members_nodes(pc: ModuleType) -> None:
    rows = ranked(pc, {"a": ["0.10", "0.50"], "b": ["0.20", "0.20"]})
    assert rows == [("b", 200, 100), ("a", 300, 0)]


def test_a_member_on_an_unpriced_node_makes_the_placement_least_preferred(
    pc: ModuleType,
) -> None:
    rows = ranked(
        pc, {"a": ["0.90", "0.90"], "b": ["0.10", None], "c": ["0.20", "x"], "d": ["-1", "1"]}
    )
    assert rows[0] == ("a", 900, 100)
    assert sorted(rows[1:]) == [("b", pc.UNKNOWN, 0), ("c", pc.UNKNOWN, 0), ("d", pc.UNKNOWN, 0)]


def test_equal_prices_score_alike(pc: ModuleType) -> None:
    rows = ranked(pc, {"a": ["0.25", "0.25"], "b": ["0.25", "0.25"]})
    assert [r[2] for r in rows] == [100, 100]


def test_no_members_is_unknown(pc: ModuleType) -> None:
    (node,) = zone_nodes({"a": ["0.10"]})
    empty = PodGroupAssignments(Placement("a", [node]), [])
    assert pc.placement_cost(empty) == pc.UNKNOWN


# ---- the guide quotes the package as it is ----------------------------------------------------


def _section() -> str:
    text = GUIDE.read_text()
    return text.split("## 8. Pod groups (workload-aware scheduling)", 1)[1].split("\n## ", 1)[0]


def _quoted(lang: str, source: str) -> list[str]:
    return re.findall(
        rf"<!-- from: {re.escape(source)} -->\s*```{lang}\n(.*?)```", _section(), re.S
    )


def test_the_guide_quotes_the_plugins_code() -> None:
    (code,) = _quoted("python", "examples/placement-plugin-package/ksched_placementcost/plugin.py")
    assert "def score_placement" in code and "def normalize_placement_score" in code
    assert code in (PACKAGE / "ksched_placementcost" / "plugin.py").read_text()


def test_the_guide_shows_the_packages_entry_point_and_config() -> None:
    (toml,) = _quoted("toml", "examples/placement-plugin-package/pyproject.toml")
    with (PACKAGE / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    shown = tomllib.loads(toml)["project"]
    assert shown["entry-points"] == project["entry-points"]
    assert project["entry-points"][ENTRY_POINT_GROUP] == {
        "PlacementCost": "ksched_placementcost:PlacementCost"
    }
    (config,) = _quoted("yaml", "examples/placement-plugin-package/examples/config.yaml")
    assert yaml.safe_load(config) == yaml.safe_load(
        (PACKAGE / "examples" / "config.yaml").read_text()
    )


def test_the_guide_imports_the_public_names() -> None:
    """The guide shows ``from ksched import ...`` (the package root's names); the file
    imports the same classes from their modules."""
    imports = re.findall(r"^from ksched import \(?([^)]*?)\)?$", _section(), re.M | re.S)
    assert imports
    shown = {n.strip() for line in imports for n in line.replace("\n", " ").split(",")} - {""}
    source = (PACKAGE / "ksched_placementcost" / "plugin.py").read_text()
    for name in shown:
        assert re.search(rf"\bimport .*\b{name}\b", source), name


def test_package_layout(pc: ModuleType) -> None:
    assert Path(pc.__file__ or "").is_relative_to(PACKAGE)
    assert (PACKAGE / "ksched_placementcost" / "py.typed").exists()
    assert pc.PlacementCost.name == "PlacementCost"


ZONES = (
    """apiVersion: v1
kind: List
items:
"""
    + "".join(
        f"""- {{apiVersion: v1, kind: Node, metadata: {{name: {z}-{i}, labels: {{zone: {z}, cost: "{c}"}}}},
   status: {{allocatable: {{cpu: "{cpu}", memory: 16Gi, pods: "10"}}}}}}
"""
        for z, c, cpu in (("a", "5", "2"), ("b", "1", "8"))
        for i in range(2)
    )
    + """- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: train, namespace: ml}
  spec: {schedulingPolicy: {gang: {minCount: 2}},
         schedulingConstraints: {topology: [{key: zone}]}}
"""
    + "".join(
        f"""- apiVersion: v1
  kind: Pod
  metadata: {{name: w{i}, namespace: ml}}
  spec:
    schedulerName: ksched
    schedulingGroup: {{podGroupName: train}}
    containers: [{{name: c, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
"""
        for i in range(2)
    )
)


@pytest.mark.parametrize("with_plugin", [False, True])
def test_placement_cost_moves_the_gang_in_ksched_simulate(
    pc: ModuleType, with_plugin: bool
) -> None:
    """The guide's promise: the plugin, configured as its example config does, changes
    where a gang lands. Without it, NodeResourcesFit's placement score (MostAllocated)
    prefers the small nodes of zone a; with it, the cheap zone b wins."""
    import anyio

    from ksched.config import load_config
    from ksched.features import resolve_feature_gates
    from ksched.plugins import default_registry
    from ksched.sim import Simulation, parse_cluster

    registry = default_registry(entry_points=False)
    registry.register(pc.PlacementCost.name, pc.PlacementCost, "ksched-placementcost")
    gates = resolve_feature_gates(
        ["GenericWorkload=true,TopologyAwareWorkloadScheduling=true"], ["1.37"]
    )
    path = str(PACKAGE / "examples" / "config.yaml") if with_plugin else None
    cfg, _ = load_config(path, set(registry.names()), gates)
    sim = Simulation(parse_cluster(ZONES, "zones.yaml"), cfg, registry, seed=0)
    results = anyio.run(sim.run)
    zones = {(r.node or "-")[0] for r in results}
    assert zones == ({"b"} if with_plugin else {"a"})
