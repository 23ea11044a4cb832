"""PrioritySort: higher ``spec.priority`` first, then earlier queue timestamp."""

from __future__ import annotations

from typing import Any

from ..framework.interface import QueueSortPlugin
from . import names

__all__ = ["PrioritySort"]


class PrioritySort(QueueSortPlugin):
    name = names.PRIORITY_SORT

    def less(self, a: Any, b: Any) -> bool:
        pa: int = a.pod_info.priority
        pb: int = b.pod_info.priority
        return pa > pb or (pa == pb and bool(a.timestamp < b.timestamp))

    def sort_key(self, qpi: Any) -> tuple[int, float]:
        """Heap key equivalent to ``less`` (ties fall back to insertion order)."""
        return (-qpi.pod_info.priority, qpi.timestamp)
