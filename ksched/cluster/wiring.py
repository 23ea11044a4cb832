"""Informers feeding a scheduler, as kube-scheduler's ``addAllEventHandlers`` sets up.

Nodes and pods go to the scheduler's ``on_*`` handlers (which route pods to the queue or
the cache by nodeName and schedulerName); namespaces and PodDisruptionBudgets only fill
listers that plugins read through ``handle.listers``, as does
the pod store (``"pods"``: PodInfo of every non-terminal pod, whatever its scheduler).
PriorityClasses, Services, ReplicationControllers, ReplicaSets and StatefulSets are
watched only when an
enabled plugin names them in ``reads_listers`` (PodTopologySpread, for the selectors of
its default constraints), as kube-scheduler's informer factory starts only the informers
plugins asked for; their listers are ``RevisionedStore``s bumped on every change. So are
the storage objects the volume plugins read (PersistentVolumeClaims, PersistentVolumes,
StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments) and
DynamicResources' claims, slices and device classes (resource.k8s.io/v1), whose changes
also reach the scheduler as ``on_other_event`` cluster events, as upstream's ``buildEvtResHandler``
forwards them to the queue.
Custom collections an enabled plugin declares in ``watch_resources`` (Coscheduling's
PodGroups, say) get an informer of raw objects each: a lister under the declared key, and
their changes reach the scheduler as ``on_other_event`` cluster events.
With GenericWorkload, the scheduling.k8s.io PodGroups fill ``handle.listers``
(``Listers.SCHEDULING_POD_GROUPS``), as kube-scheduler starts that informer only then;
at v1.37 their changes also go to the scheduler's ``on_pod_group_*`` handlers (cache,
queue, and the PodGroup cluster events).
Scheduling must wait for ``wait_synced``: a scheduler that starts before the node and
pod lists are in would place pods on a partial view of the cluster.

Which collections, from where, decoded into what, under which lister key, with which
cluster events and behind which gates: the kind registry's rows (``ksched.api.kinds``:
``watch``, ``gates``, ``older``, ``lister``, ``events``); nothing here names a kind
beyond the always-watched four.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, Protocol

import msgspec
import structlog

from ..api.kinds import REGISTRY, Kind, Watch
from ..api.objects import (
    Namespace,
    Node,
    ObjectMeta,
    PodDisruptionBudget,
)
from ..features import FeatureGates
from ..framework.interface import ClusterEvent, WatchedResource
from ..framework.listers import Listers, RevisionedStore
from ..framework.types import PodInfo
from ..queue import events as ev
from .client import APIClient
from .decoding import (
    node_decoder,
    null_tolerant_decoder,
    pod_decoder,
    pod_meta,
    struct_decoder,
)
from .informer import Backoff, DecodeSkip, Informer, InformerSet

__all__ = [
    "NODES_PATH",
    "ON_REQUEST_PATHS",
    "PODS_FIELD_SELECTOR",
    "PODS_PATH",
    "ClusterInformers",
    "SchedulerLike",
    "connect_scheduler",
    "requested_listers",
    "watched_resources",
    "workload_informer_paths",
]

log = structlog.get_logger("ksched.cluster.wiring")

# The collections are the kind registry's rows (``ksched.api.kinds``); these name a few.
_PODS = REGISTRY.row("", "pods")
_NODES = REGISTRY.row("", "nodes")
_NAMESPACES = REGISTRY.row("", "namespaces")
_PDBS = REGISTRY.row("policy", "poddisruptionbudgets")
_TAINT_RULES = REGISTRY.row("resource.k8s.io", "devicetaintrules")
_SCHEDULING_POD_GROUPS = REGISTRY.row("scheduling.k8s.io", "podgroups")
PODS_PATH = _PODS.path
NODES_PATH = _NODES.path
DEVICE_TAINT_RULES_PATH = _TAINT_RULES.path
DEVICE_TAINT_RULES_PATH_1_36 = _TAINT_RULES.path_for(_TAINT_RULES.version_for(lambda v: False))
SCHEDULING_POD_GROUPS_PATH = _SCHEDULING_POD_GROUPS.path
# what kube-scheduler v1.36 watches (kube-apiserver v1.36 serves no v1beta1)
SCHEDULING_POD_GROUPS_V1ALPHA2_PATH = _SCHEDULING_POD_GROUPS.path_for(
    _SCHEDULING_POD_GROUPS.version_for(lambda v: False)
)
PODS_FIELD_SELECTOR = _PODS.field_selector


class SchedulerLike(Protocol):
    """What the informers drive (``ksched.scheduler.Scheduler`` satisfies it)."""

    @property
    def frameworks(self) -> Mapping[str, Any]: ...

    def on_node_add(self, node: Node) -> None: ...
    def on_node_update(self, old: Node, new: Node) -> None: ...
    def on_node_delete(self, node: Node) -> None: ...
    def on_pod_add(self, pod: PodInfo) -> None: ...
    def on_pod_update(self, old: PodInfo, new: PodInfo) -> None: ...
    def on_pod_delete(self, pod: PodInfo) -> None: ...


class ClusterInformers(InformerSet):
    """The scheduler's informers, by role; the listers' stores are live dicts."""

    def __init__(
        self,
        pods: Informer[PodInfo],
        nodes: Informer[Node],
        namespaces: Informer[Namespace],
        pdbs: Informer[PodDisruptionBudget],
    ) -> None:
        super().__init__([nodes, pods, namespaces, pdbs])
        self.pods = pods
        self.nodes = nodes
        self.namespaces = namespaces
        self.pdbs = pdbs
        # Built-in collections watched on a plugin's request (reads_listers), by key.
        self.requested: dict[str, Informer[Any]] = {}
        # Plugins' custom collections (raw objects), by their handle.listers key.
        self.custom: dict[str, Informer[dict[str, Any]]] = {}

    @property
    def listers(self) -> dict[str, Any]:
        """``handle.listers`` entries: namespaces by name, PDBs by ns/name, pods (PodInfo)
        by ns/name, plus the requested and custom collections."""
        return {
            Listers.NAMESPACES: self.namespaces.store,
            Listers.PDBS: self.pdbs.store,
            Listers.PODS: self.pods.store,
            **{key: inf.store for key, inf in self.requested.items()},
            **{key: inf.store for key, inf in self.custom.items()},
        }


class _OnRequestPaths(Mapping[str, str]):
    """reads_listers key -> the collection it is watched from (RBAC grants list/watch on
    each): the registry's on-request rows, read when asked (a kind registered later too)."""

    def __getitem__(self, key: str) -> str:
        row = REGISTRY.by_lister().get(key)
        if row is None or row.watch is not Watch.ON_REQUEST:
            raise KeyError(key)
        return row.path

    def __iter__(self) -> Iterator[str]:
        return iter([row.lister for row in REGISTRY.watched(Watch.ON_REQUEST)])

    def __len__(self) -> int:
        return len(REGISTRY.watched(Watch.ON_REQUEST))


