"""Gt/Lt tolerations (alpha gate TaintTolerationComparisonOperators, in v1.36 and v1.37):
upstream's ToleratesTaint and the plugins that match taints (TaintToleration,
NodeUnschedulable, PodTopologySpread's nodeTaintsPolicy Honor), gate on and off."""

from __future__ import annotations

import pytest

from ksched.api.objects import Taint, Toleration
from ksched.api.selectors import decimal_integer_errors, tolerates_taint
from ksched.features import set_feature_gates
from ksched.features.support import resolve_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import QueueingHint
from ksched.framework.snapshot import Snapshot
from ksched.plugins.nodeunschedulable import NodeUnschedulable
from ksched.plugins.podtopologyspread import PodTopologySpread
from ksched.plugins.tainttoleration import TaintToleration
from tests.factories import make_node_info, make_snapshot
from tests.plugins.test_podtopologyspread_common import mk_node, mk_pod, spread
from tests.plugins.test_tainttoleration import node_with_taints, pod_with_tolerations, taint, tol

GATE = "TaintTolerationComparisonOperators"
VERSIONS = ("1.36", "1.37")


def handle(on: bool, version: str, snap: Snapshot | None = None) -> Handle:
    gates = set_feature_gates([f"{GATE}={str(on).lower()}"], [version])
    return Handle(features=gates, snapshot=snap if snap is not None else Snapshot())


SLA = "node.kubernetes.io/sla"

# (toleration operator, toleration value, taint value, tolerated with the gate on)
MATCH_CASES = [
    ("Gt", "950", "999", True),
    ("Gt", "950", "950", False),
    ("Gt", "950", "800", False),
    ("Lt", "950", "800", True),
    ("Lt", "950", "950", False),
    ("Lt", "950", "999", False),
    ("Gt", "-5", "0", True),
    ("Lt", "0", "-1", True),
    ("Gt", "950", "high", False),  # a taint value that is no number never matches
    ("Gt", "abc", "999", False),
    ("Gt", "950", "0999", False),  # not canonical: leading zero
    ("Gt", "950", "+999", False),
    ("Lt", "0", "-0", False),
    ("Gt", "950", "", False),
    ("Gt", "1", "9223372036854775807", True),
    ("Gt", "1", "9223372036854775808", False),  # beyond int64
    ("Lt", "-9223372036854775808", "-9223372036854775809", False),
]


@pytest.mark.parametrize(("op", "tval", "taint_value", "want"), MATCH_CASES)
def test_tolerates_taint_compares_int64_values(
    op: str, tval: str, taint_value: str, want: bool
) -> None:
    t = Toleration(key=SLA, operator=op, value=tval, effect="NoSchedule")
    taint_ = Taint(key=SLA, value=taint_value, effect="NoSchedule")
    assert tolerates_taint(t, taint_, True) is want
    assert tolerates_taint(t, taint_, False) is False  # gate off: Gt/Lt match nothing
    assert tolerates_taint(t, taint_) is False


def test_comparison_still_needs_key_and_effect() -> None:
    t = Toleration(key=SLA, operator="Gt", value="1", effect="NoSchedule")
    assert not tolerates_taint(t, Taint(key="other", value="5", effect="NoSchedule"), True)
    assert not tolerates_taint(t, Taint(key=SLA, value="5", effect="NoExecute"), True)
    unknown = Toleration(key=SLA, operator="Ge", value="1")
    assert not tolerates_taint(unknown, Taint(key=SLA, value="5", effect="NoSchedule"), True)


@pytest.mark.parametrize(
    ("value", "errs"),
    [
        ("0", []),
        ("-12", []),
        ("12", []),
        ("", ["must be non-empty"]),
        ("-", ["must be a valid decimal integer in canonical form"]),
        ("007", ["must be a valid decimal integer in canonical form"]),
        ("1e3", ["must be a valid decimal integer in canonical form"]),
    ],
)
def test_decimal_integer_errors_are_apimachinerys(value: str, errs: list[str]) -> None:
    assert decimal_integer_errors(value) == errs


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("on", [True, False])
def test_taint_toleration_filter_and_score(version: str, on: bool) -> None:
    pl = TaintToleration(None, handle(on, version))
    pod = pod_with_tolerations(
        "p", [tol(SLA, "Gt", "950", "NoSchedule"), tol(SLA, "Lt", "5", "PreferNoSchedule")]
    )
    high = make_node_info(node_with_taints("high", [taint(SLA, "999", "NoSchedule")]))
    low = make_node_info(node_with_taints("low", [taint(SLA, "800", "NoSchedule")]))
    soft = make_node_info(node_with_taints("soft", [taint(SLA, "3", "PreferNoSchedule")]))
    state = CycleState()
    got = [pl.filter(state, pod, ni) is None for ni in (high, low, soft)]
    assert got == [on, False, True]
    snap = Snapshot([high, low, soft])
    assert pl.filter_batch(state, pod, snap).tolist() == got
    pl.pre_score(state, pod, [soft])
    assert pl.score(state, pod, soft) == (0 if on else 1)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("on", [True, False])
