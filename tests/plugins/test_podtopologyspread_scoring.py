"""PodTopologySpread PreScore/Score/NormalizeScore, ported from upstream ``scoring_test.go``.

Every Score case runs both the per-node ``score`` and the batch ``score_batch`` and
requires the same raw scores before normalizing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.snapshot import NodeInfoView
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins.podtopologyspread.common import Constraint
from ksched.plugins.podtopologyspread.scoring import (
    PRE_SCORE_KEY,
    PreScoreState,
    go_log,
    go_round,
    topology_normalizing_weight,
)
from tests.factories import make_snapshot
from tests.plugins.test_podtopologyspread_common import (
    BAR,
    FOO,
    HOSTNAME,
    UNSCHEDULABLE_TAINT,
    ZONE_KEY,
    mk_node,
    mk_pod,
    node_affinity_in,
    placed,
    plugin,
    sel,
    spread,
)

SA = "ScheduleAnyway"
LIST = {"defaultingType": "List"}
SYSTEM = {"defaultingType": "System"}
w = topology_normalizing_weight


def hn(name: str, **kw: Any) -> Any:
    """A node with only the hostname label (plus ``kw``)."""
    return mk_node(name, labels={HOSTNAME: name}, **kw)


def zh(name: str, zone: str) -> Any:
    return mk_node(name, labels={HOSTNAME: name}, zone=zone)


def pre_score(
    pod: PodInfo,
    nodes: list[Any],
    failed: list[Any] = (),  # type: ignore[assignment]
    pods: list[PodInfo] = (),
    args: dict[str, Any] | None = None,  # type: ignore[assignment]
    listers: dict[str, Any] | None = None,
) -> tuple[Any, Any, CycleState, Any]:
    snap = make_snapshot([*nodes, *failed], list(pods))
    pl = plugin(snap, args=args if args is not None else LIST, listers=listers)
    state = CycleState()
    names = [n.metadata.name for n in nodes]
    rows = np.array([snap.row(n) for n in names], dtype=np.intp)
    st = pl.pre_score(state, pod, NodeInfoView(snap.node_infos, rows))
    return st, pl, state, (snap, rows)


# ---- TestPreScoreSkip ---------------------------------------------------------------------


def test_pre_score_skips_pod_without_soft_constraints() -> None:
    st, *_ = pre_score(mk_pod(), [hn("node-a"), hn("node-b")])
    assert st is not None and st.code == Code.SKIP


def test_pre_score_skips_default_constraints_and_a_replicaset_that_doesnt_match() -> None:
    pod = mk_pod(labels={"foo": "bar", "baz": "sup"}, owner=("apps/v1", "ReplicaSet", "rs2"))
    rs = {
        "metadata": {"name": "rs1", "namespace": "default"},
        "spec": {"selector": {"matchExpressions": [{"key": "tar", "operator": "Exists"}]}},
    }
    args = {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}],
    }
    st, *_ = pre_score(
        pod,
        [mk_node("node-a", planet="mars")],
        args=args,
        listers={"replicasets": {"default/rs1": rs}},
    )
    assert st is not None and st.code == Code.SKIP


def test_pre_score_skips_empty_cluster() -> None:
    pl = plugin(make_snapshot([]))
    pod = mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, FOO)])
    st = pl.pre_score(CycleState(), pod, [])
    assert st is not None and st.code == Code.SKIP


# ---- TestPreScoreStateEmptyNodes ---------------------------------------------------------------

_RS1 = {
    "default/rs1": {"metadata": {"name": "rs1", "namespace": "default"}, "spec": {"selector": FOO}}
}
_ABX = [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")]
_ABX_FOO = [
    mk_node("node-a", labels={HOSTNAME: "node-a"}, zone="zone1", foo=""),
    mk_node("node-b", labels={HOSTNAME: "node-b"}, zone="zone1", foo=""),
    mk_node("node-x", labels={HOSTNAME: "node-x"}, zone="zone2"),
]
_ABX_TAINT = [
    mk_node("node-a", labels={HOSTNAME: "node-a"}, zone="zone1", foo=""),
    mk_node("node-b", labels={HOSTNAME: "node-b"}, zone="zone1", foo=""),
    mk_node("node-x", [UNSCHEDULABLE_TAINT], labels={HOSTNAME: "node-x"}, zone="zone2"),
]
Z12 = {"zone1": 0, "zone2": 0}

# (name, pod, nodes, args, listers, constraints, ignored, per-constraint counts, weights)
EMPTY_NODES_CASES: list[tuple[Any, ...]] = [
    (
        "normal case",
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "zone", SA, FOO), spread(1, HOSTNAME, SA, FOO)],
        ),
        _ABX,
        LIST,
        None,
        [Constraint(1, "zone", sel(FOO)), Constraint(1, HOSTNAME, sel(FOO))],
        set(),
        [Z12, {}],
        [w(2), w(3)],
    ),
    (
        "null selector",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA)]),
        _ABX,
        LIST,
        None,
        [Constraint(1, "zone", sel(None))],
        set(),
        [Z12],
        [w(2)],
    ),
    (
        "node-x doesn't have label zone",
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "zone", SA, FOO), spread(1, HOSTNAME, SA, BAR)],
        ),
        [zh("node-a", "zone1"), zh("node-b", "zone1"), hn("node-x")],
        LIST,
        None,
        [Constraint(1, "zone", sel(FOO)), Constraint(1, HOSTNAME, sel(BAR))],
        {"node-x"},
        [{"zone1": 0}, {}],
        [w(1), w(2)],
    ),
    (
        "system default constraints and a replicaset",
        mk_pod(labels={"foo": "tar", "baz": "sup"}, owner=("apps/v1", "ReplicaSet", "rs1")),
        # Nodes with no zone are not excluded. They are considered a separate zone.
        [
            mk_node("node-a", labels={HOSTNAME: "node-a", ZONE_KEY: "mars"}),
            mk_node("node-b", labels={HOSTNAME: "node-b", ZONE_KEY: "mars"}),
            hn("node-c"),
            hn("node-d"),
        ],
        SYSTEM,
        {"replicasets": _RS1},
        [Constraint(3, HOSTNAME, sel(FOO)), Constraint(5, ZONE_KEY, sel(FOO))],
        set(),
        [{}, {"mars": 0, "": 0}],
        [w(4), w(2)],
    ),
    (
        "default constraints and a replicaset",
        mk_pod(labels={"foo": "tar", "baz": "sup"}, owner=("apps/v1", "ReplicaSet", "rs1")),
        [mk_node("node-a", labels={HOSTNAME: "node-a"}, rack="rack1", planet="mars")],
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA},
                {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA},
            ],
        },
        {"replicasets": _RS1},
        [Constraint(1, HOSTNAME, sel(FOO)), Constraint(2, "planet", sel(FOO))],
        set(),
        [{}, {"mars": 0}],
        [w(1), w(1)],
    ),
    (
        "default constraints and a replicaset, but pod has constraints",
        mk_pod(
            labels={"foo": "bar", "baz": "sup"},
            owner=("apps/v1", "ReplicaSet", "rs1"),
            constraints=[
                spread(1, "zone", selector=BAR),
                spread(2, "planet", SA, {"matchLabels": {"baz": "sup"}}),
            ],
        ),
        [mk_node("node-a", planet="mars", galaxy="andromeda")],
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 2, "topologyKey": "galaxy", "whenUnsatisfiable": SA}
            ],
        },
        {"replicasets": _RS1},
        [Constraint(2, "planet", sel({"matchLabels": {"baz": "sup"}}))],
        set(),
        [{"mars": 0}],
        [w(1)],
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        mk_pod(
            labels={"foo": ""}, nodeSelector={"foo": ""}, constraints=[spread(1, "zone", SA, BAR)]
        ),
        _ABX_FOO,
        LIST,
        None,
        [Constraint(1, "zone", sel(BAR))],
        set(),
        [Z12],
        [w(2)],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[spread(1, "zone", SA, BAR, affinity_policy="Ignore")],
        ),
        _ABX_FOO,
        LIST,
        None,
        [Constraint(1, "zone", sel(BAR), 1, "Ignore")],
        set(),
        [Z12],
        [w(2)],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("foo", [""]),
            constraints=[spread(1, "zone", SA, BAR)],
        ),
        _ABX_FOO,
        LIST,
        None,
        [Constraint(1, "zone", sel(BAR))],
        set(),
        [Z12],
        [w(2)],
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("foo", [""]),
            constraints=[spread(1, "zone", SA, BAR, affinity_policy="Ignore")],
        ),
        _ABX_FOO,
        LIST,
        None,
        [Constraint(1, "zone", sel(BAR), 1, "Ignore")],
        set(),
        [Z12],
        [w(2)],
    ),
    (
        "NodeTaintsPolicy honored",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, BAR, taints_policy="Honor")]),
        _ABX_TAINT,
        LIST,
        None,
        [Constraint(1, "zone", sel(BAR), 1, "Honor", "Honor")],
        set(),
        [Z12],
        [w(2)],
    ),
    (
        "NodeTaintsPolicy ignored",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, BAR)]),
        _ABX_TAINT,
        LIST,
        None,
        [Constraint(1, "zone", sel(BAR))],
        set(),
        [Z12],
        [w(2)],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "args", "listers", "constraints", "ignored", "counts", "weights"),
    EMPTY_NODES_CASES,
    ids=[c[0] for c in EMPTY_NODES_CASES],
)
def test_pre_score_state_empty_nodes(
    name: str,
    pod: PodInfo,
    nodes: list[Any],
    args: dict[str, Any],
    listers: dict[str, Any] | None,
    constraints: list[Constraint],
    ignored: set[str],
    counts: list[dict[str, int]],
    weights: list[float],
) -> None:
    st, _, state, (snap, rows) = pre_score(pod, nodes, args=args, listers=listers)
    assert st is None
    s: PreScoreState = state.read(PRE_SCORE_KEY)
    assert list(s.constraints) == constraints
    names = [snap.node_infos[int(r)].name for r in rows]
    assert {n for n, ig in zip(names, s.ignored.tolist(), strict=True) if ig} == ignored
    assert [d.as_dict() for d in s.domains] == counts
    assert [d.weight for d in s.domains] == weights


# ---- TestPodTopologySpreadScore ----------------------------------------------------------------

A_B_C_D = [hn(n) for n in ("node-a", "node-b", "node-c", "node-d")]
P_2103 = [
    placed(s, foo="")
    for s in (
        "p-a1@node-a",
        "p-a2@node-a",
        "p-b1@node-b",
        "p-d1@node-d",
        "p-d2@node-d",
        "p-d3@node-d",
    )
]
P_4321 = [
    placed(s, foo="")
    for s in (
        "p-a1@node-a",
        "p-a2@node-a",
        "p-a3@node-a",
        "p-a4@node-a",
        "p-b1@node-b",
        "p-b2@node-b",
        "p-b3@node-b",
        "p-c1@node-c",
        "p-c2@node-c",
        "p-d1@node-d",
    )
]
P_4213 = [
    placed(s, foo="")
    for s in (
        "p-a1@node-a",
        "p-a2@node-a",
        "p-a3@node-a",
        "p-a4@node-a",
        "p-b1@node-b",
        "p-b2@node-b",
        "p-x1@node-x",
        "p-y1@node-y",
        "p-y2@node-y",
        "p-y3@node-y",
    )
]
P_DIFF = [
    placed("p-a1@node-a", foo=""),
    placed("p-b1@node-b", foo="", bar=""),
    placed("p-y1@node-y", foo=""),
    placed("p-y2@node-y", bar=""),
]
ZONE_NODES = [
    zh("node-a", "zone1"),
    zh("node-b", "zone1"),
    zh("node-x", "zone2"),
    zh("node-y", "zone2"),
]
ABC_NODE = [mk_node(n, node=n) for n in ("node-a", "node-b", "node-c")]
ABC_FOO = [
    mk_node("node-a", node="node-a", foo=""),
    mk_node("node-b", node="node-b", foo=""),
    mk_node("node-c", node="node-c"),
]
ABC_TAINT = [
    mk_node("node-a", node="node-a"),
    mk_node("node-b", node="node-b"),
    mk_node("node-c", [UNSCHEDULABLE_TAINT], node="node-c"),
]
P_2_1_1 = [placed(s, foo="") for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-c1@node-c")]
ZONE_ABCD = [
    zh("node-a", "zone1"),
    zh("node-b", "zone1"),
    zh("node-c", "zone2"),
    zh("node-d", "zone2"),
]
HOST_FOO = [spread(1, HOSTNAME, SA, FOO)]
SVC_FOO = {
    "services": {
        "default/s": {
            "metadata": {"name": "s", "namespace": "default"},
            "spec": {"selector": {"foo": ""}},
        }
    }
}

# (name, pod, pods, nodes, failed nodes, listers, want)
SCORE_CASES: list[tuple[Any, ...]] = [
    (
        "one constraint on node, no existing pods",
        mk_pod(labels={"foo": ""}, constraints=HOST_FOO),
        [],
        [hn("node-a"), hn("node-b")],
        [],
        None,
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, only one node is candidate",
        mk_pod(labels={"foo": ""}, constraints=HOST_FOO),
        [placed(s, foo="") for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b")],
        [hn("node-a")],
        [hn("node-b")],
        None,
        {"node-a": 100},
    ),
    (
        "one constraint on node, all nodes have the same number of matching pods",
        mk_pod(labels={"foo": ""}, constraints=HOST_FOO),
        [placed("p-a1@node-a", foo=""), placed("p-b1@node-b", foo="")],
        [hn("node-a"), hn("node-b")],
        [],
        None,
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates",
        mk_pod(labels={"foo": ""}, constraints=HOST_FOO),
        P_2103,
        A_B_C_D,
        [],
        None,
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    (
        "one constraint on node, null selector",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, HOSTNAME, SA)]),
        P_2103,
        A_B_C_D,
        [],
        None,
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        mk_pod(labels={"foo": ""}, constraints=[spread(2, HOSTNAME, SA, FOO)]),
        P_2103,
        A_B_C_D,
        [],
        None,
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        mk_pod(labels={"foo": ""}, constraints=[spread(3, HOSTNAME, SA, FOO)]),
        P_4321,
        A_B_C_D,
        [],
        None,
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    (
        "system defaulting, nodes don't have zone, pods match service",
        mk_pod(labels={"foo": ""}),
        P_4321,
        A_B_C_D,
        [],
        SVC_FOO,
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        mk_pod(labels={"foo": ""}, constraints=HOST_FOO),
        P_4213,
        [hn("node-a"), hn("node-b"), hn("node-x")],
        [hn("node-y")],
        None,
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology "
        "key",
        mk_pod(labels={"foo": ""}, constraints=HOST_FOO),
        P_4213,
        [hn("node-a"), mk_node("node-b", n="node-b"), hn("node-x")],
        [hn("node-y")],
        None,
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, FOO)]),
        P_4213,
        ZONE_NODES[:3],
        ZONE_NODES[3:],
        None,
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    (
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, FOO), *HOST_FOO]),
        [
            placed(s, foo="")
            for s in (
                "p-a1@node-a",
                "p-a2@node-a",
                "p-b1@node-b",
                "p-x1@node-x",
                "p-x2@node-x",
                "p-y1@node-y",
                "p-y2@node-y",
                "p-y3@node-y",
                "p-y4@node-y",
            )
        ],
        [ZONE_NODES[0], ZONE_NODES[2]],
        [ZONE_NODES[1], ZONE_NODES[3]],
        None,
        {"node-a": 100, "node-x": 63},
    ),
    (
        "two Constraints on zone and node, with different labelSelectors",
        mk_pod(
            labels={"foo": "", "bar": ""},
            constraints=[spread(1, "zone", SA, FOO), spread(1, HOSTNAME, SA, BAR)],
        ),
        P_DIFF,
        ZONE_NODES,
        [],
        None,
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    (
        "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        mk_pod(
            labels={"foo": "", "bar": ""},
            constraints=[spread(1, "zone", SA, FOO), spread(1, HOSTNAME, SA, BAR)],
        ),
        [
            placed("p-b1@node-b", bar=""),
            placed("p-x1@node-x", foo=""),
            placed("p-y1@node-y", foo="", bar=""),
        ],
        ZONE_NODES,
        [],
        None,
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
    (
        "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are "
        "candidates",
        mk_pod(
            labels={"foo": "", "bar": ""},
            constraints=[spread(1, "zone", SA, FOO), spread(1, HOSTNAME, SA, BAR)],
        ),
        P_DIFF,
        ZONE_NODES[:3],
        ZONE_NODES[3:],
        None,
        {"node-a": 50, "node-b": 25, "node-x": 100},
    ),
    (
        "existing pods in a different namespace do not count",
        mk_pod(labels={"foo": ""}, constraints=HOST_FOO),
        [
            placed("p-a1@node-a", "ns1", foo=""),
            placed("p-a2@node-a", foo=""),
            placed("p-b1@node-b", foo=""),
            placed("p-b2@node-b", foo=""),
        ],
        [hn("node-a"), hn("node-b")],
        [],
        None,
        {"node-a": 100, "node-b": 33},
    ),
    (
        "terminating Pods should be excluded",
        mk_pod(labels={"foo": ""}, constraints=HOST_FOO),
        [mk_pod("p-a", "node-a", {"foo": ""}, terminating=True), placed("p-b@node-b", foo="")],
        [hn("node-a"), hn("node-b")],
        [],
        None,
        {"node-a": 100, "node-b": 0},
    ),
    (
        "minDomains has no effect when ScheduleAnyway",
        mk_pod(labels={"foo": ""}, constraints=[spread(2, "node", SA, FOO, min_domains=10)]),
        [
            placed(s, foo="")
            for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-b2@node-b", "p-c1@node-c")
        ],
        ABC_NODE,
        [],
        None,
        {"node-a": 75, "node-b": 75, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy honoed with labelSelectors",
        mk_pod(
            labels={"foo": ""}, nodeSelector={"foo": ""}, constraints=[spread(1, "node", SA, FOO)]
        ),
        P_2_1_1,
        ABC_FOO,
        [],
        None,
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[spread(1, "node", SA, FOO, affinity_policy="Ignore")],
        ),
        P_2_1_1,
        ABC_FOO,
        [],
        None,
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy honoed with nodeAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("foo", [""]),
            constraints=[spread(1, "node", SA, FOO)],
        ),
        P_2_1_1,
        ABC_FOO,
        [],
        None,
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("foo", [""]),
            constraints=[spread(1, "node", SA, FOO, affinity_policy="Ignore")],
        ),
        P_2_1_1,
        ABC_FOO,
        [],
        None,
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "NodeTaintsPolicy honored",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", SA, FOO, taints_policy="Honor")]),
        P_2_1_1,
        ABC_TAINT,
        [],
        None,
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeTaintsPolicy ignored",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", SA, FOO)]),
        P_2_1_1,
        ABC_TAINT,
        [],
        None,
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        mk_pod(
            labels={"foo": "", "bar": ""},
            constraints=[
                spread(1, "zone", SA, {}, match_label_keys=["foo"]),
                spread(1, HOSTNAME, SA, {}, match_label_keys=["bar"]),
            ],
        ),
        [
            placed("p-a1@node-a", foo=""),
            placed("p-b1@node-b", foo="", bar=""),
            placed("p-y1@node-c", foo=""),
            placed("p-y2@node-c", bar=""),
        ],
        ZONE_ABCD,
        [],
        None,
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        mk_pod(
            labels={"foo": "", "bar": "", "baz": ""},
            constraints=[
                spread(1, "zone", SA, FOO),
                spread(1, HOSTNAME, SA, BAR, match_label_keys=["baz"]),
            ],
        ),
        [
            placed("p-a1@node-a", foo=""),
            placed("p-b1@node-b", foo="", bar="", baz=""),
            placed("p-c1@node-c", foo=""),
            placed("p-c2@node-c", bar=""),
            placed("p-d3@node-c", bar="", baz=""),
        ],
        ZONE_ABCD,
        [],
        None,
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "pods", "nodes", "failed", "listers", "want"),
    SCORE_CASES,
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(
    name: str,
    pod: PodInfo,
    pods: list[PodInfo],
    nodes: list[Any],
    failed: list[Any],
    listers: dict[str, Any] | None,
    want: dict[str, int],
) -> None:
    st, pl, state, (snap, rows) = pre_score(pod, nodes, failed, pods, SYSTEM, listers)
    assert st is None
    raw = [pl.score(state, pod, snap.node_infos[int(r)]) for r in rows]
    batch = pl.score_batch(state, pod, snap, rows)
    assert batch.tolist() == raw
    scores = np.array(raw, dtype=np.int64)
    assert pl.normalize_score(state, pod, scores) is None
    names = [snap.node_infos[int(r)].name for r in rows]
    assert dict(zip(names, scores.tolist(), strict=True)) == want


def test_score_from_a_plain_node_list() -> None:
    """PreScore given NodeInfos rather than a snapshot view maps them by name."""
    snap = make_snapshot(A_B_C_D, P_2103)
    pl = plugin(snap, args=SYSTEM)
    pod = mk_pod(labels={"foo": ""}, constraints=HOST_FOO)
    state = CycleState()
    nodes = list(reversed(snap.node_infos))
    assert pl.pre_score(state, pod, nodes) is None
    scores = np.array([pl.score(state, pod, ni) for ni in nodes], dtype=np.int64)
    pl.normalize_score(state, pod, scores)
    assert dict(zip((n.name for n in nodes), scores.tolist(), strict=True)) == {
        "node-a": 20,
        "node-b": 60,
        "node-c": 100,
        "node-d": 0,
    }


def test_score_without_pre_score_is_an_error() -> None:
    pl = plugin(make_snapshot([hn("a")]))
    with pytest.raises(RuntimeError, match='"PreScorePodTopologySpread" from cycleState'):
        pl.score(CycleState(), mk_pod(), make_snapshot([hn("a")]).node_infos[0])


def test_normalize_all_ignored_nodes_score_zero() -> None:
    pod = mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, FOO)])
    _, pl, state, _ = pre_score(pod, [hn("a"), hn("b")], args=LIST)
    scores = np.array([0, 0], dtype=np.int64)
    pl.normalize_score(state, pod, scores)
    assert scores.tolist() == [0, 0]


# ---- Go arithmetic ---------------------------------------------------------------------------


def test_go_log_matches_go_bits() -> None:
    # math.Log(3) in Go is 1.0986122886681096; libm gives 1.0986122886681098.
    assert go_log(3.0) == 1.0986122886681096
    assert go_log(2.0) == math.log(2.0)
    assert all(abs(go_log(float(x)) - math.log(x)) <= 2.3e-16 * math.log(x) for x in range(2, 5000))


def test_go_round_is_half_away_from_zero() -> None:
    assert [go_round(x) for x in (0.5, 1.5, 2.5, -0.5, 0.49999999999999994, 2.4)] == [
        1,
        2,
        3,
        -1,
        0,
        2,
    ]


def test_prepared_constraints_follow_the_counter_cache_and_the_namespace() -> None:
    """The per-constraints counters Layouts keeps are the counter cache's: after the
    cache drops its counters (a new generation) or for another namespace, new ones."""
    from ksched.plugins.podtopologyspread.common import CounterCache, Layouts

    cs = (Constraint(1, "zone", sel({"matchLabels": {"foo": ""}})),)
    counters = CounterCache(limit=2)
    layouts = Layouts()
    first = layouts.prepare(cs, "default", counters)
    assert layouts.prepare(cs, "default", counters) is first
    assert first.counters == [counters.get("default", cs[0].selector)]
    assert (first.keys, first.honor_affinity, first.honor_taints) == (("zone",), True, False)
    other = layouts.prepare(cs, "other", counters)
    assert other.counters == [counters.get("other", cs[0].selector)]
    counters.get("third", cs[0].selector)  # over the limit: the cache starts afresh
    again = layouts.prepare(cs, "other", counters)
    assert again is not other
    assert again.counters == [counters.get("other", cs[0].selector)]
    assert again.counters[0] is not other.counters[0]