ON_REQUEST_PATHS: Mapping[str, str] = _OnRequestPaths()


def _builtin_listers() -> frozenset[str]:
    """The lister keys ksched fills itself: every watched row's."""
    return REGISTRY.derived(
        "wiring:builtin",
        lambda rows: frozenset(r.lister for r in rows if r.lister and r.watch is not Watch.NEVER),
    )


def _enabled_plugins(frameworks: Iterable[Any]) -> Iterable[tuple[str, Any]]:
    for fw in frameworks:
        plugins: Mapping[str, Any] = getattr(fw, "plugins", None) or {}
        yield from plugins.items()


def requested_listers(frameworks: Iterable[Any]) -> list[str]:
    """The on-request built-in listers (``reads_listers``) some enabled plugin reads, in the
    registry's order; a row with ``gates`` only when some framework has them on (or does
    not say). ValueError for a key ksched does not know."""
    wanted: set[str] = set()
    frameworks_seen = list(frameworks)
    builtin = _builtin_listers()
    for name, plugin in _enabled_plugins(frameworks_seen):
        for key in getattr(plugin, "reads_listers", None) or ():
            if key not in builtin:
                raise ValueError(
                    f"plugin {name}: reads_listers: unknown lister {key!r}; "
                    f"known: {', '.join(sorted(builtin))}"
                )
            wanted.add(key)
    return [
        row.lister
        for row in REGISTRY.watched(Watch.ON_REQUEST)
        if row.lister in wanted
        and (not row.gates or any(_gates_on(fw, row.gates) for fw in frameworks_seen))
    ]


def _features_of(fw: Any) -> FeatureGates | None:
    features: FeatureGates | None = getattr(getattr(fw, "handle", None), "features", None)
    return features


def _gates_on(fw: Any, gates: Iterable[str]) -> bool:
    """kube-scheduler watches DeviceTaintRules only with DRADeviceTaintRules on."""
    features = _features_of(fw)
    return features is None or all(features.enabled(g) for g in gates)


