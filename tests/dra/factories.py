"""Small builders of DRA objects for the allocator and plugin tests."""

from __future__ import annotations

from typing import Any

from ksched.api.objects import Node, decode
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceSlice

DRIVER = "driver-a"
DRIVER_B = "driver-b"
CLASS = "class-a"


def node(name: str, **labels: str) -> Node:
    return decode({"metadata": {"name": name, "labels": labels}}, Node)


def device(name: str, attrs: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A device; ``attrs`` values become string/int/bool attributes by Python type."""
    out: dict[str, Any] = {"name": name, **extra}
    if attrs:
        out["attributes"] = {k: _attr(v) for k, v in attrs.items()}
    return out


def _attr(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    return {"string": v}


def slice_(
    name: str,
    devices: list[dict[str, Any]],
    *,
    driver: str = DRIVER,
    pool: str = "pool-1",
    generation: int = 1,
    count: int = 1,
    **node_fields: Any,
) -> ResourceSlice:
    """A slice; ``node_fields``: node_name=..., all_nodes=True, node_selector={...}, or
    per_device_node_selection=True (camelCased into the spec)."""
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": devices,
    }
    for k, v in node_fields.items():
        head, *rest = k.split("_")
        spec[head + "".join(p.title() for p in rest)] = v
    return decode({"metadata": {"name": name}, "spec": spec}, ResourceSlice)


def device_class(name: str = CLASS, *exprs: str, **spec: Any) -> DeviceClass:
    sels = [{"cel": {"expression": e}} for e in exprs]
    return decode({"metadata": {"name": name}, "spec": {"selectors": sels, **spec}}, DeviceClass)


def request(name: str = "req-0", cls: str = CLASS, *exprs: str, **fields: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, **fields}
    if exprs:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    return {"name": name, "exactly": exactly}


def claim(
    name: str = "claim-0",
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
    namespace: str = "default",
    uid: str = "",
    status: dict[str, Any] | None = None,
    **meta: Any,
) -> ResourceClaim:
    devices: dict[str, Any] = {"requests": list(requests) or [request()]}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}", **meta},
        "spec": {"devices": devices},
    }
    if status:
        raw["status"] = status
    return decode(raw, ResourceClaim)


def allocated_status(
    node_name: str, *devices: tuple[str, str, str], req: str = "req-0"
) -> dict[str, Any]:
    return {
        "allocation": {
            "devices": {
                "results": [
                    {"request": req, "driver": d, "pool": p, "device": n} for d, p, n in devices
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            },
        }
    }
