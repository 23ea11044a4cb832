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
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Protocol

import msgspec
import structlog

from ..api.objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    Namespace,
    Node,
    ObjectMeta,
    PersistentVolume,
    PersistentVolumeClaim,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    StorageClass,
    VolumeAttachment,
)
from ..api.resource import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice
from ..api.workload import API_VERSION as SCHEDULING_API_VERSION
from ..api.workload import V1ALPHA2, PodGroup, pod_group_from_json
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

PODS_PATH = "/api/v1/pods"
NODES_PATH = "/api/v1/nodes"
NAMESPACES_PATH = "/api/v1/namespaces"
PDBS_PATH = "/apis/policy/v1/poddisruptionbudgets"
PRIORITY_CLASSES_PATH = "/apis/scheduling.k8s.io/v1/priorityclasses"
SERVICES_PATH = "/api/v1/services"
REPLICATION_CONTROLLERS_PATH = "/api/v1/replicationcontrollers"
REPLICA_SETS_PATH = "/apis/apps/v1/replicasets"
STATEFUL_SETS_PATH = "/apis/apps/v1/statefulsets"
PVCS_PATH = "/api/v1/persistentvolumeclaims"
PVS_PATH = "/api/v1/persistentvolumes"
STORAGE_CLASSES_PATH = "/apis/storage.k8s.io/v1/storageclasses"
CSI_NODES_PATH = "/apis/storage.k8s.io/v1/csinodes"
CSI_DRIVERS_PATH = "/apis/storage.k8s.io/v1/csidrivers"
CSI_STORAGE_CAPACITIES_PATH = "/apis/storage.k8s.io/v1/csistoragecapacities"
VOLUME_ATTACHMENTS_PATH = "/apis/storage.k8s.io/v1/volumeattachments"
RESOURCE_CLAIMS_PATH = "/apis/resource.k8s.io/v1/resourceclaims"
RESOURCE_SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"
DEVICE_CLASSES_PATH = "/apis/resource.k8s.io/v1/deviceclasses"
DEVICE_TAINT_RULES_PATH = "/apis/resource.k8s.io/v1/devicetaintrules"
# v1.36 serves DeviceTaintRules (beta there) only as v1beta2.
DEVICE_TAINT_RULES_PATH_1_36 = "/apis/resource.k8s.io/v1beta2/devicetaintrules"
SCHEDULING_POD_GROUPS_PATH = f"/apis/{SCHEDULING_API_VERSION}/podgroups"
# what kube-scheduler v1.36 watches (kube-apiserver v1.36 serves no v1beta1)
SCHEDULING_POD_GROUPS_V1ALPHA2_PATH = f"/apis/{V1ALPHA2}/podgroups"
# kube-scheduler's pod informer: terminal pods hold no resources and need no scheduling.
PODS_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


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


