"""NodeUnschedulable: upstream's table tests (node_unschedulable_test.go), per-node and batch."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.api.objects import Node, Pod, decode
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import QueueingHint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins.nodeunschedulable import (
    ERR_REASON_UNSCHEDULABLE,
    TAINT_NODE_UNSCHEDULABLE,
    NodeUnschedulable,
)
from tests.factories import make_node_info


def mk_pod(tolerations: list[dict[str, Any]] | None = None, uid: str = "") -> PodInfo:
    m = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": uid},
        "spec": {"tolerations": tolerations or []},
    }
    return PodInfo(decode(m, Pod), m)


def mk_node(
    unschedulable: bool, taints: list[dict[str, Any]] | None = None, name: str = "n"
) -> Node:
    return decode(
        {
            "kind": "Node",
            "metadata": {"name": name},
            "spec": {"unschedulable": unschedulable, "taints": taints or []},
        },
        Node,
    )


UNSCHED_TOL = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "ok"),
    [
        ([], True, False),
        ([], False, True),
        ([UNSCHED_TOL], True, True),
    ],
    ids=[
        "does not schedule pod to unschedulable node",
        "schedule pod to normal node",
        "schedule pod with toleration to unschedulable node",
    ],
)
def test_node_unschedulable(
    tolerations: list[dict[str, Any]], unschedulable: bool, ok: bool
) -> None:
    p = NodeUnschedulable()
    pod = mk_pod(tolerations)
    ni = make_node_info(mk_node(unschedulable))
    got = p.filter(CycleState(), pod, ni)
    if ok:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.reasons == (ERR_REASON_UNSCHEDULABLE,) == ("node(s) were unschedulable",)
    assert p.filter_batch(CycleState(), pod, Snapshot([ni])).tolist() == [ok]


NOT_READY = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, mk_node(True), QueueingHint.SKIP),  # skip-queue-on-unschedulable-node-added
        (None, mk_node(False), QueueingHint.QUEUE),  # queue-on-schedulable-node-added
        (mk_node(True), mk_node(True, NOT_READY), QueueingHint.SKIP),
        (mk_node(False), mk_node(False, NOT_READY), QueueingHint.SKIP),
        (mk_node(True), mk_node(False), QueueingHint.QUEUE),  # queue-on-unschedulable-field-change
    ],
    ids=[
        "unschedulable-node-added",
        "schedulable-node-added",
        "unrelated-change-unschedulable-true",
        "unrelated-change-unschedulable-false",
        "unschedulable-field-change",
    ],
)
def test_is_schedulable_after_node_change(old: Node | None, new: Node, want: str) -> None:
    assert NodeUnschedulable().is_schedulable_after_node_change(mk_pod(), old, new) == want


@pytest.mark.parametrize(("old", "new"), [(None, "not-a-node"), ("not-a-node", mk_node(True))])
def test_node_hint_wrong_objects(old: Any, new: Any) -> None:
    with pytest.raises(TypeError):
        NodeUnschedulable().is_schedulable_after_node_change(mk_pod(), old, new)


@pytest.mark.parametrize(
    ("new", "want"),
    [
        (mk_pod([{"key": TAINT_NODE_UNSCHEDULABLE}], uid="different-uid"), QueueingHint.SKIP),
        (mk_pod([{"key": TAINT_NODE_UNSCHEDULABLE}], uid="uid"), QueueingHint.QUEUE),
        (mk_pod([{"key": "unrelated-key"}], uid="uid"), QueueingHint.SKIP),
    ],
    ids=[
        "skip-different-pod-update",
        "queue-when-the-unsched-pod-gets-toleration",
        "skip-when-the-unsched-pod-gets-unrelated-toleration",
    ],
)
def test_is_schedulable_after_pod_toleration_change(new: PodInfo, want: str) -> None:
    pod = mk_pod(uid="uid")
    old = mk_pod(uid=new.uid)
    assert NodeUnschedulable().is_schedulable_after_pod_toleration_change(pod, old, new) == want


def test_pod_hint_wrong_objects() -> None:
    with pytest.raises(TypeError):
        NodeUnschedulable().is_schedulable_after_pod_toleration_change(mk_pod(), None, "not-a-pod")


def test_events_to_register() -> None:
    events = [(e.event.resource, e.event.action) for e in NodeUnschedulable().events_to_register()]
    assert events == [("Node", "Add"), ("Node", "UpdateNodeTaint"), ("Pod", "UpdatePodToleration")]


tolerations_st = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["", TAINT_NODE_UNSCHEDULABLE, "other"]),
            "operator": st.sampled_from(["", "Equal", "Exists"]),
            "value": st.sampled_from(["", "x"]),
            "effect": st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"]),
        }
    ),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(cordoned=st.lists(st.booleans(), min_size=1, max_size=8), tolerations=tolerations_st)
def test_batch_agrees_with_per_node(
    cordoned: list[bool], tolerations: list[dict[str, Any]]
) -> None:
    p = NodeUnschedulable()
    infos = [make_node_info(mk_node(c, name=f"n{i}")) for i, c in enumerate(cordoned)]
    pod = mk_pod(tolerations)
    assert p.filter_batch(CycleState(), pod, Snapshot(infos)).tolist() == [
        p.filter(CycleState(), pod, ni) is None for ni in infos
    ]


def test_batch_follows_a_node_cordoned_after_the_snapshot_was_taken() -> None:
    from ksched.cache import Cache
    from tests.factories import make_node

    cache = Cache()
    for name in ("a", "b"):
        cache.add_node(make_node(name))
    snap = Snapshot()
    cache.update_snapshot(snap)
    plugin, pod = NodeUnschedulable(), mk_pod()
    assert plugin.filter_batch(CycleState(), pod, snap).tolist() == [True, True]
    cache.update_node(make_node("b", unschedulable=True))
    cache.update_snapshot(snap)
    assert plugin.filter_batch(CycleState(), pod, snap).tolist() == [True, False]
    tolerant = mk_pod([UNSCHED_TOL])
    assert plugin.filter_batch(CycleState(), tolerant, snap).tolist() == [True, True]
    cache.update_node(make_node("b"))
    cache.update_snapshot(snap)
    assert plugin.filter_batch(CycleState(), pod, snap).tolist() == [True, True]
