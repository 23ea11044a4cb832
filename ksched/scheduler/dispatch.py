"""What the queue pops, run through its cycle: a pod through ``schedule_one``, a pod group
through ``schedule_one_podgroup``; and ``run``, the plain loop that pops them.

Both cycles read and change the ``Scheduler``'s shared state (``scheduler.py``), so they
import it; this module sits above the three, so the ``Scheduler`` imports no cycle and no
circle runs through them.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from ..queue.podgroups import QueuedPodGroupInfo
from ..queue.scheduling_queue import QueuedPodInfo
from .schedule_one import schedule_one
from .schedule_one_podgroup import schedule_one_podgroup
from .scheduler import Scheduler

__all__ = ["run", "schedule_entity"]


async def schedule_entity(
    sched: Scheduler, qpi: QueuedPodInfo | QueuedPodGroupInfo, tg: anyio.abc.TaskGroup
) -> None:
    """One scheduling cycle now, of a pod (``schedule_one.schedule_one``) or of a whole
    pod group (``schedule_one_podgroup``); binding cycles are started in ``tg``."""
    if isinstance(qpi, QueuedPodGroupInfo):
        await schedule_one_podgroup(sched, qpi, tg)
    else:
        await schedule_one(sched, qpi, tg)


async def run(
    sched: Scheduler, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Schedule until cancelled; bindings run in this task group and are awaited on exit."""
    async with anyio.create_task_group() as tg:
        sched.task_group = tg

        def spawn(call: Callable[[], Coroutine[Any, Any, Any]]) -> None:
            tg.start_soon(call)

        for fw in sched.frameworks.values():
            fw.handle.spawn = spawn  # plugins' API calls from synchronous points
        tg.start_soon(sched.queue.run_flushers)
        task_status.started()
        while not sched.stopping:
            qpi = await sched.queue.pop()
            if qpi is None:
                break
            if isinstance(qpi, QueuedPodInfo):  # a pod group: the pod-group cycle's
                await schedule_entity(sched, qpi, tg)
            await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