def watched_resources(frameworks: Iterable[Any]) -> list[WatchedResource]:
    """The ``watch_resources`` of every plugin enabled in ``frameworks``, once each.

    Two declarations of the same lister key must be identical (ValueError otherwise).
    """
    out: dict[str, WatchedResource] = {}
    builtin = _builtin_listers()
    for name, plugin in _enabled_plugins(frameworks):
        for wr in getattr(plugin, "watch_resources", None) or ():
            if not isinstance(wr, WatchedResource):
                raise ValueError(
                    f"plugin {name}: watch_resources: expected WatchedResource, got {wr!r}"
                )
            if wr.lister in builtin:
                raise ValueError(
                    f"plugin {name}: watch_resources: handle.listers[{wr.lister!r}] is built in"
                )
            prev = out.setdefault(wr.lister, wr)
            if prev != wr:
                raise ValueError(
                    f"plugin {name}: watch_resources: handle.listers"
                    f"[{wr.lister!r}] is declared differently elsewhere: "
                    f"{wr} vs {prev}"
                )
    return list(out.values())


def workload_informer_paths(features: FeatureGates | None) -> dict[str, str]:
    """The ``handle.listers`` keys and collections of the registry's gated rows whose gates
    ``features`` has on: kube-scheduler's PodGroup informer (scheduling.k8s.io/v1beta1 in
    v1.37, v1alpha2 in v1.36, converted to the v1beta1 shape), started only with
    GenericWorkload on. None: no gate is on."""
    if features is None:
        return {}
    return {
        row.lister: row.path_for(row.version_for(features.at_least))
        for row in REGISTRY.watched(Watch.GATED)
        if all(features.enabled(g) for g in row.gates)
    }


def _row_decoder(row: Kind, version: str) -> Callable[[bytes], Any]:
    """Objects of ``row`` in API ``version``, in the row's struct (an older version's
    struct converted to it)."""
    cls = row.struct_for(version)
    if cls is None:
        raise ValueError(f"{row.kind}: no struct to decode {version} objects into")
    decode = null_tolerant_decoder(cls) if row.nulls else struct_decoder(cls)
    if cls is row.struct:
        return decode

    def converted(raw: bytes) -> Any:
        return decode(raw).convert()

    return converted


def _decode_raw(raw: bytes) -> dict[str, Any]:
    try:
        obj = msgspec.json.decode(raw)
    except msgspec.DecodeError as e:
        raise DecodeSkip(str(e)) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        raise DecodeSkip("not an object with metadata")
    return obj


def _raw_meta(obj: dict[str, Any]) -> ObjectMeta:
    m = obj["metadata"]
    return ObjectMeta(
        name=str(m.get("name") or ""),
        namespace=str(m.get("namespace") or ""),
        resource_version=str(m.get("resourceVersion") or ""),
    )


def _forward_events(
    informer: Informer[Any],
    resource: str,
    emit: Callable[[ClusterEvent, Any, Any], None],
) -> None:
    """Changes of a collection as ``resource``'s Add/Update/Delete cluster events."""
    add, update, delete = ev.object_events(resource)
    informer.add_handlers(
        lambda new: emit(add, None, new),
        lambda old, new: emit(update, old, new),
        lambda old: emit(delete, old, None),
    )


def _forward_as_update(
    informer: Informer[Any],
    resource: str,
    emit: Callable[[ClusterEvent, Any, Any], None],
) -> None:
    """Every change of a collection as one ``resource`` Update event (DeviceTaintRules:
    adding, changing or deleting a rule updates the taints of slices' devices)."""
    update = ev.object_events(resource)[1]
    informer.add_handlers(
        lambda new: emit(update, None, new),
        lambda old, new: emit(update, old, new),
        lambda old: emit(update, old, None),
    )


def _forward_to_handlers(
    informer: Informer[Any], row: Kind, scheduler: SchedulerLike, features: FeatureGates | None
) -> None:
    """A row's changes to the scheduler's own ``on_<handlers>_*`` methods (v1.37's PodGroup
    event handlers, ``addPodGroup``...: the cache and queue learn of the group, then the
    PodGroup cluster event goes to the queue), from release ``handlers_since``; before
    it (v1.36's PodGroup informer) the informer only fills the lister."""
    if features is None or not features.at_least(row.handlers_since):
        return
    add = getattr(scheduler, f"on_{row.handlers}_add", None)
    update = getattr(scheduler, f"on_{row.handlers}_update", None)
    delete = getattr(scheduler, f"on_{row.handlers}_delete", None)
    if add is not None and update is not None and delete is not None:
        informer.add_handlers(add, update, delete)


def _collection_version(key: str, frameworks: Iterable[Any]) -> str:
    """The API version lister ``key`` is watched in, for the emulated release (an older
    one when any framework emulates a release before the row's ``older.before``)."""
    row = REGISTRY.by_lister()[key]
    for fw in frameworks:
        features = _features_of(fw)
        if features is not None and row.version_for(features.at_least) != row.version:
            return row.version_for(features.at_least)
    return row.version


def _collection_path(key: str, frameworks: Iterable[Any]) -> str:
    """Where lister ``key`` is watched from, for the emulated version."""
    return REGISTRY.by_lister()[key].path_for(_collection_version(key, frameworks))


