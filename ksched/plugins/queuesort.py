"""PrioritySort: higher priority first, then earlier queue timestamp.

It sorts queue entities: a pod (its ``spec.priority``) or, with GenericWorkload, a pod
group (its PodGroup's priority), as upstream's ``Less`` compares ``GetPriority()``."""

from __future__ import annotations

from typing import Any

from ..framework.args import NoArgs
from ..framework.interface import QueueSortPlugin
from . import names

__all__ = ["PrioritySort"]


class PrioritySort(QueueSortPlugin[NoArgs]):
    name = names.PRIORITY_SORT

    def less(self, a: Any, b: Any) -> bool:
        pa: int = a.priority
        pb: int = b.priority
        return pa > pb or (pa == pb and bool(a.timestamp < b.timestamp))

    def sort_key(self, qpi: Any) -> tuple[int, float]:
        """Heap key equivalent to ``less`` (ties fall back to insertion order)."""
        return (-qpi.priority, qpi.timestamp)
