"""InterPodAffinity PreFilter/Filter, ported from upstream's filtering_test.go.

Every Filter verdict is also checked against the batch mask at the node's row, so the
per-node form (diagnosis, nominated pods) and the batch form cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework.status import Code, Status
from ksched.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH as AFF,
)
from ksched.plugins.interpodaffinity import (
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH as ANTI,
)
from ksched.plugins.interpodaffinity import (
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH as EXISTING,
)
from ksched.plugins.interpodaffinity.filtering import PRE_FILTER_STATE_KEY, PreFilterState
from ksched.plugins.interpodaffinity.index import TopologyCounts
from tests.plugins.test_interpodaffinity_support import (
    NAMESPACES,
    REQUIRED,
    MakePod,
    namespace,
    new_state,
    node,
    node_info,
    pod,
    setup,
)

SKIP = Status(Code.SKIP)


def unresolvable(*r: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *r)


def unschedulable(*r: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *r)


def same(got: Status | None, want: Status | None) -> bool:
    if got is None or want is None:
        return got is None and want is None
    return got.code == want.code and got.all_reasons() == want.all_reasons()


def with_terms(
    ns: str,
    labels: dict[str, str],
    affinity: list[dict[str, Any]] | None,
    anti: list[dict[str, Any]] | None,
) -> Any:
    """``createPodWithAffinityTerms``."""
    return pod(
        ns=ns,
        labels=labels,
        affinity={
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity or []},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti or []},
        },
    )


def expr(key: str, op: str, values: list[str] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return e


def sel(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(exprs)}


def run_filters(
    pods: list[Any], nodes: list[Any], incoming: Any, namespaces: list[Any] | None = None
) -> tuple[Status | None, list[Status | None]]:
    """PreFilter, then Filter on every node; asserts the batch mask agrees per node."""
    plugin, snap = setup(pods, nodes, namespaces)
    state = new_state()
    _, pre = plugin.pre_filter(state, incoming, snap)
    if pre is not None and not pre.is_success():
        return pre, []
    mask = plugin.filter_batch(state, incoming, snap)
    out = []
    for n in nodes:
        ni = node_info(snap, n.metadata.name)
        st = plugin.filter(state, incoming, ni)
        row = snap.row(n.metadata.name)
        assert row is not None
        assert bool(mask[row]) == (st is None), (n.metadata.name, st)
        out.append(st)
    return pre, out


# ---- TestRequiredAffinitySingleNode --------------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
LABELS1 = {"region": "r1", "zone": "z11"}
NODE1 = node("node1", LABELS1)


def _existing() -> Any:
    return MakePod().labels(POD_LABEL).node("node1").obj()


SINGLE_NODE_CASES: list[tuple[str, Any, list[Any], Status | None, Status | None]] = [
    (
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with "
        "no existing pods",
        pod(),
        [],
        SKIP,
        None,
    ),
    (
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In "
        "operator that matches the existing pod",
        MakePod()
        .labels(POD_LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .obj(),
        [_existing()],
        None,
        None,
    ),
    (
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity "
        "using not in operator in labelSelector that matches the existing pod",
        MakePod()
        .labels(POD_LABEL2)
        .pod_affinity_not_in("service", "region", ["securityscan3", "value3"], REQUIRED)
        .obj(),
        [_existing()],
        None,
        None,
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        with_terms(
            "",
            POD_LABEL2,
            [
                {
                    "labelSelector": sel(expr("service", "In", ["securityscan", "value2"])),
                    "namespaces": ["DiffNameSpace"],
                }
            ],
            None,
        ),
        [MakePod().namespace("ns").label("service", "securityscan").node("node1").obj()],
        None,
        unresolvable(AFF),
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        MakePod()
        .labels(POD_LABEL)
        .pod_affinity_in("service", "", ["antivirusscan", "value2"], REQUIRED)
        .obj(),
        [_existing()],
        None,
        unresolvable(AFF),
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple "
        "RequiredDuringSchedulingIgnoredDuringExecution",
        with_terms(
            "",
            POD_LABEL2,
            [
                {
                    "labelSelector": sel(
                        expr("service", "Exists"), expr("wrongkey", "DoesNotExist")
                    ),
                    "topologyKey": "region",
                },
                {
                    "labelSelector": sel(
                        expr("service", "In", ["securityscan"]),
                        expr("service", "NotIn", ["WrongValue"]),
                    ),
                    "topologyKey": "region",
                },
            ],
            None,
        ),
        [_existing()],
        None,
        None,
    ),
    (
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot "
        "schedule onto the node because one of the matchExpression item don't match.",
        with_terms(
            "",
            POD_LABEL2,
            [
                {
                    "labelSelector": sel(
                        expr("service", "Exists"), expr("wrongkey", "DoesNotExist")
                    ),
                    "topologyKey": "region",
                },
                {
                    "labelSelector": sel(
                        expr("service", "In", ["securityscan2"]),
                        expr("service", "NotIn", ["WrongValue"]),
                    ),
                    "topologyKey": "region",
                },
            ],
            None,
        ),
        [_existing()],
        None,
        unresolvable(AFF),
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        MakePod()
        .labels(POD_LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED)
        .obj(),
        [_existing()],
        None,
        None,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the "
        "existing pod",
        MakePod()
        .labels(POD_LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED)
        .obj(),
        [
            MakePod()
            .node("node1")
            .labels(POD_LABEL)
            .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED)
            .obj()
        ],
        None,
        None,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        MakePod()
        .labels(POD_LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"], REQUIRED)
        .obj(),
        [_existing()],
        None,
        unschedulable(ANTI),
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity "
        "symmetry with the existing pod",
        MakePod()
        .labels(POD_LABEL)
        .pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED)
        .obj(),
        [
            MakePod()
            .labels(POD_LABEL)
            .node("node1")
            .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"], REQUIRED)
            .obj()
        ],
        None,
        unschedulable(EXISTING),
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        MakePod()
        .labels(POD_LABEL)
        .pod_affinity_not_in("service", "region", ["securityscan", "value2"], REQUIRED)
        .obj(),
        [MakePod().label("service", "securityscan").node("node2").obj()],
        None,
        unresolvable(AFF),
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
        "constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        MakePod().labels(POD_LABEL).obj(),
        [
            MakePod()
            .node("node1")
            .labels(POD_LABEL)
            .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"], REQUIRED)
            .obj()
        ],
        None,
        unschedulable(EXISTING),
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
        "constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        MakePod().labels(POD_LABEL).obj(),
        [
            MakePod()
            .node("node1")
            .labels(POD_LABEL)
            .pod_anti_affinity_not_in("service", "zone", ["securityscan", "value2"], REQUIRED)
            .obj()
        ],
        SKIP,
        None,
    ),
    (
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity "
        "symmetry with incoming pod",
        MakePod()
        .labels(POD_LABEL)
        .pod_anti_affinity_exists("service", "region", REQUIRED)
        .pod_anti_affinity_exists("security", "region", REQUIRED)
        .obj(),
        [
            MakePod()
            .node("node1")
            .labels(POD_LABEL2)
            .pod_anti_affinity_exists("security", "zone", REQUIRED)
            .obj()
        ],
        None,
        unschedulable(ANTI),
    ),
    (
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        MakePod()
        .labels(POD_LABEL)
        .pod_anti_affinity_exists("service", "zone", REQUIRED)
        .pod_anti_affinity_exists("security", "zone", REQUIRED)
        .obj(),
        [
            MakePod()
            .node("node1")
            .labels(POD_LABEL2)
            .pod_anti_affinity_exists("security", "zone", REQUIRED)
            .obj()
        ],
        None,
        unschedulable(ANTI),
    ),
    (
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        MakePod().labels(POD_LABEL2).pod_anti_affinity_exists("security", "zone", REQUIRED).obj(),
        [
            MakePod()
            .node("node1")
            .labels(POD_LABEL)
            .pod_anti_affinity_exists("service", "zone", REQUIRED)
            .pod_anti_affinity_exists("security", "zone", REQUIRED)
            .obj()
        ],
        None,
        unschedulable(EXISTING),
    ),
    (
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        MakePod()
        .labels({"abc": "", "xyz": ""})
        .pod_anti_affinity_exists("abc", "zone", REQUIRED)
        .pod_anti_affinity_exists("def", "zone", REQUIRED)
        .obj(),
        [
            MakePod()
            .node("node1")
            .labels({"def": "", "xyz": ""})
            .pod_anti_affinity_exists("abc", "zone", REQUIRED)
            .pod_anti_affinity_exists("def", "zone", REQUIRED)
            .obj()
        ],
        None,
        unschedulable(ANTI),
    ),
    (
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        MakePod()
        .labels({"def": "", "xyz": ""})
        .pod_anti_affinity_exists("abc", "zone", REQUIRED)
        .pod_anti_affinity_exists("def", "zone", REQUIRED)
        .obj(),
        [
            MakePod()
            .node("node1")
            .labels({"abc": "", "xyz": ""})
            .pod_anti_affinity_exists("abc", "zone", REQUIRED)
            .pod_anti_affinity_exists("def", "zone", REQUIRED)
            .obj()
        ],
        None,
        unschedulable(ANTI),
    ),
    (
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        MakePod()
        .labels(POD_LABEL)
        .pod_affinity_in("service", "region", ["{{.bad-value.}}"], REQUIRED)
        .pod_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED)
        .obj(),
        [],
        unresolvable(
            "parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "
            '"{{.bad-value.}}": a valid label must be an empty string or consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ),
        None,
    ),
    (
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        MakePod()
        .labels(POD_LABEL)
        .pod_affinity_in("service", "region", ["foo"], REQUIRED)
        .pod_affinity_in("service", "node", ["{{.bad-value.}}"], REQUIRED)
        .obj(),
        [],
        unresolvable(
            "parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "
            '"{{.bad-value.}}": a valid label must be an empty string or consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ),
        None,
    ),
    (
        "affinity with NamespaceSelector",
        with_terms(
            "",
            POD_LABEL2,
            [
                {
                    "labelSelector": sel(expr("service", "In", ["securityscan", "value2"])),
                    "namespaceSelector": sel(expr("team", "In", ["team1"])),
                    "topologyKey": "region",
                }
            ],
            None,
        ),
        [pod(ns="subteam1.team1", labels=POD_LABEL, node="node1")],
        None,
        None,
    ),
    (
        "affinity with non-matching NamespaceSelector",
        with_terms(
            "",
            POD_LABEL2,
            [
                {
                    "labelSelector": sel(expr("service", "In", ["securityscan", "value2"])),
                    "namespaceSelector": sel(expr("team", "In", ["team1"])),
                    "topologyKey": "region",
                }
            ],
            None,
        ),
        [pod(ns="subteam1.team2", labels=POD_LABEL, node="node1")],
        None,
        unresolvable(AFF),
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        with_terms(
            "subteam1.team1",
            POD_LABEL2,
            None,
            [
                {
                    "labelSelector": sel(expr("service", "In", ["securityscan", "value2"])),
                    "namespaceSelector": sel(expr("team", "In", ["team1"])),
                    "topologyKey": "zone",
                }
            ],
        ),
        [pod(ns="subteam2.team1", labels=POD_LABEL, node="node1")],
        None,
        unschedulable(ANTI),
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        with_terms(
            "subteam1.team1",
            POD_LABEL2,
            None,
            [
                {
                    "labelSelector": sel(expr("service", "In", ["securityscan", "value2"])),
                    "namespaceSelector": {},
                    "topologyKey": "zone",
                }
            ],
        ),
        [pod(ns="subteam2.team1", labels=POD_LABEL, node="node1")],
        None,
        unschedulable(ANTI),
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        with_terms(
            "subteam1.team1",
            POD_LABEL2,
            None,
            [
                {
                    "labelSelector": sel(expr("service", "In", ["securityscan", "value2"])),
                    "namespaceSelector": sel(expr("team", "In", ["team1"])),
                    "topologyKey": "zone",
                }
            ],
        ),
        [pod(ns="subteam1.team2", labels=POD_LABEL, node="node1")],
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "want_pre", "want_filter"),
    SINGLE_NODE_CASES,
    ids=[c[0][:60] for c in SINGLE_NODE_CASES],
)
def test_required_affinity_single_node(
    name: str, incoming: Any, pods: list[Any], want_pre: Status | None, want_filter: Status | None
) -> None:
    pre, got = run_filters(pods, [NODE1], incoming, NAMESPACES)
    assert same(pre, want_pre), (pre, want_pre)
    if want_pre is None:
        assert same(got[0], want_filter), (got[0], want_filter)


# ---- TestRequiredAffinityMultipleNodes -------------------------------------------------------

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def _n(name: str, **labels: str) -> Any:
    return node(name, labels)


def _abc(name: str, region: str, zone: str) -> Any:
    return node(name, {"region": region, "zone": zone, "hostname": name})


MULTI_NODE_CASES: list[
    tuple[str, Any, list[Any], list[Any], Status | None, list[Status | None]]
] = [
    (
        "A pod can be scheduled onto all the nodes that have the same topology key & label value "
        "with one of them has an existing pod that matches the affinity rules",
        MakePod().pod_affinity_in("foo", "region", ["bar"], REQUIRED).obj(),
        [MakePod().name("p1").node("node1").labels({"foo": "bar"}).obj()],
        [node("node1", RG_CHINA), node("node2", RG_CHINA_AZ1), node("node3", RG_INDIA)],
        None,
        [None, None, unresolvable(AFF)],
    ),
    (
        "The affinity rule is to schedule all of the pods of this collection to the same zone. "
        "The first pod of the collection should not be blocked from being scheduled onto any "
        "node, even there's no existing pod that matches the rule anywhere.",
        MakePod()
        .labels({"foo": "bar", "service": "securityscan"})
        .pod_affinity_in("foo", "zone", ["bar"], REQUIRED)
        .pod_affinity_in("service", "zone", ["securityscan"], REQUIRED)
        .obj(),
        [MakePod().name("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        [
            node("nodeA", {"zone": "az1", "hostname": "h1"}),
            node("nodeB", {"zone": "az2", "hostname": "h2"}),
        ],
        None,
        [None, None],
    ),
    (
        "The first pod of the collection can only be scheduled on nodes labelled with the "
        "requested topology keys",
        MakePod()
        .labels({"foo": "bar", "service": "securityscan"})
        .pod_affinity_in("foo", "zone", ["bar"], REQUIRED)
        .pod_affinity_in("service", "zone", ["securityscan"], REQUIRED)
        .obj(),
        [MakePod().name("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        [
            node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            node("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        None,
        [unresolvable(AFF), unresolvable(AFF)],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        MakePod().pod_anti_affinity_in("foo", "region", ["abc"], REQUIRED).obj(),
        [MakePod().node("nodeA").labels({"foo": "abc"}).obj()],
        [
            node("nodeA", {"region": "r1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ],
        None,
        [unschedulable(ANTI), unschedulable(ANTI)],
    ),
    (
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity "
        "rule matches a pod.",
        MakePod()
        .pod_anti_affinity_in("foo", "region", ["abc"], REQUIRED)
        .pod_anti_affinity_in("service", "zone", ["securityscan"], REQUIRED)
        .obj(),
        [MakePod().node("nodeA").labels({"foo": "abc", "service": "securityscan"}).obj()],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
        None,
        [unschedulable(ANTI), unschedulable(ANTI)],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB "
        "but can be scheduled onto nodeC",
        MakePod().pod_anti_affinity_in("foo", "region", ["abc"], REQUIRED).obj(),
        [MakePod().node("nodeA").labels({"foo": "abc"}).obj()],
        [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
        None,
        [unschedulable(ANTI), unschedulable(ANTI), None],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but "
        "can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity "
        "rule but in different namespace)",
        MakePod()
        .namespace("NS1")
        .labels({"foo": "123"})
        .pod_anti_affinity_in("foo", "region", ["bar"], REQUIRED)
        .obj(),
        [
            MakePod().node("nodeA").namespace("NS1").labels({"foo": "bar"}).obj(),
            MakePod()
            .node("nodeC")
            .namespace("NS2")
            .pod_anti_affinity_in("foo", "region", ["123"], REQUIRED)
            .obj(),
        ],
        [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
        None,
        [unschedulable(ANTI), unschedulable(ANTI), None],
    ),
    (
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid "
        "topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the "
        "term is also checked",
        MakePod().label("foo", "").obj(),
        [
            MakePod()
            .node("nodeA")
            .pod_anti_affinity_exists("foo", "invalid-node-label", REQUIRED)
            .obj()
        ],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z1")],
        SKIP,
        [None, None],
    ),
    (
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if "
        "topologyKey matches",
        MakePod()
        .node("nodeA")
        .pod_anti_affinity_exists("foo", "invalid-node-label", REQUIRED)
        .obj(),
        [MakePod().node("nodeA").labels({"foo": ""}).obj()],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z1")],
        None,
        [None, None],
    ),
    (
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it "
        "violates each existingPod's terms on all nodes",
        MakePod().label("foo", "").label("bar", "").obj(),
        [
            MakePod().node("nodeA").pod_anti_affinity_exists("foo", "zone", REQUIRED).obj(),
            MakePod().node("nodeA").pod_anti_affinity_exists("bar", "region", REQUIRED).obj(),
        ],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
        None,
        [unschedulable(EXISTING), unschedulable(EXISTING)],
    ),
    (
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at "
        "least violates one anti-affinity rule of existingPod",
        MakePod()
        .pod_anti_affinity_exists("foo", "zone", REQUIRED)
        .pod_anti_affinity_exists("bar", "region", REQUIRED)
        .obj(),
        [
            MakePod().node("nodeA").labels({"foo": ""}).obj(),
            MakePod().node("nodeB").labels({"bar": ""}).obj(),
        ],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
        None,
        [unschedulable(ANTI), unschedulable(ANTI)],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when one term has invalid topologyKey",
        MakePod().label("foo", "").label("bar", "").obj(),
        [
            MakePod()
            .node("nodeA")
            .pod_anti_affinity_exists("foo", "invalid-node-label", REQUIRED)
            .pod_anti_affinity_exists("bar", "zone", REQUIRED)
            .obj()
        ],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
        None,
        [unschedulable(EXISTING), None],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when one term has invalid topologyKey",
        MakePod()
        .pod_anti_affinity_exists("foo", "invalid-node-label", REQUIRED)
        .pod_anti_affinity_exists("bar", "zone", REQUIRED)
        .obj(),
        [MakePod().name("podA").node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
        None,
        [unschedulable(ANTI), None],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when all terms have valid topologyKey",
        MakePod().label("foo", "").label("bar", "").obj(),
        [
            MakePod()
            .node("nodeA")
            .pod_anti_affinity_exists("foo", "region", REQUIRED)
            .pod_anti_affinity_exists("bar", "zone", REQUIRED)
            .obj()
        ],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
        None,
        [unschedulable(EXISTING), unschedulable(EXISTING)],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when all terms have valid topologyKey",
        MakePod()
        .pod_anti_affinity_exists("foo", "region", REQUIRED)
        .pod_anti_affinity_exists("bar", "zone", REQUIRED)
        .obj(),
        [MakePod().node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
        None,
        [unschedulable(ANTI), unschedulable(ANTI)],
    ),
    (
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one "
        "anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
        MakePod().label("foo", "").label("bar", "").obj(),
        [
            MakePod()
            .node("nodeA")
            .pod_anti_affinity_exists("foo", "zone", REQUIRED)
            .pod_anti_affinity_exists("labelA", "zone", REQUIRED)
            .obj(),
            MakePod()
            .node("nodeB")
            .pod_anti_affinity_exists("bar", "zone", REQUIRED)
            .pod_anti_affinity_exists("labelB", "zone", REQUIRED)
            .obj(),
        ],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2"), _abc("nodeC", "r1", "z3")],
        None,
        [unschedulable(EXISTING), unschedulable(EXISTING), None],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check "
        "if all topologyKeys match",
        MakePod()
        .pod_affinity_exists("foo", "region", REQUIRED)
        .pod_affinity_exists("bar", "zone", REQUIRED)
        .obj(),
        [MakePod().name("pod1").labels({"foo": "", "bar": ""}).node("nodeA").obj()],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z1")],
        None,
        [None, None],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check "
        "if all topologyKeys match, and the match logic should be satisfied on the same pod",
        MakePod()
        .pod_affinity_exists("foo", "region", REQUIRED)
        .pod_affinity_exists("bar", "zone", REQUIRED)
        .obj(),
        [
            MakePod().node("nodeA").name("pod1").labels({"foo": ""}).obj(),
            MakePod().node("nodeB").name("pod2").labels({"bar": ""}).obj(),
        ],
        [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
        None,
        [unresolvable(AFF), unresolvable(AFF)],
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "nodes", "want_pre", "want"),
    MULTI_NODE_CASES,
    ids=[c[0][:60] for c in MULTI_NODE_CASES],
)
def test_required_affinity_multiple_nodes(
    name: str,
    incoming: Any,
    pods: list[Any],
    nodes: list[Any],
    want_pre: Status | None,
    want: list[Status | None],
) -> None:
    pre, got = run_filters(pods, nodes, incoming, [namespace("NS1")])
    assert same(pre, want_pre), (pre, want_pre)
    if want_pre is None:
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert same(g, w), (i, g, w)


def test_filter_without_pre_filter_state_is_an_error() -> None:
    """TestPreFilterDisabled."""
    plugin, snap = setup([], [node("n")])
    st = plugin.filter(new_state(), pod(), node_info(snap, "n"))
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'error reading "PreFilterInterPodAffinity" from cycleState: not found'
    with pytest.raises(RuntimeError):
        plugin.filter_batch(new_state(), pod(), snap)


# ---- TestPreFilterStateAddRemovePod ---------------------------------------------------------

LABEL1 = {"region": "r1", "zone": "z11"}
LABEL2 = {"region": "r1", "zone": "z12"}
LABEL3 = {"region": "r2", "zone": "z21"}
SELECTOR1 = {"foo": "bar"}
ANTI_FOO_BAR = {
    "requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": sel(expr("foo", "In", ["bar"])), "topologyKey": "region"}
    ]
}
ANTI_COMPLEX = {
    "requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": sel(expr("foo", "In", ["bar", "buzz"])), "topologyKey": "region"},
        {
            "labelSelector": sel(expr("service", "NotIn", ["bar", "security", "test"])),
            "topologyKey": "zone",
        },
    ]
}
AFF_COMPLEX = ANTI_COMPLEX

ADD_REMOVE_CASES: list[
    tuple[
        str,
        dict[str, Any],
        list[tuple[str, dict[str, str], str, dict[str, Any] | None]],
        tuple[dict[str, str], str, dict[str, Any]],
        dict[tuple[str, str], int],
        dict[tuple[str, str], int],
    ]
] = [
    (
        "anti-affinity terms are updated correctly after adding and removing a pod",
        {"podAntiAffinity": ANTI_FOO_BAR},
        [("p1", SELECTOR1, "nodeA", None), ("p2", {}, "nodeC", {"podAntiAffinity": ANTI_FOO_BAR})],
        (SELECTOR1, "nodeB", {"podAntiAffinity": ANTI_FOO_BAR}),
        {("region", "r1"): 2},
        {},
    ),
    (
        "complex anti-affinity terms are updated correctly after adding and removing a pod",
        {"podAntiAffinity": ANTI_COMPLEX},
        [("p1", SELECTOR1, "nodeA", None), ("p2", {}, "nodeC", {"podAntiAffinity": ANTI_FOO_BAR})],
        (SELECTOR1, "nodeA", {"podAntiAffinity": ANTI_COMPLEX}),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
    ),
    (
        "matching pod affinity and anti-affinity are updated correctly after adding and removing "
        "a pod",
        {"podAffinity": AFF_COMPLEX},
        [
            ("p1", SELECTOR1, "nodeA", None),
            ("p2", {}, "nodeC", {"podAntiAffinity": ANTI_FOO_BAR, "podAffinity": AFF_COMPLEX}),
        ],
        (SELECTOR1, "nodeA", {"podAntiAffinity": ANTI_COMPLEX}),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
]


@pytest.mark.parametrize(
    ("name", "pending_aff", "existing", "added", "want_anti", "want_aff"),
    ADD_REMOVE_CASES,
    ids=[c[0][:60] for c in ADD_REMOVE_CASES],
)
def test_pre_filter_state_add_remove_pod(
    name: str,
    pending_aff: dict[str, Any],
    existing: list[tuple[str, dict[str, str], str, dict[str, Any] | None]],
    added: tuple[dict[str, str], str, dict[str, Any]],
    want_anti: dict[tuple[str, str], int],
    want_aff: dict[tuple[str, str], int],
) -> None:
    nodes = [node("nodeA", LABEL1), node("nodeB", LABEL2), node("nodeC", LABEL3)]
    pending = pod("pending", labels=SELECTOR1, affinity=pending_aff)
    existing_pods = [pod(n, labels=lb, node=nd, affinity=a) for n, lb, nd, a in existing]
    added_pod = pod("addedPod", labels=added[0], node=added[1], affinity=added[2])

    def state_for(pods: list[Any]) -> tuple[Any, Any, PreFilterState, Any]:
        plugin, snap = setup(pods, nodes)
        cs = new_state()
        _, st = plugin.pre_filter(cs, pending, snap)
        assert st is None, st
        s = cs.read(PRE_FILTER_STATE_KEY)
        assert isinstance(s, PreFilterState)
        return plugin, cs, s, snap

    def counts(s: PreFilterState) -> tuple[dict[tuple[str, str], int], ...]:
        return (
            s.existing_anti_affinity_counts.to_dict(),
            s.affinity_counts.to_dict(),
            s.anti_affinity_counts.to_dict(),
        )

    _, _, all_pods_state, _ = state_for([*existing_pods, added_pod])
    plugin, cs, s, snap = state_for(existing_pods)
    original = counts(s.clone())
    ni = node_info(snap, added[1])
    assert plugin.add_pod(cs, pending, added_pod, ni) is None
    assert s.anti_affinity_counts.to_dict() == want_anti
    assert s.affinity_counts.to_dict() == want_aff
    assert counts(s) == counts(all_pods_state)
    # The batch Filter reads the updated (dict-mode) counts like the per-node Filter.
    mask = plugin.filter_batch(cs, pending, snap)
    for name_ in ("nodeA", "nodeB", "nodeC"):
        row = snap.row(name_)
        assert row is not None
        assert bool(mask[row]) == (plugin.filter(cs, pending, node_info(snap, name_)) is None)
    assert plugin.remove_pod(cs, pending, added_pod, ni) is None
    assert counts(s) == original


def test_pre_filter_state_clone_is_deep() -> None:
    """TestPreFilterStateClone: a clone equals its source and updates do not leak either way."""
    plugin, snap = setup(
        [pod("p", labels={"foo": "bar"}, node="node1")], [node("node1", {"name": "node1"})]
    )
    cs = new_state()
    incoming = MakePod().pod_anti_affinity_in("foo", "name", ["bar"], REQUIRED).obj()
    plugin.pre_filter(cs, incoming, snap)
    s = cs.read(PRE_FILTER_STATE_KEY)
    c = s.clone()
    assert c is not s
    assert (
        c.anti_affinity_counts.to_dict()
        == s.anti_affinity_counts.to_dict()
        == {("name", "node1"): 1}
    )
    node1 = node_info(snap, "node1").node
    other = pod("q", labels={"foo": "bar"}, node="node1")
    c.update_with_pod(other, node1, 1)
    assert c.anti_affinity_counts.to_dict() == {("name", "node1"): 2}
    assert s.anti_affinity_counts.to_dict() == {("name", "node1"): 1}
    c2 = s.clone()
    s.update_with_pod(other, node1, -1)
    assert s.anti_affinity_counts.to_dict() == {}
    assert c2.anti_affinity_counts.to_dict() == {("name", "node1"): 1}
    assert cs.clone().read(PRE_FILTER_STATE_KEY) is not s


def test_topology_counts_drop_zero_entries() -> None:
    c = TopologyCounts()
    c.update("k", "v", 1)
    c.update("k", "v", -1)
    assert c.is_empty() and c.to_dict() == {}
    c.update("k", "v", -1)
    assert not c.is_empty() and c.get("k", "v") == -1


# ---- TestGetTPMapMatchingIncomingAffinityAntiAffinity ----------------------------------------


def _normal(*labels: str) -> Any:
    b = MakePod().name("normal").node("nodeA")
    for lb in labels:
        b.label(lb, "")
    return b.obj()


INCOMING_CASES: list[
    tuple[str, list[Any], Any, dict[tuple[str, str], int], dict[tuple[str, str], int]]
] = [
    ("nil test", [], MakePod().name("aaa-normal").obj(), {}, {}),
    (
        "incoming pod without affinity/anti-affinity causes a no-op",
        [_normal("aaa")],
        MakePod().name("aaa-normal").obj(),
        {},
        {},
    ),
    (
        "no pod has label that violates incoming pod's affinity and anti-affinity",
        [_normal("bbb")],
        MakePod()
        .name("aaa-anti")
        .pod_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_anti_affinity_exists("aaa", "hostname", REQUIRED)
        .obj(),
        {},
        {},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - single term case",
        [_normal("aaa")],
        MakePod()
        .name("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_anti_affinity_exists("aaa", "hostname", REQUIRED)
        .obj(),
        {("hostname", "nodeA"): 1},
        {("hostname", "nodeA"): 1},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
        [_normal("aaa", "bbb")],
        MakePod()
        .name("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_affinity_exists("bbb", "hostname", REQUIRED)
        .pod_anti_affinity_exists("aaa", "hostname", REQUIRED)
        .obj(),
        {("hostname", "nodeA"): 2},
        {("hostname", "nodeA"): 1},
    ),
    (
        "existing pod not match incoming pod's affinity but matches anti-affinity",
        [_normal("aaa")],
        MakePod()
        .name("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_affinity_exists("bbb", "hostname", REQUIRED)
        .pod_anti_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_anti_affinity_exists("bbb", "hostname", REQUIRED)
        .obj(),
        {},
        {("hostname", "nodeA"): 1},
    ),
    (
        "incoming pod's anti-affinity has more than one term - existing pod violates partial "
        "term - case 1",
        [_normal("aaa", "bbb")],
        MakePod()
        .name("anaffi-antiaffiti")
        .pod_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_affinity_exists("ccc", "hostname", REQUIRED)
        .pod_anti_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_anti_affinity_exists("ccc", "hostname", REQUIRED)
        .obj(),
        {},
        {("hostname", "nodeA"): 1},
    ),
    (
        "incoming pod's anti-affinity has more than one term - existing pod violates partial "
        "term - case 2",
        [_normal("bbb")],
        MakePod()
        .name("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_affinity_exists("bbb", "hostname", REQUIRED)
        .pod_anti_affinity_exists("aaa", "hostname", REQUIRED)
        .pod_anti_affinity_exists("bbb", "hostname", REQUIRED)
        .obj(),
        {},
        {("hostname", "nodeA"): 1},
    ),
]


@pytest.mark.parametrize(
    ("name", "existing", "incoming", "want_aff", "want_anti"),
    INCOMING_CASES,
    ids=[c[0][:60] for c in INCOMING_CASES],
)
def test_incoming_affinity_anti_affinity_counts(
    name: str,
    existing: list[Any],
    incoming: Any,
    want_aff: dict[tuple[str, str], int],
    want_anti: dict[tuple[str, str], int],
) -> None:
    plugin, snap = setup(existing, [node("nodeA", {"hostname": "nodeA"})])
    cs = new_state()
    _, st = plugin.pre_filter(cs, incoming, snap)
    if st is not None:  # no terms at all: Skip, nothing counted
        assert st.is_skip() and not want_aff and not want_anti
        return
    s = cs.read(PRE_FILTER_STATE_KEY)
    assert s.affinity_counts.to_dict() == want_aff
    assert s.anti_affinity_counts.to_dict() == want_anti


# ---- v1.36's namespaceSelector of the incoming pod -------------------------------------------


def _ns_selector_term(op: str) -> dict[str, Any]:
    values = ["team1"] if op == "NotIn" else None
    return {
        "labelSelector": sel(expr("service", "In", ["securityscan"])),
        "namespaceSelector": sel(expr("team", op, values)),
        "topologyKey": "zone",
    }


@pytest.mark.parametrize("op", ["NotIn", "DoesNotExist"])
@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_incoming_namespace_selector_matching_no_labels_selects_every_namespace_in_v1_36(
    op: str, version: str
) -> None:
    """The existing pod's namespace (team=team1) is not selected by the incoming pod's
    anti-affinity namespaceSelector; v1.36 matched the kept selector against nil labels
    (mergeAffinityTermNamespacesIfNotEmpty by value), so it selected every namespace."""
    incoming = with_terms("subteam1.team2", POD_LABEL2, None, [_ns_selector_term(op)])
    existing = pod(name="e", ns="subteam1.team1", labels=POD_LABEL, node="node1")
    plugin, snap = setup([existing], [NODE1], NAMESPACES, version=version)
    state = new_state()
    _, pre = plugin.pre_filter(state, incoming, snap)
    assert pre is None
    got = plugin.filter(state, incoming, node_info(snap, "node1"))
    want = unschedulable(ANTI) if version == "1.36" else None
    assert same(got, want), (got, want)
    assert plugin.filter_batch(state, incoming, snap).tolist() == [want is None]


def test_incoming_terms_widen_only_selectors_that_match_no_labels() -> None:
    from ksched.api.selectors import EVERYTHING
    from ksched.plugins.interpodaffinity.terms import incoming_terms, pod_terms

    incoming = with_terms(
        "subteam1.team2",
        POD_LABEL2,
        [_ns_selector_term("NotIn")],
        [_ns_selector_term("In") | {"namespaceSelector": sel(expr("team", "In", ["a"]))}],
    )
    assert incoming_terms(incoming, False) is pod_terms(incoming)
    v136 = incoming_terms(incoming, True)
    assert v136.required_affinity[0].ns_selector is EVERYTHING
    assert v136.required_anti_affinity[0] is pod_terms(incoming).required_anti_affinity[0]
    plain = with_terms(
        "ns",
        POD_LABEL2,
        None,
        [_ns_selector_term("In") | {"namespaceSelector": sel(expr("team", "In", ["a"]))}],
    )
    assert incoming_terms(plain, True) is pod_terms(plain)