def test_taint_toleration_node_hint(version: str, on: bool) -> None:
    pl = TaintToleration(None, handle(on, version))
    pod = pod_with_tolerations("p", [tol(SLA, "Gt", "950", "NoSchedule")])
    old = node_with_taints("n", [taint(SLA, "800", "NoSchedule")])
    new = node_with_taints("n", [taint(SLA, "999", "NoSchedule")])
    want = QueueingHint.QUEUE if on else QueueingHint.SKIP
    assert pl.is_schedulable_after_node_change(pod, old, new) == want


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("on", [True, False])
def test_node_unschedulable(version: str, on: bool) -> None:
    """A Gt toleration of the unschedulable taint (value "") never tolerates it, an
    Exists one does: the gate changes nothing for a valueless taint but must not break."""
    pl = NodeUnschedulable(None, handle(on, version))
    cordoned = make_node_info(node_with_taints("n", [], unschedulable=True))
    gt = pod_with_tolerations("p", [tol("node.kubernetes.io/unschedulable", "Gt", "0")])
    assert pl.filter(CycleState(), gt, cordoned) is not None
    exists = pod_with_tolerations("q", [tol("node.kubernetes.io/unschedulable", "Exists")])
    assert pl.filter(CycleState(), exists, cordoned) is None


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("on", [True, False])
def test_pod_topology_spread_honor_taints(version: str, on: bool) -> None:
    """With nodeTaintsPolicy Honor, node-c (tainted, no matching pod) is a domain only when
    a Gt toleration covers its taint (gate on): the minimum drops from 1 to 0 and node-a
    (1 matching pod + the pod itself) then exceeds maxSkew 1."""
    bar = {"matchLabels": {"bar": ""}}
    sla = [{"key": SLA, "value": "999", "effect": "NoSchedule"}]
    nodes = [
        mk_node("node-a", node="node-a"),
        mk_node("node-b", node="node-b"),
        mk_node("node-c", node="node-c", taints=sla),
    ]
    pods = [
        mk_pod("p1", node="node-a", labels={"bar": ""}),
        mk_pod("p2", node="node-b", labels={"bar": ""}),
    ]
    pod = mk_pod(
        labels={"bar": ""},
        tolerations=[{"key": SLA, "operator": "Gt", "value": "950", "effect": "NoSchedule"}],
        constraints=[spread(1, "node", selector=bar, taints_policy="Honor")],
    )
    snap = make_snapshot(nodes, pods)
    pl = PodTopologySpread({"defaultingType": "List"}, handle(on, version, snap))
    state = CycleState()
    _, st = pl.pre_filter(state, pod, snap)
    assert st is None
    got = {ni.name: pl.filter(state, pod, ni) is None for ni in snap.node_infos}
    assert got == {"node-a": not on, "node-b": not on, "node-c": True}
    assert pl.filter_batch(state, pod, snap).tolist() == list(got.values())
    s = state.read("PreFilterPodTopologySpread")
    assert ("node-c" in s.domains[0].as_dict()) is on


@pytest.mark.parametrize("version", VERSIONS)
def test_gate_is_implemented_both_ways(version: str) -> None:
    for value in ("true", "false"):
        gates = resolve_feature_gates([f"{GATE}={value}"], [version])
        assert gates.enabled(GATE) is (value == "true")


@pytest.mark.parametrize(
    ("value", "errs"),
    [
        ("950", []),
        ("-5", []),
        (
            "abc",
            [
                '"abc": must be a valid decimal integer in canonical form',
                '"abc": strconv.ParseInt: parsing "abc": invalid syntax',
            ],
        ),
        ("0950", ['"0950": must be a valid decimal integer in canonical form']),
        ("+5", ['"+5": must be a valid decimal integer in canonical form']),
        (
            "",
            ['"": must be non-empty', '"": strconv.ParseInt: parsing "": invalid syntax'],
        ),
        (
            "9223372036854775808",
            [
                '"9223372036854775808": strconv.ParseInt: parsing "9223372036854775808": '
                "value out of range"
            ],
        ),
    ],
)
def test_a_cluster_file_pod_with_a_bad_comparison_value_is_refused_as_the_api_server_does(
    value: str, errs: list[str]
) -> None:
    from ksched.api.objects import Pod, decode
    from ksched.api.validation import object_errors

    spec = {
        "containers": [{"name": "c"}],
        "tolerations": [
            {"key": SLA, "operator": "Exists"},
            {"key": SLA, "operator": "Lt", "value": value},
            {"key": SLA, "operator": "Equal", "value": "abc"},
        ],
    }
    pod = decode({"kind": "Pod", "metadata": {"name": "p"}, "spec": spec}, Pod)
    want = [f"spec.tolerations[1].value: Invalid value: {e}" for e in errs]
    assert object_errors("Pod", pod) == want
