"""v1.36's default-on allocation features, after upstream's allocator_test.go cases of
the same names: admin access, device taints and consumable capacity (shares of devices
that allow multiple allocations, capacity requests and request policies)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest

from ksched.api.objects import decode
from ksched.api.quantity import format_quantity, parse_quantity
from ksched.api.resource import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from ksched.dra.allocator import (
    AllocationError,
    Allocator,
    DeviceID,
    Features,
    Inventory,
    Shared,
    allocated_devices,
    claim_shares,
    shared_allocations,
)
from ksched.dra.cel import ExpressionCache
from tests.dra.factories import (
    CLASS,
    DRIVER,
    DRIVER_B,
    claim,
    device,
    device_class,
    node,
    request,
    slice_,
)

NODE = node("node-1")
ON_NODE = {"node_name": "node-1"}
DEV1: DeviceID = (DRIVER, "pool-1", "dev-1")
DEV2: DeviceID = (DRIVER, "pool-1", "dev-2")
PORT = f"{DRIVER}/port"
# Consumable capacity and binding conditions off: upstream's "stable" allocator.
STABLE = Features(consumable_capacity=False, binding_conditions=False)

NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
NO_EXECUTE = {"key": "taint-key", "value": "taint-value", "effect": "NoExecute"}
TOLERATE_NO_SCHEDULE = {
    "key": "taint-key",
    "operator": "Equal",
    "value": "taint-value",
    "effect": "NoSchedule",
}
TOLERATE_NO_EXECUTE = {**TOLERATE_NO_SCHEDULE, "effect": "NoExecute"}
# (request, device, adminAccess, consumedCapacity)
Picked = tuple[str, str, bool, dict[str, str] | None]


@dataclass
class Case:
    claims: list[ResourceClaim]
    devices: list[dict[str, Any]]
    expect: list[list[Picked]] | None = None  # None: cannot allocate
    allocated: set[DeviceID] = field(default_factory=set)
    shared: Shared | None = None
    features: Features = field(default_factory=Features)
    classes: list[DeviceClass] = field(default_factory=lambda: [device_class()])
    error: str = ""


def run(c: Case) -> list[AllocationResult]:
    alloc = Allocator(
        Inventory([slice_("s", c.devices, **ON_NODE)]),
        {cl.metadata.name: cl for cl in c.classes},
        set(c.allocated),
        ExpressionCache(),
        features=c.features,
        shared=c.shared,
    )
    return alloc.allocate(NODE, c.claims)


def picked(results: list[AllocationResult]) -> list[list[Picked]]:
    return [
        [
            (r.request, r.device, bool(r.admin_access), r.consumed_capacity)
            for r in a.devices.results
        ]
        for a in results
    ]


def admin(name: str = "req-0", **fields: Any) -> dict[str, Any]:
    return request(name, CLASS, adminAccess=True, **fields)


def wants(amount: str | None = None, name: str = "req-0", **fields: Any) -> dict[str, Any]:
    """A request for one device asking ``amount`` of capacity "cap" (None: no request)."""
    if amount is not None:
        fields["capacity"] = {"requests": {"cap": amount}}
    return request(name, CLASS, **fields)


def shareable(
    name: str, value: str = "4", policy: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    cap: dict[str, Any] = {"value": value}
    if policy is not None:
        cap["requestPolicy"] = policy
    return device(name, allowMultipleAllocations=True, capacity={"cap": cap}, **extra)


# upstream's withCapacityRequestPolicyRange: default 2, min 2, step 2, max 4
RANGE = {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}
FRACTIONAL = {"default": "0.5", "validRange": {"min": "0.5", "step": "0.25"}}


def shared(*shares: tuple[DeviceID, dict[str, str] | None]) -> Shared:
    return shared_allocations(
        (d, None if c is None else {k: parse_quantity(v) for k, v in c.items()}) for d, c in shares
    )


CASES: dict[str, Case] = {
    # -- admin access ------------------------------------------------------------------------
    "count-devices-some-allocated-admin-access": Case(
        [claim("c", admin(count=2))],
        [device("dev-1"), device("dev-2")],
        expect=[[("req-0", "dev-1", True, None), ("req-0", "dev-2", True, None)]],
        allocated={DEV1},
    ),
    "all-devices-some-allocated-admin-access": Case(
        [claim("c", admin(allocationMode="All"))],
        [device("dev-1"), device("dev-2")],
        expect=[[("req-0", "dev-1", True, None), ("req-0", "dev-2", True, None)]],
        allocated={DEV1},
    ),
    "all-devices-some-allocating-admin-access": Case(
        # the first admin request takes dev-1 for the claim: "All" cannot take it again
        [claim("c", admin("req-0"), admin("req-1", allocationMode="All"))],
        [device("dev-1"), device("dev-2")],
    ),
    "separate-claims-share-device-admin-access": Case(
        [claim("c0", admin()), claim("c1", admin())],
        [device("dev-1"), device("dev-2")],
        expect=[[("req-0", "dev-1", True, None)], [("req-0", "dev-1", True, None)]],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        [claim("c0"), claim("c1", admin())],
        [device("dev-1"), device("dev-2")],
        expect=[[("req-0", "dev-1", False, None)], [("req-0", "dev-1", True, None)]],
    ),
    # -- device taints -----------------------------------------------------------------------
    "tainted-two-devices": Case(
        [claim()],
        [device("dev-1", taints=[NO_SCHEDULE]), device("dev-2", taints=[NO_EXECUTE])],
    ),
    "tainted-two-devices-tolerated": Case(
        [claim("c", request(tolerations=[TOLERATE_NO_EXECUTE]))],
        [device("dev-1", taints=[NO_SCHEDULE]), device("dev-2", taints=[NO_EXECUTE])],
        expect=[[("req-0", "dev-2", False, None)]],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        [claim("c", request(tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]))],
        [device("dev-1", taints=[NO_SCHEDULE, NO_EXECUTE])],
        expect=[[("req-0", "dev-1", False, None)]],
    ),
    "tainted-no-effect": Case(
        [claim()],
        [device("dev-1", taints=[{**NO_SCHEDULE, "effect": "None"}])],
        expect=[[("req-0", "dev-1", False, None)]],
    ),
    "tainted-wrong-value-not-tolerated": Case(
        [claim("c", request(tolerations=[{**TOLERATE_NO_SCHEDULE, "value": "other"}]))],
        [device("dev-1", taints=[NO_SCHEDULE])],
    ),
    "tainted-exists-any-key-tolerated": Case(
        [claim("c", request(tolerations=[{"operator": "Exists"}]))],
        [device("dev-1", taints=[NO_SCHEDULE, NO_EXECUTE])],
        expect=[[("req-0", "dev-1", False, None)]],
    ),
    "tainted-disabled": Case(
        [claim()],
        [device("dev-1", taints=[NO_SCHEDULE, NO_EXECUTE])],
        expect=[[("req-0", "dev-1", False, None)]],
        features=Features(device_taints=False),
    ),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        [
            claim(
                "c",
                {
                    "name": "req-0",
                    "firstAvailable": [
                        {"name": "sub-0", "deviceClassName": CLASS},
                        {
                            "name": "sub-1",
                            "deviceClassName": CLASS,
                            "tolerations": [TOLERATE_NO_EXECUTE],
                        },
                    ],
                },
            )
        ],
        [device("dev-1", taints=[NO_SCHEDULE]), device("dev-2", taints=[NO_EXECUTE])],
        expect=[[("req-0/sub-1", "dev-2", False, None)]],
    ),
    "tainted-admin-access": Case(
        [claim("c", admin())],
        [device("dev-1", taints=[NO_SCHEDULE])],
        allocated={DEV1, DEV2},
    ),
    "tainted-all-devices-single": Case(
        # "All" selects the tainted device and then cannot take it: no fit (no error)
        [claim("c", request(allocationMode="All"))],
        [device("dev-1", taints=[NO_SCHEDULE]), device("dev-2")],
    ),
    "tainted-device-with-broken-selector-is-an-error": Case(
        # selectors are judged before taints, as upstream does
        [claim("c", request("req-0", CLASS, 'device.attributes["x"].y'))],
        [device("dev-1", taints=[NO_SCHEDULE])],
        error="claim default/c: selector #0 on device ",
    ),
    # -- consumable capacity -----------------------------------------------------------------
    "consumable-capacity-with-range-policy-shares-one-device": Case(
        [claim("c0", wants("1")), claim("c1", wants("1"))],
        [shareable("dev-1", policy=RANGE)],
        expect=[
            [("req-0", "dev-1", False, {"cap": "2"})],
            [("req-0", "dev-1", False, {"cap": "2"})],
        ],
    ),
    "consumable-capacity-with-range-policy-step": Case(
        [claim("c", wants("3"))],
        [shareable("dev-1", policy=RANGE)],
        expect=[[("req-0", "dev-1", False, {"cap": "4"})]],
    ),
    "consumable-capacity-with-policy-without-capacity-request": Case(
        [claim("c0", wants()), claim("c1", wants())],
        [shareable("dev-1", policy=RANGE)],
        expect=[
            [("req-0", "dev-1", False, {"cap": "2"})],
            [("req-0", "dev-1", False, {"cap": "2"})],
        ],
    ),
    "consumable-capacity-without-policy-without-capacity-request-block": Case(
        # no request and no default: a share takes the whole capacity
        [claim("c0", wants()), claim("c1", wants())],
        [shareable("dev-1")],
    ),
    "consumable-capacity-with-valid-values-policy-round-up": Case(
        [claim("c", wants("2"))],
        [shareable("dev-1", "3", {"default": "1", "validValues": ["1", "3"]})],
        expect=[[("req-0", "dev-1", False, {"cap": "3"})]],
    ),
    "consumable-capacity-with-exceeded-capacity-request": Case(
        [claim("c", wants("5"))],
        [shareable("dev-1", policy=RANGE)],
    ),
    "consumable-capacity-request-over-max-sharing-policy": Case(
        # the policy's max is 4: 6 does not go, though the device has 10
        [claim("c", wants("6"))],
        [shareable("dev-1", "10", RANGE)],
    ),
    "consumable-capacity-exceeded-by-second-claim": Case(
        [claim("c0", wants("1")), claim("c1", wants("2"))],
        [shareable("dev-1", "2", RANGE)],
    ),
    "consumable-capacity-with-missing-capacity": Case(
        [claim("c", request(capacity={"requests": {"other": "1"}}))],
        [shareable("dev-1", policy=RANGE)],
    ),
    "consumable-capacity-with-allocated-capacity-use-remaining": Case(
        [claim("c", wants("2"))],
        [shareable("dev-1", policy=RANGE)],
        expect=[[("req-0", "dev-1", False, {"cap": "2"})]],
        shared=shared((DEV1, {"cap": "2"})),
    ),
    "consumable-capacity-with-allocated-capacity-next-device": Case(
        [claim("c", wants("2"))],
        [shareable("dev-1", "2", RANGE), shareable("dev-2", "2", RANGE)],
        expect=[[("req-0", "dev-2", False, {"cap": "2"})]],
        shared=shared((DEV1, {"cap": "2"})),
    ),
    "consumable-capacity-backtrack": Case(
        [
            claim(
                "c0",
                wants("2", "req-0"),
                wants("2", "req-1"),
                constraints=[{"matchAttribute": f"{DRIVER}/s"}],
            ),
            claim("c1", wants("2")),
        ],
        [
            shareable("dev-2", "2", RANGE, attributes={"s": {"string": "v1"}}),
            shareable("dev-1", "4", RANGE, attributes={"s": {"string": "v2"}}),
        ],
        expect=[
            [("req-0", "dev-1", False, {"cap": "2"}), ("req-1", "dev-1", False, {"cap": "2"})],
            [("req-0", "dev-2", False, {"cap": "2"})],
        ],
    ),
    "consumable-capacity-with-subrequest": Case(
        [
            claim(
                "c",
                {
                    "name": "req-0",
                    "firstAvailable": [
                        {
                            "name": "sub-0",
                            "deviceClassName": CLASS,
                            "capacity": {"requests": {"cap": "4"}},
                        },
                        {
                            "name": "sub-1",
                            "deviceClassName": CLASS,
                            "capacity": {"requests": {"cap": "2"}},
                        },
                    ],
                },
            )
        ],
        [shareable("dev-1", "2", RANGE)],
        expect=[[("req-0/sub-1", "dev-1", False, {"cap": "2"})]],
    ),
    "consumable-capacity-all-allocating-insufficient": Case(
        [claim("c", wants("1", "req-0"), wants("1", "req-1", allocationMode="All"))],
        [shareable("dev-1", "1"), shareable("dev-2", "1")],
    ),
    "consumable-capacity-all-in-use-insufficient-1.36": Case(
        # v1.36's "All" leaves out what has no capacity left before it starts
        [claim("c", wants("1", allocationMode="All"))],
        [shareable("dev-1", "1"), shareable("dev-2", "1")],
        expect=[[("req-0", "dev-2", False, {"cap": "1"})]],
        shared=shared((DEV1, {"cap": "1"})),
        features=Features(kube_1_37=False),
    ),
    "consumable-capacity-all-in-use-insufficient-1.37": Case(
        # v1.37's keeps it (only its own capacity counts then), and cannot take it
        [claim("c", wants("1", allocationMode="All"))],
        [shareable("dev-1", "1"), shareable("dev-2", "1")],
        shared=shared((DEV1, {"cap": "1"})),
    ),
    "consumable-capacity-all-over-the-device-capacity": Case(
        # what asks more than a device has is left out in both versions
        [claim("c", wants("2", allocationMode="All"))],
        [shareable("dev-1", "1"), shareable("dev-2", "2")],
        expect=[[("req-0", "dev-2", False, {"cap": "2"})]],
    ),
    "consumable-capacity-dedicated-device-with-capacity-request": Case(
        [claim("c", wants("1"))],
        [device("dev-1", capacity={"cap": {"value": "1"}})],
        expect=[[("req-0", "dev-1", False, None)]],
    ),
    "consumable-capacity-dedicated-device-request-over-capacity": Case(
        [claim("c", wants("2"))],
        [device("dev-1", capacity={"cap": {"value": "1"}}), device("dev-2")],
    ),
    "consumable-capacity-dedicated-device-with-multiple-requests": Case(
        [claim("c0", wants("1")), claim("c1", wants("1"))],
        [device("dev-1", capacity={"cap": {"value": "2"}})],
    ),
    "allow-multiple-allocations-not-allocate-device-already-dedicated": Case(
        [claim("c", wants("1"))],
        [shareable("dev-1", "2", RANGE)],
        allocated={DEV1},
    ),
    # -- DRAFractionalCapacityRange (v1.37, beta and off) --------------------------------------
    "fractional-range-rounds-up-in-thousandths": Case(
        [claim("c", wants("0.6"))],
        [shareable("dev-1", "2", FRACTIONAL)],
        expect=[[("req-0", "dev-1", False, {"cap": "750m"})]],
        features=Features(fractional_capacity_range=True),
    ),
    "fractional-range-off-rounds-whole-units": Case(
        # Value() of min 0.5 and step 0.25 is 1 each: 0.6 takes 1
        [claim("c", wants("0.6"))],
        [shareable("dev-1", "2", FRACTIONAL)],
        expect=[[("req-0", "dev-1", False, {"cap": "1"})]],
    ),
    "fractional-range-request-below-a-thousandth-is-an-error": Case(
        [claim("c", wants("0.5001"))],
        [shareable("dev-1", "2", FRACTIONAL)],
        features=Features(fractional_capacity_range=True),
        error="claim default/c, request req-0: checking capacity for device "
        'driver-a/pool-1/dev-1: capacity "cap": capacity request cannot be represented in '
        "the device's range arithmetic: request 500100u is not a representable milli value",
    ),
    "fractional-range-all-names-the-device-as-its-slice": Case(
        [claim("c", wants("0.5001", allocationMode="All"))],
        [shareable("dev-1", "2", FRACTIONAL)],
        features=Features(fractional_capacity_range=True),
        error="claim default/c, request req-0: checking capacity for device dev-1: ",
    ),
    "fractional-range-whole-bounds-in-thousandths-too": Case(
        # whole bounds take the milli path too, rounding as whole units do
        [claim("c", wants("2.5"))],
        [shareable("dev-1", "4", {"default": "1", "validRange": {"min": "1", "step": "1"}})],
        expect=[[("req-0", "dev-1", False, {"cap": "3"})]],
        features=Features(fractional_capacity_range=True),
    ),
    # -- distinctAttribute, as upstream's constraint keeps it ---------------------------------
    "distinct-attribute-compares-with-each-requests-latest-device-1.36": Case(
        # v1.36 keeps one value per request, the latest device's: port 0, 1, 0 pass
        [claim("c", request(allocationMode="All"), constraints=[{"distinctAttribute": PORT}])],
        [device("dev-1", {"port": 0}), device("dev-2", {"port": 1}), device("dev-3", {"port": 0})],
        expect=[
            [
                ("req-0", "dev-1", False, None),
                ("req-0", "dev-2", False, None),
                ("req-0", "dev-3", False, None),
            ]
        ],
        features=Features(kube_1_37=False),
    ),
    "distinct-attribute-compares-with-every-device-1.37": Case(
        # v1.37 keeps every taken device's value: the third port 0 is refused
        [claim("c", request(allocationMode="All"), constraints=[{"distinctAttribute": PORT}])],
        [device("dev-1", {"port": 0}), device("dev-2", {"port": 1}), device("dev-3", {"port": 0})],
        error="claim default/c, request req-0: cannot add device driver-a/pool-1/dev-3 because "
        "a claim constraint would not be satisfied",
    ),
    "distinct-attribute-count-backtracks-1.37": Case(
        # count 2: dev-1 and dev-2 clash, dev-2 is taken back, dev-3 fits
        [claim("c", request(count=2), constraints=[{"distinctAttribute": PORT}])],
        [device("dev-1", {"port": 0}), device("dev-2", {"port": 0}), device("dev-3", {"port": 1})],
        expect=[[("req-0", "dev-1", False, None), ("req-0", "dev-3", False, None)]],
    ),
    "distinct-attribute-across-requests": Case(
        [
            claim(
                "c",
                request("req-0"),
                request("req-1"),
                constraints=[{"distinctAttribute": PORT}],
            )
        ],
        [device("dev-1", {"port": 0}), device("dev-2", {"port": 0}), device("dev-3", {"port": 1})],
        expect=[[("req-0", "dev-1", False, None), ("req-1", "dev-3", False, None)]],
    ),
    "distinct-attribute-all-after-a-request-is-an-error": Case(
        # req-1 ("All") meets req-0's port 0 again: a constraint refusing an "All" device
        [
            claim(
                "c",
                request("req-0"),
                request("req-1", allocationMode="All"),
                constraints=[{"distinctAttribute": PORT}],
            )
        ],
        [device("dev-1", {"port": 0}), device("dev-2", {"port": 0})],
        error="claim default/c, request req-1: cannot add device driver-a/pool-1/dev-1 because "
        "a claim constraint would not be satisfied",
    ),
    # -- upstream's "stable" allocator: consumable capacity and binding conditions off ------
    "stable-allocator-ignores-capacity-requests": Case(
        [claim("c", wants("100"))],
        [shareable("dev-1", "1")],
        expect=[[("req-0", "dev-1", False, None)]],
        features=STABLE,
    ),
    "stable-allocator-refuses-distinct-attribute": Case(
        [
            claim(
                "c", request(), constraints=[{"matchAttribute": PORT}, {"distinctAttribute": PORT}]
            )
        ],
        [device("dev-1", {"port": 0})],
        features=STABLE,
        error="claim default/c, constraint #1: empty constraint (unsupported constraint type?)",
    ),
    "stable-allocator-cel-sees-no-multiple-allocations": Case(
        [claim("c", request("req-0", CLASS, "device.allowMultipleAllocations"))],
        [shareable("dev-1")],
        features=STABLE,
    ),
    "incubating-allocator-cel-sees-multiple-allocations": Case(
        [claim("c", request("req-0", CLASS, "device.allowMultipleAllocations"))],
        [shareable("dev-1")],
        expect=[[("req-0", "dev-1", False, {"cap": "4"})]],
    ),
    "empty-constraint-is-an-error": Case(
        [claim("c", request(), constraints=[{"requests": ["req-0"]}])],
        [device("dev-1")],
        error="claim default/c, constraint #0: empty constraint (unsupported constraint type?)",
    ),
    "consumable-capacity-disabled-feature": Case(
        # binding conditions on: the "incubating" allocator, which refuses capacity requests
        [claim("c", wants("1"))],
        [shareable("dev-1")],
        features=Features(consumable_capacity=False),
        error="claim default/c, request req-0: has capacity requests, but the "
        "DRAConsumableCapacity feature is disabled",
    ),
    "consumable-capacity-disabled-device-taken-once": Case(
        [claim("c0"), claim("c1")],
        [shareable("dev-1")],
        features=Features(consumable_capacity=False),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocation_features(name: str) -> None:
    c = CASES[name]
    if c.error:
        with pytest.raises(AllocationError) as e:
            run(c)
        assert c.error in str(e.value)
        return
    assert picked(run(c)) == (c.expect if c.expect is not None else [])


def test_shares_carry_distinct_share_ids() -> None:
    got = run(CASES["consumable-capacity-with-range-policy-shares-one-device"])
    ids = [r.share_id for a in got for r in a.devices.results]
    assert all(ids) and len(set(ids)) == 2
    # a dedicated device has none
    (a,) = run(CASES["consumable-capacity-dedicated-device-with-capacity-request"])
    assert a.devices.results[0].share_id is None


def _allocated_claim(name: str, *results: dict[str, Any]) -> ResourceClaim:
    return claim(name, status={"allocation": {"devices": {"results": list(results)}}})


def test_shares_are_not_taken_devices_but_count_their_capacity() -> None:
    share = {"request": "r", "driver": DRIVER, "pool": "pool-1", "device": "dev-1"}
    claims = [
        _allocated_claim("a", {**share, "shareID": "u1", "consumedCapacity": {"cap": "1Ki"}}),
        _allocated_claim("b", {**share, "shareID": "u2", "consumedCapacity": {"cap": "1"}}),
        _allocated_claim("c", {**share, "device": "dev-2", "shareID": "u3"}),
        _allocated_claim("d", {**share, "device": "dev-3"}),
    ]
    assert allocated_devices(claims) == {(DRIVER, "pool-1", "dev-3")}
    state = shared_allocations(s for c in claims for s in claim_shares(c))
    assert state.devices == {DEV1, DEV2}
    assert state.capacity == {DEV1: {"cap": Fraction(1025)}}  # dev-2 recorded none
    # with the feature off a share is a taken device, as upstream's fallback
    off = Features(consumable_capacity=False)
    assert allocated_devices(claims, off) == {DEV1, DEV2, (DRIVER, "pool-1", "dev-3")}
    assert not shared_allocations((s for c in claims for s in claim_shares(c)), off)


def test_shared_counters_are_consumed_once_per_shared_device() -> None:
    """A shared device consumes its pool's counters once, whatever its number of shares
    (upstream skips the counter check for a device whose capacity is in use)."""
    counters = [{"name": "set", "counters": {"mem": {"value": "4"}}}]
    consumes = [{"counterSet": "set", "counters": {"mem": {"value": "3"}}}]
    devices = [
        shareable("dev-1", "4", RANGE, consumesCounters=consumes),
        shareable("dev-2", "4", RANGE, consumesCounters=consumes),
    ]
    s = decode(
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "node-1",
                "devices": devices,
                "sharedCounters": counters,
            },
        },
        ResourceSlice,
    )

    def alloc(shared_state: Shared | None) -> list[AllocationResult]:
        a = Allocator(
            Inventory([s]),
            {CLASS: device_class()},
            set(),
            ExpressionCache(),
            shared=shared_state,
        )
        return a.allocate(NODE, [claim("c0", wants("2")), claim("c1", wants("2"))])

    # both shares on dev-1: counters consumed once (3 of 4); dev-2 would need 3 more
    assert picked(alloc(None)) == [
        [("req-0", "dev-1", False, {"cap": "2"})],
        [("req-0", "dev-1", False, {"cap": "2"})],
    ]
    # dev-1 already shared (its counters counted as allocated) with 2 of 4 left: one more
    # share fits there, the next goes nowhere (dev-2's counters would exceed the set)
    assert picked(alloc(shared((DEV1, {"cap": "2"})))) == []


@pytest.mark.parametrize("kube_1_37", [False, True])
def test_a_share_without_consumption_has_its_counters_charged_from_1_37(kube_1_37: bool) -> None:
    """A device an allocated share without ``consumedCapacity`` holds: v1.36 charges its
    counters again for a new share (only recorded consumption marks it in use), v1.37
    does not (``AllocatedSharedDeviceIDs``)."""
    counters = [{"name": "set", "counters": {"mem": {"value": "4"}}}]
    consumes = [{"counterSet": "set", "counters": {"mem": {"value": "3"}}}]
    s = decode(
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "node-1",
                "devices": [
                    device("dev-1", allowMultipleAllocations=True, consumesCounters=consumes)
                ],
                "sharedCounters": counters,
            },
        },
        ResourceSlice,
    )
    a = Allocator(
        Inventory([s]),
        {CLASS: device_class()},
        set(),
        ExpressionCache(),
        features=Features(kube_1_37=kube_1_37),
        shared=shared((DEV1, None)),
    )
    got = picked(a.allocate(NODE, [claim("c0", wants())]))
    assert got == ([[("req-0", "dev-1", False, None)]] if kube_1_37 else [])


@pytest.mark.parametrize("kube_1_37", [False, True])
def test_pools_of_two_drivers_with_one_name_share_counters_in_1_36(kube_1_37: bool) -> None:
    """v1.36 keys a pool's counters by its name alone: driver-b's pool "p" is judged by
    driver-a's counters (computed first) and the consumption of both."""

    def pool(driver: str, total: str) -> ResourceSlice:
        consumes = [{"counterSet": "set", "counters": {"mem": {"value": "3"}}}]
        raw = {
            "metadata": {"name": f"s-{driver}"},
            "spec": {
                "driver": driver,
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "node-1",
                "devices": [device("dev", consumesCounters=consumes)],
                "sharedCounters": [{"name": "set", "counters": {"mem": {"value": total}}}],
            },
        }
        return decode(raw, ResourceSlice)

    a = Allocator(
        Inventory([pool(DRIVER, "8"), pool(DRIVER_B, "1")]),
        {CLASS: device_class()},
        set(),
        ExpressionCache(),
        features=Features(kube_1_37=kube_1_37),
    )
    on = [
        claim(f"c-{d}", request("req-0", CLASS, f'device.driver == "{d}"'))
        for d in (DRIVER, DRIVER_B)
    ]
    got = [[d for _, d, _, _ in c] for c in picked(a.allocate(NODE, on))]
    assert got == ([] if kube_1_37 else [["dev"], ["dev"]])


