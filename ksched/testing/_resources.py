"""The resource types the test API server serves, and their discovery documents."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._selectors import FieldGetter, field_getters

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class ResourceInfo:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # CRD-like: unstructured list items keep kind/apiVersion, no strategic merge patch.
    crd: bool = False
    has_generation: bool = False
    # status is owned by the status subresource: main-resource writes cannot change it
    status_subresource: bool = False
    # extra field labels (beyond metadata.name/namespace) -> dotted object path
    fields: Mapping[str, str] = field(default_factory=dict)
    verbs: tuple[str, ...] = tuple(VERBS)

    @functools.cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @functools.cached_property
    def qualified(self) -> str:
        """`pods` or `leases.coordination.k8s.io`: the name in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def field_getters(self) -> dict[str, FieldGetter]:
        """The field labels `fieldSelector` accepts for this resource (built once)."""
        cached = _GETTERS.get(self.qualified)
        if cached is None:
            paths = {"metadata.name": "metadata.name"}
            if self.namespaced:
                paths["metadata.namespace"] = "metadata.namespace"
            paths.update(self.fields)
            cached = _GETTERS[self.qualified] = field_getters(paths)
        return cached


_GETTERS: dict[str, dict[str, FieldGetter]] = {}


_POD_FIELDS = {
    "spec.nodeName": "spec.nodeName",
    "spec.restartPolicy": "spec.restartPolicy",
    "spec.schedulerName": "spec.schedulerName",
    "spec.serviceAccountName": "spec.serviceAccountName",
    "spec.hostNetwork": "spec.hostNetwork",
    "status.phase": "status.phase",
    "status.podIP": "status.podIP",
    "status.nominatedNodeName": "status.nominatedNodeName",
}
_CORE_EVENT_FIELDS = {
    f"involvedObject.{f}": f"involvedObject.{f}"
    for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
} | {
    "reason": "reason",
    "reportingComponent": "reportingComponent",
    "source": "source.component",
    "type": "type",
}
_EVENTS_V1_FIELDS = (
    {
        f"regarding.{f}": f"regarding.{f}"
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    }
    | {
        f"involvedObject.{f}": f"regarding.{f}"
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    }
    | {
        "reason": "reason",
        "reportingController": "reportingController",
        "type": "type",
    }
)

