"""The DRA driver's part for devices with binding conditions, as both replays play it.

kube-scheduler's DynamicResources PreBind (DRADeviceBindingConditions) waits, polling
every 5 s up to ``bindingTimeout`` (600 s), until the driver has set every binding
condition of each allocated device True in the claim's ``status.devices[].conditions``;
a binding *failure* condition set True fails the attempt instead. Nothing on the
oracle's control plane is a driver, so the replays play one: ``DRIVER_DELAY`` seconds
after a claim is allocated, each of its devices that has binding conditions and no
status entry yet gets one. The generator decides the outcome by the device's name: a
device named ``FAILING_PREFIX...`` reports its first failure condition, every other one
its binding conditions. Plain JSON, shared by the kube replay and ksched's simulator.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DRIVER_DELAY",
    "FAILED_MESSAGE",
    "FAILED_REASON",
    "FAILING_PREFIX",
    "READY_REASON",
    "device_conditions",
    "driver_status",
]

JSON = dict[str, Any]

#: Seconds from a claim's allocation to the driver's status write: under PreBind's first
#: re-check (5 s after the first), so a device is ready at that one on both sides.
DRIVER_DELAY = 1.0
#: A device whose name starts so fails its binding (when it has failure conditions).
FAILING_PREFIX = "bad-"
READY_REASON = "Attached"
FAILED_REASON = "AttachFailed"
FAILED_MESSAGE = "fabric attach failed"


def device_conditions(result: JSON, now: str) -> list[JSON]:
    """The conditions the driver reports for one allocation result (``driver``, ``pool``,
    ``device``, ``bindingConditions``, ``bindingFailureConditions``) at time ``now``."""
    failures = result.get("bindingFailureConditions") or []
    if str(result.get("device", "")).startswith(FAILING_PREFIX) and failures:
        return [
            {
                "type": failures[0],
                "status": "True",
                "reason": FAILED_REASON,
                "message": FAILED_MESSAGE,
                "lastTransitionTime": now,
            }
        ]
    return [
        {
            "type": kind,
            "status": "True",
            "reason": READY_REASON,
            "message": "",
            "lastTransitionTime": now,
        }
        for kind in result.get("bindingConditions") or []
    ]


def _ident(d: JSON) -> tuple[str, str, str, str]:
    return (
        str(d.get("driver", "")),
        str(d.get("pool", "")),
        str(d.get("device", "")),
        str(d.get("shareID") or ""),
    )


def driver_status(claim: JSON, now: str) -> list[JSON] | None:
    """The claim's new ``status.devices``: an entry added for each allocated device with
    binding conditions that has none; None when there is nothing to add (not allocated,
    no such device, or reported already)."""
    status = claim.get("status") or {}
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    devices: list[JSON] = list(status.get("devices") or [])
    have = {_ident(d) for d in devices}
    added = False
    for r in results:
        if not r.get("bindingConditions") or _ident(r) in have:
            continue
        entry: JSON = {"driver": r["driver"], "pool": r["pool"], "device": r["device"]}
        if r.get("shareID"):
            entry["shareID"] = r["shareID"]
        entry["conditions"] = device_conditions(r, now)
        devices.append(entry)
        have.add(_ident(r))
        added = True
    return devices if added else None