def test_format_quantity_prints_what_parses_back() -> None:
    for text, want in (("2", "2"), ("1024", "1Ki"), ("3Gi", "3Gi"), ("1500", "1500")):
        assert format_quantity(parse_quantity(text)) == want
    for text in ("500m", "1.5", "0.000001", "7n", "-2Ki"):
        assert parse_quantity(format_quantity(parse_quantity(text))) == parse_quantity(text)


# -- binding conditions ------------------------------------------------------------------------

ON = Features()
NEEDS_ATTACH = {"bindingConditions": ["Attached"], "bindingFailureConditions": ["Failed"]}


def _slices_bc() -> list[ResourceSlice]:
    """Pool "a-attach" (sorted first by name) has a device with binding conditions; pool
    "b-plain" has none."""
    return [
        slice_("s1", [device("needs-attach", **NEEDS_ATTACH)], pool="a-attach", **ON_NODE),
        slice_("s2", [device("plain")], pool="b-plain", **ON_NODE),
    ]


def _allocate_bc(
    slices: list[ResourceSlice], claims: list[ResourceClaim], features: Features = ON
) -> list[AllocationResult]:
    return Allocator(
        Inventory(slices), {CLASS: device_class()}, set(), ExpressionCache(), features=features
    ).allocate(NODE, claims)