# reads_listers key -> (collection path, object type, EventResource of its changes or "");
# CSINode lists come back null when empty, so its objects decode through without_nulls.
# PriorityClasses are on request too: kube-scheduler watches none (pods carry their
# resolved priority), and the stock system:kube-scheduler role may not list them.
_ON_REQUEST: dict[str, tuple[str, type[Any], str]] = {
    Listers.PRIORITY_CLASSES: (PRIORITY_CLASSES_PATH, PriorityClass, ""),
    Listers.SERVICES: (SERVICES_PATH, Service, ""),
    Listers.REPLICATION_CONTROLLERS: (REPLICATION_CONTROLLERS_PATH, ReplicationController, ""),
    Listers.REPLICA_SETS: (REPLICA_SETS_PATH, ReplicaSet, ""),
    Listers.STATEFUL_SETS: (STATEFUL_SETS_PATH, StatefulSet, ""),
    Listers.PERSISTENT_VOLUME_CLAIMS: (
        PVCS_PATH,
        PersistentVolumeClaim,
        ev.PERSISTENT_VOLUME_CLAIM,
    ),
    Listers.PERSISTENT_VOLUMES: (PVS_PATH, PersistentVolume, ev.PERSISTENT_VOLUME),
    Listers.STORAGE_CLASSES: (STORAGE_CLASSES_PATH, StorageClass, ev.STORAGE_CLASS),
    Listers.CSI_NODES: (CSI_NODES_PATH, CSINode, ev.CSI_NODE),
    Listers.CSI_DRIVERS: (CSI_DRIVERS_PATH, CSIDriver, ev.CSI_DRIVER),
    Listers.CSI_STORAGE_CAPACITIES: (
        CSI_STORAGE_CAPACITIES_PATH,
        CSIStorageCapacity,
        ev.CSI_STORAGE_CAPACITY,
    ),
    Listers.VOLUME_ATTACHMENTS: (VOLUME_ATTACHMENTS_PATH, VolumeAttachment, ev.VOLUME_ATTACHMENT),
    # DynamicResources: claims by ns/name, slices and classes by name.
    Listers.RESOURCE_CLAIMS: (RESOURCE_CLAIMS_PATH, ResourceClaim, ev.RESOURCE_CLAIM),
    Listers.RESOURCE_SLICES: (RESOURCE_SLICES_PATH, ResourceSlice, ev.RESOURCE_SLICE),
    Listers.DEVICE_CLASSES: (DEVICE_CLASSES_PATH, DeviceClass, ev.DEVICE_CLASS),
    # A rule's change changes the taints of slices' devices: upstream's slice tracker
    # reports it as a ResourceSlice update (see _forward_as_update).
    Listers.DEVICE_TAINT_RULES: (DEVICE_TAINT_RULES_PATH, DeviceTaintRule, ev.RESOURCE_SLICE),
}
# The collection each on-request lister is watched from (RBAC grants list/watch on each).
ON_REQUEST_PATHS: Mapping[str, str] = MappingProxyType({k: v[0] for k, v in _ON_REQUEST.items()})
_BUILTIN_LISTERS = frozenset(
    {Listers.NAMESPACES, Listers.PDBS, Listers.PODS, Listers.SCHEDULING_POD_GROUPS, *_ON_REQUEST}
)


def _enabled_plugins(frameworks: Iterable[Any]) -> Iterable[tuple[str, Any]]:
    for fw in frameworks:
        plugins: Mapping[str, Any] = getattr(fw, "plugins", None) or {}
        yield from plugins.items()


def requested_listers(frameworks: Iterable[Any]) -> list[str]:
    """The on-request built-in listers (``reads_listers``) some enabled plugin reads, in a
    fixed order. ValueError for a key ksched does not know."""
    wanted: set[str] = set()
    frameworks_seen = list(frameworks)
    for name, plugin in _enabled_plugins(frameworks_seen):
        for key in getattr(plugin, "reads_listers", None) or ():
            if key not in _BUILTIN_LISTERS:
                raise ValueError(
                    f"plugin {name}: reads_listers: unknown lister {key!r}; "
                    f"known: {', '.join(sorted(_BUILTIN_LISTERS))}"
                )
            wanted.add(key)
    if Listers.DEVICE_TAINT_RULES in wanted and not any(
        _taint_rules_on(fw) for fw in frameworks_seen
    ):
        wanted.discard(Listers.DEVICE_TAINT_RULES)
    return [key for key in _ON_REQUEST if key in wanted]


def _taint_rules_on(fw: Any) -> bool:
    """kube-scheduler watches DeviceTaintRules only with DRADeviceTaintRules on."""
    features = getattr(getattr(fw, "handle", None), "features", None)
    return features is None or (
        features.enabled("DRADeviceTaints") and features.enabled("DRADeviceTaintRules")
    )


def watched_resources(frameworks: Iterable[Any]) -> list[WatchedResource]:
    """The ``watch_resources`` of every plugin enabled in ``frameworks``, once each.

    Two declarations of the same lister key must be identical (ValueError otherwise).
    """
    out: dict[str, WatchedResource] = {}
    for name, plugin in _enabled_plugins(frameworks):
        for wr in getattr(plugin, "watch_resources", None) or ():
            if not isinstance(wr, WatchedResource):
                raise ValueError(
                    f"plugin {name}: watch_resources: expected WatchedResource, got {wr!r}"
                )
            if wr.lister in _BUILTIN_LISTERS:
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
    """The ``handle.listers`` keys and collections watched for workload-aware scheduling:
    kube-scheduler's PodGroup informer (scheduling.k8s.io/v1beta1 in v1.37, v1alpha2 in
    v1.36, converted to the v1beta1 shape), started only with GenericWorkload on."""
    if features is None or not features.enabled("GenericWorkload"):
        return {}
    if not features.at_least("1.37"):
        return {Listers.SCHEDULING_POD_GROUPS: SCHEDULING_POD_GROUPS_V1ALPHA2_PATH}
    return {Listers.SCHEDULING_POD_GROUPS: SCHEDULING_POD_GROUPS_PATH}


