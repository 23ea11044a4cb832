"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) take only pods tolerating it.

A pod tolerating the ``node.kubernetes.io/unschedulable:NoSchedule`` taint also
tolerates ``spec.unschedulable``, as upstream. The batch form is the snapshot's
``unschedulable`` column, negated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api.objects import Node, Taint
from ..api.selectors import tolerations_tolerate_taint
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.handle import Handle
from ..framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    NodeOnlyFilter,
    QueueingHint,
)
from ..framework.snapshot import BoolArray, Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .helper import all_true, comparison_operators, spec_fragment

__all__ = ["ERR_REASON_UNSCHEDULABLE", "TAINT_NODE_UNSCHEDULABLE", "NodeUnschedulable"]

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")
_CACHE = names.NODE_UNSCHEDULABLE + "/tolerates"


def tolerates_unschedulable(pod: PodInfo, comparison: bool = False) -> bool:
    """Whether the pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule`` (cached;
    ``comparison``: gate TaintTolerationComparisonOperators, fixed per scheduler)."""
    key = f"{_CACHE}/{'cmp' if comparison else 'eq'}"
    v = pod.cache.get(key)
    if v is None:
        v = tolerations_tolerate_taint(pod.pod.spec.tolerations, _UNSCHEDULABLE_TAINT, comparison)
        pod.cache[key] = v
    return bool(v)


class NodeUnschedulable(NodeOnlyFilter[NoArgs]):
    name = names.NODE_UNSCHEDULABLE

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.comparison_operators = comparison_operators(handle)

    def sign_pod(self, pod: PodInfo) -> Any:
        return spec_fragment(pod, "sign/tolerations", pod.pod.spec.tolerations)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.node is None or not node.node.spec.unschedulable:
            return None
        if tolerates_unschedulable(pod, self.comparison_operators):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        if not snap.any_unschedulable() or tolerates_unschedulable(pod, self.comparison_operators):
            return all_true(snap.n)
        return np.logical_not(snap.unschedulable)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node Add|UpdateNodeTaint and the pod's own toleration updates (QueueingHints on)."""
        node_hint = self.is_schedulable_after_node_change
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD), node_hint),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT), node_hint
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when a schedulable node is added or a node is uncordoned."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            raise TypeError(f"expected Node, got {type(old).__name__}, {type(new).__name__}")
        if new.spec.unschedulable:
            return QueueingHint.SKIP
        if old is None or old.spec.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pod_toleration_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when the rejected pod itself now tolerates the unschedulable taint."""
        if not isinstance(new, PodInfo) or (old is not None and not isinstance(old, PodInfo)):
            raise TypeError(f"expected PodInfo, got {type(old).__name__}, {type(new).__name__}")
        if (new.uid or new.key) != (pod.uid or pod.key):
            return QueueingHint.SKIP
        tols = new.pod.spec.tolerations
        if tolerations_tolerate_taint(tols, _UNSCHEDULABLE_TAINT, self.comparison_operators):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP
