"""TopologyPlacementGenerator: upstream's TestGeneratePlacements (topology_placement_test.go,
the PodGroup cases; CompositePodGroup is out of scope) and the edges around them."""

from __future__ import annotations

from ksched.api.objects import Node
from ksched.framework.cycle_state import CycleState
from ksched.framework.podgroup import Placement
from ksched.framework.status import Code
from ksched.plugins import BUILTIN_PLUGINS, builtin_plugin
from ksched.plugins.topologyaware import TopologyPlacement
from tests.factories import make_node, make_node_info, make_snapshot
from tests.plugins.podgroups import FakeState, group_info, handle_with, scheduled_pod

PARENT = "test-placement"


def node(name: str, **labels: str) -> Node:
    return make_node(name, labels=labels)


def generate(
    topology: list[str] | None,
    placement_nodes: list[Node],
    other_nodes: list[Node] = (),  # type: ignore[assignment]
    scheduled: dict[str, str] | None = None,
) -> tuple[dict[str, list[str]] | None, Code, str, list[Placement]]:
    """Run the plugin on a parent placement of ``placement_nodes`` with the snapshot
    holding those and ``other_nodes``; ``scheduled``: member pod -> its node. Returns the
    placements by name (their node names), the status code and message, the placements."""
    snap = make_snapshot([*placement_nodes, *other_nodes])
    state = FakeState(assigned=[scheduled_pod(p, n) for p, n in (scheduled or {}).items()])
    plugin = TopologyPlacement(None, handle_with(state, snapshot=snap))
    parent = Placement(PARENT, [make_node_info(n) for n in placement_nodes])
    result, status = plugin.generate_placements(CycleState(), group_info(topology=topology), parent)
    if status is not None and not status.is_success():
        assert result is None
        return None, status.code, status.message(), []
    assert result is not None
    got = {p.name: [ni.name for ni in p.nodes] for p in result.placements}
    assert len(got) == len(result.placements)  # one placement per name
    return got, Code.SUCCESS, "", result.placements


DOMAIN_NODES = [
    node("node0", topology2="d1"),
    node("node1", topology2="d4"),
    node("node2", topology1="d1"),
    node("node3", topology1="d2"),
    node("node4", topology1="d1"),
    node("node5", topology1="d3"),
]


def test_without_constraint_returns_the_parent_placement_itself() -> None:
    snap_nodes = [node("node1"), node("node2", foo="bar")]
    got, code, _, _ = generate(None, snap_nodes, [node("node3")])
    assert code == Code.SUCCESS
    assert got == {PARENT: ["node1", "node2"]}


def test_without_constraint_the_parent_object_is_returned_unchanged() -> None:
    parent = Placement(PARENT, [make_node_info(node("node1"))])
    plugin = TopologyPlacement(None, handle_with(FakeState()))
    result, status = plugin.generate_placements(CycleState(), group_info(), parent)
    assert status is None and result is not None
    assert result.placements == [parent] and result.placements[0] is parent


def test_empty_topology_list_is_no_constraint() -> None:
    got, _, _, _ = generate([], [node("node1", zone="a")])
    assert got == {PARENT: ["node1"]}


def test_one_placement_per_domain_named_by_the_label_value() -> None:
    got, code, _, placements = generate(["topology1"], DOMAIN_NODES)
    assert code == Code.SUCCESS
    assert got == {"d1": ["node2", "node4"], "d2": ["node3"], "d3": ["node5"]}
    # ksched's order: domains as they first appear among the parent's nodes
    assert [p.name for p in placements] == ["d1", "d2", "d3"]


def test_nodes_of_the_placement_are_the_parents_node_infos() -> None:
    parent = Placement(PARENT, [make_node_info(n) for n in DOMAIN_NODES])
    plugin = TopologyPlacement(None, handle_with(FakeState(), snapshot=make_snapshot(DOMAIN_NODES)))
    result, _ = plugin.generate_placements(CycleState(), group_info(topology=["topology1"]), parent)
    assert result is not None
    assert result.placements[0].nodes[0] is parent.nodes[2]


def test_without_matching_topology_label_returns_no_placement() -> None:
    got, code, _, _ = generate(["topology3"], DOMAIN_NODES)
    assert code == Code.SUCCESS
    assert got == {}


def test_empty_parent_placement_returns_no_placement() -> None:
    got, code, _, _ = generate(["zone"], [])
    assert (got, code) == ({}, Code.SUCCESS)


