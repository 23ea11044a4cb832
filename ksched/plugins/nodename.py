"""NodeName: a pod with ``spec.nodeName`` fits only the node of that name.

From v1.37 the plugin also has a PreFilter (no gate) narrowing such a pod's cycle to its
node (kube-scheduler schedules one only for a deferred in-place resize); v1.36's has none,
so its extension points (and the PreFilter metrics) stay as they were: the instance is of
a subclass with the PreFilter only when the handle's version is 1.37 or later.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.handle import Handle
from ..framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    NodeOnlyFilter,
    PreFilterPlugin,
    PreFilterResult,
)
from ..framework.snapshot import BoolArray, Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .helper import all_true, gates_of

__all__ = ["ERR_REASON", "NodeName", "fits"]

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    """``nodename.Fits``: no requested name, or the node's."""
    wanted = pod.pod.spec.node_name
    return not wanted or wanted == node.name


class NodeName(NodeOnlyFilter[NoArgs]):
    name = names.NODE_NAME

    def __new__(cls, args: Any = None, handle: Handle | None = None) -> NodeName:
        if cls is NodeName and handle is not None and gates_of(handle).at_least("1.37"):
            cls = NodeNameWithPreFilter
        return super().__new__(cls)

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


class NodeNameWithPreFilter(NodeName, PreFilterPlugin[NoArgs]):
    """v1.37's NodeName (``NodeName(args, handle)`` builds it at 1.37 and later)."""

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Only the node ``spec.nodeName`` names; other nodes are then UnschedulableAndUnresolvable
        and so never preemption targets."""
        wanted = pod.pod.spec.node_name
        if wanted:
            return PreFilterResult({wanted}), None
        return None, None
