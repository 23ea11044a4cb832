"""Builders for the contrib unit tests: pods, nodes, a handle with a real cache snapshot."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ksched import Handle, Listers, Node, PodInfo, Snapshot
from ksched.testing import Cache, FakeClock, node_info, pod_info
from ksched.testing import make_node as node_manifest
from ksched.testing import make_pod as pod_manifest

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
    """``ksched.testing.make_pod`` as the scheduler sees it, in PodGroup ``group``."""
    manifest = pod_manifest(
        name,
        namespace,
        requests={"cpu": cpu, "memory": "64Mi"},
        labels={GROUP_LABEL: group} if group else None,
        node_name=node or None,
        scheduler_name="ksched",
        priority=priority,
        uid=f"uid-{namespace}-{name}-{next(_seq)}",
    )
    return pod_info(manifest)


def make_node(name: str, cpu: str = "4", pods: int = 110) -> Node:
    node = node_info(node_manifest(name, cpu=cpu, pods=str(pods))).node
    assert node is not None
    return node


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
