"""Pod groups of a simulate cluster file, as one unit each: who belongs, who is bound.

Membership is ``spec.schedulingGroup.podGroupName`` (GenericWorkload), the same link the
scheduler's pod-group cycle follows, so the report, ``--compare`` and ``--explain`` of a
group count exactly the pods the cycle schedules together. A group is *started* when its
gang's ``minCount`` members are bound (every member for a ``basic`` group): what a user
waiting for a training job to start asks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..api.workload import PodGroup
from ..framework.podgroup import pod_group_key, pod_group_of
from .cluster_file import ClusterFile
from .simulator import PodResult

__all__ = ["GroupSpec", "group_rows", "placed", "pod_groups", "started"]


@dataclass(frozen=True)
class GroupSpec:
    """One pod group of a cluster file. ``members``: its live pods' ``ns/name``, in file
    order; ``bound``: the members the file already has on a node (member -> node);
    ``pod_group`` None when pods name a PodGroup the file does not have."""

    key: str
    members: tuple[str, ...]
    bound: Mapping[str, str]
    pod_group: PodGroup | None

    @property
    def min_count(self) -> int | None:
        """The gang's minCount; None for a basic group (or one without a PodGroup)."""
        pg = self.pod_group
        gang = pg.spec.scheduling_policy.gang if pg is not None else None
        return gang.min_count if gang is not None else None

    @property
    def topology_keys(self) -> tuple[str, ...]:
        pg = self.pod_group
        sc = pg.spec.scheduling_constraints if pg is not None else None
        return tuple(t.key for t in sc.topology) if sc is not None else ()

    @property
    def required(self) -> int:
        """Bound members the group needs to have started."""
        m = self.min_count
        return len(self.members) if m is None else m


def pod_groups(cluster: ClusterFile) -> dict[str, GroupSpec]:
    """Every group the file's PodGroups or live pods name, by ``ns/name`` (file order)."""
    objs: dict[str, PodGroup] = {
        pod_group_key(pg.metadata.namespace or "default", pg.metadata.name): pg
        for pg in cluster.scheduling.get("PodGroup", [])
    }
    members: dict[str, list[str]] = {k: [] for k in objs}
    bound: dict[str, dict[str, str]] = {k: {} for k in objs}
    for pod, _raw in cluster.pods:
        if pod.status.phase in ("Succeeded", "Failed"):
            continue
        key = pod_group_of(pod)
        if key is None:
            continue
        member = f"{pod.metadata.namespace}/{pod.metadata.name}"
        members.setdefault(key, []).append(member)
        if pod.spec.node_name:
            bound.setdefault(key, {})[member] = pod.spec.node_name
    return {k: GroupSpec(k, tuple(m), bound.get(k, {}), objs.get(k)) for k, m in members.items()}


def placed(spec: GroupSpec, results: Iterable[PodResult]) -> dict[str, str]:
    """Member -> node: bound in the file, or scheduled by the simulation."""
    out = dict(spec.bound)
    want = set(spec.members)
    for r in results:
        key = f"{r.namespace}/{r.name}"
        if key in want and r.status == "Scheduled" and r.node:
            out[key] = r.node
    return out


def started(spec: GroupSpec, nodes: Mapping[str, str]) -> bool:
    return bool(spec.members) and len(nodes) >= spec.required


def _reason(spec: GroupSpec, pending: Sequence[PodResult]) -> str:
    """Why a group has not started: too few members for the gang, else the pending
    members' most common message (the cycle gives every member the group's)."""
    m = spec.min_count
    if m is not None and len(spec.members) < m:
        return f"gang minCount {m} not satisfiable: only {len(spec.members)} member pod(s) exist"
    if spec.pod_group is None:
        return f"PodGroup {spec.key} is not in the cluster file"
    msgs = Counter(r.message for r in pending if r.message)
    return msgs.most_common(1)[0][0] if msgs else ""


def group_rows(cluster: ClusterFile, results: Sequence[PodResult]) -> list[dict[str, Any]]:
    """One row per group: members (with their node or status), counts, started, reason."""
    by_key = {f"{r.namespace}/{r.name}": r for r in results}
    rows = []
    for spec in pod_groups(cluster).values():
        nodes = placed(spec, results)
        pending = [by_key[m] for m in spec.members if m not in nodes and m in by_key]
        ok = started(spec, nodes)
        rows.append(
            {
                "group": spec.key,
                "minCount": spec.min_count,
                "members": [
                    {
                        "pod": m,
                        "node": nodes.get(m),
                        "status": "Scheduled"
                        if m in nodes
                        else (by_key[m].status if m in by_key else "NotConsidered"),
                    }
                    for m in spec.members
                ],
                "bound": len(nodes),
                "pending": len(spec.members) - len(nodes),
                "started": ok,
                "reason": "" if ok else _reason(spec, pending),
            }
        )
    return rows
