"""InterPodAffinity wiring: queueing hints (upstream plugin_test.go), args, terms, registry."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import Node, decode
from ksched.config import DEFAULT_MULTI_POINT
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import ClusterEvent, QueueingHint, extension_points_of
from ksched.framework.registry import PluginArgsError
from ksched.plugins import BUILTIN_PLUGINS, default_registry
from ksched.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from ksched.plugins.interpodaffinity.terms import NamespaceLabels, pod_terms
from tests.plugins.test_interpodaffinity_support import (
    NAMESPACES,
    NS_LABEL_T1,
    REQUIRED,
    MakePod,
    namespace,
    pod,
    setup,
)

Q, S = QueueingHint.QUEUE, QueueingHint.SKIP


def _plugin(version: str | None = None) -> InterPodAffinity:
    plugin, _ = setup([], [], NAMESPACES, version=version)
    return plugin


def _aff_in() -> MakePod:
    return (
        MakePod()
        .uid("p")
        .name("p")
        .pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
    )


def _anti_in() -> MakePod:
    return (
        MakePod()
        .uid("p")
        .name("p")
        .pod_anti_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
    )


def _other(*, node: bool = True, **labels: str) -> Any:
    b = MakePod().uid("other").labels(labels)
    if node:
        b.node("fake-node")
    return b.obj()


POD_CASES: list[tuple[str, Any, Any, Any, str]] = [
    (
        "add a pod which matches the pod affinity",
        _aff_in().obj(),
        None,
        _other(service="securityscan"),
        Q,
    ),
    (
        "add an un-scheduled pod",
        _aff_in().obj(),
        None,
        _other(node=False, service="securityscan"),
        S,
    ),
    ("add a pod which doesn't match the pod affinity", _aff_in().obj(), None, _other(aaa="a"), S),
    (
        "update a pod from non-match to match pod affinity",
        _aff_in().obj(),
        _other(aaa="a"),
        _other(service="securityscan"),
        Q,
    ),
    (
        "the updating pod matches target pod's affinity both before and after label changes",
        _aff_in().obj(),
        _other(service="value2"),
        _other(service="securityscan"),
        S,
    ),
    (
        "update an un-scheduled pod",
        _aff_in().obj(),
        _other(node=False, aaa="a"),
        _other(node=False, service="securityscan"),
        S,
    ),
    (
        "update a pod from match to non-match the pod affinity",
        _aff_in().obj(),
        _other(service="securityscan"),
        _other(aaa="a"),
        S,
    ),
    (
        "update a pod from match to non-match pod's affinity - multiple terms case",
        MakePod()
        .uid("p")
        .name("p")
        .pod_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_affinity_exists("bbb", "hostname", REQUIRED)
        .obj(),
        _other(aaa="a"),
        _other(service="securityscan"),
        S,
    ),
    (
        "update a pod from non-match to match pod's affinity - multiple terms case",
        MakePod()
        .uid("p")
        .name("p")
        .pod_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_affinity_exists("bbb", "hostname", REQUIRED)
        .obj(),
        _other(aaa="a"),
        _other(aaa="", bbb=""),
        Q,
    ),
    (
        "updated pod is the target pod",
        MakePod().uid("p").name("p").label("foo", "baz").obj(),
        MakePod().uid("p").name("p").label("foo", "bar").obj(),
        MakePod().uid("p").name("p").label("foo", "baz").obj(),
        Q,
    ),
    (
        "modify pod label to change it from satisfying pod anti-affinity to not satisfying "
        "anti-affinity",
        _anti_in().obj(),
        _other(service="securityscan"),
        _other(service="aaaa"),
        Q,
    ),
    (
        "modify pod label to change it from not satisfying pod anti-affinity to satisfying "
        "anti-affinity",
        _anti_in().obj(),
        _other(service="bbb"),
        _other(service="securityscan"),
        S,
    ),
    (
        "delete a pod which doesn't match pod's anti-affinity",
        _anti_in().obj(),
        _other(aaa="a"),
        None,
        S,
    ),
    (
        "delete a pod which matches pod's anti-affinity",
        _anti_in().obj(),
        _other(service="securityscan"),
        None,
        Q,
    ),
    (
        "delete a pod with anti-affinity that matches pending pod",
        MakePod().name("p").label("service", "securityscan").obj(),
        MakePod()
        .node("fake-node")
        .pod_anti_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .obj(),
        None,
        Q,
    ),
    (
        # v1.36's podMatchesAllAffinityTerms: every term of the deleted pod must match
        "delete a pod with two anti-affinity terms of which only one matches pending pod",
        MakePod().name("p").label("service", "securityscan").obj(),
        MakePod()
        .node("fake-node")
        .pod_anti_affinity_in("service", "region", ["securityscan"], REQUIRED)
        .pod_anti_affinity_in("team", "region", ["blue"], REQUIRED)
        .obj(),
        None,
        S,
    ),
    (
        # and with nil namespace labels: a namespaceSelector naming a label never matches,
        # even though the pending pod's namespace carries that label
        "delete a pod whose anti-affinity selects the pending pod's namespace by label",
        MakePod().name("p").namespace("subteam1.team1").label("service", "securityscan").obj(),
        MakePod()
        .node("fake-node")
        .affinity(
            {
                "podAntiAffinity": {
                    REQUIRED: [
                        {
                            "labelSelector": {"matchLabels": {"service": "securityscan"}},
                            "namespaceSelector": {"matchLabels": dict(NS_LABEL_T1)},
                            "topologyKey": "region",
                        }
                    ]
                }
            }
        )
        .obj(),
        None,
        S,
    ),
    (
        "delete a pod with anti-affinity that doesn't match pending pod",
        MakePod().name("p").label("service", "foo").obj(),
        MakePod()
        .node("fake-node")
        .pod_anti_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .obj(),
        None,
        S,
    ),
    (
        "delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that "
        "doesn't match pending pod",
        MakePod()
        .name("p")
        .pod_anti_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .label("service", "foo")
        .obj(),
        MakePod()
        .node("fake-node")
        .pod_anti_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .label("service", "foo")
        .obj(),
        None,
        S,
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"), POD_CASES, ids=[c[0][:60] for c in POD_CASES]
)
def test_is_schedulable_after_pod_change(
    name: str, target: Any, old: Any, new: Any, want: str
) -> None:
    """v1.36's table (v1.37 differs where anti-affinity has several terms, below)."""
    assert _plugin("1.36").is_schedulable_after_pod_change(target, old, new) == want


