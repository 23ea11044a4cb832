"""InterPodAffinity PreScore/Score/NormalizeScore, ported from upstream's scoring_test.go.

Scores are computed both per node (``score``) and in batch (``score_batch``); both must
give upstream's normalized list.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.framework.status import Code
from tests.plugins.test_interpodaffinity_support import (
    NAMESPACES,
    new_state,
    node,
    node_info,
    pod,
    setup,
)

RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
MAX = 100


def expr(key: str, op: str, values: list[str] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return e


def weighted(
    weight: int, topology_key: str, *exprs: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "weight": weight,
        "podAffinityTerm": {
            "labelSelector": {"matchExpressions": list(exprs)},
            "topologyKey": topology_key,
            **extra,
        },
    }


def preferred(
    affinity: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if affinity:
        out["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": affinity}
    if anti:
        out["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": anti}
    return out


STAY_WITH_S1_IN_REGION = preferred([weighted(5, "region", expr("security", "In", ["S1"]))])
STAY_WITH_S2_IN_REGION = preferred([weighted(6, "region", expr("security", "In", ["S2"]))])
AFFINITY3 = preferred(
    [
        weighted(8, "region", expr("security", "NotIn", ["S1"]), expr("security", "In", ["S2"])),
        weighted(2, "region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
    ]
)
HARD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [expr("security", "In", ["S1", "value2"])]},
                "topologyKey": "region",
            },
            {
                "labelSelector": {
                    "matchExpressions": [
                        expr("security", "Exists"),
                        expr("wrongkey", "DoesNotExist"),
                    ]
                },
                "topologyKey": "region",
            },
        ]
    }
}
AWAY_FROM_S1_IN_AZ = preferred(anti=[weighted(5, "az", expr("security", "In", ["S1"]))])
AWAY_FROM_S2_IN_AZ = preferred(anti=[weighted(5, "az", expr("security", "In", ["S2"]))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = preferred(
    [weighted(8, "region", expr("security", "In", ["S1"]))],
    [weighted(5, "az", expr("security", "In", ["S2"]))],
)
_NS_SEL = {
    "namespaces": ["subteam2.team2"],
    "namespaceSelector": {"matchExpressions": [expr("team", "In", ["team1"])]},
}
AFFINITY_NAMESPACE_SELECTOR = preferred(
    [weighted(5, "region", expr("security", "In", ["S1"]), **_NS_SEL)]
)
ANTI_AFFINITY_NAMESPACE_SELECTOR = preferred(
    anti=[weighted(5, "region", expr("security", "In", ["S1"]), **_NS_SEL)]
)
INVALID_AFFINITY_LABELS = preferred(
    [weighted(8, "region", expr("security", "In", ["{{.bad-value.}}"]))]
)
INVALID_ANTI_AFFINITY_LABELS = preferred(
    anti=[weighted(5, "az", expr("security", "In", ["{{.bad-value.}}"]))]
)


def n(name: str, labels: dict[str, str]) -> Any:
    return node(name, labels)


def p(
    node_name: str = "",
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    ns: str = "",
) -> Any:
    return pod(ns=ns, labels=labels, node=node_name, affinity=affinity)


Case = tuple[str, Any, list[Any], list[Any], list[int] | None, bool, tuple[Code, str] | None]

PREFERRED_CASES: list[Case] = [
    (
        "all nodes are same priority as Affinity is nil",
        p(labels=S1),
        [],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        None,
        False,
        (Code.SKIP, ""),
    ),
    (
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to "
        "others which doesn't match either pods in nodes or in topology key",
        p(labels=S1, affinity=STAY_WITH_S1_IN_REGION),
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        [MAX, 0, 0],
        False,
        None,
    ),
    (
        "All the nodes that have the same topology key & label value with one of them has an "
        "existing pod that match the affinity rules, have the same score",
        p(affinity=STAY_WITH_S1_IN_REGION),
        [p("node1", S1)],
        [n("node1", RG_CHINA), n("node2", RG_CHINA_AZ1), n("node3", RG_INDIA)],
        [MAX, MAX, 0],
        False,
        None,
    ),
    (
        "Affinity: nodes in one region has more matching pods comparing to other region, so the "
        "region which has more matches will get high score",
        p(labels=S1, affinity=STAY_WITH_S2_IN_REGION),
        [
            p("node1", S2),
            p("node1", S2),
            p("node2", S2),
            p("node3", S2),
            p("node4", S2),
            p("node5", S2),
        ],
        [
            n("node1", RG_CHINA),
            n("node2", RG_INDIA),
            n("node3", RG_CHINA),
            n("node4", RG_CHINA),
            n("node5", RG_INDIA),
        ],
        [MAX, 0, MAX, MAX, 0],
        False,
        None,
    ),
    (
        "Affinity: different Label operators and values for pod affinity scheduling preference, "
        "including some match failures",
        p(labels=S1, affinity=AFFINITY3),
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        [20, MAX, 0],
        False,
        None,
    ),
    (
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in "
        "pod affinity symmetry",
        p(labels=S2),
        [p("node1", S1, STAY_WITH_S1_IN_REGION), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        [0, MAX, 0],
        False,
        None,
    ),
    (
        "Affinity symmetry with namespace selector",
        p(labels=S1, ns="subteam1.team1"),
        [p("node1", S1, AFFINITY_NAMESPACE_SELECTOR), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        [MAX, 0, 0],
        False,
        None,
    ),
    (
        "AntiAffinity symmetry with namespace selector",
        p(labels=S1, ns="subteam1.team1"),
        [p("node1", S1, ANTI_AFFINITY_NAMESPACE_SELECTOR), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        [0, MAX, MAX],
        False,
        None,
    ),
    (
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod "
        "affinity symmetry",
        p(labels=S1),
        [p("node1", S1, HARD_AFFINITY), p("node2", S2, HARD_AFFINITY)],
        [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)],
        [MAX, MAX, 0],
        False,
        None,
    ),
    (
        "Anti Affinity: pod that does not match existing pods in node will get high score",
        p(labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [p("node1", S1), p("node2", S2)],
        [n("node1", AZ1), n("node2", RG_CHINA)],
        [0, MAX],
        False,
        None,
    ),
    (
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get "
        "higher score comparing to others",
        p(labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [p("node1", S1), p("node2", S1)],
        [n("node1", AZ1), n("node2", RG_CHINA)],
        [0, MAX],
        False,
        None,
    ),
    (
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which "
        "has more unmatches will get high score",
        p(labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        [p("node1", S1), p("node1", S1), p("node2", S2)],
        [n("node1", AZ1), n("node2", RG_INDIA)],
        [0, MAX],
        False,
        None,
    ),
    (
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get "
        "high score",
        p(labels=S2),
        [p("node1", S1, AWAY_FROM_S2_IN_AZ), p("node2", S2, AWAY_FROM_S1_IN_AZ)],
        [n("node1", AZ1), n("node2", AZ2)],
        [0, MAX],
        False,
        None,
    ),
    (
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution"
        " in both pod affinity & anti affinity",
        p(labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [p("node1", S1), p("node2", S1)],
        [n("node1", RG_CHINA), n("node2", AZ1)],
        [MAX, 0],
        False,
        None,
    ),
    (
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to "
        "schedule and existing pods have the same labels",
        p(labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            p("node1", S1),
            p("node1", S1),
            p("node2", S1),
            p("node3", S1),
            p("node3", S1),
            p("node4", S1),
            p("node5", S1),
        ],
        [
            n("node1", RG_CHINA_AZ1),
            n("node2", RG_INDIA),
            n("node3", RG_CHINA),
            n("node4", RG_CHINA),
            n("node5", RG_INDIA),
        ],
        [MAX, 0, MAX, MAX, 0],
        False,
        None,
    ),
    (
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringScheduling"
        "IgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
        p(labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            p("node1", S1),
            p("node2", S2),
            p("node3", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            p("node4", None, AWAY_FROM_S1_IN_AZ),
        ],
        [n("node1", RG_CHINA), n("node2", AZ1), n("node3", RG_INDIA), n("node4", AZ2)],
        [MAX, 0, MAX, 0],
        False,
        None,
    ),
    (
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        p(labels=S1),
        [p("node1", S1), p("node2", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        [n("node1", RG_CHINA), n("node2", RG_CHINA)],
        [0, 0],
        False,
        None,
    ),
    (
        "invalid Affinity fails PreScore",
        p(affinity=INVALID_AFFINITY_LABELS),
        [],
        [n("node1", RG_CHINA), n("node2", RG_CHINA)],
        None,
        False,
        (Code.ERROR, 'Invalid value: "{{.bad-value.}}"'),
    ),
    (
        "invalid AntiAffinity fails PreScore",
        p(affinity=INVALID_ANTI_AFFINITY_LABELS),
        [],
        [n("node1", RG_CHINA), n("node2", RG_CHINA)],
        None,
        False,
        (Code.ERROR, 'Invalid value: "{{.bad-value.}}"'),
    ),
    (
        "Affinity with pods matching NamespaceSelector",
        p(labels=S1, ns="subteam1.team1", affinity=AFFINITY_NAMESPACE_SELECTOR),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        [MAX, 0],
        False,
        None,
    ),
    (
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        p(labels=S1, ns="subteam1.team1", affinity=AFFINITY_NAMESPACE_SELECTOR),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam2.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        [MAX, 0],
        False,
        None,
    ),
    (
        "Anti-affinity with pods matching NamespaceSelector",
        p(labels=S1, ns="subteam1.team1", affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        [0, MAX],
        False,
        None,
    ),
    (
        "Anti-affinity with pods matching both NamespaceSelector and Namespaces fields",
        p(labels=S1, ns="subteam1.team1", affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam2.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        [0, MAX],
        False,
        None,
    ),
    (
        "Ignore preferred terms of existing pods",
        p(labels=S2),
        [
            p("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            p("node2", S2, STAY_WITH_S2_IN_REGION),
        ],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        [0, 0],
        True,
        (Code.SKIP, ""),
    ),
    (
        "Do not ignore preferred terms of existing pods",
        p(labels=S2),
        [
            p("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            p("node2", S2, STAY_WITH_S2_IN_REGION),
        ],
        [n("node1", RG_CHINA), n("node2", RG_INDIA)],
        [0, MAX],
        False,
        None,
    ),
    ("No nodes to score", p(labels=S2), [], [], None, False, (Code.SKIP, "")),
]


def scores_for(plugin: Any, snap: Any, state: Any, incoming: Any, nodes: list[Any]) -> list[int]:
    """Per-node Score + NormalizeScore, checked against score_batch."""
    names = [x.metadata.name for x in nodes]
    raw = np.array([plugin.score(state, incoming, snap.get(nm)) for nm in names], dtype=np.int64)
    rows = np.array([snap.row(nm) for nm in names], dtype=np.intp)
    batch = plugin.score_batch(state, incoming, snap, rows)
    assert raw.tolist() == np.asarray(batch).tolist()
    assert plugin.normalize_score(state, incoming, raw) is None
    return [int(x) for x in raw]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "nodes", "expected", "ignore", "want"),
    PREFERRED_CASES,
    ids=[c[0][:60] for c in PREFERRED_CASES],
)
def test_preferred_affinity(
    name: str,
    incoming: Any,
    pods: list[Any],
    nodes: list[Any],
    expected: list[int] | None,
    ignore: bool,
    want: tuple[Code, str] | None,
) -> None:
    plugin, snap = setup(
        pods,
        nodes,
        NAMESPACES,
        {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": ignore},
    )
    state = new_state()
    st = plugin.pre_score(state, incoming, [node_info(snap, x.metadata.name) for x in nodes])
    if st is not None and not st.is_success():
        assert want is not None
        assert st.code == want[0]
        assert want[1] in st.message()
        return
    assert want is None
    assert scores_for(plugin, snap, state, incoming, nodes) == expected


HARD_POD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [expr("service", "In", ["S1"])]},
                "namespaces": ["", "subteam2.team2"],
                "namespaceSelector": {"matchExpressions": [expr("team", "In", ["team1"])]},
                "topologyKey": "region",
            }
        ]
    }
}
SERVICE_S1 = {"service": "S1"}

HARD_WEIGHT_CASES: list[tuple[str, str, int, list[int] | None]] = [
    ("with default weight", "", 1, [MAX, MAX, 0]),
    ("with zero weight", "", 0, None),
    ("with no matching namespace", "subteam1.team2", 1, None),
    ("with matching NamespaceSelector", "subteam1.team1", 1, [MAX, MAX, 0]),
    ("with matching Namespaces", "subteam2.team2", 1, [MAX, MAX, 0]),
]


@pytest.mark.parametrize(
    ("name", "ns", "weight", "expected"), HARD_WEIGHT_CASES, ids=[c[0] for c in HARD_WEIGHT_CASES]
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    name: str, ns: str, weight: int, expected: list[int] | None
) -> None:
    nodes = [n("node1", RG_CHINA), n("node2", RG_INDIA), n("node3", AZ1)]
    pods = [p("node1", None, HARD_POD_AFFINITY), p("node2", None, HARD_POD_AFFINITY)]
    incoming = p(labels=SERVICE_S1, ns=ns)
    plugin, snap = setup(pods, nodes, NAMESPACES, {"hardPodAffinityWeight": weight})
    state = new_state()
    st = plugin.pre_score(state, incoming, [node_info(snap, x.metadata.name) for x in nodes])
    if expected is None:
        assert st is not None and st.is_skip()
        return
    assert st is None
    assert scores_for(plugin, snap, state, incoming, nodes) == expected


def test_normalize_uses_min_and_max_of_scored_nodes() -> None:
    """Negative raw scores: min maps to 0, max to 100, float64 truncation in between."""
    plugin, snap = setup(
        [p("a", S1), p("b", S1), p("b", S1), p("c", S2)],
        [n("a", {"h": "a"}), n("b", {"h": "b"}), n("c", {"h": "c"})],
    )
    incoming = p(
        affinity=preferred(
            [weighted(3, "h", expr("security", "In", ["S2"]))],
            [weighted(7, "h", expr("security", "In", ["S1"]))],
        )
    )
    state = new_state()
    assert plugin.pre_score(state, incoming, list(snap)) is None
    raw = scores_for(plugin, snap, state, incoming, [n("a", {}), n("b", {}), n("c", {})])
    # raw a=-7, b=-14, c=+3 -> (x+14)/17*100 truncated
    assert raw == [int(100.0 * (7 / 17)), 0, 100]


@pytest.mark.parametrize(("version", "want"), [("1.36", [100, 0]), ("1.37", [0, 0])])
def test_incoming_namespace_selector_matching_no_labels_in_v1_36(
    version: str, want: list[int]
) -> None:
    """A preferred affinity term whose namespaceSelector (team NotIn [team1]) does not
    select the existing pod's namespace: v1.36 matched the kept selector against nil labels
    and so counted the pod (see ``incoming_terms``); v1.37 does not."""
    term = weighted(
        5,
        "region",
        expr("security", "In", ["S1"]),
        namespaceSelector={"matchExpressions": [expr("team", "NotIn", ["team1"])]},
    )
    incoming = p(labels=S1, affinity=preferred([term]), ns="subteam1.team2")
    nodes = [n("m1", {"region": "China"}), n("m2", {"region": "India"})]
    pods = [p("m1", S1, ns="subteam1.team1")]
    plugin, snap = setup(pods, nodes, NAMESPACES, version=version)
    state = new_state()
    st = plugin.pre_score(state, incoming, [node_info(snap, x.metadata.name) for x in nodes])
    if version == "1.37":
        assert st is not None and st.code == Code.SKIP  # nothing scores anywhere
        return
    assert st is None
    assert scores_for(plugin, snap, state, incoming, nodes) == want  # normalised
