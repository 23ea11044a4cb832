"""PodTopologySpread args (``ValidatePodTopologySpreadArgs`` cases), registration and
queueing hints (upstream ``plugin_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import Node, Pod, decode
from ksched.config import load_config_data
from ksched.features import set_feature_gates
from ksched.framework.handle import Handle
from ksched.framework.interface import ClusterEvent, QueueingHint, extension_points_of
from ksched.framework.registry import PluginArgsError
from ksched.framework.types import PodInfo
from ksched.plugins import default_registry
from ksched.plugins.podtopologyspread import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    PodTopologySpread,
    PodTopologySpreadArgs,
)
from ksched.profile import build_frameworks
from tests.plugins.test_podtopologyspread_common import (
    BAR,
    FOO,
    UNSCHEDULABLE_TAINT,
    mk_node,
    mk_pod,
    plugin,
    spread,
)

NAME = "PodTopologySpread"


def _c(
    max_skew: Any = 1, key: Any = "node", when: Any = "DoNotSchedule", **kw: Any
) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **kw}


# ---- args -----------------------------------------------------------------------------------

VALID = [
    (
        "valid config",
        {
            "defaultingType": "List",
            "defaultConstraints": [_c(1, "node"), _c(2, "zone", "ScheduleAnyway")],
        },
    ),
    ("list default constraints, no constraints", {"defaultingType": "List"}),
    ("system default constraints", {"defaultingType": "System"}),
    ("defaulted to System", {}),
]


@pytest.mark.parametrize(("name", "data"), VALID, ids=[v[0] for v in VALID])
def test_valid_args(name: str, data: dict[str, Any]) -> None:
    args = PodTopologySpreadArgs.parse(NAME, data)
    assert args.defaulting_type == data.get("defaultingType", "System")
    assert len(args.default_constraints) == len(data.get("defaultConstraints", []))


INVALID = [
    (
        "maxSkew less than zero",
        {"defaultingType": "List", "defaultConstraints": [_c(-1)]},
        "args.defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)",
    ),
    (
        "maxSkew missing",
        {
            "defaultingType": "List",
            "defaultConstraints": [{"topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}],
        },
        "args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
    ),
    (
        "empty topology key",
        {"defaultingType": "List", "defaultConstraints": [_c(1, "")]},
        "args.defaultConstraints[0].topologyKey: Required value: can not be empty",
    ),
    (
        "whenUnsatisfiable is empty",
        {"defaultingType": "List", "defaultConstraints": [_c(1, "node", "")]},
        "args.defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
    ),
    (
        "whenUnsatisfiable contains unsupported action",
        {"defaultingType": "List", "defaultConstraints": [_c(1, "node", "unknown action")]},
        'args.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "unknown action": '
        'supported values: "DoNotSchedule", "ScheduleAnyway"',
    ),
    (
        "duplicated constraints",
        {"defaultingType": "List", "defaultConstraints": [_c(1, "node"), _c(2, "node")]},
        'args.defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"',
    ),
    (
        "label selector present",
        {
            "defaultingType": "List",
            "defaultConstraints": [_c(1, "key", labelSelector={"matchLabels": {"a": "b"}})],
        },
        "args.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a "
        "selector, as they deduced for each pod",
    ),
    (
        "wrong constraints",
        {"defaultingType": "unknown"},
        'args.defaultingType: Unsupported value: "unknown": supported values: "System", "List"',
    ),
    (
        "system default constraints, but has constraints",
        {"defaultingType": "System", "defaultConstraints": [_c(1, "key")]},
        'args.defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
    ),
    (
        "constraints without a defaulting type default to System",
        {"defaultConstraints": [_c(1, "key")]},
        'args.defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
    ),
    (
        "invalid topology key",
        {"defaultingType": "List", "defaultConstraints": [_c(1, "a/b/c")]},
        'args.defaultConstraints[0].topologyKey: Invalid value: "a/b/c": a qualified name',
    ),
    ("unknown field", {"defaultingType": "List", "extra": 1}, "args.extra: unknown field"),
    (
        "unknown constraint field",
        {"defaultingType": "List", "defaultConstraints": [_c(1, "node", bogus=True)]},
        "args.defaultConstraints[0].bogus: unknown field",
    ),
    (
        "wrong type",
        {"defaultingType": "List", "defaultConstraints": [_c("x")]},
        "args.defaultConstraints[0].maxSkew: Expected `int`, got `str`",
    ),
    (
        "several problems",
        {"defaultingType": "List", "defaultConstraints": [_c(0, "")]},
        "args: [defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf), "
        "defaultConstraints[0].topologyKey: Required value: can not be empty]",
    ),
]


@pytest.mark.parametrize(("name", "data", "message"), INVALID, ids=[v[0] for v in INVALID])
def test_invalid_args(name: str, data: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as e:
        PodTopologySpreadArgs.parse(NAME, data)
    assert str(e.value).startswith(f"plugin {NAME}: {message}")


def test_system_defaulting_uses_upstream_constraints() -> None:
    p = PodTopologySpread({"defaultingType": "System"})
    assert p.system_defaulted
    assert [(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in p.default_constraints] == [
        ("kubernetes.io/hostname", 3, "ScheduleAnyway"),
        ("topology.kubernetes.io/zone", 5, "ScheduleAnyway"),
    ]
    assert p.default_constraints is SYSTEM_DEFAULT_CONSTRAINTS
    listed = PodTopologySpread({"defaultingType": "List", "defaultConstraints": [_c(2, "rack")]})
    assert not listed.system_defaulted
    assert [c.topology_key for c in listed.default_constraints] == ["rack"]


# ---- registration ------------------------------------------------------------------------------


def test_registered_and_enabled_by_the_default_profile() -> None:
    reg = default_registry(entry_points=False)
    spec = reg.get(NAME)
    assert spec is not None and spec.cls is PodTopologySpread
    assert extension_points_of(PodTopologySpread) == ["preFilter", "filter", "preScore", "score"]
    cfg, _ = load_config_data(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"},
        "config",
        None,
    )
    fw = build_frameworks(cfg, reg)["ksched"]
    points = fw.list_plugins()
    for point in ("preFilter", "filter", "preScore", "score"):
        assert NAME in points[point]
    assert fw.weights[NAME] == 2
    assert fw.plugins[NAME].system_defaulted


def test_config_args_reach_the_plugin() -> None:
    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "ksched",
                    "pluginConfig": [
                        {
                            "name": NAME,
                            "args": {
                                "defaultingType": "List",
                                "defaultConstraints": [_c(1, "rack")],
                            },
                        }
                    ],
                }
            ],
        },
        "config",
        None,
    )
    fw = build_frameworks(cfg, default_registry(entry_points=False))["ksched"]
    p = fw.plugins[NAME]
    assert not p.system_defaulted
    assert [c.topology_key for c in p.default_constraints] == ["rack"]


def test_events_to_register() -> None:
    events = [e.event for e in plugin().events_to_register()]
    assert events == [
        ClusterEvent("Pod", "Add"),
        ClusterEvent("Pod", "UpdatePodLabel"),
        ClusterEvent("Pod", "UpdatePodToleration"),
        ClusterEvent("Pod", "Delete"),
        ClusterEvent("Node", "Add"),
        ClusterEvent("Node", "Delete"),
        ClusterEvent("Node", "UpdateNodeLabel"),
        ClusterEvent("Node", "UpdateNodeTaint"),
    ]


# ---- Test_isSchedulableAfterNodeChange ------------------------------------------------

Q, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP
ZONE = [spread(1, "zone", selector=FOO)]
ZONE_NODE = [spread(1, "zone", selector=FOO), spread(1, "node", selector=FOO)]


def _taint(key: str) -> dict[str, str]:
    return {"key": key, "value": "bbb", "effect": "NoSchedule"}


NODE_HINTS: list[tuple[str, list[dict[str, Any]], Node | None, Node | None, str]] = [
    (
        "node updates label which matches topologyKey",
        ZONE,
        mk_node("node-a", zone="zone1"),
        mk_node("node-a", zone="zone2"),
        Q,
    ),
    (
        "node that doesn't match topologySpreadConstraints updates non-related label",
        ZONE,
        mk_node("node-a", foo="bar1"),
        mk_node("node-a", foo="bar2"),
        SKIP,
    ),
    (
        "node that match topologySpreadConstraints adds non-related label",
        ZONE_NODE,
        mk_node("node-a", zone="zone1", node="node1", foo="bar"),
        mk_node("node-a", zone="zone1", node="node1"),
        SKIP,
    ),
    ("create node with non-related labels", ZONE, None, mk_node("node-a", foo="bar"), SKIP),
    ("create node with related labels", ZONE, None, mk_node("node-a", zone="zone1"), Q),
    ("delete node with non-related labels", ZONE, mk_node("node-a", foo="bar"), None, SKIP),
    ("delete node with related labels", ZONE, mk_node("node-a", zone="zone1"), None, Q),
    (
        "add node with related labels that only match one of topologySpreadConstraints",
        ZONE_NODE,
        None,
        mk_node("node-a", zone="zone1"),
        SKIP,
    ),
    (
        "add node with related labels that match all topologySpreadConstraints",
        ZONE_NODE,
        None,
        mk_node("node-a", zone="zone1", node="node1"),
        Q,
    ),
    (
        "update node with related labels that only match one of topologySpreadConstraints",
        ZONE_NODE,
        mk_node("node-a", zone="zone1"),
        mk_node("node-a", zone="zone1"),
        SKIP,
    ),
    (
        "update node with related labels that match all topologySpreadConstraints",
        ZONE_NODE,
        mk_node("node-a", zone="zone1", node="node1"),
        mk_node("node-a", zone="zone1", node="node2"),
        Q,
    ),
    (
        "update node with different taints that match all topologySpreadConstraints",
        ZONE_NODE,
        mk_node("node-a", [_taint("aaa")], zone="zone1", node="node1"),
        mk_node("node-a", [_taint("ccc")], zone="zone1", node="node1"),
        Q,
    ),
    (
        "update node with different taints that only match one of topologySpreadConstraints",
        ZONE_NODE,
        mk_node("node-a", [_taint("aaa")], node="node1"),
        mk_node("node-a", [_taint("ccc")], node="node1"),
        SKIP,
    ),
    (
        "node gets tainted",
        ZONE,
        mk_node("node-a", zone="zone1"),
        mk_node("node-a", [UNSCHEDULABLE_TAINT], zone="zone1"),
        Q,
    ),
    ("node gains the topology key", ZONE, mk_node("node-a"), mk_node("node-a", zone="zone1"), Q),
]


@pytest.mark.parametrize(
    ("name", "constraints", "old", "new", "want"), NODE_HINTS, ids=[h[0] for h in NODE_HINTS]
)
def test_is_schedulable_after_node_change(
    name: str, constraints: list[dict[str, Any]], old: Node | None, new: Node | None, want: str
) -> None:
    pod = mk_pod("p", constraints=constraints)
    assert plugin().is_schedulable_after_node_change(pod, old, new) == want


# ---- Test_isSchedulableAfterPodChange -------------------------------------------------

ZONE_BAR = [spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)]


def _p(node: str = "", ns: str = "default", **labels: str) -> PodInfo:
    return mk_pod("other", node, dict(labels), ns)


POD_HINTS: list[tuple[str, list[dict[str, Any]], PodInfo | None, PodInfo | None, str]] = [
    (
        "add pod with labels match topologySpreadConstraints selector",
        ZONE,
        None,
        _p("fake-node", foo=""),
        Q,
    ),
    ("add un-scheduled pod", ZONE, None, _p(foo=""), SKIP),
    ("update un-scheduled pod", ZONE, _p(bar=""), _p(foo=""), SKIP),
    ("delete un-scheduled pod", ZONE, _p(foo=""), None, SKIP),
    (
        "add pod with different namespace",
        ZONE,
        None,
        _p("fake-node", "fake-namespace", foo=""),
        SKIP,
    ),
    (
        "add pod with labels don't match topologySpreadConstraints selector",
        ZONE,
        None,
        _p("fake-node", bar=""),
        SKIP,
    ),
    (
        "delete pod with labels that match topologySpreadConstraints selector",
        ZONE,
        _p("fake-node", foo=""),
        None,
        Q,
    ),
    (
        "delete pod with labels that don't match topologySpreadConstraints selector",
        ZONE,
        _p("fake-node", bar=""),
        None,
        SKIP,
    ),
    (
        "update pod's non-related label",
        ZONE,
        _p("fake-node", foo="", bar="bar1"),
        _p("fake-node", foo="", bar="bar2"),
        SKIP,
    ),
    (
        "add pod's label that matches topologySpreadConstraints selector",
        ZONE,
        _p("fake-node"),
        _p("fake-node", foo=""),
        Q,
    ),
    (
        "delete pod label that matches topologySpreadConstraints selector",
        ZONE,
        _p("fake-node", foo=""),
        _p("fake-node"),
        Q,
    ),
    (
        "change pod's label that matches topologySpreadConstraints selector",
        ZONE,
        _p("fake-node", foo="foo1"),
        _p("fake-node", foo="foo2"),
        SKIP,
    ),
    (
        "change pod's label that doesn't match topologySpreadConstraints selector",
        ZONE,
        _p("fake-node", foo="", bar="bar1"),
        _p("fake-node", foo="", bar="bar2"),
        SKIP,
    ),
    (
        "add pod's label that matches topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        ZONE_BAR,
        _p("fake-node", foo=""),
        _p("fake-node", foo="", bar="bar2"),
        Q,
    ),
    (
        "change pod's label that doesn't match topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        ZONE_BAR,
        _p("fake-node", foo=""),
        _p("fake-node", foo="", baz=""),
        SKIP,
    ),
    (
        "change pod's label that match topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        ZONE_BAR,
        _p("fake-node", foo="", bar=""),
        _p("fake-node", foo="", bar="bar2"),
        SKIP,
    ),
]


@pytest.mark.parametrize(
    ("name", "constraints", "old", "new", "want"), POD_HINTS, ids=[h[0] for h in POD_HINTS]
)
def test_is_schedulable_after_pod_change(
    name: str,
    constraints: list[dict[str, Any]],
    old: PodInfo | None,
    new: PodInfo | None,
    want: str,
) -> None:
    pod = mk_pod("p", labels={"foo": ""}, constraints=constraints)
    assert plugin().is_schedulable_after_pod_change(pod, old, new) == want


SELF_HINTS: list[tuple[str, str, dict[str, str], dict[str, str], bool, str]] = [
    (
        "the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has "
        "got a new toleration",
        "Honor",
        {"foo": ""},
        {"foo": ""},
        True,
        Q,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has "
        "got a new toleration",
        "Ignore",
        {"foo": ""},
        {"foo": ""},
        True,
        SKIP,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint and has got a new label matching the "
        "selector of the constraint",
        "Ignore",
        {},
        {"foo": ""},
        False,
        Q,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        "Ignore",
        {},
        {"unrelated": ""},
        False,
        SKIP,
    ),
]


@pytest.mark.parametrize(
    ("name", "policy", "old_labels", "new_labels", "tolerate", "want"),
    SELF_HINTS,
    ids=[h[0] for h in SELF_HINTS],
)
def test_updates_of_the_pod_itself(
    name: str,
    policy: str,
    old_labels: dict[str, str],
    new_labels: dict[str, str],
    tolerate: bool,
    want: str,
) -> None:
    constraints = [
        spread(1, "zone", selector=FOO, taints_policy=policy),
        spread(1, "node", selector=BAR),
    ]
    pod = mk_pod("p", labels={"foo": ""}, constraints=constraints)
    old = mk_pod("p", labels=old_labels)
    tolerations = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
    new = mk_pod("p", labels=new_labels, tolerations=tolerations if tolerate else [])
    assert plugin().is_schedulable_after_pod_change(pod, old, new) == want


def test_hints_reject_wrong_object_types() -> None:
    pod = mk_pod("p", constraints=ZONE)
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_node_change(pod, None, "node")
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_pod_change(pod, None, "pod")


def _nominated(pi: PodInfo, node: str) -> PodInfo:
    raw = pi.raw
    assert raw is not None
    m = {**raw, "status": {"nominatedNodeName": node}}
    return PodInfo(decode(m, Pod), m)


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_a_nominated_pod_is_involved_in_spreading(version: str) -> None:
    """``involvedInTopologySpreading``: a pod nominated to a node counts like a placed one
    (the scheduler deletes or moves a nominated pod with an AssignedPod event)."""
    pod = mk_pod("p", labels={"foo": ""}, constraints=ZONE)
    gone = _nominated(_p(foo=""), "fake-node")
    pl = PodTopologySpread(
        {"defaultingType": "List"}, Handle(features=set_feature_gates([], [version]))
    )
    assert pl.is_schedulable_after_pod_change(pod, gone, None) == Q
    assert pl.is_schedulable_after_pod_change(pod, _p(foo=""), None) == SKIP
    other_ns = _nominated(_p(ns="elsewhere", foo=""), "fake-node")
    assert pl.is_schedulable_after_pod_change(pod, other_ns, None) == SKIP