def _two_anti_terms() -> MakePod:
    return (
        MakePod()
        .node("fake-node")
        .pod_anti_affinity_in("service", "region", ["securityscan"], REQUIRED)
        .pod_anti_affinity_in("team", "region", ["blue"], REQUIRED)
    )


_PENDING_TWO_ANTI = (
    MakePod()
    .uid("p")
    .name("p")
    .pod_anti_affinity_in("service", "region", ["securityscan"], REQUIRED)
    .pod_anti_affinity_in("team", "region", ["blue"], REQUIRED)
    .obj()
)
ANY_TERM_CASES = [
    (
        "delete a pod with two anti-affinity terms of which only one matches pending pod",
        MakePod().name("p").label("service", "securityscan").obj(),
        _two_anti_terms().obj(),
        None,
    ),
    (
        "delete a pod matching one of the pending pod's two anti-affinity terms",
        _PENDING_TWO_ANTI,
        _other(service="securityscan"),
        None,
    ),
    (
        "update a pod to match none of the pending pod's two anti-affinity terms",
        _PENDING_TWO_ANTI,
        _other(service="securityscan"),
        _other(service="other"),
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "old", "new"), ANY_TERM_CASES, ids=[c[0][:60] for c in ANY_TERM_CASES]
)
@pytest.mark.parametrize(("version", "want"), [("1.36", S), ("1.37", Q)])
def test_anti_affinity_hint_asks_any_term_from_v1_37(
    name: str, target: Any, old: Any, new: Any, version: str, want: str
) -> None:
    """v1.37 (podMatchesAnyAffinityTerms): one matching anti-affinity term is enough."""
    assert _plugin(version).is_schedulable_after_pod_change(target, old, new) == want


def _node(name: str, **labels: str) -> Node:
    return decode(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}, Node
    )


def _aff_zone() -> Any:
    return (
        MakePod()
        .name("p")
        .pod_affinity_in("service", "zone", ["securityscan", "value2"], REQUIRED)
        .obj()
    )


def _anti_zone() -> Any:
    return (
        MakePod()
        .name("p")
        .pod_anti_affinity("zone", {"matchLabels": {"another": "label"}}, REQUIRED)
        .obj()
    )


