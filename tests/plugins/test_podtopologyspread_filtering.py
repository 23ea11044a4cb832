"""PodTopologySpread PreFilter/Filter, ported from upstream ``filtering_test.go``.

Upstream's expected ``preFilterState`` is compared here per hard constraint as
(TpPairToMatchNum restricted to that constraint's key, minimum match number =
criticalPaths[0].MatchNum); the number of domains is the dict's size. Cases that only
exist for disabled feature gates (NodeInclusionPolicy, MatchLabelKeys are on, as in
current kube-scheduler) are left out.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from ksched.plugins.podtopologyspread.common import MAX_INT32, Constraint
from ksched.plugins.podtopologyspread.filtering import PRE_FILTER_KEY, PreFilterState
from tests.factories import make_snapshot
from tests.plugins.test_podtopologyspread_common import (
    BAR,
    FOO,
    TOLERATE_UNSCHEDULABLE,
    UNSCHEDULABLE_TAINT,
    mk_node,
    mk_pod,
    node_affinity_in,
    node_affinity_not_in,
    placed,
    plugin,
    sel,
    spread,
)

T = [UNSCHEDULABLE_TAINT]


def zn(name: str, zone: str, **kw: Any) -> Any:
    """A node labelled zone=<zone> and node=<name> (upstream's usual test node)."""
    return mk_node(name, zone=zone, node=name, **kw)


N4 = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
N3 = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")]


def foo_pods(*specs: str) -> list[PodInfo]:
    return [placed(s, foo="") for s in specs]


STD = foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y")
STD4 = [*STD, *foo_pods("p-y3@node-y", "p-y4@node-y")]


def pre_filter(
    pod: PodInfo, nodes: list[Any], pods: list[PodInfo], **kw: Any
) -> tuple[Status | None, CycleState, Any, Any]:
    snap = make_snapshot(nodes, pods)
    pl = plugin(snap, **kw)
    state = CycleState()
    _, st = pl.pre_filter(state, pod, snap)
    return st, state, pl, snap


def domains(state: CycleState) -> list[tuple[dict[str, int], int]]:
    s: PreFilterState = state.read(PRE_FILTER_KEY)
    return [(d.as_dict(), d.min) for d in s.domains]


# ---- TestPreFilterState -------------------------------------------------------------------

PRE_FILTER_CASES: list[tuple[str, PodInfo, list[Any], list[PodInfo], Any]] = [
    (
        "clean cluster with one spreadConstraint",
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(5, "zone", selector={"matchLabels": {"foo": "bar"}})],
        ),
        N4,
        [],
        [({"zone1": 0, "zone2": 0}, 0)],
    ),
    (
        "normal case with one spreadConstraint",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        N4,
        STD,
        [({"zone1": 3, "zone2": 2}, 2)],
    ),
    (
        "normal case with null label selector",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone")]),
        N4,
        STD,
        [({"zone1": 0, "zone2": 0}, 0)],
    ),
    (
        "normal case with one spreadConstraint, on a 3-zone cluster",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        [*N4, zn("node-o", "zone3"), zn("node-p", "zone3")],
        STD,
        [({"zone1": 3, "zone2": 2, "zone3": 0}, 0)],
    ),
    (
        "namespace mismatch doesn't count",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        N4,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-a2@node-a", "ns1", foo=""),
            placed("p-b1@node-b", foo=""),
            placed("p-y1@node-y", "ns2", foo=""),
            placed("p-y2@node-y", foo=""),
        ],
        [({"zone1": 2, "zone2": 1}, 1)],
    ),
    (
        "normal case with two spreadConstraints",
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "zone", selector=FOO), spread(1, "node", selector=FOO)],
        ),
        N4,
        STD4,
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, 0)],
    ),
    (
        "soft spreadConstraints should be bypassed",
        mk_pod(
            labels={"foo": ""},
            constraints=[
                spread(1, "zone", "ScheduleAnyway", FOO),
                spread(1, "zone", selector=FOO),
                spread(1, "node", "ScheduleAnyway", FOO),
                spread(1, "node", selector=FOO),
            ],
        ),
        N3,
        STD4,
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-y": 4}, 1)],
    ),
    (
        "different labelSelectors - simple version",
        mk_pod(
            labels={"foo": "", "bar": ""},
            constraints=[spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)],
        ),
        N3,
        [placed("p-a@node-a", foo=""), placed("p-b@node-b", bar="")],
        [({"zone1": 1, "zone2": 0}, 0), ({"node-a": 0, "node-b": 1, "node-y": 0}, 0)],
    ),
    (
        "different labelSelectors - complex pods",
        mk_pod(
            labels={"foo": "", "bar": ""},
            constraints=[spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)],
        ),
        N3,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-a2@node-a", foo="", bar=""),
            placed("p-b1@node-b", foo=""),
            placed("p-y1@node-y", foo=""),
            placed("p-y2@node-y", foo="", bar=""),
            placed("p-y3@node-y", foo=""),
            placed("p-y4@node-y", foo="", bar=""),
        ],
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 1, "node-b": 0, "node-y": 2}, 0)],
    ),
    (
        "two spreadConstraints, and with podAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_not_in("node", ["node-x"]),
            constraints=[spread(1, "zone", selector=FOO), spread(1, "node", selector=FOO)],
        ),
        N4,
        STD4,
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-y": 4}, 1)],
    ),
    (
        "TpKeyToDomainsNum is calculated when MinDomains is enabled",
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "zone", selector=FOO), spread(1, "node", selector=FOO)],
        ),
        N4,
        STD4,
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, 0)],
    ),
]

