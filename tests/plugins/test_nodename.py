"""NodeName: upstream's table test (node_name_test.go), per-node and batch."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import Node, Pod, decode
from ksched.framework.cycle_state import CycleState
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins.nodename import ERR_REASON, NodeName
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
