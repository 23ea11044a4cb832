"""Property: for random slices, claims and already-taken devices, an allocation never
hands out a device twice (nor one already taken), gives each request the devices it
asked for, and every device satisfies its class's and request's selectors and every
matchAttribute constraint, and no pool's shared counter is over-consumed by the
devices it hands out together with the taken ones (partitionable devices); when the
allocator says "no", a brute-force search agrees for small cases."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.dra.allocator import Allocator, DeviceID, Inventory
from ksched.dra.cel import ExpressionCache
from tests.dra.factories import CLASS, DRIVER, claim, device, device_class, node, request, slice_

NODE = node("node-1")


@st.composite
def scenario(draw: st.DrawFn) -> dict[str, Any]:
    n_slices = draw(st.integers(1, 3))
    slices, devices, caps = [], {}, {}
    for s in range(n_slices):
        devs = []
        # a shared counter ("units") some pools have, which each of their devices uses
        cap = draw(st.one_of(st.none(), st.integers(0, 6)))
        counter_sets = []
        if cap is not None:
            caps[f"pool-{s}"] = cap
            counter_sets = [{"name": "set", "counters": {"units": {"value": str(cap)}}}]
        for d in range(draw(st.integers(0, 4))):
            attrs = {"size": draw(st.integers(0, 3)), "root": draw(st.sampled_from(["r1", "r2"]))}
            name = f"s{s}d{d}"
            extra: dict[str, Any] = {}
            if cap is not None:
                attrs["units"] = draw(st.integers(0, 3))
                units = {"units": {"value": str(attrs["units"])}}
                extra["consumesCounters"] = [{"counterSet": "set", "counters": units}]
            devs.append(device(name, {k: v for k, v in attrs.items() if k != "units"}, **extra))
            devices[(DRIVER, f"pool-{s}", name)] = attrs
        where = draw(
            st.sampled_from([{"node_name": "node-1"}, {"all_nodes": True}, {"node_name": "node-2"}])
        )
        slices.append(
            slice_(f"slice-{s}", devs, pool=f"pool-{s}", shared_counters=counter_sets, **where)
        )
    claims, wanted = [], []
    for c in range(draw(st.integers(1, 3))):
        reqs, req_specs = [], []
        for r in range(draw(st.integers(1, 2))):
            min_size = draw(st.integers(0, 3))
            count = draw(st.integers(1, 2))
            reqs.append(
                request(
                    f"r{r}", CLASS, f'device.attributes["{DRIVER}"].size >= {min_size}', count=count
                )
            )
            req_specs.append((f"r{r}", min_size, count))
        match = draw(st.booleans())
        constraints = [{"matchAttribute": f"{DRIVER}/root"}] if match else None
        claims.append(claim(f"c{c}", *reqs, constraints=constraints))
        wanted.append((req_specs, match))
    taken = draw(st.sets(st.sampled_from(sorted(devices)), max_size=3)) if devices else set()
    return {
        "slices": slices,
        "claims": claims,
        "wanted": wanted,
        "devices": devices,
        "taken": taken,
        "caps": caps,
    }


def _counters_hold(sc: dict[str, Any], chosen: Any) -> bool:
    """No pool with a counter gives out devices beyond what the taken ones leave."""
    for pool, cap in sc["caps"].items():
        mine = [d for d in chosen if d[1] == pool]
        if not mine:
            continue
        used = sum(sc["devices"][d]["units"] for d in (*sc["taken"], *mine) if d[1] == pool)
        if used > cap:
            return False
    return True


def _on_node(sc: dict[str, Any]) -> set[DeviceID]:
    out = set()
    for s in sc["slices"]:
        if s.spec.node_name == "node-2":
            continue
        for d in s.spec.devices:
            out.add((DRIVER, s.spec.pool.name, d.name))
    return out


def _brute_force_possible(sc: dict[str, Any]) -> bool:
    """Whether any assignment satisfies everything (small cases only)."""
    free = sorted(_on_node(sc) - sc["taken"])
    slots = []  # (claim index, min size, match)
    for ci, (reqs, match) in enumerate(sc["wanted"]):
        for _, min_size, count in reqs:
            slots += [(ci, min_size, match)] * count
    if len(slots) > len(free):
        return False
    for perm in itertools.permutations(free, len(slots)):
        ok = all(sc["devices"][d]["size"] >= m for d, (_, m, _) in zip(perm, slots, strict=True))
        if not ok:
            continue
        roots: dict[int, set[str]] = {}
        for d, (ci, _, match) in zip(perm, slots, strict=True):
            if match:
                roots.setdefault(ci, set()).add(sc["devices"][d]["root"])
        if all(len(v) == 1 for v in roots.values()) and _counters_hold(sc, perm):
            return True
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_allocations_are_exclusive_and_satisfy_selectors_and_constraints(
    sc: dict[str, Any],
) -> None:
    alloc = Allocator(
        Inventory(sc["slices"]), {CLASS: device_class()}, set(sc["taken"]), ExpressionCache()
    )
    results = alloc.allocate(NODE, sc["claims"])
    if not results:
        if len(_on_node(sc) - sc["taken"]) <= 7:
            assert not _brute_force_possible(sc)
        return
    assert len(results) == len(sc["claims"])
    seen: set[DeviceID] = set()
    on_node = _on_node(sc)
    for result, (reqs, match) in zip(results, sc["wanted"], strict=True):
        roots = set()
        for name, min_size, count in reqs:
            got = [r for r in result.devices.results if r.request == name]
            assert len(got) == count
            for r in got:
                dev = (r.driver, r.pool, r.device)
                assert dev not in seen and dev not in sc["taken"] and dev in on_node
                seen.add(dev)
                assert sc["devices"][dev]["size"] >= min_size
                roots.add(sc["devices"][dev]["root"])
        if match:
            assert len(roots) == 1
    assert _counters_hold(sc, seen)
