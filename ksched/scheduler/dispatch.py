"""What the queue pops, run through its cycle: a pod through ``schedule_one``, a pod group
through ``schedule_one_podgroup`` (the loop, ``loop.run_loop``, pops them).

Both cycles read and change the ``Scheduler``'s shared state (``scheduler.py``), so they
import it; this module sits above the three, so the ``Scheduler`` imports no cycle and no
circle runs through them.
"""

from __future__ import annotations

import anyio
import anyio.abc
import anyio.lowlevel

from ..queue.podgroups import QueuedPodGroupInfo
from ..queue.scheduling_queue import QueuedPodInfo
from .schedule_one import schedule_one
from .schedule_one_podgroup import schedule_one_podgroup
from .scheduler import Scheduler

__all__ = ["schedule_entity"]


async def schedule_entity(
    sched: Scheduler, qpi: QueuedPodInfo | QueuedPodGroupInfo, tg: anyio.abc.TaskGroup
) -> None:
    """One scheduling cycle now, of a pod (``schedule_one.schedule_one``) or of a whole
    pod group (``schedule_one_podgroup``); binding cycles are started in ``tg``."""
    if isinstance(qpi, QueuedPodGroupInfo):
        await schedule_one_podgroup(sched, qpi, tg)
    else:
        await schedule_one(sched, qpi, tg)