def connect_scheduler(
    scheduler: SchedulerLike,
    client: APIClient,
    *,
    profiles: Collection[str] | None = None,
    min_watch_timeout: float = 300.0,
    backoff: Backoff | None = None,
    features: FeatureGates | None = None,
) -> ClusterInformers:
    """Create the informers for ``scheduler`` (run them with ``.run()`` in a task group and
    ``await .wait_synced()`` before starting the scheduling loop).

    ``profiles`` are the scheduler names served (default: the scheduler's frameworks);
    only their pending pods keep their raw JSON. The built-in collections the enabled
    plugins name in ``reads_listers`` get an informer each. Every framework's enabled
    plugins' ``watch_resources`` get an informer too (see ``WatchedResource``). Their
    events, and those of the storage collections, go to
    ``scheduler.on_other_event(event, old, new)`` when the scheduler has that method.
    ``features`` (default: the scheduler's ``config.features``, if it has one) decides
    the GenericWorkload informers (``workload_informer_paths``).
    Raises ValueError when two plugins declare one lister key differently, or a plugin
    asks for a lister ksched does not know.
    """
    names = set(profiles) if profiles is not None else set(scheduler.frameworks)

    def make_backoff() -> Backoff | None:
        if backoff is None:
            return None
        return Backoff(
            backoff.initial,
            backoff.cap,
            reset_after=backoff.reset_after,
            factor=backoff.factor,
            jitter=backoff.jitter,
            clock=backoff.clock,
        )

    common: dict[str, Any] = {"min_watch_timeout": min_watch_timeout}
    pods: Informer[PodInfo] = Informer(
        client,
        PODS_PATH,
        pod_decoder(names),
        name="pods",
        field_selector=PODS_FIELD_SELECTOR,
        meta=pod_meta,
        backoff=make_backoff(),
        **common,
    )
    pods.add_handlers(scheduler.on_pod_add, scheduler.on_pod_update, scheduler.on_pod_delete)
    nodes: Informer[Node] = Informer(
        client, NODES_PATH, node_decoder(), name="nodes", backoff=make_backoff(), **common
    )
    nodes.add_handlers(scheduler.on_node_add, scheduler.on_node_update, scheduler.on_node_delete)
    namespaces: Informer[Namespace] = Informer(
        client,
        _NAMESPACES.path,
        struct_decoder(Namespace),
        name=_NAMESPACES.resource,
        backoff=make_backoff(),
        **common,
    )
    pdbs: Informer[PodDisruptionBudget] = Informer(
        client,
        _PDBS.path,
        struct_decoder(PodDisruptionBudget),
        name=_PDBS.resource,
        backoff=make_backoff(),
        **common,
    )
    informers = ClusterInformers(pods, nodes, namespaces, pdbs)
    emit: Callable[[ClusterEvent, Any, Any], None] | None = getattr(
        scheduler, "on_other_event", None
    )
    if features is None:
        features = getattr(getattr(scheduler, "config", None), "features", None)

    def watch(row: Kind, version: str) -> None:
        """An informer of ``row``'s typed objects into a ``RevisionedStore`` lister; its
        changes to the scheduler's handlers for the row, or as its cluster events."""
        store: RevisionedStore[Any] = RevisionedStore()
        informer: Informer[Any] = Informer(
            client,
            row.path_for(version),
            _row_decoder(row, version),
            name=row.lister,
            backoff=make_backoff(),
            store=store,
            **common,
        )
        informer.add_handlers(store.bump, store.bump, store.bump)
        if row.handlers:
            _forward_to_handlers(informer, row, scheduler, features)
        elif row.events and emit is not None:
            forward = _forward_as_update if row.events_as_update else _forward_events
            forward(informer, row.events, emit)
        informers.requested[row.lister] = informers.add(informer)

    for key in requested_listers(scheduler.frameworks.values()):
        watch(REGISTRY.by_lister()[key], _collection_version(key, scheduler.frameworks.values()))
    for wr in watched_resources(scheduler.frameworks.values()):
        custom: Informer[dict[str, Any]] = Informer(
            client,
            wr.path,
            _decode_raw,
            name=wr.lister,
            meta=_raw_meta,
            backoff=make_backoff(),
            missing_ok=True,
            **common,
        )
        if emit is not None:
            _forward_events(custom, wr.event_resource, emit)
        informers.custom[wr.lister] = informers.add(custom)
        log.info("watching a collection for plugins", path=wr.path, lister=wr.lister)
    if features is not None:
        for row in REGISTRY.watched(Watch.GATED):
            if all(features.enabled(g) for g in row.gates):
                watch(row, row.version_for(features.at_least))
    listers = informers.listers
    for fw in scheduler.frameworks.values():
        fw.handle.listers.update(listers)
    return informers
