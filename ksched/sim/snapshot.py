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
nodes and pods are required. The kinds, their order and those words are the kind
registry's rows (``ksched.api.kinds``: ``snapshot``, ``discover``, ``lacks``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..api.kinds import REGISTRY, Kind
from ..cluster.client import APIClient, APIError

__all__ = [
    "DRA_GROUP",
    "DRA_KINDS",
    "LACKS",
    "REQUIRED",
    "SCHEDULING_KINDS",
    "SNAPSHOT_KINDS",
    "Listed",
    "snapshot_rows",
    "take_snapshot",
]

DRA_GROUP = "resource.k8s.io"
SCHEDULING_GROUP = "scheduling.k8s.io"


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


def _listed(row: Kind, api_version: str) -> Listed:
    params = (("fieldSelector", row.field_selector),) if row.field_selector else ()
    return Listed(row.kind, api_version, row.resource, params)


def snapshot_rows() -> tuple[Kind, ...]:
    """The registry's rows ``ksched snapshot`` lists (``snapshot``), in its order."""
    return REGISTRY.derived("snapshot", lambda rows: tuple(r for r in rows if r.snapshot))


# The collections always listed (the registry's snapshot rows served in every cluster).
SNAPSHOT_KINDS: tuple[Listed, ...] = tuple(
    _listed(r, r.api_version) for r in snapshot_rows() if not r.discover
)


def _discovered(group: str) -> dict[str, str]:
    """resource -> kind of ``group``'s rows listed only when served."""
    return {r.resource: r.kind for r in snapshot_rows() if r.discover and r.group == group}


# resource.k8s.io kinds by resource name; listed in the served version, when served
DRA_KINDS = _discovered(DRA_GROUP)
# scheduling.k8s.io kinds by resource name; listed in the first of their versions served
# (kube-apiserver v1.37: v1beta1, v1.36: v1alpha2)
SCHEDULING_KINDS = _discovered(SCHEDULING_GROUP)

#: Kinds a snapshot is useless without: a 403 listing them fails it.
REQUIRED = frozenset({"Node", "Pod"})
#: What ``simulate`` lacks when a snapshot has none of a kind (the warning's words).
LACKS: dict[str, str] = {r.kind: r.lacks for r in snapshot_rows() if r.lacks}


class _Resource(msgspec.Struct):
    name: str = ""


class _ResourceList(msgspec.Struct):
    resources: list[_Resource] = msgspec.field(default_factory=list)


async def _served(client: APIClient, gv: str) -> set[str] | None:
    """The resources group/version ``gv`` serves; None when it is not served."""
    status, raw = await client.request("GET", f"/apis/{gv}", check=False)
    if status == 404:
        return None
    if status >= 300:
        raise APIError.from_response(status, raw)
    return {r.name for r in msgspec.json.decode(raw, type=_ResourceList).resources}


async def _discover(client: APIClient, group: str, rows: list[Kind]) -> list[Listed]:
    """``group``'s collections among ``rows``, in the first of their versions (each row's,
    then its ``older`` one) the server serves; none on a server without the group."""
    versions: list[str] = []
    for r in rows:
        for v in (r.version, *((r.older.version,) if r.older else ())):
            if v not in versions:
                versions.append(v)
    for version in versions:
        names = await _served(client, f"{group}/{version}")
        if names is None:
            continue
        return [_listed(r, f"{group}/{version}") for r in rows if r.resource in names]
    return []


async def _discovered_kinds(client: APIClient) -> list[Listed]:
    """The collections of the groups a server serves only when enabled (DRA's, the
    workload-aware Workloads and PodGroups), in the registry's order of groups."""
    by_group: dict[str, list[Kind]] = {}
    for r in snapshot_rows():
        if r.discover:
            by_group.setdefault(r.group, []).append(r)
    out: list[Listed] = []
    for group, rows in by_group.items():
        out.extend(await _discover(client, group, rows))
    return out


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
    always = [_listed(r, r.api_version) for r in snapshot_rows() if not r.discover]
    for what in (*always, *await _discovered_kinds(client)):
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
