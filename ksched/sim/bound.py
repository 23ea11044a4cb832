"""Why a bound pod is where it is: ``simulate --explain NS/NAME`` for a pod the file
already has on a node.

A bound pod had its scheduling cycle long ago, on a cluster that is gone. The nearest
question ksched can answer is "where would this config put it now": the pod is made
pending again on the cluster without it (every other bound pod stays; the file's pending
pods are left out, since they had not been placed) and one simulation explains it. The
node it is bound to is then looked up in that explanation: its rank and scores among the
feasible nodes, or why Filter rejected it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ..api.objects import Pod, PodStatus
from ..framework.registry import Registry
from .cluster_file import ClusterFile
from .simulator import PodResult, Simulation
from .summary import NodeUsage

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration

__all__ = [
    "BoundExplanation",
    "bound_head",
    "bound_pod",
    "explain_bound",
    "render_where",
    "where_it_is",
    "where_text",
]


_TERMINAL = ("Succeeded", "Failed")


@dataclasses.dataclass
class BoundExplanation:
    """The pod's explanation as if pending (``result``; None: no profile of the config
    schedules its scheduler's pods) and where its bound node stands in it (``bound``)."""

    scheduler_name: str
    node: str
    result: PodResult | None
    bound: dict[str, Any] | None
    # every node's usage before and after the run (the report)
    before: list[NodeUsage]
    after: list[NodeUsage]


def bound_pod(cluster: ClusterFile, key: str) -> Pod | None:
    """The pod ``NAMESPACE/NAME`` if the file has it on a node (and not terminal)."""
    for pod, _ in cluster.pods:
        if pod.key == key and pod.spec.node_name and pod.status.phase not in _TERMINAL:
            return pod
    return None


def _pending_again(pod: Pod, raw: dict[str, Any] | bytes) -> tuple[Pod, dict[str, Any]]:
    """``pod`` as it was before its binding: no node, no scheduling status (its claims'
    statuses kept: the claims exist). The raw form (extenders read it) follows."""
    spec = msgspec.structs.replace(pod.spec, node_name="")
    status = PodStatus(
        phase="Pending",
        resource_claim_statuses=pod.status.resource_claim_statuses,
        extended_resource_claim_status=pod.status.extended_resource_claim_status,
    )
    doc = msgspec.json.decode(raw) if isinstance(raw, bytes) else dict(raw)
    raw_spec = dict(doc.get("spec") or {})
    raw_spec.pop("nodeName", None)
    doc["spec"] = raw_spec
    doc["status"] = {"phase": "Pending"}
    return msgspec.structs.replace(pod, spec=spec, status=status), doc


def explain_bound(
    cluster: ClusterFile,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    key: str,
    *,
    seed: int = 0,
    adopt: Mapping[str, str] | None = None,
) -> BoundExplanation | None:
    """Explain bound pod ``key`` as if pending on the cluster without it (None: the file
    has no such bound pod)."""
    target = bound_pod(cluster, key)
    if target is None:
        return None
    pods: list[tuple[Pod, dict[str, Any] | bytes]] = []
    for pod, raw in cluster.pods:
        if pod is target:
            pods.append(_pending_again(pod, raw))
        elif pod.spec.node_name:
            pods.append((pod, raw))
    alone = dataclasses.replace(cluster, pods=pods)
    sim = Simulation(alone, config, registry, seed=seed, explain=True, adopt=adopt)
    results, before, after = anyio.run(sim.run_measured)
    node = target.spec.node_name
    result = next((r for r in results if f"{r.namespace}/{r.name}" == key), None)
    bound = where_it_is(result.explain, node) if result is not None else None
    return BoundExplanation(target.spec.scheduler_name, node, result, bound, before, after)


def where_it_is(model: dict[str, Any] | None, node: str) -> dict[str, Any]:
    """Where ``node`` stands in an explanation: ``{"node", "rank", "feasible", "total",
    "best", "tiedWith"}`` for a feasible node (rank 1 is the best total; nodes of equal
    total share a rank), ``{"node", "rejected": [reason, ...]}`` for one Filter turned
    away, ``{"node"}`` alone for one not evaluated."""
    model = model or {}
    ranking: list[dict[str, Any]] = model.get("ranking") or []
    totals = [r["total"] for r in ranking]
    for r in ranking:
        if r["node"] == node:
            t = r["total"]
            return {
                "node": node,
                "rank": 1 + sum(1 for x in totals if x > t),
                "feasible": len(ranking),
                "total": t,
                "best": max(totals),
                "tiedWith": sum(1 for x in totals if x == t) - 1,
                "scores": r["scores"],
            }
    reasons = [g["reason"] for g in model.get("rejected") or [] if node in g["nodes"]]
    if reasons:
        return {"node": node, "rejected": reasons}
    return {"node": node}


def where_text(found: BoundExplanation, *, short: bool = False) -> str:
    """Where the bound pod's node stands, in a few words (``short``: a table cell)."""
    b = found.bound or {"node": found.node}
    if "rank" in b and short:
        tie = f", {b['tiedWith']} tied" if b["tiedWith"] else ""
        best = f", best {b['best']}" if b["rank"] > 1 else ""
        return f"#{b['rank']} of {b['feasible']}, total {b['total']}{tie}{best}"
    if "rank" in b:
        tie = f", tied with {b['tiedWith']} other node(s)" if b["tiedWith"] else ""
        best = f"; the best total is {b['best']}" if b["rank"] > 1 else ""
        return f"rank {b['rank']} of {b['feasible']} feasible nodes, total {b['total']}{tie}{best}"
    if "rejected" in b:
        return f"rejected here: {'; '.join(b['rejected'])}"
    if found.result is None:
        return "not scheduled by this config (no profile for its schedulerName)"
    return "not evaluated here (not among the file's nodes, or beyond percentageOfNodesToScore)"


def bound_head(key: str, node: str, source: str) -> str:
    """The line saying what a bound pod's explanation is of."""
    return (
        f"{key}: bound to {node} in {source}; explained as if pending on the cluster "
        "without it (its other bound pods stay, pending pods are left out)"
    )


def render_where(key: str, found: BoundExplanation, source: str) -> list[str]:
    """The lines that head a bound pod's explanation: what is explained, and where its
    node ranks."""
    return [bound_head(key, found.node, source), f"  its node {found.node}: {where_text(found)}"]
