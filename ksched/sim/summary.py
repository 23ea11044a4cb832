"""Cluster-level figures of a simulation: allocation per resource, nodes used, zone spread.

The what-if comparison and the HTML report both summarize a cluster the same way, from
the scheduler cache's NodeInfos (what is bound or assumed on each node):

* allocation per resource: each node's requested / allocatable in percent, then the mean
  and max over the nodes that offer the resource, and how many nodes are above 80 %;
  and the cluster-wide percentage (the report's bars);
* nodes used: nodes with at least one pod;
* topology spread per zone (``topology.kubernetes.io/zone``): how many of the pods the
  run placed landed in each zone, and per workload (a pod's controller, else its
  namespace and ``app`` label) how all its bound pods spread; skew is max - min over the
  zones the cluster has, as PodTopologySpread counts it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from ..framework.types import NodeInfo, PodInfo

__all__ = [
    "ABOVE",
    "ZONE_LABEL",
    "NodeUsage",
    "allocation",
    "cluster_percent",
    "spread",
    "summarize",
    "usage",
]

ZONE_LABEL = "topology.kubernetes.io/zone"
#: A node above this percentage of a resource counts in ``nodesAbove80``.
ABOVE = 80.0


@dataclass(slots=True)
class NodeUsage:
    """One node's requested and allocatable amounts (cpu in millicores) and its pods."""

    name: str
    zone: str
    requested: dict[str, int]
    allocatable: dict[str, int]
    pods: list[PodInfo]


def _amounts(r: Any, pods: int | None = None) -> dict[str, int]:
    out = {
        CPU: r.milli_cpu,
        MEMORY: r.memory,
        EPHEMERAL_STORAGE: r.ephemeral_storage,
        PODS: r.allowed_pod_number if pods is None else pods,
    }
    out.update(r.scalar)
    return out


def usage(node_infos: Iterable[NodeInfo]) -> list[NodeUsage]:
    """The figures of every live node, by name."""
    out = []
    for ni in node_infos:
        if ni.node is None:
            continue
        out.append(
            NodeUsage(
                ni.name,
                ni.node.metadata.labels.get(ZONE_LABEL, ""),
                _amounts(ni.requested, len(ni.pods)),
                _amounts(ni.allocatable),
                list(ni.pods),
            )
        )
    out.sort(key=lambda u: u.name)
    return out


def _resources(nodes: list[NodeUsage]) -> list[str]:
    """cpu, memory, ephemeral-storage, pods, then extended resources, those some node offers."""
    names: list[str] = [CPU, MEMORY, EPHEMERAL_STORAGE, PODS]
    for u in nodes:
        names += sorted(k for k in u.allocatable if k not in names)
    return [r for r in names if any(u.allocatable.get(r, 0) > 0 for u in nodes)]


def allocation(nodes: list[NodeUsage]) -> dict[str, dict[str, Any]]:
    """Per resource some node offers: mean and max percent allocated over those nodes, and
    how many are above 80 %."""
    out: dict[str, dict[str, Any]] = {}
    for res in _resources(nodes):
        pcts = [
            100.0 * u.requested.get(res, 0) / u.allocatable[res]
            for u in nodes
            if u.allocatable.get(res, 0) > 0
        ]
        out[res] = {
            "mean": round(sum(pcts) / len(pcts), 1),
            "max": round(max(pcts), 1),
            "nodesAbove80": sum(1 for p in pcts if p > ABOVE),
        }
    return out


def cluster_percent(nodes: list[NodeUsage]) -> dict[str, float]:
    """Per resource: everything requested over everything allocatable, in percent."""
    out = {}
    for res in _resources(nodes):
        offered = [u for u in nodes if u.allocatable.get(res, 0) > 0]
        req = sum(u.requested.get(res, 0) for u in offered)
        out[res] = round(100.0 * req / sum(u.allocatable[res] for u in offered), 1)
    return out


def _workload(pi: PodInfo) -> str | None:
    """A pod's workload: its controller, else namespace and app label; None for neither."""
    meta = pi.pod.metadata
    for ref in meta.owner_references:
        if ref.controller:
            return f"{meta.namespace}/{ref.kind}/{ref.name}"
    app = meta.labels.get("app.kubernetes.io/name") or meta.labels.get("app")
    return f"{meta.namespace}/app={app}" if app else None


def _skew(counts: dict[str, int]) -> int:
    return max(counts.values()) - min(counts.values()) if counts else 0


def spread(nodes: list[NodeUsage], placed: set[str]) -> dict[str, Any]:
    """Zone spread of the pods the run placed (keys ``ns/name`` in ``placed``), and of
    every workload that has a placed pod (all its bound pods)."""
    zones = sorted({u.zone for u in nodes if u.zone})
    if not zones:
        return {"key": ZONE_LABEL, "zones": {}, "skew": 0, "workloads": {}}
    placed_counts = dict.fromkeys(zones, 0)
    per_workload: dict[str, dict[str, int]] = {}
    touched: set[str] = set()
    for u in nodes:
        for pi in u.pods:
            w = _workload(pi)
            if pi.key in placed:
                if u.zone:
                    placed_counts[u.zone] += 1
                if w is not None:
                    touched.add(w)
            if w is not None and u.zone:
                counts = per_workload.setdefault(w, dict.fromkeys(zones, 0))
                counts[u.zone] += 1
    workloads = {
        w: {"zones": per_workload[w], "skew": _skew(per_workload[w])}
        for w in sorted(touched)
        if w in per_workload and sum(per_workload[w].values()) > 1
    }
    return {
        "key": ZONE_LABEL,
        "zones": placed_counts,
        "skew": _skew(placed_counts),
        "workloads": workloads,
    }


def summarize(nodes: list[NodeUsage], results: list[Any]) -> dict[str, Any]:
    """The what-if summary of one run: ``nodes`` as it ended, ``results`` its PodResults."""
    placed = {f"{r.namespace}/{r.name}" for r in results if r.status == "Scheduled"}
    return {
        "pods": len(results),
        "scheduled": len(placed),
        "nodesUsed": sum(1 for u in nodes if u.pods),
        "nodes": len(nodes),
        "allocation": allocation(nodes),
        "topologySpread": spread(nodes, placed),
    }
