"""Server-side printing (meta.k8s.io/v1 Table) for `kubectl get`, with kube's default columns
for pods, nodes and namespaces and Name/Age for everything else."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ._resources import ResourceInfo

JSON = dict[str, Any]


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    if years < 8:
        return f"{years}y{days % 365}d"
    return f"{years}y"


def _age(obj: JSON) -> str:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    try:
        created = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - created).total_seconds())


def _col(name: str, typ: str = "string", priority: int = 0, fmt: str = "") -> JSON:
    return {"name": name, "type": typ, "format": fmt, "description": "", "priority": priority}


def _pod_status(pod: JSON) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        waiting = (state.get("waiting") or {}).get("reason")
        terminated = state.get("terminated") or {}
        if waiting:
            reason = waiting
        elif terminated.get("reason"):
            reason = terminated["reason"]
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_row(pod: JSON) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount", 0)) for cs in statuses)
    gates = spec.get("readinessGates") or []
    return [
        pod["metadata"]["name"],
        f"{ready}/{len(spec.get('containers') or [])}",
        _pod_status(pod),
        str(restarts),
        _age(pod),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if gates else "<none>",
    ]


_POD_COLUMNS = [
    _col("Name", fmt="name"),
    _col("Ready"),
    _col("Status"),
    _col("Restarts", "string"),
    _col("Age"),
    _col("IP", priority=1),
    _col("Node", priority=1),
    _col("Nominated Node", priority=1),
    _col("Readiness Gates", priority=1),
]


def _node_row(node: JSON) -> list[Any]:
    status = node.get("status") or {}
    ready = next(
        (c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    text = {"True": "Ready", None: "Unknown"}.get(ready, "NotReady")
    if (node.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    prefix = "node-role.kubernetes.io/"
    labels = (node.get("metadata") or {}).get("labels") or {}
    roles = sorted(k[len(prefix) :] for k in labels if k.startswith(prefix) and k[len(prefix) :])
    info = status.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        node["metadata"]["name"],
        text,
        ",".join(roles) or "<none>",
        _age(node),
        info.get("kubeletVersion") or "",
        addrs.get("InternalIP") or "<none>",
        addrs.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NODE_COLUMNS = [
    _col("Name", fmt="name"),
    _col("Status"),
    _col("Roles"),
    _col("Age"),
    _col("Version"),
    _col("Internal-IP", priority=1),
    _col("External-IP", priority=1),
    _col("OS-Image", priority=1),
    _col("Kernel-Version", priority=1),
    _col("Container-Runtime", priority=1),
]


def _generic(res: ResourceInfo) -> tuple[list[JSON], Callable[[JSON], list[Any]]]:
    if res.plural == "pods" and not res.group:
        return _POD_COLUMNS, _pod_row
    if res.plural == "nodes" and not res.group:
        return _NODE_COLUMNS, _node_row
    if res.plural == "namespaces" and not res.group:
        return [_col("Name", fmt="name"), _col("Status"), _col("Age")], lambda o: [
            o["metadata"]["name"],
            (o.get("status") or {}).get("phase", ""),
            _age(o),
        ]
    return [_col("Name", fmt="name"), _col("Age")], lambda o: [o["metadata"]["name"], _age(o)]


def _row_object(obj: JSON, include: str) -> JSON | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def table(res: ResourceInfo, objs: list[JSON], meta: JSON, include: str = "Metadata") -> JSON:
    columns, row = _generic(res)
    rows = []
    for obj in objs:
        r: JSON = {"cells": row(obj)}
        ro = _row_object(obj, include)
        if ro is not None:
            r["object"] = ro
        rows.append(r)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": columns,
        "rows": rows,
    }


def wants_table(accept: str) -> bool:
    """kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` when printing for humans."""
    for part in accept.split(","):
        params = {p.strip().split("=", 1)[0]: p.strip().split("=", 1)[-1] for p in part.split(";")}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
    return False
