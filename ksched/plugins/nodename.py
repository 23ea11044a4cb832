"""NodeName: a pod with ``spec.nodeName`` fits only the node of that name."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.interface import ClusterEvent, ClusterEventWithHint, NodeOnlyFilter
from ..framework.snapshot import BoolArray, Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .helper import all_true

__all__ = ["ERR_REASON", "NodeName", "fits"]

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    """``nodename.Fits``: no requested name, or the node's."""
    wanted = pod.pod.spec.node_name
    return not wanted or wanted == node.name


class NodeName(NodeOnlyFilter):
    name = names.NODE_NAME

    def sign_pod(self, pod: PodInfo) -> Any:
        return pod.pod.spec.node_name

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if fits(pod, node):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return all_true(snap.n)
        out = np.zeros(snap.n, dtype=np.bool_)
        row = snap.index.get(wanted)
        if row is not None:
            out[row] = True
        return out

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node Add only, no hint: node updates never change a name (QueueingHints on)."""
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))]