_BAR_PODS = [
    placed("p-a@node-a", bar=""),
    placed("p-b@node-b", bar=""),
    placed("p-c@node-b", bar=""),
    placed("p-d@node-c"),
]
_FOO_NODES = [
    mk_node("node-a", node="node-a", foo=""),
    mk_node("node-b", node="node-b", foo=""),
    mk_node("node-c", node="node-c", bar=""),
]
_TAINTED = [
    mk_node("node-a", node="node-a"),
    mk_node("node-b", node="node-b"),
    mk_node("node-c", T, node="node-c", bar=""),
]

PRE_FILTER_CASES += [
    (
        "NodeAffinityPolicy honored with labelSelectors",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[spread(1, "node", selector=BAR)],
        ),
        _FOO_NODES,
        _BAR_PODS,
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[spread(1, "node", selector=BAR, affinity_policy="Ignore")],
        ),
        _FOO_NODES,
        _BAR_PODS,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("foo", [""]),
            constraints=[spread(1, "node", selector=BAR)],
        ),
        _FOO_NODES,
        _BAR_PODS,
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("foo", [""]),
            constraints=[spread(1, "node", selector=BAR, affinity_policy="Ignore")],
        ),
        _FOO_NODES,
        _BAR_PODS,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeTaintsPolicy ignored",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", selector=BAR)]),
        _TAINTED,
        _BAR_PODS,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeTaintsPolicy honored",
        mk_pod(
            labels={"foo": ""}, constraints=[spread(1, "node", selector=BAR, taints_policy="Honor")]
        ),
        _TAINTED,
        _BAR_PODS,
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeTaintsPolicy honored with tolerated taints",
        mk_pod(
            labels={"foo": ""},
            tolerations=[TOLERATE_UNSCHEDULABLE],
            constraints=[spread(1, "node", selector=BAR, taints_policy="Honor")],
        ),
        _TAINTED,
        _BAR_PODS,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[
                spread(1, "zone", selector=FOO),
                spread(1, "node", selector=FOO, affinity_policy="Ignore"),
            ],
        ),
        [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo="")],
        foo_pods("p-b1@node-b", "p-b2@node-b", "p-x1@node-x"),
        [({"zone1": 0, "zone2": 1}, 0), ({"node-a": 0, "node-b": 2, "node-x": 1}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        mk_pod(
            labels={"foo": ""},
            constraints=[
                spread(1, "zone", selector=FOO, taints_policy="Honor"),
                spread(1, "node", selector=FOO),
            ],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", taints=T),
            zn("node-x", "zone2", foo=""),
        ],
        foo_pods("p-b1@node-b", "p-b2@node-b", "p-x1@node-x"),
        [({"zone1": 0, "zone2": 1}, 0), ({"node-a": 0, "node-b": 2, "node-x": 1}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[spread(1, "zone", selector=FOO), spread(1, "node", selector=FOO)],
        ),
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1", taints=T, foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        foo_pods("p-a1@node-a", "p-a2@node-a", "p-x1@node-x", "p-y1@node-y"),
        [({"zone1": 0, "zone2": 1}, 0), ({"node-b": 0, "node-x": 1}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[
                spread(1, "zone", selector=FOO, affinity_policy="Ignore"),
                spread(1, "node", selector=FOO, taints_policy="Honor"),
            ],
        ),
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1", taints=T, foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2", foo=""),
        ],
        foo_pods("p-a1@node-a", "p-a2@node-a", "p-x1@node-x", "p-x2@node-x", "p-y1@node-y"),
        [({"zone1": 2, "zone2": 3}, 2), ({"node-x": 2, "node-y": 1}, 1)],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        mk_pod(
            labels={"foo": "", "bar": "a"},
            constraints=[spread(1, "zone", selector=FOO, match_label_keys=["bar"])],
        ),
        N4,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-a2@node-a", foo="", bar="a"),
            placed("p-b1@node-b", foo=""),
            placed("p-y1@node-y", foo="", bar="a"),
            placed("p-y2@node-y", bar=""),
        ],
        [({"zone1": 1, "zone2": 1}, 1)],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        mk_pod(
            labels={"foo": "a"},
            constraints=[spread(1, "zone", selector={}, match_label_keys=["foo"])],
        ),
        N4,
        [
            placed(s, foo="a")
            for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y")
        ],
        [({"zone1": 3, "zone2": 2}, 2)],
    ),
    (
        "key in matchLabelKeys is ignored when LabelSelector is nil",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", match_label_keys=["bar"])]),
        N4,
        [
            placed(s, foo="a")
            for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y")
        ],
        [({"zone1": 0, "zone2": 0}, 0)],
    ),
    (
        "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "zone", selector=FOO, match_label_keys=["bar"])],
        ),
        N4,
        [
            placed(s, foo="a")
            for s in ("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y")
        ],
        [({"zone1": 3, "zone2": 2}, 2)],
    ),
    ("skip if not specified", mk_pod(labels={"foo": ""}), [zn("node-a", "zone1")], [], "skip"),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "pods", "want"), PRE_FILTER_CASES, ids=[c[0] for c in PRE_FILTER_CASES]
)
def test_pre_filter_state(
    name: str, pod: PodInfo, nodes: list[Any], pods: list[PodInfo], want: Any
) -> None:
    st, state, _, _ = pre_filter(pod, nodes, pods)
    if want == "skip":
        assert st is not None and st.code == Code.SKIP
        assert PRE_FILTER_KEY not in state
        return
    assert st is None
    assert domains(state) == want


