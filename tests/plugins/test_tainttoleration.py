"""TaintToleration: upstream's table tests (taint_toleration_test.go), batch/per-node
agreement on random clusters, and the filter plugins together in a Framework."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.objects import Node, Pod, decode
from ksched.config.types import PluginRef, Plugins, PluginSet, Profile
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import QueueingHint
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins import default_registry
from ksched.plugins.tainttoleration import TaintToleration
from tests.factories import make_node_info


def node_with_taints(name: str, taints: list[dict[str, Any]], **spec: Any) -> Node:
    return decode(
        {"kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints, **spec}}, Node
    )


def pod_with_tolerations(
    name: str, tolerations: list[dict[str, Any]], uid: str = "", **spec: Any
) -> PodInfo:
    m = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {"tolerations": tolerations, **spec},
    }
    return PodInfo(decode(m, Pod), m)


def taint(key: str, value: str, effect: str) -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str = "", operator: str = "", value: str = "", effect: str = "") -> dict[str, Any]:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


PNS, NS, NE = "PreferNoSchedule", "NoSchedule", "NoExecute"

# ---- TestTaintTolerationScore -----------------------------------------------------------------

SCORE_CASES: list[dict[str, Any]] = [
    dict(
        name="node with taints tolerated by the pod gets a higher score",
        tolerations=[tol("foo", "Equal", "bar", PNS)],
        nodes=[("nodeA", [taint("foo", "bar", PNS)]), ("nodeB", [taint("foo", "blah", PNS)])],
        want=[100, 0],
    ),
    dict(
        name="the number of tolerated taints does not matter",
        tolerations=[tol("cpu-type", "Equal", "arm64", PNS), tol("disk-type", "Equal", "ssd", PNS)],
        nodes=[
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", PNS)]),
            ("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]),
        ],
        want=[100, 100, 100],
    ),
    dict(
        name="the more intolerable taints a node has, the lower score it gets",
        tolerations=[tol("foo", "Equal", "bar", PNS)],
        nodes=[
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", PNS)]),
            ("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]),
        ],
        want=[100, 50, 0],
    ),
    dict(
        name="only PreferNoSchedule taints and tolerations are checked",
        tolerations=[tol("cpu-type", "Equal", "arm64", NS), tol("disk-type", "Equal", "ssd", NS)],
        nodes=[
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", NS)]),
            ("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]),
        ],
        want=[100, 100, 0],
    ),
    dict(
        name="Default behaviour No taints and tolerations, lands on node with no taints",
        tolerations=[],
        nodes=[("nodeA", []), ("nodeB", [taint("cpu-type", "arm64", PNS)])],
        want=[100, 0],
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c["name"] for c in SCORE_CASES])
def test_taint_toleration_score(case: dict[str, Any]) -> None:
    p = TaintToleration()
    pod = pod_with_tolerations("pod1", case["tolerations"])
    infos = [make_node_info(node_with_taints(n, t)) for n, t in case["nodes"]]
    snap = Snapshot(infos)
    state = CycleState()
    assert p.pre_score(state, pod, infos) is None
    per_node = np.array([p.score(state, pod, ni) for ni in infos], dtype=np.int64)
    batch = p.score_batch(state, pod, snap, snap.all_rows)
    assert per_node.tolist() == batch.tolist()
    for scores in (per_node, batch):
        assert p.normalize_score(state, pod, scores) is None
        assert scores.tolist() == case["want"]


def test_score_without_pre_score_is_an_error() -> None:
    p = TaintToleration()
    ni = make_node_info(node_with_taints("n", []))
    with pytest.raises(RuntimeError, match='failed to read "PreScoreTaintToleration"'):
        p.score(CycleState(), pod_with_tolerations("p", []), ni)
    with pytest.raises(RuntimeError, match='failed to read "PreScoreTaintToleration"'):
        p.score_batch(
            CycleState(),
            pod_with_tolerations("p", []),
            Snapshot([ni]),
            np.array([0], dtype=np.intp),
        )


# ---- TestTaintTolerationFilter (+ WithFeatureGate, gate off: ksched's behaviour) -------------

FILTER_CASES: list[dict[str, Any]] = [
    dict(
        name="no tolerations can't be scheduled onto a node with nonempty taints",
        tolerations=[],
        taints=[taint("dedicated", "user1", NS)],
        fits=False,
    ),
    dict(
        name="can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        tolerations=[tol("dedicated", "", "user1", NS)],
        taints=[taint("dedicated", "user1", NS)],
        fits=True,
    ),
    dict(
        name="can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        tolerations=[tol("dedicated", "Equal", "user2", NS)],
        taints=[taint("dedicated", "user1", NS)],
        fits=False,
    ),
    dict(
        name="toleration with operator Exists tolerates the taints on the node",
        tolerations=[tol("foo", "Exists", "", NS)],
        taints=[taint("foo", "bar", NS)],
        fits=True,
    ),
    dict(
        name="multiple tolerations, multiple taints, all tolerated",
        tolerations=[tol("dedicated", "Equal", "user2", NS), tol("foo", "Exists", "", NS)],
        taints=[taint("dedicated", "user2", NS), taint("foo", "bar", NS)],
        fits=True,
    ),
    dict(
        name="keys and values match but (non-empty) effect doesn't",
        tolerations=[tol("foo", "Equal", "bar", PNS)],
        taints=[taint("foo", "bar", NS)],
        fits=False,
    ),
    dict(
        name="keys and values match, toleration effect empty, taint effect NoSchedule",
        tolerations=[tol("foo", "Equal", "bar")],
        taints=[taint("foo", "bar", NS)],
        fits=True,
    ),
    dict(
        name="key and value don't match but taint effect is PreferNoSchedule",
        tolerations=[tol("dedicated", "Equal", "user2", NS)],
        taints=[taint("dedicated", "user1", PNS)],
        fits=True,
    ),
    dict(
        name="no toleration, taint effect is PreferNoSchedule",
        tolerations=[],
        taints=[taint("dedicated", "user1", PNS)],
        fits=True,
    ),
    dict(
        name="Gt toleration cannot be scheduled when the feature gate is disabled",
        tolerations=[tol("node.kubernetes.io/sla", "Gt", "750", NS)],
        taints=[taint("node.kubernetes.io/sla", "950", NS)],
        fits=False,
    ),
    dict(
        name="Lt toleration cannot be scheduled when the feature gate is disabled",
        tolerations=[tol("node.kubernetes.io/sla", "Lt", "950", NS)],
        taints=[taint("node.kubernetes.io/sla", "800", NS)],
        fits=False,
    ),
    dict(
        name="mixed tolerations (Equal and Gt), gate disabled - only Equal is honored",
        tolerations=[
            tol("dedicated", "Equal", "user1", NS),
            tol("node.kubernetes.io/sla", "Gt", "750", NS),
        ],
        taints=[taint("dedicated", "user1", NS)],
        fits=True,
    ),
    dict(
        name="mixed tolerations, Gt toleration needed but filtered out, gate disabled",
        tolerations=[
            tol("dedicated", "Equal", "user1", NS),
            tol("node.kubernetes.io/sla", "Gt", "750", NS),
        ],
        taints=[taint("dedicated", "user1", NS), taint("node.kubernetes.io/sla", "950", NS)],
        fits=False,
    ),
    # Beyond upstream's table: empty-key Exists tolerates everything of its effect (or all).
    dict(
        name="empty key Exists tolerates every taint",
        tolerations=[tol("", "Exists")],
        taints=[taint("a", "1", NS), taint("b", "", NE)],
        fits=True,
    ),
    dict(
        name="empty key Exists with an effect tolerates only that effect",
        tolerations=[tol("", "Exists", "", NS)],
        taints=[taint("a", "1", NS), taint("b", "", NE)],
        fits=False,
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c["name"] for c in FILTER_CASES])
def test_taint_toleration_filter(case: dict[str, Any]) -> None:
    p = TaintToleration()
    pod = pod_with_tolerations("pod1", case["tolerations"])
    ni = make_node_info(node_with_taints("nodeA", case["taints"]))
    got = p.filter(CycleState(), pod, ni)
    if case["fits"]:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        # v1.35+ (kubernetes#134740): the taint is not named, whichever it is
        assert got.message() == "node(s) had untolerated taint(s)"
    assert p.filter_batch(CycleState(), pod, Snapshot([ni])).tolist() == [case["fits"]]


# ---- TestIsSchedulableAfterNodeChange / pod toleration change --------------------------------

USER2_TOL = [tol("dedicated", "Equal", "user2", NS)]
HINT_CASES: list[dict[str, Any]] = [
    dict(
        name="skip-queue-on-untoleratedtaint-node-added",
        new=node_with_taints("nodeA", [taint("dedicated", "user1", NS)]),
        want=QueueingHint.SKIP,
    ),
    dict(
        name="queue-on-toleratedtaint-node-added",
        new=node_with_taints("nodeA", [taint("dedicated", "user2", NS)]),
        want=QueueingHint.QUEUE,
    ),
    dict(
        name="skip-unrelated-change",
        new=node_with_taints(
            "nodeA", [taint("dedicated", "user1", NS), taint("dedicated", "user3", NS)]
        ),
        old=node_with_taints("nodeA", [taint("dedicated", "user1", NS)]),
        want=QueueingHint.SKIP,
    ),
    dict(
        name="queue-on-taint-change",
        new=node_with_taints("nodeA", [taint("dedicated", "user2", NS)]),
        old=node_with_taints("nodeA", [taint("dedicated", "user1", NS)]),
        want=QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize("case", HINT_CASES, ids=[c["name"] for c in HINT_CASES])
def test_is_schedulable_after_node_change(case: dict[str, Any]) -> None:
    got = TaintToleration().is_schedulable_after_node_change(
        pod_with_tolerations("pod1", USER2_TOL), case.get("old"), case["new"]
    )
    assert got == case["want"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (None, "not-a-node"),
        ("not-a-node", node_with_taints("nodeA", [taint("dedicated", "user1", NS)])),
    ],
)
def test_node_hint_wrong_objects(old: Any, new: Any) -> None:
    with pytest.raises(TypeError):  # upstream: (Queue, err); the queue queues on errors
        TaintToleration().is_schedulable_after_node_change(pod_with_tolerations("p", []), old, new)


def test_is_schedulable_after_target_pod_toleration_change() -> None:
    pod = pod_with_tolerations("pod-1", [], uid="u1")
    new = pod_with_tolerations("pod-1", [tol("foo", "", "", NS)], uid="u1")
    other = pod_with_tolerations("pod-2", [tol("foo", "", "", NS)], uid="u2")
    p = TaintToleration()
    assert p.is_schedulable_after_pod_toleration_change(pod, pod, new) == QueueingHint.QUEUE
    assert p.is_schedulable_after_pod_toleration_change(pod, other, other) == QueueingHint.SKIP


def test_events_to_register() -> None:
    events = [(e.event.resource, e.event.action) for e in TaintToleration().events_to_register()]
    assert events == [("Node", "Add"), ("Node", "UpdateNodeTaint"), ("Pod", "UpdatePodToleration")]


# ---- batch == per-node, on random clusters ------------------------------------------------------

EFFECTS = [NS, PNS, NE]
taints_st = st.lists(
    st.builds(
        taint,
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["", "1", "x"]),
        st.sampled_from(EFFECTS),
    ),
    max_size=3,
)
tolerations_st = st.lists(
    st.builds(
        tol,
        st.sampled_from(["", "a", "b"]),
        st.sampled_from(["", "Equal", "Exists", "Gt"]),
        st.sampled_from(["", "1", "x"]),
        st.sampled_from(["", *EFFECTS]),
    ),
    max_size=3,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(taints_st, min_size=2, max_size=8),
    pods=st.lists(tolerations_st, min_size=1, max_size=4),
    changes=st.lists(st.tuples(st.integers(0, 7), taints_st), max_size=3),
)
def test_batch_agrees_with_per_node(
    nodes: list[list[dict[str, Any]]],
    pods: list[list[dict[str, Any]]],
    changes: list[tuple[int, list[dict[str, Any]]]],
) -> None:
    p = TaintToleration()  # one instance: its per-toleration cache must follow the snapshot
    infos = [make_node_info(node_with_taints(f"n{i}", t)) for i, t in enumerate(nodes)]
    snap = Snapshot(infos)

    def check() -> None:
        for tols in pods:
            pod = pod_with_tolerations("p", tols)
            per_node = [p.filter(CycleState(), pod, ni) is None for ni in snap.node_infos]
            assert p.filter_batch(CycleState(), pod, snap).tolist() == per_node
            state = CycleState()
            p.pre_score(state, pod, snap.node_infos)
            batch = p.score_batch(state, pod, snap, snap.all_rows)
            assert batch.tolist() == [p.score(state, pod, ni) for ni in snap.node_infos]

    check()
    for i, t in changes:  # taint updates add taint sets to the live snapshot
        i %= snap.n
        snap.replace(i, make_node_info(node_with_taints(f"n{i}", t)))
        check()


# ---- the filter plugins together, through the runtime ----------------------------------------


def _framework() -> Framework:
    names = [
        "PrioritySort",
        "DefaultBinder",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
    ]
    plugins = Plugins(multi_point=PluginSet(enabled=[PluginRef(n) for n in names]))
    return Framework(
        Profile(scheduler_name="test", plugins=plugins), default_registry(entry_points=False)
    )


def test_framework_reasons_and_scores() -> None:
    fw = _framework()
    nodes = [
        node_with_taints("tainted", [taint("dedicated", "x", NS)]),
        node_with_taints("cordoned", [], unschedulable=True),
        node_with_taints("prefer", [taint("p", "", PNS)]),
        node_with_taints("plain", []),
    ]
    infos = [make_node_info(n) for n in nodes]
    snap = Snapshot(infos)
    pod = pod_with_tolerations("p", [])
    state = CycleState()
    _, st_, _ = fw.run_pre_filter(state, pod, snap)
    assert st_.is_success()
    out = fw.find_feasible(state, pod, snap, snap.all_rows, 0, snap.n, explain=True)
    assert sorted(infos[int(r)].name for r in out.feasible) == ["plain", "prefer"]
    tainted = out.statuses.get("tainted")
    cordoned = out.statuses.get("cordoned")
    assert tainted is not None and tainted.message() == "node(s) had untolerated taint(s)"
    assert tainted.plugin == "TaintToleration"
    assert cordoned is not None and cordoned.message() == "node(s) were unschedulable"
    assert fw.run_pre_score(state, pod, [infos[int(r)] for r in out.feasible]).is_success()
    scored, st_ = fw.run_score(state, pod, snap, out.feasible)
    assert st_.is_success() and scored is not None
    by_name = dict(
        zip([infos[int(r)].name for r in out.feasible], scored.totals.tolist(), strict=True)
    )
    assert by_name["plain"] - by_name["prefer"] == 100 * fw.weights["TaintToleration"]