def _pod_group_decoder(path: str) -> Callable[[bytes], PodGroup]:
    version = V1ALPHA2 if path == SCHEDULING_POD_GROUPS_V1ALPHA2_PATH else SCHEDULING_API_VERSION

    def decode(raw: bytes) -> PodGroup:
        return pod_group_from_json(raw, version)

    return decode


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


def _forward_pod_groups(
    informer: Informer[PodGroup], scheduler: SchedulerLike, features: FeatureGates | None
) -> None:
    """v1.37's PodGroup event handlers (``addPodGroup``...): the scheduler's cache and
    queue learn of the group, then the PodGroup cluster event goes to the queue. v1.36's
    informer only fills the lister."""
    if features is None or not features.at_least("1.37"):
        return
    add = getattr(scheduler, "on_pod_group_add", None)
    update = getattr(scheduler, "on_pod_group_update", None)
    delete = getattr(scheduler, "on_pod_group_delete", None)
    if add is not None and update is not None and delete is not None:
        informer.add_handlers(add, update, delete)


def _collection_path(key: str, frameworks: Iterable[Any]) -> str:
    """Where lister ``key`` is watched from, for the emulated version."""
    path = _ON_REQUEST[key][0]
    if key == Listers.DEVICE_TAINT_RULES:
        for fw in frameworks:
            features = getattr(getattr(fw, "handle", None), "features", None)
            if features is not None and not features.at_least("1.37"):
                return DEVICE_TAINT_RULES_PATH_1_36
    return path


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
        NAMESPACES_PATH,
        struct_decoder(Namespace),
        name="namespaces",
        backoff=make_backoff(),
        **common,
    )
    pdbs: Informer[PodDisruptionBudget] = Informer(
        client,
        PDBS_PATH,
        struct_decoder(PodDisruptionBudget),
        name="poddisruptionbudgets",
        backoff=make_backoff(),
        **common,
    )
    informers = ClusterInformers(pods, nodes, namespaces, pdbs)
    emit: Callable[[ClusterEvent, Any, Any], None] | None = getattr(
        scheduler, "on_other_event", None
    )
    for key in requested_listers(scheduler.frameworks.values()):
        _, cls, event_resource = _ON_REQUEST[key]
        path = _collection_path(key, scheduler.frameworks.values())
        store: RevisionedStore[Any] = RevisionedStore()
        requested: Informer[Any] = Informer(
            client,
            path,
            null_tolerant_decoder(cls) if cls is CSINode else struct_decoder(cls),
            name=key,
            backoff=make_backoff(),
            store=store,
            **common,
        )
        requested.add_handlers(store.bump, store.bump, store.bump)
        if event_resource and emit is not None:
            forward = _forward_as_update if key == Listers.DEVICE_TAINT_RULES else _forward_events
            forward(requested, event_resource, emit)
        informers.requested[key] = informers.add(requested)
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
    if features is None:
        features = getattr(getattr(scheduler, "config", None), "features", None)
    for key, path in workload_informer_paths(features).items():
        pg_store: RevisionedStore[PodGroup] = RevisionedStore()
        pod_groups: Informer[PodGroup] = Informer(
            client,
            path,
            _pod_group_decoder(path),
            name=key,
            backoff=make_backoff(),
            store=pg_store,
            **common,
        )
        pod_groups.add_handlers(pg_store.bump, pg_store.bump, pg_store.bump)
        _forward_pod_groups(pod_groups, scheduler, features)
        informers.requested[key] = informers.add(pod_groups)
    listers = informers.listers
    for fw in scheduler.frameworks.values():
        fw.handle.listers.update(listers)
    return informers