def test_pre_filter_state_constraint_fields() -> None:
    pod = mk_pod(
        labels={"foo": ""},
        nodeSelector={"foo": ""},
        constraints=[
            spread(5, "zone", selector={"matchLabels": {"foo": "bar"}}),
            spread(
                1,
                "node",
                selector=FOO,
                affinity_policy="Ignore",
                taints_policy="Honor",
                min_domains=3,
            ),
        ],
    )
    _, state, _, _ = pre_filter(pod, N4, [])
    s: PreFilterState = state.read(PRE_FILTER_KEY)
    assert s.constraints == (
        Constraint(5, "zone", sel({"matchLabels": {"foo": "bar"}}), 1, "Honor", "Ignore"),
        Constraint(1, "node", sel(FOO), 3, "Ignore", "Honor"),
    )


def _svc(selector: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": selector}}


def test_default_constraints_and_a_service() -> None:
    pod = mk_pod(labels={"foo": "bar", "baz": "kar"})
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"},
            {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
        ],
    }
    st, state, _, _ = pre_filter(
        pod, [], [], args=args, listers={"services": {"default/svc": _svc({"foo": "bar"})}}
    )
    assert st is None
    s: PreFilterState = state.read(PRE_FILTER_KEY)
    foobar = sel({"matchLabels": {"foo": "bar"}})
    assert s.constraints == (Constraint(3, "node", foobar), Constraint(5, "rack", foobar))
    assert [(d.as_dict(), d.domains, d.min) for d in s.domains] == [({}, 0, MAX_INT32)] * 2


