"""Builders for the contrib unit tests: pods, nodes, a handle with a real cache snapshot."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ksched import Handle, Listers
from ksched.api.objects import Node, Pod, decode
from ksched.cache import Cache
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.util.clock import FakeClock

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
_seq = itertools.count()


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    group: str = "",
    cpu: str = "100m",
    node: str = "",
    priority: int | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {
        "schedulerName": "ksched",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
    }
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}-{next(_seq)}",
    }
    if group:
        meta["labels"] = {GROUP_LABEL: group}
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    return PodInfo(decode(raw, Pod), raw)


def make_node(name: str, cpu: str = "4", pods: int = 110) -> Node:
    alloc = {"cpu": cpu, "memory": "16Gi", "pods": str(pods)}
    return decode(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": alloc},
        },
        Node,
    )


def podgroup(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    created: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if created:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"minMember": min_member, **spec},
    }


@dataclass
class QPI:
    """What the queue hands QueueSort and Coscheduling (a QueuedPodInfo's fields)."""

    pod_info: PodInfo
    timestamp: float = 0.0
    initial_attempt_timestamp: float | None = None


@dataclass
class FakeQueue:
    active: list[PodInfo] = field(default_factory=list)
    backoff: list[PodInfo] = field(default_factory=list)
    pool: list[PodInfo] = field(default_factory=list)
    activated: list[list[str]] = field(default_factory=list)

    def active_pods(self) -> list[QPI]:
        return [QPI(p) for p in self.active]

    def backoff_pods(self) -> list[QPI]:
        return [QPI(p) for p in self.backoff]

    def unschedulable_pods(self) -> list[QPI]:
        return [QPI(p) for p in self.pool]

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Records what ``handle.activate`` was given (the real queue ignores pods it does
        not hold; recording all of them shows what the plugin asked for)."""
        self.activated.append(sorted(p.name for p in pods))


def make_handle(
    nodes: list[Node],
    bound: list[PodInfo] = (),  # type: ignore[assignment]
    *,
    groups: list[dict[str, Any]] = (),  # type: ignore[assignment]
    pods: dict[str, PodInfo] | None = None,
    queue: FakeQueue | None = None,
) -> tuple[Handle, Cache]:
    """A handle as the scheduler builds it: snapshot from a real cache, listers, fake clock."""
    clock = FakeClock(1000.0)
    cache = Cache(clock)
    for n in nodes:
        cache.add_node(n)
    for p in bound:
        cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    listers = Listers(
        podgroups={f"{g['metadata']['namespace']}/{g['metadata']['name']}": g for g in groups}
    )
    if pods is None and queue is not None:
        # The pod informer sees every pod: the bound ones and those the queue holds.
        pods = {p.key: p for p in [*bound, *queue.active, *queue.backoff, *queue.pool]}
    if pods is not None:
        listers[Listers.PODS] = pods
    return Handle(clock=clock, snapshot=snap, listers=listers, activator=queue), cache


def refresh(handle: Handle, cache: Cache) -> None:
    """Start of a scheduling cycle: the snapshot catches up with the cache."""
    cache.update_snapshot(handle.snapshot)
