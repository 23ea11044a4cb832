"""NodeName: upstream's table test (node_name_test.go), per-node and batch."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import Node, Pod, decode
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import PreFilterResult, extension_points_of
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins.nodename import ERR_REASON, NodeName, NodeNameWithPreFilter
from tests.factories import make_node_info


def mk_pod(spec: dict[str, Any]) -> PodInfo:
    m = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    return PodInfo(decode(m, Pod), m)


def mk_node(name: str) -> Node:
    return decode({"kind": "Node", "metadata": {"name": name}}, Node)


@pytest.mark.parametrize(
    ("pod_node", "node", "ok"),
    [
        ("", "", True),  # no host specified
        ("foo", "foo", True),  # host matches
        ("bar", "foo", False),  # host doesn't match
    ],
    ids=["no host specified", "host matches", "host doesn't match"],
)
def test_node_name(pod_node: str, node: str, ok: bool) -> None:
    p = NodeName()
    pod = mk_pod({"nodeName": pod_node} if pod_node else {})
    ni = make_node_info(mk_node(node))
    got = p.filter(CycleState(), pod, ni)
    if ok:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.reasons == (ERR_REASON,) == ("node(s) didn't match the requested node name",)
    assert p.filter_batch(CycleState(), pod, Snapshot([ni])).tolist() == [ok]


def test_batch_over_many_nodes() -> None:
    p = NodeName()
    infos = [make_node_info(mk_node(f"n{i}")) for i in range(5)]
    snap = Snapshot(infos)
    for wanted in ("", "n3", "missing"):
        pod = mk_pod({"nodeName": wanted} if wanted else {})
        assert p.filter_batch(CycleState(), pod, snap).tolist() == [
            p.filter(CycleState(), pod, ni) is None for ni in infos
        ]


def test_events_to_register() -> None:
    [reg] = NodeName().events_to_register()
    assert (reg.event.resource, reg.event.action, reg.hint) == ("Node", "Add", None)


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_pre_filter_from_v1_37(version: str) -> None:
    """v1.37 narrows a pod with spec.nodeName to that node at PreFilter; v1.36's plugin has
    no PreFilter at all (so none runs, and none is timed)."""
    handle = Handle(features=set_feature_gates([], [version]))
    pl = NodeName(None, handle)
    points = extension_points_of(pl)
    assert ("preFilter" in points) is (version == "1.37")
    assert "filter" in points
    if version == "1.36":
        assert type(pl) is NodeName
        return
    assert isinstance(pl, NodeNameWithPreFilter)
    result, status = pl.pre_filter(CycleState(), mk_pod({"nodeName": "n2"}), Snapshot())
    assert status is None and result == PreFilterResult({"n2"})
    assert pl.pre_filter(CycleState(), mk_pod({}), Snapshot()) == (None, None)
    # the Filter is v1.36's
    assert pl.filter(CycleState(), mk_pod({"nodeName": "n2"}), make_node_info(mk_node("n1")))


def test_without_a_handle_the_plugin_has_no_pre_filter() -> None:
    assert type(NodeName()) is NodeName
    assert "preFilter" in extension_points_of(NodeNameWithPreFilter)