@pytest.mark.parametrize(
    ("defaults", "service"),
    [
        (
            [{"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}],
            {"baz": "kep"},
        ),
        (
            [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"}],
            {"foo": "bar"},
        ),
    ],
    ids=["a service that doesn't match", "default soft constraints and a service"],
)
def test_default_constraints_skip(defaults: list[dict[str, Any]], service: dict[str, str]) -> None:
    st, _, _, _ = pre_filter(
        mk_pod(labels={"foo": "bar"}),
        [],
        [],
        args={"defaultingType": "List", "defaultConstraints": defaults},
        listers={"services": {"default/svc": _svc(service)}},
    )
    assert st is not None and st.code == Code.SKIP


def test_default_constraints_and_a_service_but_pod_has_constraints() -> None:
    pod = mk_pod(
        labels={"foo": "bar", "baz": "tar"},
        constraints=[
            spread(1, "zone", selector={"matchLabels": {"baz": "tar"}}),
            spread(2, "planet", "ScheduleAnyway", {"matchLabels": {"fot": "rok"}}),
        ],
    )
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    _, state, _, _ = pre_filter(
        pod, [], [], args=args, listers={"services": {"default/svc": _svc({"foo": "bar"})}}
    )
    s: PreFilterState = state.read(PRE_FILTER_KEY)
    assert s.constraints == (Constraint(1, "zone", sel({"matchLabels": {"baz": "tar"}})),)


# ---- TestPreFilterStateAddPod / RemovePod ----------------------------------------------------

NODE_FOO = [spread(1, "node", selector=FOO)]
ZONE_NODE_FOO = [spread(1, "zone", selector=FOO), spread(1, "node", selector=FOO)]
ZONE_FOO_NODE_BAR = [spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)]
AB = [zn("node-a", "zone1"), zn("node-b", "zone1")]
AX = [zn("node-a", "zone1"), zn("node-x", "zone2")]
ABX = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")]
AFF_NODES = [
    mk_node("node-a", zone="zone1", node="node-a", foo="bar"),
    mk_node("node-b", zone="zone2", node="node-b", foo=""),
]
NOT_BAR = node_affinity_not_in("foo", ["bar"])

ADD_POD_CASES: list[tuple[str, PodInfo, PodInfo, list[PodInfo], int, list[Any], Any]] = [
    (
        "node a and b both impact current min match",
        mk_pod(labels={"foo": ""}, constraints=NODE_FOO),
        placed("p-a1@node-a", foo=""),
        [],
        0,
        AB,
        [({"node-a": 1, "node-b": 0}, 0)],
    ),
    (
        "only node a impacts current min match",
        mk_pod(labels={"foo": ""}, constraints=NODE_FOO),
        placed("p-a1@node-a", foo=""),
        foo_pods("p-b1@node-b"),
        0,
        AB,
        [({"node-a": 1, "node-b": 1}, 1)],
    ),
    (
        "add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        mk_pod(labels={"foo": ""}, constraints=NODE_FOO),
        placed("p-a1@node-a", "ns1", foo=""),
        foo_pods("p-b1@node-b"),
        0,
        AB,
        [({"node-a": 0, "node-b": 1}, 0)],
    ),
    (
        "add pod on non-critical node won't trigger re-calculation",
        mk_pod(labels={"foo": ""}, constraints=NODE_FOO),
        placed("p-b2@node-b", foo=""),
        foo_pods("p-b1@node-b"),
        1,
        AB,
        [({"node-a": 0, "node-b": 2}, 0)],
    ),
    (
        "node a and x both impact topologyKeyToMinPodsMap on zone and node",
        mk_pod(labels={"foo": ""}, constraints=ZONE_NODE_FOO),
        placed("p-a1@node-a", foo=""),
        [],
        0,
        AX,
        [({"zone1": 1, "zone2": 0}, 0), ({"node-a": 1, "node-x": 0}, 0)],
    ),
    (
        "only node a impacts topologyKeyToMinPodsMap on zone and node",
        mk_pod(labels={"foo": ""}, constraints=ZONE_NODE_FOO),
        placed("p-a1@node-a", foo=""),
        foo_pods("p-x1@node-x"),
        0,
        AX,
        [({"zone1": 1, "zone2": 1}, 1), ({"node-a": 1, "node-x": 1}, 1)],
    ),
    (
        "node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap on "
        "zone",
        mk_pod(labels={"foo": ""}, constraints=ZONE_NODE_FOO),
        placed("p-a1@node-a", foo=""),
        foo_pods("p-b1@node-b", "p-b2@node-b", "p-x1@node-x"),
        0,
        ABX,
        [({"zone1": 3, "zone2": 1}, 1), ({"node-a": 1, "node-b": 2, "node-x": 1}, 1)],
    ),
    (
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        mk_pod(labels={"foo": "", "bar": ""}, constraints=ZONE_FOO_NODE_BAR),
        placed("p-a1@node-a", foo=""),
        [
            placed("p-b1@node-b", foo="", bar=""),
            placed("p-x1@node-x", foo="", bar=""),
            placed("p-x2@node-x", bar=""),
        ],
        0,
        ABX,
        [({"zone1": 2, "zone2": 1}, 1), ({"node-a": 0, "node-b": 1, "node-x": 2}, 0)],
    ),
    (
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on both "
        "zone and node",
        mk_pod(labels={"foo": "", "bar": ""}, constraints=ZONE_FOO_NODE_BAR),
        placed("p-a1@node-a", foo="", bar=""),
        [
            placed("p-b1@node-b", bar=""),
            placed("p-x1@node-x", foo="", bar=""),
            placed("p-x2@node-x", bar=""),
        ],
        0,
        ABX,
        [({"zone1": 1, "zone2": 1}, 1), ({"node-a": 1, "node-b": 1, "node-x": 2}, 1)],
    ),
    (
        "add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        mk_pod(labels={"foo": ""}, affinity=NOT_BAR, constraints=[spread(1, "zone", selector=FOO)]),
        placed("p-a1@node-a", foo="", zone="zone1"),
        [placed("p-a2@node-a", foo="", zone="zone1"), placed("p-b1@node-b", foo="", zone="zone2")],
        0,
        AFF_NODES,
        [({"zone2": 1}, 1)],
    ),
    (
        "add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        placed("p-b1@node-b", foo="", zone="zone2"),
        [placed("p-a1@node-a", foo="", zone="zone1"), placed("p-b2@node-b", foo="", zone="zone2")],
        1,
        AFF_NODES,
        [({"zone1": 1, "zone2": 2}, 1)],
    ),
    (
        "add a label selector not matched pod when with NodeInclusionPolicy enabled",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        placed("p-b1@node-b", zone="zone2"),
        [placed("p-a1@node-a", foo="", zone="zone1"), placed("p-b2@node-b", foo="", zone="zone2")],
        1,
        AFF_NODES,
        [({"zone1": 1, "zone2": 1}, 1)],
    ),
    (
        "add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        mk_pod(
            labels={"foo": ""},
            tolerations=[TOLERATE_UNSCHEDULABLE],
            constraints=[spread(1, "zone", selector=FOO)],
        ),
        placed("p-b1@node-b", foo="", zone="zone2"),
        [placed("p-a1@node-a", foo="", zone="zone1"), placed("p-b2@node-b", foo="", zone="zone2")],
        1,
        [zn("node-a", "zone1", taints=T), zn("node-b", "zone2")],
        [({"zone1": 1, "zone2": 2}, 1)],
    ),
]


@pytest.mark.parametrize(
    ("name", "preemptor", "added", "pods", "node_idx", "nodes", "want"),
    ADD_POD_CASES,
    ids=[c[0] for c in ADD_POD_CASES],
)
def test_pre_filter_state_add_pod(
    name: str,
    preemptor: PodInfo,
    added: PodInfo,
    pods: list[PodInfo],
    node_idx: int,
    nodes: list[Any],
    want: Any,
) -> None:
    st, state, pl, snap = pre_filter(preemptor, nodes, pods)
    assert st is None
    before = domains(state)
    cloned = state.clone()
    ni = snap.get(nodes[node_idx].name)
    assert pl.add_pod(cloned, preemptor, added, ni) is None
    assert domains(cloned) == want
    assert domains(state) == before  # the clone is independent


REMOVE_NODES = N4
REMOVE_POD_CASES: list[tuple[str, PodInfo, list[Any], list[PodInfo], PodInfo, int, Any]] = [
    (
        "one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        ABX,
        foo_pods("p-a1@node-a", "p-b1@node-b", "p-x1@node-x"),
        placed("p-a1@node-a", foo=""),
        0,
        [({"zone1": 1, "zone2": 1}, 1)],
    ),
    (
        "one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        N4,
        foo_pods("p-a1@node-a", "p-b1@node-b", "p-x1@node-x", "p-y1@node-y"),
        placed("p-a1@node-a", foo=""),
        0,
        [({"zone1": 1, "zone2": 2}, 1)],
    ),
    (
        "delete an irrelevant pod won't help",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        N4,
        [
            placed("p-a0@node-a", bar=""),
            *foo_pods("p-a1@node-a", "p-b1@node-b", "p-x1@node-x", "p-y1@node-y"),
        ],
        placed("p-a0@node-a", bar=""),
        0,
        [({"zone1": 2, "zone2": 2}, 2)],
    ),
    (
        "delete a non-existing pod won't help",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        N4,
        foo_pods("p-a1@node-a", "p-b1@node-b", "p-x1@node-x", "p-y1@node-y"),
        placed("p-a0@node-a", bar=""),
        0,
        [({"zone1": 2, "zone2": 2}, 2)],
    ),
    (
        "two spreadConstraints",
        mk_pod(labels={"foo": ""}, constraints=ZONE_NODE_FOO),
        ABX,
        foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-x1@node-x", "p-x2@node-x"),
        placed("p-x1@node-x", foo=""),
        2,
        [({"zone1": 3, "zone2": 1}, 1), ({"node-a": 2, "node-b": 1, "node-x": 1}, 1)],
    ),
    (
        "remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        mk_pod(labels={"foo": ""}, affinity=NOT_BAR, constraints=[spread(1, "zone", selector=FOO)]),
        AFF_NODES,
        [placed("p-a2@node-a", foo="", zone="zone1"), placed("p-b1@node-b", foo="", zone="zone2")],
        placed("p-a1@node-a", foo="", zone="zone1"),
        0,
        [({"zone2": 1}, 1)],
    ),
    (
        "remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)]),
        AFF_NODES,
        [placed("p-a1@node-a", foo="", zone="zone1"), placed("p-b2@node-b", foo="", zone="zone2")],
        placed("p-b1@node-b", foo="", zone="zone2"),
        1,
        [({"zone1": 1, "zone2": 0}, 0)],
    ),
]


@pytest.mark.parametrize(
    ("name", "preemptor", "nodes", "pods", "deleted", "node_idx", "want"),
    REMOVE_POD_CASES,
    ids=[c[0] for c in REMOVE_POD_CASES],
)
def test_pre_filter_state_remove_pod(
    name: str,
    preemptor: PodInfo,
    nodes: list[Any],
    pods: list[PodInfo],
    deleted: PodInfo,
    node_idx: int,
    want: Any,
) -> None:
    st, state, pl, snap = pre_filter(preemptor, nodes, pods)
    assert st is None
    ni = snap.get(nodes[node_idx].name)
    assert pl.remove_pod(state, preemptor, deleted, ni) is None
    assert domains(state) == want


def test_add_and_remove_keep_the_minimum_exact() -> None:
    pod = mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)])
    nodes = [zn("a", "z1"), zn("b", "z2"), zn("c", "z3")]
    _, state, pl, snap = pre_filter(pod, nodes, [])
    a = snap.get("a")
    for i in range(2):
        pl.add_pod(state, pod, placed(f"x{i}@a", foo=""), a)
    assert domains(state) == [({"z1": 2, "z2": 0, "z3": 0}, 0)]
    pl.remove_pod(state, pod, placed("x0@a", foo=""), a)
    pl.remove_pod(state, pod, placed("x1@a", foo=""), a)
    pl.remove_pod(state, pod, placed("x2@a", foo=""), a)
    assert domains(state) == [({"z1": -1, "z2": 0, "z3": 0}, -1)]  # as upstream: no floor


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    pl = plugin()
    pod = mk_pod(labels={"foo": ""}, constraints=NODE_FOO)
    st = pl.add_pod(CycleState(), pod, placed("x@a", foo=""), make_snapshot(AB).node_infos[0])
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'reading "PreFilterPodTopologySpread" from cycleState: not found'