def test_pools_with_binding_conditions_are_searched_last() -> None:
    (one,) = _allocate_bc(_slices_bc(), [claim()])
    assert [r.device for r in one.devices.results] == ["plain"]
    # the plain device taken: the one with binding conditions goes, carrying them
    got = _allocate_bc(_slices_bc(), [claim("c0"), claim("c1")])
    (r,) = got[1].devices.results
    assert (r.device, r.binding_conditions, r.binding_failure_conditions) == (
        "needs-attach",
        ["Attached"],
        ["Failed"],
    )
    assert got[0].devices.results[0].binding_conditions == []


def test_binding_conditions_feature_off_hands_such_devices_to_no_one() -> None:
    off = Features(binding_conditions=False)
    assert picked(_allocate_bc(_slices_bc(), [claim("c0"), claim("c1")], off)) == []
    (one,) = _allocate_bc(_slices_bc(), [claim()], off)
    assert one.devices.results[0].device == "plain"


def test_a_device_binding_to_the_node_ties_the_allocation_to_it() -> None:
    """``bindsToNode`` on a network-attached device: the allocation's node selector names
    the node allocated for, not the slice's selector."""
    anywhere = slice_("s", [device("d", bindsToNode=True, **NEEDS_ATTACH)], all_nodes=True)
    (a,) = _allocate_bc([anywhere], [claim()])
    assert a.node_selector is not None
    (term,) = a.node_selector.node_selector_terms
    assert [(f.key, f.values) for f in term.match_fields] == [("metadata.name", ["node-1"])]
    plain = slice_("s", [device("d")], all_nodes=True)
    assert _allocate_bc([plain], [claim()])[0].node_selector is None


def test_unreadable_quantities_never_crash() -> None:
    """What the API server would refuse, from a hand-written cluster file: a device whose
    capacity or policy does not parse goes to no one; a request's does not parse is the
    claim's error."""
    bad_device = Case(
        [claim("c", wants("1"))],
        [
            shareable("dev-1", "lots"),
            shareable("dev-2", "4", {"default": "x"}),
            device("dev-3", capacity={"cap": {"value": "4"}}),
        ],
    )
    assert picked(run(bad_device)) == [[("req-0", "dev-3", False, None)]]
    bad_request = Case([claim("c", wants("many"))], [shareable("dev-1")])
    with pytest.raises(AllocationError) as e:
        run(bad_request)
    assert str(e.value).startswith("claim default/c, request req-0: capacity.requests:")
