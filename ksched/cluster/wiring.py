"""Informers feeding a scheduler, as kube-scheduler's ``addAllEventHandlers`` sets up.

Nodes and pods go to the scheduler's ``on_*`` handlers (which route pods to the queue or
the cache by nodeName and schedulerName); namespaces, PodDisruptionBudgets and
PriorityClasses only fill listers that plugins read through ``handle.listers``.
Scheduling must wait for ``wait_synced``: a scheduler that starts before the node and
pod lists are in would place pods on a partial view of the cluster.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol

from ..api.objects import Namespace, Node, PodDisruptionBudget, PriorityClass
from ..framework.types import PodInfo
from .client import APIClient
from .decoding import pod_decoder, pod_meta, struct_decoder
from .informer import Backoff, Informer, InformerSet

__all__ = [
    "NODES_PATH",
    "PODS_FIELD_SELECTOR",
    "PODS_PATH",
    "ClusterInformers",
    "SchedulerLike",
    "connect_scheduler",
]

PODS_PATH = "/api/v1/pods"
NODES_PATH = "/api/v1/nodes"
NAMESPACES_PATH = "/api/v1/namespaces"
PDBS_PATH = "/apis/policy/v1/poddisruptionbudgets"
PRIORITY_CLASSES_PATH = "/apis/scheduling.k8s.io/v1/priorityclasses"
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
        priority_classes: Informer[PriorityClass],
    ) -> None:
        super().__init__([nodes, pods, namespaces, pdbs, priority_classes])
        self.pods = pods
        self.nodes = nodes
        self.namespaces = namespaces
        self.pdbs = pdbs
        self.priority_classes = priority_classes

    @property
    def listers(self) -> dict[str, Any]:
        """``handle.listers`` entries: namespaces by name, PDBs by ns/name, classes by name."""
        return {
            "namespaces": self.namespaces.store,
            "pdbs": self.pdbs.store,
            "priorityclasses": self.priority_classes.store,
        }


def connect_scheduler(
    scheduler: SchedulerLike,
    client: APIClient,
    *,
    profiles: Collection[str] | None = None,
    min_watch_timeout: float = 300.0,
    backoff: Backoff | None = None,
) -> ClusterInformers:
    """Create the informers for ``scheduler`` (run them with ``.run()`` in a task group and
    ``await .wait_synced()`` before starting the scheduling loop).

    ``profiles`` are the scheduler names served (default: the scheduler's frameworks);
    only their pending pods keep their raw JSON.
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
        client, NODES_PATH, struct_decoder(Node), name="nodes", backoff=make_backoff(), **common
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
    classes: Informer[PriorityClass] = Informer(
        client,
        PRIORITY_CLASSES_PATH,
        struct_decoder(PriorityClass),
        name="priorityclasses",
        backoff=make_backoff(),
        **common,
    )
    informers = ClusterInformers(pods, nodes, namespaces, pdbs, classes)
    listers = informers.listers
    for fw in scheduler.frameworks.values():
        fw.handle.listers.update(listers)
    return informers
