"""``ksched snapshot``: a live cluster into one file ``ksched simulate --cluster`` replays.

Every kind ``simulate`` reads (``cluster_file``) is listed, paged as informers list, and
written as one ``kind: List`` with each item's ``apiVersion`` and ``kind`` filled in (a
list response leaves them out) and ``metadata.managedFields`` stripped (server-side-apply
bookkeeping: often half of an object's bytes, and meaningless to a scheduler). Terminal
pods (Succeeded, Failed) are left out, as the daemon's informer leaves them out. The
``resource.k8s.io`` kinds (dynamic resource allocation) are included only when the server
serves them, and so are the ``scheduling.k8s.io`` Workloads and PodGroups (v1beta1, or
v1.36's v1alpha2; workload-aware scheduling, not served unless enabled). The listing is
a series of lists, not one consistent read: a pod bound between the node list and the
pod list is simply bound in the file.

An identity that may not list a kind (403) gets a snapshot without it: kube-scheduler's
own (``system:kube-scheduler``) may not list PriorityClasses or ResourceClaimTemplates,
which it never reads. ``LACKS`` says what a simulation of the file then lacks; only
nodes and pods are required.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..cluster.client import APIClient, APIError
from ..cluster.wiring import PODS_FIELD_SELECTOR

__all__ = [
    "DRA_GROUP",
    "DRA_KINDS",
    "LACKS",
    "REQUIRED",
    "SCHEDULING_KINDS",
    "SNAPSHOT_KINDS",
    "Listed",
    "take_snapshot",
]

DRA_GROUP = "resource.k8s.io"


@dataclass(frozen=True)
class Listed:
    """One collection a snapshot lists: its kind, group/version and resource name."""

    kind: str
    api_version: str
    resource: str
    params: tuple[tuple[str, str], ...] = ()

    @property
    def path(self) -> str:
        prefix = "/api/" if "/" not in self.api_version else "/apis/"
        return f"{prefix}{self.api_version}/{self.resource}"


SNAPSHOT_KINDS: tuple[Listed, ...] = (
    Listed("Namespace", "v1", "namespaces"),
    Listed("Node", "v1", "nodes"),
    Listed("Pod", "v1", "pods", (("fieldSelector", PODS_FIELD_SELECTOR),)),
    Listed("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses"),
    Listed("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets"),
    Listed("Service", "v1", "services"),
    Listed("ReplicationController", "v1", "replicationcontrollers"),
    Listed("ReplicaSet", "apps/v1", "replicasets"),
    Listed("StatefulSet", "apps/v1", "statefulsets"),
    Listed("PersistentVolumeClaim", "v1", "persistentvolumeclaims"),
    Listed("PersistentVolume", "v1", "persistentvolumes"),
    Listed("StorageClass", "storage.k8s.io/v1", "storageclasses"),
    Listed("CSINode", "storage.k8s.io/v1", "csinodes"),
    Listed("CSIDriver", "storage.k8s.io/v1", "csidrivers"),
    Listed("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities"),
    Listed("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments"),
)
# resource.k8s.io kinds by resource name; listed in the served version, when served
DRA_KINDS = {
    "deviceclasses": "DeviceClass",
    "resourceslices": "ResourceSlice",
    "resourceclaims": "ResourceClaim",
    "resourceclaimtemplates": "ResourceClaimTemplate",
    "devicetaintrules": "DeviceTaintRule",
}

# scheduling.k8s.io kinds by resource name; listed in the first of these versions served
# (kube-apiserver v1.37: v1beta1, v1.36: v1alpha2)
SCHEDULING_GROUP_VERSIONS = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2")
SCHEDULING_KINDS = {"workloads": "Workload", "podgroups": "PodGroup"}

#: Kinds a snapshot is useless without: a 403 listing them fails it.
REQUIRED = frozenset({"Node", "Pod"})
#: What ``simulate`` lacks when a snapshot has none of a kind (the warning's words).
LACKS: dict[str, str] = {
    "Namespace": "namespace labels (namespaceSelector of pod affinity terms matches none)",
    "PriorityClass": "priority for pods without spec.priority (admitted pods carry theirs)",
    "PodDisruptionBudget": "disruption budgets (preemption picks victims ignoring them)",
    "Service": "Services' selectors for default topology spreading",
    "ReplicationController": "ReplicationControllers' selectors for default spreading",
    "ReplicaSet": "ReplicaSets' selectors for default topology spreading",
    "StatefulSet": "StatefulSets' selectors for default topology spreading",
    "PersistentVolumeClaim": "claims (pods with a PersistentVolumeClaim stay pending)",
    "PersistentVolume": "volumes (pods with unbound claims find none to bind)",
    "StorageClass": "storage classes (claims to provision or bind late stay pending)",
    "CSINode": "CSI volume limits per node",
    "CSIDriver": "CSI drivers (volume limits and attach requirements)",
    "CSIStorageCapacity": "storage capacity (claims of drivers reporting it find none free)",
    "VolumeAttachment": "attached volumes counted against CSI volume limits",
    "DeviceClass": "device classes (pods with resource claims stay pending)",
    "ResourceSlice": "devices (pods with resource claims stay pending)",
    "ResourceClaim": "resource claims (pods with claims stay pending)",
    "ResourceClaimTemplate": "claim templates (pods whose claims the resourceclaim "
    "controller has not made yet stay pending)",
    "DeviceTaintRule": "device taint rules (devices they taint are handed out as untainted)",
    "Workload": "Workloads (their PodGroup templates)",
    "PodGroup": "pod groups (workload-aware scheduling)",
}


class _Resource(msgspec.Struct):
    name: str = ""


class _ResourceList(msgspec.Struct):
    resources: list[_Resource] = msgspec.field(default_factory=list)


class _Version(msgspec.Struct, rename="camel"):
    group_version: str = ""


class _Group(msgspec.Struct, rename="camel"):
    preferred_version: _Version = msgspec.field(default_factory=_Version)


async def _dra_kinds(client: APIClient) -> list[Listed]:
    """The DRA collections the server serves (none on a server without the group)."""
    status, raw = await client.request("GET", f"/apis/{DRA_GROUP}", check=False)
    if status == 404:
        return []
    if status >= 300:
        raise APIError.from_response(status, raw)
    gv = msgspec.json.decode(raw, type=_Group).preferred_version.group_version
    if not gv:
        return []
    served = msgspec.json.decode(await client.get(f"/apis/{gv}"), type=_ResourceList)
    names = {r.name for r in served.resources}
    return [Listed(kind, gv, res) for res, kind in DRA_KINDS.items() if res in names]


async def _scheduling_kinds(client: APIClient) -> list[Listed]:
    """The Workload and PodGroup collections, in the first version the server serves."""
    for gv in SCHEDULING_GROUP_VERSIONS:
        status, raw = await client.request("GET", f"/apis/{gv}", check=False)
        if status == 404:
            continue
        if status >= 300:
            raise APIError.from_response(status, raw)
        names = {r.name for r in msgspec.json.decode(raw, type=_ResourceList).resources}
        return [Listed(kind, gv, res) for res, kind in SCHEDULING_KINDS.items() if res in names]
    return []


async def take_snapshot(
    client: APIClient,
    progress: Callable[[str, int], None] | None = None,
    forbidden: Callable[[Listed, APIError], None] | None = None,
) -> dict[str, Any]:
    """Every collection ``simulate`` reads, as one ``kind: List`` (JSON-ready dicts);
    ``progress(kind, count)`` is told after each collection. A kind the identity may not
    list (403) is left out and ``forbidden(kind, error)`` told, unless it is ``REQUIRED``:
    then the error is raised."""
    items: list[dict[str, Any]] = []
    extra = [*await _dra_kinds(client), *await _scheduling_kinds(client)]
    for what in (*SNAPSHOT_KINDS, *extra):
        try:
            raws, _ = await client.list(what.path, dict(what.params))
        except APIError as e:
            if e.status != 403 or what.kind in REQUIRED:
                raise
            if forbidden is not None:
                forbidden(what, e)
            continue
        for raw in raws:
            obj = msgspec.json.decode(raw)
            if not isinstance(obj, dict):
                continue
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                meta.pop("managedFields", None)
            items.append({"apiVersion": what.api_version, "kind": what.kind, **obj})
        if progress is not None:
            progress(what.kind, len(raws))
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
