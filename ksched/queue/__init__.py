"""The scheduling queue: activeQ, backoffQ, the unschedulable pool and the nominator."""

from .events import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, ASSIGNED_POD_UPDATE, NODE_ADD
from .nominator import Nominator
from .podgroups import QueuedPodGroupInfo
from .scheduling_queue import Entity, QueuedPodInfo, SchedulingQueue

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "ASSIGNED_POD_UPDATE",
    "NODE_ADD",
    "Entity",
    "Nominator",
    "QueuedPodGroupInfo",
    "QueuedPodInfo",
    "SchedulingQueue",
]
