"""PodNameLength: pods with long names do not fit anywhere.

A deliberately simple Filter, the "hello world" of out-of-tree plugins: it shows args
parsing, a per-node ``filter`` and the optional all-nodes ``filter_batch``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from ksched import (
    BoolArray,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    PodInfo,
    Snapshot,
    Status,
)

from ._args import check_fields, get_int, resolve

__all__ = ["PodNameLength"]

NAME = "PodNameLength"


class PodNameLength(FilterPlugin):
    name = NAME

    @dataclass(frozen=True, slots=True)
    class Args:
        max_name_length: int = 4

        @classmethod
        def parse(cls, plugin: str, data: dict[str, Any]) -> PodNameLength.Args:
            check_fields(plugin, data, ["maxNameLength"])
            return cls(get_int(plugin, data, "maxNameLength", 4, minimum=0))

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        parsed: PodNameLength.Args = resolve(self.Args, self.name, args)
        super().__init__(parsed, handle)
        self.max_name_length = parsed.max_name_length

    def _verdict(self, pod: PodInfo) -> Status | None:
        n = len(pod.name)
        if n <= self.max_name_length:
            return None
        # The name is the same on every node and never changes: no node, and no
        # preemption, can help.
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"pod name length {n} exceeds {self.max_name_length}",
        )

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return self._verdict(pod)

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        return np.full(snap.n, len(pod.name) <= self.max_name_length, dtype=np.bool_)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Nothing in the cluster can shorten a pod's name, so no event requeues it."""
        return []
