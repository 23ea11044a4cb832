"""Builders for pods, nodes and snapshots in tests (plain manifests in, ksched objects out)."""

from __future__ import annotations

from typing import Any

from ksched.api.objects import Node, Pod, decode
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import NodeInfo, PodInfo
from ksched.testing import make_pod as testing_make_pod
from ksched.testing import node_info

__all__ = ["make_node", "make_node_info", "make_pod", "make_snapshot", "pod_manifest"]

_counter = 0


def pod_manifest(
    name: str = "",
    namespace: str = "default",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    requests: dict[str, Any] | None = None,
    containers: list[dict[str, Any]] | None = None,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    priority: int | None = None,
    uid: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """``ksched.testing.make_pod`` with this suite's defaults: a generated name and uid,
    ksched's scheduler name, one container "c" of image "pause" (``containers`` replaces
    it)."""
    global _counter
    _counter += 1
    name = name or f"pod-{_counter}"
    if containers is None:
        req: dict[str, Any] = dict(requests or {})
        if cpu is not None:
            req["cpu"] = cpu
        if memory is not None:
            req["memory"] = memory
        containers = [
            {"name": "c", "image": "pause", "resources": {"requests": req} if req else {}}
        ]
    m = testing_make_pod(
        name,
        namespace,
        node_name=node_name or None,
        scheduler_name=spec.pop("schedulerName", "ksched"),
        priority=priority,
        uid=uid or f"uid-{name}-{_counter}",
        containers=containers,
        **spec,
    )
    m["metadata"]["labels"] = labels or {}
    # this suite's key order (raw pod JSON goes to extenders byte for byte)
    first = [k for k in ("containers", "schedulerName", "nodeName", "priority") if k in m["spec"]]
    m["spec"] = {**{k: m["spec"][k] for k in first}, **m["spec"]}
    return m


def make_pod(name: str = "", namespace: str = "default", **kw: Any) -> PodInfo:
    """``pod_manifest`` as the scheduler sees it (a PodInfo keeping its manifest)."""
    m = pod_manifest(name, namespace, **kw)
    return PodInfo(decode(m, Pod), m)


def make_node(
    name: str,
    *,
    cpu: str | int = "4",
    memory: str = "32Gi",
    pods: int = 110,
    allocatable: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    images: list[dict[str, Any]] | None = None,
) -> Node:
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods}
    if allocatable:
        alloc.update(allocatable)
    m: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"unschedulable": unschedulable, "taints": taints or []},
        "status": {"allocatable": alloc, "capacity": alloc, "images": images or []},
    }
    return decode(m, Node)


def make_node_info(node: Node, pods: list[PodInfo] = ()) -> NodeInfo:  # type: ignore[assignment]
    return node_info(node, pods)


def make_snapshot(nodes: list[Node], pods: list[PodInfo] = ()) -> Snapshot:  # type: ignore[assignment]
    """A snapshot built through the real cache (node-tree order, image states)."""
    return make_cache_and_snapshot(nodes, pods)[1]


def make_cache_and_snapshot(
    nodes: list[Node],
    pods: list[PodInfo] = (),  # type: ignore[assignment]
) -> tuple[Any, Snapshot]:
    """``make_snapshot`` and its cache, to change the cluster and update the snapshot in
    place as the daemon does."""
    from ksched.cache import Cache

    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap
