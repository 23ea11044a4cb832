"""Cluster events that can move pods out of the unschedulable pool.

Names follow kube-scheduler's ``framework.ClusterEvent`` labels so metrics
(``scheduler_queue_incoming_pods_total{event}``) read the same.
"""

from __future__ import annotations

from ..api.objects import Node
from ..framework.interface import ClusterEvent

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "ASSIGNED_POD_UPDATE",
    "NODE_ADD",
    "NODE_DELETE",
    "UNSCHEDULABLE_TIMEOUT",
    "WILDCARD",
    "node_update_events",
]

NODE_ADD = ClusterEvent("Node", "Add", "NodeAdd")
NODE_DELETE = ClusterEvent("Node", "Delete", "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent("AssignedPod", "Add", "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent("AssignedPod", "Update", "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent("AssignedPod", "Delete", "AssignedPodDelete")
UNSCHEDULED_POD_UPDATE = ClusterEvent("Pod", "Update", "UnscheduledPodUpdate")
UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", "*", "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent("*", "*", "ForceActivate")
WILDCARD = ClusterEvent("*", "*", "WildCardEvent")


def node_update_events(old: Node, new: Node) -> list[ClusterEvent]:
    """The specific NodeUpdate actions between two versions (``nodeSchedulingPropertiesChange``)."""
    out = []
    if old.spec.unschedulable != new.spec.unschedulable:
        out.append(ClusterEvent("Node", "UpdateNodeTaint", "NodeSpecUnschedulableChange"))
    if old.status.allocatable != new.status.allocatable:
        out.append(ClusterEvent("Node", "UpdateNodeAllocatable", "NodeAllocatableChange"))
    if old.metadata.labels != new.metadata.labels:
        out.append(ClusterEvent("Node", "UpdateNodeLabel", "NodeLabelChange"))
    if old.spec.taints != new.spec.taints:
        out.append(ClusterEvent("Node", "UpdateNodeTaint", "NodeTaintChange"))
    if old.metadata.annotations != new.metadata.annotations:
        out.append(ClusterEvent("Node", "UpdateNodeAnnotation", "NodeAnnotationChange"))
    return out