NODE_CASES: list[tuple[str, Any, Node | None, Node, str]] = [
    (
        "add a new node with matched pod affinity topologyKey",
        _aff_zone(),
        None,
        _node("node-a", zone="zone1"),
        Q,
    ),
    (
        "add a new node without matched topologyKey",
        MakePod()
        .name("p")
        .pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .obj(),
        None,
        _node("node-a", zone="zone1"),
        S,
    ),
    (
        "update node label but not topologyKey",
        _aff_zone(),
        _node("node-a", aaa="a"),
        _node("node-a", aaa="b"),
        S,
    ),
    (
        "update node label that isn't related to the pod affinity",
        _aff_zone(),
        _node("node-a", zone="zone1"),
        _node("node-a", zone="zone1", **{"unrelated-label": "x"}),
        S,
    ),
    (
        "update node with different affinity topologyKey value",
        _aff_zone(),
        _node("node-a", zone="zone1"),
        _node("node-a", zone="zone2"),
        Q,
    ),
    (
        "update node to have the affinity topology label",
        _aff_zone(),
        _node("node-a", aaa="a"),
        _node("node-a", zone="zone1"),
        Q,
    ),
    (
        "add a new node with matched pod anti-affinity topologyKey",
        _anti_zone(),
        None,
        _node("node-a", zone="zone1"),
        Q,
    ),
    (
        "add a new node without matched pod anti-affinity topologyKey",
        _anti_zone(),
        None,
        _node("node-a"),
        Q,
    ),
    (
        "update node label that isn't related to the pod anti-affinity",
        _anti_zone(),
        _node("node-a", zone="zone1"),
        _node("node-a", zone="zone1", **{"unrelated-label": "x"}),
        S,
    ),
    (
        "update node with different anti-affinity topologyKey value",
        _anti_zone(),
        _node("node-a", zone="zone1"),
        _node("node-a", zone="zone2"),
        Q,
    ),
    (
        "update node to have the anti-affinity topology label",
        _anti_zone(),
        _node("node-a", aaa="a"),
        _node("node-a", zone="zone1"),
        S,
    ),
    (
        "update node label not to have anti-affinity topology label",
        _anti_zone(),
        _node("node-a", zone="zone1"),
        _node("node-a", aaa="a"),
        Q,
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"), NODE_CASES, ids=[c[0][:60] for c in NODE_CASES]
)
def test_is_schedulable_after_node_change(
    name: str, target: Any, old: Node | None, new: Node, want: str
) -> None:
    assert _plugin().is_schedulable_after_node_change(target, old, new) == want


def test_events_to_register() -> None:
    events = [e.event for e in _plugin().events_to_register()]
    assert events == [
        ClusterEvent("Pod", "Add"),
        ClusterEvent("Pod", "UpdatePodLabel"),
        ClusterEvent("Pod", "Delete"),
        ClusterEvent("Node", "Add"),
        ClusterEvent("Node", "UpdateNodeLabel"),
    ]


# ---- args ---------------------------------------------------------------------------------


def test_args_defaults_and_values() -> None:
    assert InterPodAffinityArgs.parse("InterPodAffinity", {}) == InterPodAffinityArgs(1, False)
    a = InterPodAffinityArgs.parse(
        "InterPodAffinity", {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True}
    )
    assert a == InterPodAffinityArgs(0, True)
    assert InterPodAffinityArgs.parse("InterPodAffinity", {"hardPodAffinityWeight": 100})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"hardPodAffinityWeight": -1},
            "plugin InterPodAffinity: args.hardPodAffinityWeight: Invalid value: -1: "
            "not in valid range [0, 100]",
        ),
        (
            {"hardPodAffinityWeight": 110},
            "plugin InterPodAffinity: args.hardPodAffinityWeight: Invalid value: 110: "
            "not in valid range [0, 100]",
        ),
        (
            {"hardPodAffinityWeight": "1"},
            "plugin InterPodAffinity: args.hardPodAffinityWeight: must be an integer, got",
        ),
        (
            {"ignorePreferredTermsOfExistingPods": "yes"},
            "plugin InterPodAffinity: args.ignorePreferredTermsOfExistingPods: must be a boolean",
        ),
        ({"bogus": 1}, "plugin InterPodAffinity: args.bogus: unknown field"),
    ],
)
def test_args_validation(data: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as e:
        InterPodAffinityArgs.parse("InterPodAffinity", data)
    assert str(e.value).startswith(message)


def test_registered_as_builtin() -> None:
    assert BUILTIN_PLUGINS["InterPodAffinity"] == "interpodaffinity:InterPodAffinity"
    # enabled by default, and (test_every_default_plugin_is_built_in) run, not dropped
    assert "InterPodAffinity" in {ref.name for ref in DEFAULT_MULTI_POINT}
    spec = default_registry(entry_points=False).get("InterPodAffinity")
    assert spec is not None and spec.cls is InterPodAffinity
    assert extension_points_of(InterPodAffinity) == ["preFilter", "filter", "preScore", "score"]


# ---- terms ------------------------------------------------------------------------------------


def test_match_label_keys_merged_into_selector() -> None:
    """The API server's applyMatchLabelKeysAndMismatchLabelKeys."""
    p = pod(
        labels={"app": "web", "rev": "1", "tier": "fe"},
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "h",
                        "matchLabelKeys": ["rev", "absent"],
                        "mismatchLabelKeys": ["tier"],
                    }
                ]
            }
        },
    )
    (t,) = pod_terms(p).required_anti_affinity
    nsl = NamespaceLabels(None)
    assert t.matches("", {"app": "web", "rev": "1", "tier": "be"}, nsl)
    assert not t.matches("", {"app": "web", "rev": "2", "tier": "be"}, nsl)
    assert not t.matches("", {"app": "web", "rev": "1", "tier": "fe"}, nsl)


def test_terms_are_interned_across_replicas() -> None:
    a = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "h"}
            ]
        }
    }
    t1 = pod_terms(pod(ns="a", affinity=a)).required_anti_affinity[0]
    t2 = pod_terms(pod(ns="a", affinity=a)).required_anti_affinity[0]
    t3 = pod_terms(pod(ns="b", affinity=a)).required_anti_affinity[0]
    assert t1 is t2
    assert t3 is not t1 and t3.namespaces == frozenset({"b"})


@pytest.mark.parametrize(
    ("selector", "error"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            'requiredAffinityTerms: "Gt" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "requiredAffinityTerms: values: Invalid value: []string(nil): "
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'requiredAffinityTerms: values: Invalid value: []string{"x"}: '
            "values set must be empty for exists and does not exist",
        ),
        (
            {"matchLabels": {"a/b/c": "x"}},
            'requiredAffinityTerms: key: Invalid value: "a/b/c": a qualified name must consist of',
        ),
    ],
)
def test_unparsable_terms_fail_pre_filter(selector: dict[str, Any], error: str) -> None:
    p = pod(
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector, "topologyKey": "zone"}
                ]
            }
        }
    )
    assert pod_terms(p).error.startswith(error)
    plugin, snap = setup([], [])
    _, st = plugin.pre_filter(CycleState(), p, snap)
    assert st is not None and st.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
    assert st.message().startswith("parsing pod: " + error)


def test_namespace_labels_fall_back_to_the_name_label() -> None:
    nsl = NamespaceLabels({"team-a": namespace("team-a", {"team": "a"})})
    assert nsl("team-a") == {"team": "a", "kubernetes.io/metadata.name": "team-a"}
    assert nsl("unlisted") == {"kubernetes.io/metadata.name": "unlisted"}


def test_signatures_read_late_see_every_pod_placed_while_unread() -> None:
    """Pods without terms never read the existing pods' signatures, so the index leaves
    them stale meanwhile; the first pod with terms must still count every one of them."""
    from ksched.api.objects import Node, Pod, decode
    from ksched.bench.workloads import node_default, pod_default
    from ksched.config import default_config
    from ksched.plugins import default_registry
    from ksched.sim.cluster_file import ClusterFile
    from ksched.sim.simulator import simulate

    nodes = [node_default(i) for i in range(4)]
    pods = []
    for i in range(6):  # plain pods, colour red, spread over the nodes by scoring
        m = pod_default(f"plain-{i}", "default")
        m["metadata"]["labels"] = {"color": "red"}
        pods.append(m)
    term = {
        "labelSelector": {"matchLabels": {"color": "red"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    shy = pod_default("shy", "default")
    shy["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    shy["metadata"]["creationTimestamp"] = "2030-01-01T00:00:00Z"  # queued last
    for m in pods:
        m["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
    cf = ClusterFile(
        nodes=[(decode(m, Node), m) for m in nodes],
        pods=[(decode(m, Pod), m) for m in [*pods, shy]],
    )
    results = {
        r.name: r for r in simulate(cf, default_config(), default_registry(entry_points=False))
    }
    used = {results[f"plain-{i}"].node for i in range(6)}
    assert results["shy"].status == ("Scheduled" if len(used) < 4 else "Unschedulable")
    assert results["shy"].node not in used


def test_the_hostname_fast_path_gate_is_refused_when_enabled() -> None:
    """InterPodAffinityHostnameFastPath (alpha, v1.37) is not implemented: ksched exits
    naming it rather than run with the topology maps in its place."""
    from ksched.features import FeatureGateError
    from ksched.features.support import resolve_feature_gates

    with pytest.raises(FeatureGateError, match="InterPodAffinityHostnameFastPath=true"):
        resolve_feature_gates(["InterPodAffinityHostnameFastPath=true"], ["1.37"])
    gates = resolve_feature_gates(["InterPodAffinityHostnameFastPath=false"], ["1.37"])
    assert not gates.enabled("InterPodAffinityHostnameFastPath")


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_a_nominated_pod_counts_in_the_pod_hint(version: str) -> None:
    """Upstream skips only a pod neither on a node nor nominated to one: deleting a pod
    nominated to a node (an AssignedPod event) that matches the anti-affinity requeues."""
    nominated = MakePod().uid("other").labels({"service": "securityscan"})
    nominated.m["status"] = {"nominatedNodeName": "fake-node"}
    pl = _plugin(version)
    assert pl.is_schedulable_after_pod_change(_anti_in().obj(), nominated.obj(), None) == Q
    unplaced = MakePod().uid("other").labels({"service": "securityscan"}).obj()
    assert pl.is_schedulable_after_pod_change(_anti_in().obj(), unplaced, None) == S