def test_an_empty_label_value_is_a_domain() -> None:
    got, _, _, _ = generate(["zone"], [node("a", zone=""), node("b", zone="z"), node("c")])
    assert got == {"": ["a"], "z": ["b"]}


def test_only_the_first_topology_constraint_counts() -> None:
    got, _, _, _ = generate(["topology1", "topology2"], DOMAIN_NODES)
    assert got is not None and set(got) == {"d1", "d2", "d3"}


def test_pods_already_scheduled_in_one_domain_pin_the_group_to_it() -> None:
    got, code, _, _ = generate(
        ["topology"],
        [node("node0", topology="d2"), node("node1", topology="d1")],
        [node("node2", topology="d1"), node("node3", topology="d1")],
        {"pod0": "node2", "pod1": "node3"},
    )
    assert code == Code.SUCCESS
    assert got == {"d1": ["node1"]}


def test_pinned_domain_absent_from_the_parent_placement_returns_no_placement() -> None:
    got, code, _, _ = generate(
        ["topology"],
        [node("node0", topology="d2")],
        [node("node2", topology="d1"), node("node3", topology="d1")],
        {"pod0": "node2", "pod1": "node3"},
    )
    assert (got, code) == ({}, Code.SUCCESS)


def test_pinned_to_the_empty_domain() -> None:
    got, _, _, _ = generate(["zone"], [node("a", zone=""), node("b", zone="z")], [], {"pod0": "a"})
    assert got == {"": ["a"]}


def test_scheduled_pods_in_conflicting_domains_fail_with_an_error() -> None:
    _, code, msg, _ = generate(
        ["topology"],
        [node("node0", topology="d2"), node("node1", topology="d1")],
        [node("node2", topology="d0"), node("node3", topology="d1")],
        {"pod0": "node2", "pod1": "node3"},
    )
    assert code == Code.ERROR
    assert msg == (
        "cannot determine domain for already scheduled pods: "
        "more than 1 domain found for pod group: d0, d1"
    )


def test_scheduled_pod_on_a_node_outside_the_snapshot_fails_with_an_error() -> None:
    _, code, msg, _ = generate(
        ["topology"],
        [node("node0", topology="d2"), node("node1", topology="d1")],
        [node("node2", topology="d1"), node("node3", topology="d1")],
        {"pod0": "node2", "pod1": "node4"},
    )
    assert code == Code.ERROR
    assert msg == (
        "cannot determine domain for already scheduled pods: getting node for pod "
        'default/pod1: nodeinfo not found for node name "node4"'
    )


def test_scheduled_pod_on_a_node_without_the_label_fails_with_an_error() -> None:
    _, code, msg, _ = generate(
        ["topology"], [node("node1", topology="d2")], [node("node2", foo="bar")], {"pod0": "node2"}
    )
    assert code == Code.ERROR
    assert msg == (
        "cannot determine domain for already scheduled pods: "
        "no topology domain found for pod default/pod0"
    )


def test_assumed_members_pin_the_group_like_bound_ones() -> None:
    nodes = [node("a", zone="x"), node("b", zone="y")]
    state = FakeState(assumed=[scheduled_pod("p", "b")])
    plugin = TopologyPlacement(None, handle_with(state, snapshot=make_snapshot(nodes)))
    parent = Placement(PARENT, [make_node_info(n) for n in nodes])
    result, _ = plugin.generate_placements(CycleState(), group_info(topology=["zone"]), parent)
    assert result is not None and [p.name for p in result.placements] == ["y"]


def test_a_group_the_snapshot_does_not_know_fails_with_upstreams_error() -> None:
    plugin = TopologyPlacement(None, handle_with(None, snapshot=make_snapshot([])))
    parent = Placement(PARENT, [])
    result, status = plugin.generate_placements(CycleState(), group_info(topology=["z"]), parent)
    assert result is None and status is not None and status.code == Code.ERROR
    assert status.message() == "pod group state not found for pod group default/root"


def test_registered_as_a_builtin_placement_generator() -> None:
    from ksched.framework.interface import PlacementGeneratePlugin

    assert builtin_plugin("TopologyPlacementGenerator") is TopologyPlacement
    assert "TopologyPlacementGenerator" in BUILTIN_PLUGINS
    assert issubclass(TopologyPlacement, PlacementGeneratePlugin)
    assert TopologyPlacement.generate_placements is not PlacementGeneratePlugin.generate_placements
