"""The names of cluster events: upstream's ``framework.EventResource`` and ``ActionType``.

A plugin registers the events that may make a pod it rejected schedulable::

    ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL), hint)

Members are strings (``EventResource.NODE == "Node"``), so events built from them equal the
ones built from literals, and a plugin's own resources (a custom resource's GVK such as
``"podgroups.v1alpha1.scheduling.x-k8s.io"``) are plain strings beside them. An ``Update``
registration covers every finer ``Update...`` action of its resource, and resource
``Pod`` covers bound (``AssignedPod``) and pending pods alike (see ``ksched.queue.events``).
v1.37 exports the finer pod resources: ``UnscheduledPod`` (another pending pod) and
``TargetPod`` (the pending pod's own update), both under ``Pod``.

A kind's member is the ``events`` of its row in the kind registry (``ksched.api.kinds``);
the enum stays written out so mypy knows its members, and a test holds the two equal.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ActionType", "EventResource"]


class EventResource(StrEnum):
    """``framework.EventResource``: what changed."""

    NODE = "Node"
    POD = "Pod"  # any pod: pending and bound
    ASSIGNED_POD = "AssignedPod"  # bound pods only
    UNSCHEDULED_POD = "UnscheduledPod"  # v1.37: other pending pods
    TARGET_POD = "TargetPod"  # v1.37: the pending pod itself
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    VOLUME_ATTACHMENT = "VolumeAttachment"
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    POD_GROUP = "PodGroup"  # v1.37, GenericWorkload: scheduling.k8s.io PodGroups
    WILDCARD = "*"


class ActionType(StrEnum):
    """``framework.ActionType``: how it changed."""

    ADD = "Add"
    DELETE = "Delete"
    UPDATE = "Update"  # any update, the finer ones below included
    UPDATE_NODE_ALLOCATABLE = "UpdateNodeAllocatable"
    UPDATE_NODE_LABEL = "UpdateNodeLabel"
    UPDATE_NODE_TAINT = "UpdateNodeTaint"
    UPDATE_NODE_CONDITION = "UpdateNodeCondition"
    UPDATE_NODE_ANNOTATION = "UpdateNodeAnnotation"
    UPDATE_NODE_DECLARED_FEATURE = "UpdateNodeDeclaredFeature"
    UPDATE_NODE_PREEMPTION_POLICY = "UpdateNodePreemptionPolicy"  # v1.37
    UPDATE_POD_LABEL = "UpdatePodLabel"
    UPDATE_POD_SCALE_DOWN = "UpdatePodScaleDown"
    UPDATE_POD_SCALE_UP = "UpdatePodScaleUp"  # v1.37
    UPDATE_POD_TOLERATION = "UpdatePodToleration"
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = "UpdatePodSchedulingGatesEliminated"
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = "UpdatePodGeneratedResourceClaim"
    WILDCARD = "*"
