"""Cluster events that can move pods out of the unschedulable pool.

Labels are kube-scheduler's ``ClusterEvent.Label()`` (resource then action, e.g.
``UnschedulablePodAdd``, ``NodeUpdateNodeTaint``, ``AssignedPodUpdatePodLabel``) so metrics
(``scheduler_queue_incoming_pods_total{event}``, ``scheduler_event_handling_duration_seconds``,
``scheduler_inflight_events``) read the same. Incoming events about pods use resource
``AssignedPod`` (bound pods) or, for pending pods, v1.36's ``Pod`` (labelled
``UnschedulablePod`` as upstream's internal resource); a plugin that registers resource
``Pod`` hears both, as upstream's ``matchEventResources`` lets ``Pod`` cover assignedPod and
unschedulablePod. v1.37 splits pending pods: ``TargetPod`` for the queued pod's own update
(``SchedulingQueue.Update``), ``UnscheduledPod`` for the informer's view of any pending pod
(``EventUnscheduledPodAdd`` ...), and ``Pod`` covers all three (``UnrollPodEvent``);
``pending_pod_events`` picks the version's set.
Storage objects (the volume plugins' ``EventResource``s) only ever Add, Update or Delete.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.objects import Node
from ..framework.events import ActionType, EventResource
from ..framework.interface import ClusterEvent
from ..framework.types import PodInfo

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "ASSIGNED_POD_UPDATE",
    "BACKOFF_COMPLETE",
    "CSI_DRIVER",
    "CSI_NODE",
    "CSI_STORAGE_CAPACITY",
    "DEVICE_CLASS",
    "FORCE_ACTIVATE",
    "NODE_ADD",
    "NODE_DELETE",
    "PERSISTENT_VOLUME",
    "PERSISTENT_VOLUME_CLAIM",
    "POD_ADD",
    "POD_GROUP_ADD",
    "POD_GROUP_DELETE",
    "POD_GROUP_UPDATE",
    "RESOURCE_CLAIM",
    "RESOURCE_SLICE",
    "SCHEDULE_ATTEMPT_FAILURE",
    "STORAGE_CLASS",
    "STORAGE_RESOURCES",
    "UNSCHEDULABLE_TIMEOUT",
    "UNSCHEDULED_POD_ADD",
    "UNSCHEDULED_POD_DELETE",
    "UNSCHEDULED_POD_UPDATE",
    "UPDATE_POD_GENERATED_RESOURCE_CLAIM",
    "VOLUME_ATTACHMENT",
    "WILDCARD",
    "PendingPodEvents",
    "is_wildcard",
    "matches",
    "node_update_events",
    "object_events",
    "pending_pod_events",
    "pod_update_events",
]

NODE_ADD = ClusterEvent("Node", "Add", "NodeAdd")
NODE_DELETE = ClusterEvent("Node", "Delete", "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent("AssignedPod", "Add", "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent("AssignedPod", "Update", "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent("AssignedPod", "Delete", "AssignedPodDelete")
UNSCHEDULED_POD_ADD = ClusterEvent("Pod", "Add", "UnschedulablePodAdd")
UNSCHEDULED_POD_UPDATE = ClusterEvent("Pod", "Update", "UnschedulablePodUpdate")
UNSCHEDULED_POD_DELETE = ClusterEvent("Pod", "Delete", "UnschedulablePodDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", "*", "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent("*", "*", "ForceActivate")
WILDCARD = ClusterEvent("*", "*", "WildCardEvent")

# EventResources of the storage objects (upstream framework.PersistentVolumeClaim, ...).
PERSISTENT_VOLUME_CLAIM = EventResource.PERSISTENT_VOLUME_CLAIM
PERSISTENT_VOLUME = EventResource.PERSISTENT_VOLUME
STORAGE_CLASS = EventResource.STORAGE_CLASS
CSI_NODE = EventResource.CSI_NODE
CSI_DRIVER = EventResource.CSI_DRIVER
CSI_STORAGE_CAPACITY = EventResource.CSI_STORAGE_CAPACITY
VOLUME_ATTACHMENT = EventResource.VOLUME_ATTACHMENT
# DRA's EventResources (upstream framework.ResourceClaim, ...).
RESOURCE_CLAIM = EventResource.RESOURCE_CLAIM
RESOURCE_SLICE = EventResource.RESOURCE_SLICE
DEVICE_CLASS = EventResource.DEVICE_CLASS
# A pod update adding the claim the resourceclaim controller made from a template.
UPDATE_POD_GENERATED_RESOURCE_CLAIM = ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
STORAGE_RESOURCES = (
    PERSISTENT_VOLUME_CLAIM,
    PERSISTENT_VOLUME,
    STORAGE_CLASS,
    CSI_NODE,
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
    VOLUME_ATTACHMENT,
)

# A PodGroup's informer events (GenericWorkload), for the plugins that register them.
POD_GROUP_ADD = ClusterEvent(EventResource.POD_GROUP, "Add", "PodGroupAdd")
POD_GROUP_UPDATE = ClusterEvent(EventResource.POD_GROUP, "Update", "PodGroupUpdate")
POD_GROUP_DELETE = ClusterEvent(EventResource.POD_GROUP, "Delete", "PodGroupDelete")

# Labels of queue moves that are not cluster events (metrics only); a new pod enters the
# queue as upstream's EventUnscheduledPodAdd.
POD_ADD = UNSCHEDULED_POD_ADD.label
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"

# resource -> label prefix (upstream's EventResource) of pod events; v1.36's pending "Pod"
# is upstream's internal unschedulablePod.
_POD_LABEL_PREFIX = {
    "AssignedPod": "AssignedPod",
    "Pod": "UnschedulablePod",
    "UnscheduledPod": "UnscheduledPod",
    "TargetPod": "TargetPod",
}
_POD_RESOURCES = frozenset({"AssignedPod", "UnscheduledPod", "TargetPod"})


@dataclass(frozen=True, slots=True)
class PendingPodEvents:
    """A version's events about pending pods: the informer's add/update/delete of one
    (``EventUnscheduledPod*``), and the resources of a pending pod's update as the queue
    sees it (``target``, its own) and as the informer does (``other``); ``scale_up``:
    whether a pod update can be an UpdatePodScaleUp."""

    add: ClusterEvent
    update: ClusterEvent
    delete: ClusterEvent
    target: str
    other: str
    scale_up: bool


_PENDING_1_36 = PendingPodEvents(
    UNSCHEDULED_POD_ADD, UNSCHEDULED_POD_UPDATE, UNSCHEDULED_POD_DELETE, "Pod", "Pod", False
)
_PENDING_1_37 = PendingPodEvents(
    ClusterEvent("UnscheduledPod", "Add", "UnscheduledPodAdd"),
    ClusterEvent("UnscheduledPod", "Update", "UnscheduledPodUpdate"),
    ClusterEvent("UnscheduledPod", "Delete", "UnscheduledPodDelete"),
    "TargetPod",
    "UnscheduledPod",
    True,
)


def pending_pod_events(split: bool) -> PendingPodEvents:
    """v1.36's single pending ``Pod`` resource, or (``split``, v1.37) UnscheduledPod and
    TargetPod."""
    return _PENDING_1_37 if split else _PENDING_1_36


def is_wildcard(event: ClusterEvent) -> bool:
    """``ClusterEventIsWildCard``: an event that may help every pod (flush, force-activate)."""
    return event.resource == "*" and event.action == "*"


def matches(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """``MatchClusterEvents``: whether a plugin's registered event covers an incoming one.

    A wildcard registration covers everything; a wildcard incoming event is
    matched only by a wildcard registration (the queue handles those itself).
    """
    if is_wildcard(registered):
        return True
    r, res = registered.resource, incoming.resource
    if not (r == "*" or r == res or (r == "Pod" and res in _POD_RESOURCES)):
        return False
    a = registered.action
    return a in ("*", incoming.action) or (a == "Update" and incoming.action.startswith("Update"))


def object_events(resource: str) -> tuple[ClusterEvent, ClusterEvent, ClusterEvent]:
    """Add, Update and Delete of ``resource``, for objects whose updates are not split into
    finer actions (storage objects, custom resources); labelled resource + action, as
    upstream's ``ClusterEvent.Label()``."""
    return (
        ClusterEvent(resource, "Add", f"{resource}Add"),
        ClusterEvent(resource, "Update", f"{resource}Update"),
        ClusterEvent(resource, "Delete", f"{resource}Delete"),
    )


