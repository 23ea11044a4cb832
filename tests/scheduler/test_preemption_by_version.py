"""What v1.37 changed in preemption's scheduling cycle and actuation (no gate): a
successful preemption's message in the FitError, and the preemptor activated when its last
victim was only rejected at Permit (nothing deleted, so no deletion event to requeue it)."""

from __future__ import annotations

import anyio
import pytest

from ksched.queue.scheduling_queue import ACTIVE_Q, UNSCHEDULABLE
from ksched.scheduler.dispatch import schedule_entity
from tests.scheduler.test_binding_cycle import Harness

pytestmark = pytest.mark.anyio

PREEMPTION = {
    "preFilter": ["NodeResourcesFit"],
    "filter": ["NodeResourcesFit"],
    "postFilter": ["DefaultPreemption"],
}


@pytest.mark.parametrize(
    ("version", "tail"),
    [
        ("1.36", "0/1 nodes are available: 1 Insufficient cpu."),
        (
            "1.37",
            "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential "
            "placement for pod on node n0, preempting 1 victims",
        ),
    ],
)
async def test_a_preempting_pods_failure_message(version: str, tail: str) -> None:
    h = Harness(version=version, points=PREEMPTION)
    h.add("low", cpu="40")
    async with anyio.create_task_group() as tg:
        await h.drive(tg, attempts=1, advance=False)
        assert h.cluster.bound == {"low": "n0"}
        h.add("high", cpu="40", priority=100)
        await h.drive(tg, attempts=1, advance=False)
        tg.cancel_scope.cancel()
    assert h.out.failed == [("high", tail)]


@pytest.mark.parametrize(("version", "where"), [("1.36", UNSCHEDULABLE), ("1.37", ACTIVE_Q)])
async def test_last_victim_rejected_at_permit_activates_the_preemptor_from_1_37(
    version: str, where: str
) -> None:
    h = Harness(version=version)
    victim = h.add("victim", labels={"wait": "yes"})
    preemptor = h.add("preemptor")
    fw = h.sched.frameworks["ksched"]
    async with anyio.create_task_group() as tg:
        first = h.sched.queue.pop_nowait()
        assert first is not None and first.pod.name == "victim"
        await schedule_entity(h.sched, first, tg)
        await h.settle()
        wp = h.sched.waiting_pods.get(victim.uid)
        assert wp is not None and not wp.done
        qpi = h.sched.queue.pop_nowait()
        assert qpi is not None and qpi.pod.name == "preemptor"
        qpi.unschedulable_plugins = {"Waiter"}  # waits in the pool for a Node/Add
        h.sched.queue.add_unschedulable_if_not_present(qpi)
        assert h.where(preemptor) == UNSCHEDULABLE
        await h.sched.preempt(fw, preemptor, "n0", [h.sched.waiting_pods.get(victim.uid).pod])  # type: ignore[union-attr]
        assert wp.done and wp.status is not None and not wp.status.is_success()
        assert h.where(preemptor) == where
        tg.cancel_scope.cancel()