# ---- TestSingleConstraint / TestMultipleConstraints --------------------------------------------

S, U, R = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
ONE_FOO = [spread(1, "zone", selector=FOO)]
_SPREAD_2103 = foo_pods(
    "p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-y1@node-y", "p-y2@node-y", "p-y3@node-y"
)
_ABC = [mk_node(n, node=n) for n in ("node-a", "node-b", "node-c")]
_22_1 = foo_pods("p-a1@node-a", "p-a2@node-a", "p-b1@node-b", "p-b2@node-b", "p-c1@node-c")
_ZONE_21 = foo_pods("p-b1@node-a", "p-b2@node-b", "p-y1@node-y")
_NODES_FOO3 = [
    mk_node("node-a", node="node-a", foo=""),
    mk_node("node-b", node="node-b", foo=""),
    mk_node("node-x", node="node-x", foo=""),
    mk_node("node-y", node="node-y"),
]
_NODES_TAINT = [
    mk_node("node-a", node="node-a", foo=""),
    mk_node("node-b", node="node-b", foo=""),
    mk_node("node-x", node="node-x", foo=""),
    mk_node("node-y", T, node="node-y"),
]
_POLICY_PODS = foo_pods("p-b1@node-a", "p-b2@node-b", "p-y1@node-y")

SINGLE: list[tuple[str, PodInfo, list[Any], list[PodInfo], dict[str, Code]]] = [
    (
        "no existing pods",
        mk_pod(labels={"foo": ""}, constraints=ONE_FOO),
        N4,
        [],
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "no existing pods, incoming pod doesn't match itself",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=BAR)]),
        N4,
        [],
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "existing pods in a different namespace do not count",
        mk_pod(labels={"foo": ""}, constraints=ONE_FOO),
        N4,
        [
            placed("p-a1@node-a", "ns1", foo=""),
            placed("p-b1@node-a", "ns2", foo=""),
            *foo_pods("p-x1@node-x", "p-y1@node-y"),
        ],
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "existing pods do not match null selector",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone")]),
        N4,
        foo_pods("p-x1@node-x", "p-y1@node-y"),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        mk_pod(labels={"foo": ""}, constraints=ONE_FOO),
        N4,
        _SPREAD_2103,
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        mk_pod(labels={"foo": ""}, constraints=ONE_FOO),
        [
            zn("node-a", "zone1"),
            mk_node("node-b", zon="zone1", node="node-b"),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ],
        foo_pods("p-a1@node-a", "p-b1@node-b", "p-x1@node-x", "p-y1@node-y"),
        {"node-a": S, "node-b": R, "node-x": U, "node-y": U},
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "rack", selector=FOO)]),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        {"node-a": R, "node-x": R},
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", selector=FOO)]),
        N4,
        _SPREAD_2103,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        mk_pod(labels={"foo": ""}, constraints=[spread(2, "node", selector=FOO)]),
        N4,
        _SPREAD_2103,
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        mk_pod(labels={"bar": ""}, constraints=[spread(1, "node", selector=FOO)]),
        N4,
        _SPREAD_2103,
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("node", ["node-a", "node-y"]),
            constraints=[spread(1, "node", selector=FOO)],
        ),
        N4,
        _SPREAD_2103,
        {"node-a": S, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "terminating Pods should be excluded",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", selector=FOO)]),
        [mk_node("node-a", node="node-a"), mk_node("node-b", node="node-b")],
        [mk_pod("p-a", "node-a", {"foo": ""}, terminating=True), placed("p-b@node-b", foo="")],
        {"node-a": S, "node-b": U},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_not_in("node", ["node-b"]),
            constraints=ONE_FOO,
        ),
        N4,
        foo_pods("p-b1@node-b", "p-b2@node-b", "p-y1@node-y"),
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
        "then the third node fits",
        mk_pod(labels={"foo": ""}, constraints=[spread(2, "node", selector=FOO, min_domains=4)]),
        _ABC,
        _22_1,
        {"node-a": U, "node-b": U, "node-c": S},
    ),
    (
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, "
        "then the all nodes fit",
        mk_pod(labels={"foo": ""}, constraints=[spread(2, "node", selector=FOO, min_domains=2)]),
        _ABC,
        _22_1,
        {"node-a": S, "node-b": S, "node-c": S},
    ),
    (
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then "
        "the third and fourth nodes fit",
        mk_pod(labels={"foo": ""}, constraints=[spread(2, "zone", selector=FOO, min_domains=3)]),
        N4,
        _ZONE_21,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then "
        "the all nodes fit",
        mk_pod(labels={"foo": ""}, constraints=[spread(2, "zone", selector=FOO, min_domains=1)]),
        N4,
        _ZONE_21,
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[spread(1, "node", selector=FOO)],
        ),
        _NODES_FOO3,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[spread(1, "node", selector=FOO, affinity_policy="Ignore")],
        ),
        _NODES_FOO3,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("foo", [""]),
            constraints=[spread(1, "node", selector=FOO)],
        ),
        _NODES_FOO3,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        mk_pod(
            labels={"foo": ""},
            affinity=node_affinity_in("foo", [""]),
            constraints=[spread(1, "node", selector=FOO, affinity_policy="Ignore")],
        ),
        _NODES_FOO3,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "NodeTaintsPolicy honored",
        mk_pod(
            labels={"foo": ""}, constraints=[spread(1, "node", selector=FOO, taints_policy="Honor")]
        ),
        _NODES_TAINT,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "NodeTaintsPolicy ignored",
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", selector=FOO)]),
        _NODES_TAINT,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
]