def _scaled_down(old: PodInfo, new: PodInfo) -> bool:
    o, n = old.requests, new.requests
    if n.milli_cpu < o.milli_cpu or n.memory < o.memory:
        return True
    if n.ephemeral_storage < o.ephemeral_storage:
        return True
    return any(n.scalar.get(k, 0) < v for k, v in o.scalar.items())


def _scaled_up(old: PodInfo, new: PodInfo) -> bool:
    o, n = old.requests, new.requests
    if n.milli_cpu > o.milli_cpu or n.memory > o.memory:
        return True
    if n.ephemeral_storage > o.ephemeral_storage:
        return True
    return any(v > o.scalar.get(k, 0) for k, v in n.scalar.items())


def pod_update_events(
    old: PodInfo, new: PodInfo, pending: str = "Pod", *, scale_up: bool = False
) -> list[ClusterEvent]:
    """``PodSchedulingPropertiesChange``: the specific UpdatePodXYZ events of a pod update.

    ``pending``: the resource of a pending pod's events (``PendingPodEvents``);
    ``scale_up``: v1.37's UpdatePodScaleUp. Falls back to a plain Update (heard only
    by plugins registering Pod/Update) when nothing scheduling-relevant changed.
    """
    resource = "AssignedPod" if new.node_name else pending
    prefix = _POD_LABEL_PREFIX[resource]
    o, n = old.pod, new.pod
    actions: list[str] = []
    if o.metadata.labels != n.metadata.labels:
        actions.append("UpdatePodLabel")
    if _scaled_down(old, new):
        actions.append("UpdatePodScaleDown")
    if scale_up and _scaled_up(old, new):
        actions.append(ActionType.UPDATE_POD_SCALE_UP)
    if o.spec.scheduling_gates and not n.spec.scheduling_gates:
        actions.append("UpdatePodSchedulingGatesEliminated")
    if len(o.spec.tolerations) != len(n.spec.tolerations):
        actions.append("UpdatePodToleration")
    if o.status.resource_claim_statuses != n.status.resource_claim_statuses:
        actions.append(UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append("Update")
    return [ClusterEvent(resource, a, prefix + a) for a in actions]


def _condition_statuses(node: Node) -> dict[str, str]:
    """Upstream's ``extractNodeConditionsChange`` compares type -> status only (heartbeat
    times change on every kubelet report)."""
    return {c.type: c.status for c in node.status.conditions}


def node_update_events(old: Node, new: Node) -> list[ClusterEvent]:
    """The specific NodeUpdate actions between two versions (``NodeSchedulingPropertiesChange``).

    Like upstream, cordoning is not an event (it can only make pods less
    schedulable); uncordoning is reported as a taint change.
    """
    actions = []
    if old.spec.unschedulable != new.spec.unschedulable and not new.spec.unschedulable:
        actions.append("UpdateNodeTaint")
    if old.status.allocatable != new.status.allocatable:
        actions.append("UpdateNodeAllocatable")
    if old.metadata.labels != new.metadata.labels:
        actions.append("UpdateNodeLabel")
    if old.spec.taints != new.spec.taints:
        actions.append("UpdateNodeTaint")
    if _condition_statuses(old) != _condition_statuses(new):
        actions.append("UpdateNodeCondition")
    if old.metadata.annotations != new.metadata.annotations:
        actions.append("UpdateNodeAnnotation")
    # NodeDeclaredFeatures (on in v1.36): the lists are kept sorted, so compared as lists
    if old.status.declared_features != new.status.declared_features:
        actions.append(ActionType.UPDATE_NODE_DECLARED_FEATURE)
    return [ClusterEvent("Node", a, "Node" + a) for a in actions]
