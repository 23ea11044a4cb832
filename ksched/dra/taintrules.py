"""DeviceTaintRules (DRADeviceTaintRules): the slices as upstream's ResourceSlice tracker
hands them to the allocator, each matching device given the rules' taints after its own.

A light module (no allocator import): the plugin patches the slices before it builds its
inventory, so the allocator only ever sees device taints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from ..api.resource import DeviceTaintRule, ResourceSlice

__all__ = ["apply_taint_rules"]


def _matches(rule: DeviceTaintRule, slice_: ResourceSlice) -> bool:
    sel = rule.spec.device_selector
    if sel is None or rule.spec.taint is None:
        return False  # no selector matches no device
    if sel.driver is not None and sel.driver != slice_.spec.driver:
        return False
    return sel.pool is None or sel.pool == slice_.spec.pool.name


def apply_taint_rules(
    slices: Iterable[ResourceSlice], rules: Mapping[str, DeviceTaintRule]
) -> list[ResourceSlice]:
    """``slices`` with the taints of the ``rules`` (by name) matching each device appended
    (upstream ``Tracker.applyPatches``); untouched slices are the same objects."""
    ordered = [rules[k] for k in sorted(rules)]
    out: list[ResourceSlice] = []
    for s in slices:
        # (the rule's device name or None, its taint) of the rules matching the slice
        applying = [
            (r.spec.device_selector.device, r.spec.taint)
            for r in ordered
            if _matches(r, s) and r.spec.device_selector and r.spec.taint
        ]
        if not applying:
            out.append(s)
            continue
        devices = []
        changed = False
        for d in s.spec.devices:
            extra = [taint for name, taint in applying if name in (None, d.name)]
            if extra:
                changed = True
                d = msgspec.structs.replace(d, taints=[*d.taints, *extra])
            devices.append(d)
        if not changed:
            out.append(s)
            continue
        spec = msgspec.structs.replace(s.spec, devices=devices)
        out.append(msgspec.structs.replace(s, spec=spec))
    return out
