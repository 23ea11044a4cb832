"""PodNameLength: pods with long names do not fit anywhere.

A deliberately simple Filter, the "hello world" of out-of-tree plugins: it shows args
parsing, a per-node ``filter`` and the optional all-nodes ``filter_batch``.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from ksched import (
    BoolArray,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    NodeInfo,
    PluginArgs,
    PodInfo,
    Snapshot,
    Status,
)
from msgspec import Meta

__all__ = ["PodNameLength"]

NAME = "PodNameLength"


class PodNameLengthArgs(PluginArgs):
    max_name_length: Annotated[int, Meta(ge=0)] = 4


class PodNameLength(FilterPlugin[PodNameLengthArgs]):
    name = NAME

    Args = PodNameLengthArgs

    @property
    def max_name_length(self) -> int:
        return self.args.max_name_length

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
