"""What v1.37 changed in the queue's cluster events without a gate: a pending pod's own
update is a ``TargetPod`` event (v1.36: the internal ``UnschedulablePod``), an update can be
``UpdatePodScaleUp``, and a Node/Add registration no longer implies UpdateNodeTaint."""

from __future__ import annotations

import msgspec
import pytest

from ksched.framework.interface import ClusterEvent
from ksched.framework.types import PodInfo
from ksched.queue import events as ev
from ksched.queue.scheduling_queue import ACTIVE_Q, UNSCHEDULABLE
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod

from ._util import fail, make_queue, pop


def relabel(pi: PodInfo, **labels: str) -> PodInfo:
    meta = msgspec.structs.replace(pi.pod.metadata, labels={**pi.labels, **labels})
    return pi.with_pod(msgspec.structs.replace(pi.pod, metadata=meta))


def pooled(version: str, plugin: str, pod: PodInfo) -> tuple[object, list[tuple[str, str]]]:
    moves: list[tuple[str, str]] = []
    clock = FakeClock()
    q = make_queue(clock, on_move=lambda e, w: moves.append((e, w)), version=version)
    q.add(pod, "ksched")
    fail(q, pop(q), plugin)
    clock.advance(30)  # past its backoff
    moves.clear()
    return q, moves


@pytest.mark.parametrize(
    ("version", "plugin", "where", "label"),
    [
        ("1.36", "OwnLabels", ACTIVE_Q, "UnschedulablePodUpdatePodLabel"),
        ("1.37", "OwnLabels", ACTIVE_Q, "TargetPodUpdatePodLabel"),
        ("1.37", "TargetLabels", ACTIVE_Q, "TargetPodUpdatePodLabel"),
        ("1.37", "OthersLabels", UNSCHEDULABLE, None),
        ("1.36", "TargetLabels", UNSCHEDULABLE, None),
    ],
)
def test_own_update_of_a_pooled_pod_is_a_target_pod_event_from_1_37(
    version: str, plugin: str, where: str, label: str | None
) -> None:
    pod = make_pod("p", labels={"v": "1"})
    q, moves = pooled(version, plugin, pod)
    q.update(pod, relabel(pod, v="2"))  # type: ignore[attr-defined]
    assert q.location(pod) == where  # type: ignore[attr-defined]
    assert moves == ([(label, ACTIVE_Q)] if label else [])


@pytest.mark.parametrize(("version", "where"), [("1.36", UNSCHEDULABLE), ("1.37", ACTIVE_Q)])
def test_scale_up_is_an_event_from_1_37(version: str, where: str) -> None:
    pod = make_pod("p", cpu="1", uid="u")
    q, _ = pooled(version, "ScaleUp", pod)
    bigger = make_pod("p", cpu="2", uid="u")
    q.update(pod, bigger)  # type: ignore[attr-defined]
    assert q.location(pod) == where  # type: ignore[attr-defined]


def test_scale_up_events_name_any_request_that_grew_or_appeared() -> None:
    base = make_pod("p", cpu="1")
    up = ClusterEvent("TargetPod", "UpdatePodScaleUp", "TargetPodUpdatePodScaleUp")
    assert up in ev.pod_update_events(base, make_pod("p", cpu="2"), "TargetPod", scale_up=True)
    grown = make_pod("p", cpu="1", requests={"example.com/gpu": 1})
    assert up in ev.pod_update_events(base, grown, "TargetPod", scale_up=True)
    # cpu down and memory up at once: both events
    mixed = make_pod("p", cpu="500m", requests={"memory": "1Gi"})
    actions = [e.action for e in ev.pod_update_events(base, mixed, "TargetPod", scale_up=True)]
    assert actions == ["UpdatePodScaleDown", "UpdatePodScaleUp"]
    assert ev.pod_update_events(base, make_pod("p", cpu="2"), "Pod") == [
        ClusterEvent("Pod", "Update", "UnschedulablePodUpdate")
    ]


def test_pod_registration_covers_every_finer_pod_resource() -> None:
    reg = ClusterEvent("Pod", "Update")
    for res in ("AssignedPod", "UnscheduledPod", "TargetPod", "Pod"):
        assert ev.matches(reg, ClusterEvent(res, "UpdatePodLabel"))
    assert not ev.matches(ClusterEvent("TargetPod", "Update"), ev.UNSCHEDULED_POD_UPDATE)
    assert not ev.matches(
        ClusterEvent("UnscheduledPod", "Update"), ClusterEvent("TargetPod", "UpdatePodLabel")
    )


@pytest.mark.parametrize(("version", "where"), [("1.36", ACTIVE_Q), ("1.37", UNSCHEDULABLE)])
def test_node_add_registration_implies_taint_updates_only_in_1_36(version: str, where: str) -> None:
    """v1.36's buildQueueingHintMap workaround (kubernetes#109437), gone with preCheck."""
    pod = make_pod("p")
    q, _ = pooled(version, "NodeAddOnly", pod)
    old = make_node("n", taints=[{"key": "k", "effect": "NoSchedule"}])
    new = make_node("n")
    for e in ev.node_update_events(old, new):
        q.move_all_to_active_or_backoff(e, old, new)  # type: ignore[attr-defined]
    assert q.location(pod) == where  # type: ignore[attr-defined]


def test_pending_pod_events_per_version() -> None:
    old, new = ev.pending_pod_events(False), ev.pending_pod_events(True)
    assert (old.add.label, old.update.label, old.delete.label) == (
        "UnschedulablePodAdd",
        "UnschedulablePodUpdate",
        "UnschedulablePodDelete",
    )
    assert (new.add.label, new.update.label, new.delete.label) == (
        "UnscheduledPodAdd",
        "UnscheduledPodUpdate",
        "UnscheduledPodDelete",
    )
    assert (old.target, old.other, new.target, new.other) == (
        "Pod",
        "Pod",
        "TargetPod",
        "UnscheduledPod",
    )