_POL_PODS = foo_pods("p-a1@node-a", "p-b1@node-b", "p-y1@node-y")
MULTIPLE: list[tuple[str, PodInfo, list[Any], list[PodInfo], dict[str, Code]]] = [
    (
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        mk_pod(labels={"foo": ""}, constraints=ZONE_NODE_FOO),
        N4,
        _SPREAD_2103,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        mk_pod(labels={"foo": ""}, constraints=ZONE_NODE_FOO),
        N4,
        [*_SPREAD_2103, placed("p-y4@node-y", foo="")],
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        mk_pod(labels={"foo": "", "bar": ""}, constraints=ZONE_FOO_NODE_BAR),
        N4,
        [placed("p-a1@node-a", foo=""), placed("p-y1@node-y", bar="")],
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        mk_pod(labels={"foo": "", "bar": ""}, constraints=ZONE_FOO_NODE_BAR),
        N4,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-x1@node-x", bar=""),
            placed("p-y1@node-y", bar=""),
        ],
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        mk_pod(labels={"foo": "", "bar": ""}, constraints=ZONE_FOO_NODE_BAR),
        N4,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-a2@node-a", foo="", bar=""),
            placed("p-y1@node-y", foo=""),
            placed("p-y2@node-y", foo="", bar=""),
            placed("p-y3@node-y", foo=""),
        ],
        {"node-a": U, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' "
        "constraint",
        mk_pod(labels={"bar": ""}, constraints=ZONE_FOO_NODE_BAR),
        N4,
        [
            placed("p-a1@node-a", foo=""),
            placed("p-x1@node-x", bar=""),
            placed("p-y1@node-y", bar=""),
        ],
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, "
        "1/0/0/1]",
        mk_pod(labels={"foo": ""}, constraints=ZONE_NODE_FOO),
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            mk_node("node-x", zone="zone2"),
            zn("node-y", "zone2"),
        ],
        foo_pods("p-a1@node-a", "p-y3@node-y"),
        {"node-a": U, "node-b": S, "node-x": R, "node-y": U},
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[
                spread(1, "zone", selector=FOO),
                spread(1, "node", selector=FOO, affinity_policy="Ignore"),
            ],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        _POL_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        mk_pod(
            labels={"foo": ""},
            constraints=[
                spread(1, "zone", selector=FOO, taints_policy="Honor"),
                spread(1, "node", selector=FOO),
            ],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2", taints=T),
        ],
        _POL_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        mk_pod(labels={"foo": ""}, nodeSelector={"foo": ""}, constraints=ZONE_NODE_FOO),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2", taints=T, foo=""),
        ],
        _POL_PODS,
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        mk_pod(
            labels={"foo": ""},
            nodeSelector={"foo": ""},
            constraints=[
                spread(1, "zone", selector=FOO, taints_policy="Honor"),
                spread(1, "node", selector=FOO, affinity_policy="Ignore"),
            ],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2", taints=T, foo=""),
        ],
        _POL_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "pods", "want"),
    SINGLE + MULTIPLE,
    ids=[c[0] for c in SINGLE + MULTIPLE],
)
def test_filter(
    name: str, pod: PodInfo, nodes: list[Any], pods: list[PodInfo], want: dict[str, Code]
) -> None:
    st, state, pl, snap = pre_filter(pod, nodes, pods)
    assert st is None
    mask = pl.filter_batch(state, pod, snap)
    got: dict[str, Code] = {}
    for row, ni in enumerate(snap.node_infos):
        status = pl.filter(state, pod, ni)
        got[ni.name] = Code.SUCCESS if status is None else status.code
        assert bool(mask[row]) == (status is None), ni.name  # batch agrees with per node
        if status is not None:
            reason = (
                ERR_REASON_NODE_LABEL_NOT_MATCH
                if status.code == R
                else ERR_REASON_CONSTRAINTS_NOT_MATCH
            )
            assert status.reasons == (reason,)
    assert got == want