PODS = ResourceInfo(
    "",
    "v1",
    "pods",
    "Pod",
    True,
    short_names=("po",),
    subresources=("binding", "status"),
    categories=("all",),
    status_subresource=True,
    fields=_POD_FIELDS,
    # pods carry metadata.generation since v1.33 (PodObservedGenerationTracking); a
    # binding does not bump it
    has_generation=True,
)
NODES = ResourceInfo(
    "",
    "v1",
    "nodes",
    "Node",
    False,
    short_names=("no",),
    subresources=("status",),
    status_subresource=True,
    fields={"spec.unschedulable": "spec.unschedulable"},
)
NAMESPACES = ResourceInfo(
    "",
    "v1",
    "namespaces",
    "Namespace",
    False,
    short_names=("ns",),
    subresources=("status",),
    status_subresource=True,
    fields={"status.phase": "status.phase"},
)
CORE_EVENTS = ResourceInfo(
    "", "v1", "events", "Event", True, short_names=("ev",), fields=_CORE_EVENT_FIELDS
)
BINDINGS = ResourceInfo("", "v1", "bindings", "Binding", True, verbs=("create",))
# answered, never stored (see _auth)
TOKEN_REVIEWS, SUBJECT_ACCESS_REVIEWS = REVIEWS = tuple(
    ResourceInfo(f"{what}.k8s.io", "v1", f"{kind.lower()}s", kind, False, verbs=("create",))
    for what, kind in (("authentication", "TokenReview"), ("authorization", "SubjectAccessReview"))
)
EVENTS_V1 = ResourceInfo(
    "events.k8s.io", "v1", "events", "Event", True, short_names=("ev",), fields=_EVENTS_V1_FIELDS
)
LEASES = ResourceInfo("coordination.k8s.io", "v1", "leases", "Lease", True)
PDBS = ResourceInfo(
    "policy",
    "v1",
    "poddisruptionbudgets",
    "PodDisruptionBudget",
    True,
    short_names=("pdb",),
    subresources=("status",),
    has_generation=True,
    status_subresource=True,
)
PRIORITY_CLASSES = ResourceInfo(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short_names=("pc",)
)
POD_GROUPS = ResourceInfo(
    "scheduling.x-k8s.io",
    "v1alpha1",
    "podgroups",
    "PodGroup",
    True,
    short_names=("pg", "pgs"),
    subresources=("status",),
    crd=True,
    has_generation=True,
    status_subresource=True,
)
# Workload-aware scheduling (GenericWorkload): kube-apiserver v1.37 serves these with
# --runtime-config=scheduling.k8s.io/v1beta1=true; "podgroups" alone still names the CRD.
WORKLOADS = ResourceInfo("scheduling.k8s.io", "v1beta1", "workloads", "Workload", True)
SCHEDULING_POD_GROUPS = ResourceInfo(
    "scheduling.k8s.io",
    "v1beta1",
    "podgroups",
    "PodGroup",
    True,
    subresources=("status",),
    status_subresource=True,
)
# Workloads PodTopologySpread reads selectors from (scale subresources are not served).
SERVICES = ResourceInfo(
    "",
    "v1",
    "services",
    "Service",
    True,
    short_names=("svc",),
    subresources=("status",),
    categories=("all",),
    status_subresource=True,
)
REPLICATION_CONTROLLERS = ResourceInfo(
    "",
    "v1",
    "replicationcontrollers",
    "ReplicationController",
    True,
    short_names=("rc",),
    subresources=("status",),
    categories=("all",),
    has_generation=True,
    status_subresource=True,
)
REPLICA_SETS = ResourceInfo(
    "apps",
    "v1",
    "replicasets",
    "ReplicaSet",
    True,
    short_names=("rs",),
    subresources=("status",),
    categories=("all",),
    has_generation=True,
    status_subresource=True,
)
STATEFUL_SETS = ResourceInfo(
    "apps",
    "v1",
    "statefulsets",
    "StatefulSet",
    True,
    short_names=("sts",),
    subresources=("status",),
    categories=("all",),
    has_generation=True,
    status_subresource=True,
)
# Storage the volume plugins read (and VolumeBinding writes: PV/PVC updates and patches).
PERSISTENT_VOLUME_CLAIMS = ResourceInfo(
    "",
    "v1",
    "persistentvolumeclaims",
    "PersistentVolumeClaim",
    True,
    short_names=("pvc",),
    subresources=("status",),
    status_subresource=True,
)
PERSISTENT_VOLUMES = ResourceInfo(
    "",
    "v1",
    "persistentvolumes",
    "PersistentVolume",
    False,
    short_names=("pv",),
    subresources=("status",),
    status_subresource=True,
)
STORAGE_CLASSES = ResourceInfo(
    "storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short_names=("sc",)
)
CSI_NODES = ResourceInfo("storage.k8s.io", "v1", "csinodes", "CSINode", False)
CSI_DRIVERS = ResourceInfo("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False)
CSI_STORAGE_CAPACITIES = ResourceInfo(
    "storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True
)
VOLUME_ATTACHMENTS = ResourceInfo(
    "storage.k8s.io",
    "v1",
    "volumeattachments",
    "VolumeAttachment",
    False,
    subresources=("status",),
    status_subresource=True,
)
# DRA (resource.k8s.io/v1): what DynamicResources reads, and the claims it writes.
DEVICE_CLASSES = ResourceInfo("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
RESOURCE_SLICES = ResourceInfo("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
RESOURCE_CLAIMS = ResourceInfo(
    "resource.k8s.io",
    "v1",
    "resourceclaims",
    "ResourceClaim",
    True,
    subresources=("status",),
    status_subresource=True,
)
RESOURCE_CLAIM_TEMPLATES = ResourceInfo(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True
)
DEVICE_TAINT_RULES = ResourceInfo(
    "resource.k8s.io",
    "v1",
    "devicetaintrules",
    "DeviceTaintRule",
    False,
    subresources=("status",),
    status_subresource=True,
)

RESOURCES: tuple[ResourceInfo, ...] = (
    PODS,
    NODES,
    NAMESPACES,
    SERVICES,
    REPLICATION_CONTROLLERS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    CORE_EVENTS,
    BINDINGS,
    EVENTS_V1,
    LEASES,
    PDBS,
    PRIORITY_CLASSES,
    REPLICA_SETS,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    CSI_NODES,
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    VOLUME_ATTACHMENTS,
    DEVICE_CLASSES,
    RESOURCE_SLICES,
    RESOURCE_CLAIMS,
    RESOURCE_CLAIM_TEMPLATES,
    DEVICE_TAINT_RULES,
    POD_GROUPS,
    WORKLOADS,
    SCHEDULING_POD_GROUPS,
    *REVIEWS,
)
STORED: tuple[ResourceInfo, ...] = tuple(
    r for r in RESOURCES if r is not BINDINGS and r not in REVIEWS
)

# (group, version) -> plural -> info
BY_GROUP_VERSION: dict[tuple[str, str], dict[str, ResourceInfo]] = {}
for _r in RESOURCES:
    BY_GROUP_VERSION.setdefault((_r.group, _r.version), {})[_r.plural] = _r

# apiVersion, kind -> info
BY_KIND: dict[tuple[str, str], ResourceInfo] = {(r.api_version, r.kind): r for r in STORED}

GROUPS: list[str] = []
for _r in RESOURCES:
    if _r.group and _r.group not in GROUPS:
        GROUPS.append(_r.group)


def lookup(name: str) -> ResourceInfo:
    """Resolve a plural, singular, kind, short name or `plural.group` like kubectl does."""
    wanted = name.strip()
    lowered = wanted.lower()
    for r in STORED:  # core resources come first, as in kubectl's preference order
        if lowered in (r.plural, r.singular, r.qualified, *r.short_names) or wanted == r.kind:
            return r
        if lowered in (f"{r.singular}.{r.group}", r.qualified_kind.lower()):
            return r
    raise KeyError(f"unknown resource {name!r}")


def _resource_entries(rs: list[ResourceInfo]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in rs:
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        out.append(entry)
        for sub in r.subresources:
            if sub == "binding":
                out.append(
                    {
                        "name": f"{r.plural}/binding",
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "kind": "Binding",
                        "verbs": ["create"],
                    }
                )
            elif sub == "status":
                out.append(
                    {
                        "name": f"{r.plural}/status",
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "kind": r.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
    return out


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    rs = BY_GROUP_VERSION.get((group, version))
    if rs is None:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": _resource_entries(list(rs.values())),
    }


def _group_doc(group: str) -> dict[str, Any]:
    versions = [v for (g, v) in BY_GROUP_VERSION if g == group]
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group(group: str) -> dict[str, Any] | None:
    if group not in GROUPS:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group)}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_root() -> dict[str, Any]:
    paths = {
        _gv_path(g, v): {"serverRelativeURL": f"/openapi/v3/{_gv_path(g, v)}?hash=ksched"}
        for (g, v) in BY_GROUP_VERSION
    }
    return {"paths": paths}


def openapi_v3_group_version(group: str, version: str) -> dict[str, Any] | None:
    """A stub OpenAPI v3 document: only PATCH operations carrying the `fieldValidation` query
    parameter, no schemas.

    That is exactly what kubectl's query-param verifier looks for, so `kubectl create/apply`
    leave validation to the server instead of downloading a schema to validate client-side.
    No requestBody is declared, so kubectl computes apply patches from its compiled-in types.
    """
    rs = BY_GROUP_VERSION.get((group, version))
    if rs is None:
        return None
    params = [
        {"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
        for p in ("dryRun", "fieldManager", "fieldValidation", "force")
    ]
    paths: dict[str, Any] = {}
    for r in rs.values():
        if "patch" not in r.verbs:
            continue
        base = "/" + _gv_path(group, version)
        item = (
            f"{base}/namespaces/{{namespace}}/{r.plural}/{{name}}"
            if r.namespaced
            else f"{base}/{r.plural}/{{name}}"
        )
        paths[item] = {
            "patch": {
                "operationId": f"patch{r.kind}",
                "parameters": params,
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {
                    "group": group,
                    "version": version,
                    "kind": r.kind,
                },
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def api_group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_doc(g) for g in GROUPS]}
