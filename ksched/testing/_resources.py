"""The resource types the test API server serves, and their discovery documents.

They are the kind registry's rows with ``serve`` (``ksched.api.kinds``), read when asked:
a kind registered there is served by a server started after.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.kinds import REGISTRY, Kind
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


def _info(row: Kind) -> ResourceInfo:
    """The served resource of a registry row (one object per row, so caches keyed by it
    hold)."""
    got = _INFOS.get(id(row))
    if got is not None and got[0] is row:
        return got[1]
    serve = row.serve
    assert serve is not None
    info = ResourceInfo(
        row.group,
        row.version,
        row.resource,
        row.kind,
        row.namespaced,
        short_names=serve.short_names,
        subresources=serve.subresources,
        categories=serve.categories,
        crd=serve.crd,
        has_generation=serve.has_generation,
        status_subresource="status" in serve.subresources,
        fields=serve.fields,
        verbs=serve.verbs if serve.verbs is not None else tuple(VERBS),
    )
    _INFOS[id(row)] = (row, info)
    return info


_INFOS: dict[int, tuple[Kind, ResourceInfo]] = {}


def resources() -> tuple[ResourceInfo, ...]:
    """Every resource served: the kind registry's rows with ``serve``, in its order."""
    return REGISTRY.derived(
        "testing:resources", lambda rows: tuple(_info(r) for r in rows if r.serve is not None)
    )


def stored() -> tuple[ResourceInfo, ...]:
    """The resources kept in the store (not bindings or reviews, which are answered)."""
    return REGISTRY.derived(
        "testing:stored",
        lambda rows: tuple(_info(r) for r in rows if r.serve is not None and r.serve.stored),
    )


def by_group_version() -> dict[tuple[str, str], dict[str, ResourceInfo]]:
    """(group, version) -> plural -> info."""

    def build(_: tuple[Kind, ...]) -> dict[tuple[str, str], dict[str, ResourceInfo]]:
        out: dict[tuple[str, str], dict[str, ResourceInfo]] = {}
        for r in resources():
            out.setdefault((r.group, r.version), {})[r.plural] = r
        return out

    return REGISTRY.derived("testing:by_gv", build)


def by_kind() -> dict[tuple[str, str], ResourceInfo]:
    """(apiVersion, kind) -> info of the stored resources."""
    return REGISTRY.derived(
        "testing:by_kind", lambda _: {(r.api_version, r.kind): r for r in stored()}
    )


def groups() -> list[str]:
    """The API groups served, in the order discovery lists them."""

    def build(_: tuple[Kind, ...]) -> list[str]:
        out: list[str] = []
        for r in resources():
            if r.group and r.group not in out:
                out.append(r.group)
        return out

    return REGISTRY.derived("testing:groups", build)


def _served(group: str, plural: str) -> ResourceInfo:
    return _info(REGISTRY.row(group, plural))


PODS = _served("", "pods")
NODES = _served("", "nodes")
NAMESPACES = _served("", "namespaces")
CORE_EVENTS = _served("", "events")
BINDINGS = _served("", "bindings")
# answered, never stored (see _auth)
TOKEN_REVIEWS = _served("authentication.k8s.io", "tokenreviews")
SUBJECT_ACCESS_REVIEWS = _served("authorization.k8s.io", "subjectaccessreviews")
REVIEWS = (TOKEN_REVIEWS, SUBJECT_ACCESS_REVIEWS)
EVENTS_V1 = _served("events.k8s.io", "events")
LEASES = _served("coordination.k8s.io", "leases")
PDBS = _served("policy", "poddisruptionbudgets")
PRIORITY_CLASSES = _served("scheduling.k8s.io", "priorityclasses")
POD_GROUPS = _served("scheduling.x-k8s.io", "podgroups")
WORKLOADS = _served("scheduling.k8s.io", "workloads")
SCHEDULING_POD_GROUPS = _served("scheduling.k8s.io", "podgroups")
SERVICES = _served("", "services")
REPLICATION_CONTROLLERS = _served("", "replicationcontrollers")
REPLICA_SETS = _served("apps", "replicasets")
STATEFUL_SETS = _served("apps", "statefulsets")
PERSISTENT_VOLUME_CLAIMS = _served("", "persistentvolumeclaims")
PERSISTENT_VOLUMES = _served("", "persistentvolumes")
STORAGE_CLASSES = _served("storage.k8s.io", "storageclasses")
CSI_NODES = _served("storage.k8s.io", "csinodes")
CSI_DRIVERS = _served("storage.k8s.io", "csidrivers")
CSI_STORAGE_CAPACITIES = _served("storage.k8s.io", "csistoragecapacities")
VOLUME_ATTACHMENTS = _served("storage.k8s.io", "volumeattachments")
DEVICE_CLASSES = _served("resource.k8s.io", "deviceclasses")
RESOURCE_SLICES = _served("resource.k8s.io", "resourceslices")
RESOURCE_CLAIMS = _served("resource.k8s.io", "resourceclaims")
RESOURCE_CLAIM_TEMPLATES = _served("resource.k8s.io", "resourceclaimtemplates")
DEVICE_TAINT_RULES = _served("resource.k8s.io", "devicetaintrules")


def lookup(name: str) -> ResourceInfo:
    """Resolve a plural, singular, kind, short name or `plural.group` like kubectl does."""
    wanted = name.strip()
    lowered = wanted.lower()
    for r in stored():  # core resources come first, as in kubectl's preference order
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
    rs = by_group_version().get((group, version))
    if rs is None:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": _resource_entries(list(rs.values())),
    }


def _group_doc(group: str) -> dict[str, Any]:
    versions = [v for (g, v) in by_group_version() if g == group]
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group(group: str) -> dict[str, Any] | None:
    if group not in groups():
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group)}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_root() -> dict[str, Any]:
    paths = {
        _gv_path(g, v): {"serverRelativeURL": f"/openapi/v3/{_gv_path(g, v)}?hash=ksched"}
        for (g, v) in by_group_version()
    }
    return {"paths": paths}


def openapi_v3_group_version(group: str, version: str) -> dict[str, Any] | None:
    """A stub OpenAPI v3 document: only PATCH operations carrying the `fieldValidation` query
    parameter, no schemas.

    That is exactly what kubectl's query-param verifier looks for, so `kubectl create/apply`
    leave validation to the server instead of downloading a schema to validate client-side.
    No requestBody is declared, so kubectl computes apply patches from its compiled-in types.
    """
    rs = by_group_version().get((group, version))
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
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_doc(g) for g in groups()]}
