"""Property, for random shareable and dedicated devices with capacities and request
policies, random capacity requests and shares already allocated: an allocation never
puts a device's capacity over its value (the allocated shares' consumption plus the new
ones'), never hands a dedicated device out twice, rounds every share's consumption up
from what was asked (never below it) and within the policy, and marks exactly the shares
of devices allowing multiple allocations with a share ID."""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.quantity import parse_quantity
from ksched.dra.allocator import Allocator, Inventory, shared_allocations
from ksched.dra.cel import ExpressionCache
from tests.dra.factories import CLASS, DRIVER, claim, device, device_class, node, request, slice_

NODE = node("node-1")


@st.composite
def policy(draw: st.DrawFn, total: int) -> dict[str, Any] | None:
    kind = draw(st.sampled_from(["none", "range", "values"]))
    if kind == "none":
        return None
    if kind == "range":
        lo = draw(st.integers(1, total))
        step = draw(st.integers(1, 3))
        rng: dict[str, Any] = {"min": str(lo), "step": str(step)}
        if draw(st.booleans()):
            rng["max"] = str(lo + step * draw(st.integers(0, max(0, (total - lo) // step))))
        return {"default": str(lo), "validRange": rng}
    values = sorted(draw(st.sets(st.integers(1, total), min_size=1, max_size=3)))
    return {"default": str(draw(st.sampled_from(values))), "validValues": [str(v) for v in values]}


@st.composite
def scenario(draw: st.DrawFn) -> dict[str, Any]:
    devs, totals, multi, policies = [], {}, set(), {}
    for d in range(draw(st.integers(1, 4))):
        total = draw(st.integers(1, 8))
        cap: dict[str, Any] = {"value": str(total)}
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["allowMultipleAllocations"] = True
            multi.add(f"d{d}")
            p = draw(policy(total))
            if p is not None:
                cap["requestPolicy"] = policies[f"d{d}"] = p
        devs.append(device(f"d{d}", capacity={"bw": cap}, **extra))
        totals[f"d{d}"] = total
    # shares already allocated: some of each shareable device's capacity in use
    used = {d: draw(st.integers(0, totals[d])) for d in sorted(multi) if draw(st.booleans())}
    claims = []
    for c in range(draw(st.integers(1, 3))):
        reqs = []
        for r in range(draw(st.integers(1, 2))):
            fields: dict[str, Any] = {"count": draw(st.integers(1, 2))}
            if draw(st.booleans()):
                fields["capacity"] = {"requests": {"bw": str(draw(st.integers(1, 9)))}}
            reqs.append(request(f"r{r}", CLASS, **fields))
        claims.append(claim(f"c{c}", *reqs))
    return {
        "devices": devs,
        "totals": totals,
        "multi": multi,
        "policies": policies,
        "used": used,
        "claims": claims,
    }


def _obeys(got: Fraction, p: dict[str, Any] | None) -> bool:
    if p is None or got == parse_quantity(p["default"]):
        return True
    if "validValues" in p:
        return got in {parse_quantity(v) for v in p["validValues"]}
    rng = p["validRange"]
    lo, step = parse_quantity(rng["min"]), parse_quantity(rng["step"])
    hi = parse_quantity(rng["max"]) if "max" in rng else None
    return (hi is None or got <= hi) and (got - lo) % step == 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_shares_never_exceed_a_devices_capacity(sc: dict[str, Any]) -> None:
    ids = {d: (DRIVER, "pool-1", d) for d in sc["totals"]}
    shared = shared_allocations((ids[d], {"bw": Fraction(n)}) for d, n in sc["used"].items())
    alloc = Allocator(
        Inventory([slice_("s", sc["devices"], node_name="node-1")]),
        {CLASS: device_class()},
        set(),
        ExpressionCache(),
        shared=shared,
    )
    results = alloc.allocate(NODE, sc["claims"])
    if not results:
        return  # does not fit: nothing handed out
    consumed: dict[str, Fraction] = defaultdict(Fraction)
    for d, n in sc["used"].items():
        consumed[d] += n
    dedicated: list[str] = []
    asked = {
        (c.metadata.name, r.name): r.exactly.capacity
        for c in sc["claims"]
        for r in c.spec.devices.requests
        if r.exactly
    }
    for c, a in zip(sc["claims"], results, strict=True):
        for r in a.devices.results:
            if r.device in sc["multi"]:
                assert r.share_id and r.consumed_capacity is not None
                got = parse_quantity(r.consumed_capacity["bw"])
                consumed[r.device] += got
                assert _obeys(got, sc["policies"].get(r.device)), (got, r.device)
                want = asked[(c.metadata.name, r.request)]
                if want is not None:
                    assert got >= parse_quantity(want.requests["bw"])
            else:
                assert r.share_id is None and r.consumed_capacity is None
                dedicated.append(r.device)
                want = asked[(c.metadata.name, r.request)]
                if want is not None:
                    assert parse_quantity(want.requests["bw"]) <= sc["totals"][r.device]
    assert len(dedicated) == len(set(dedicated))
    for d, n in consumed.items():
        assert n <= sc["totals"][d], (d, n, sc["totals"][d])
    ids_ = [r.share_id for a in results for r in a.devices.results if r.share_id]
    assert len(ids_) == len(set(ids_))
