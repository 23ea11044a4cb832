"""SchedulingGates: upstream's tests (scheduling_gates_test.go)."""

from __future__ import annotations

from typing import Any

from ksched.api.objects import Pod, decode
from ksched.framework.interface import QueueingHint
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins.schedulinggates import SchedulingGates


def mk_pod(gates: list[str] | None = None, name: str = "p", uid: str = "") -> PodInfo:
    spec: dict[str, Any] = {}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    m = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": spec,
    }
    return PodInfo(decode(m, Pod), m)


def test_pre_enqueue_pod_without_gates() -> None:
    assert SchedulingGates().pre_enqueue(mk_pod()) is None


def test_pre_enqueue_pod_with_gates() -> None:
    got = SchedulingGates().pre_enqueue(mk_pod(["foo", "bar"]))
    assert got is not None
    assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert got.reasons == ("waiting for scheduling gates: [foo bar]",)


def test_is_schedulable_after_update_target_pod_scheduling_gates_eliminated() -> None:
    [reg] = SchedulingGates().events_to_register()
    assert (reg.event.resource, reg.event.action) == ("Pod", "UpdatePodSchedulingGatesEliminated")
    assert reg.hint is not None
    pod, old, new = mk_pod(["foo"]), mk_pod(["foo"]), mk_pod()
    assert reg.hint(pod, old, new) == QueueingHint.QUEUE
    # Another pod's gates going away does not help this one.
    assert reg.hint(pod, mk_pod(["foo"], name="q"), mk_pod(name="q")) == QueueingHint.SKIP