def test_filter_without_pre_filter_is_an_error() -> None:
    """TestPreFilterDisabled."""
    pl = plugin()
    ni = make_snapshot([mk_node("n")]).node_infos[0]
    st = pl.filter(CycleState(), mk_pod(), ni)
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'reading "PreFilterPodTopologySpread" from cycleState: not found'
    with pytest.raises(RuntimeError, match="not found"):
        pl.filter_batch(CycleState(), mk_pod(), make_snapshot([mk_node("n")]))


def test_filter_uses_nominated_pods_added_through_the_extension() -> None:
    """What RunFilterPluginsWithNominatedPods does: AddPod on a cloned state, then Filter."""
    pod = mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)])
    nodes = [zn("a", "z1"), zn("b", "z2")]
    _, state, pl, snap = pre_filter(pod, nodes, [])
    a = snap.get("a")
    assert a is not None
    assert pl.filter(state, pod, a) is None
    with_nominated = state.clone()
    node_used = a.clone()
    nominated = placed("n@a", foo="")
    node_used.add_pod(nominated)
    pl.add_pod(with_nominated, pod, nominated, node_used)
    st = pl.filter(with_nominated, pod, node_used)
    assert st is not None and st.code == Code.UNSCHEDULABLE
    assert pl.filter(state, pod, a) is None
