"""The structured allocator, table-driven after upstream's allocator_test.go: the same
kinds of cases (simple, other node, all devices, constraints, prioritized lists, admin
access, already allocated, network-attached, broken CEL, missing class, incomplete
pools) with the same expectations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ksched.api.objects import Node
from ksched.api.resource import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from ksched.dra.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    DeviceID,
    Features,
    Inventory,
    allocated_devices,
)
from ksched.dra.cel import ExpressionCache
from tests.dra.factories import (
    CLASS,
    DRIVER,
    DRIVER_B,
    allocated_status,
    claim,
    device,
    device_class,
    node,
    request,
    slice_,
)

NODE = node("node-1", region="west")
OTHER = node("node-2", region="east")
ON_NODE = {"node_name": "node-1"}
ON_OTHER = {"node_name": "node-2"}
Picked = list[tuple[str, str, str, str]]  # request, driver, pool, device


@dataclass
class Case:
    claims: list[ResourceClaim]
    slices: list[ResourceSlice]
    expect: list[Picked] | None = None  # None: cannot allocate ([])
    classes: list[DeviceClass] = field(default_factory=lambda: [device_class()])
    allocated: set[DeviceID] = field(default_factory=set)
    node: Node = NODE
    error: str = ""
    admin_access: bool = True
    kube_1_37: bool = True


def _picked(results: list[AllocationResult]) -> list[Picked]:
    return [[(r.request, r.driver, r.pool, r.device) for r in a.devices.results] for a in results]


def run(c: Case) -> list[AllocationResult]:
    alloc = Allocator(
        Inventory(c.slices),
        {cl.metadata.name: cl for cl in c.classes},
        set(c.allocated),
        ExpressionCache(),
        features=Features(admin_access=c.admin_access, kube_1_37=c.kube_1_37),
    )
    return alloc.allocate(c.node, c.claims)


def two(pool: str = "pool-1", **where: Any) -> ResourceSlice:
    return slice_(
        f"slice-{pool}", [device("dev-1"), device("dev-2")], pool=pool, **(where or ON_NODE)
    )


def first_available(*subs: tuple[str, int]) -> dict[str, Any]:
    """Request "req-0" with subrequests (name, count) of class-a, in order."""
    alts = [{"name": n, "deviceClassName": CLASS, "count": c} for n, c in subs]
    return {"name": "req-0", "firstAvailable": alts}


def in_region(region: str) -> dict[str, Any]:
    """A node selector for nodes labelled region=<region>."""
    req = {"key": "region", "operator": "In", "values": [region]}
    return {"nodeSelectorTerms": [{"matchExpressions": [req]}]}


def rooted(*roots: str) -> ResourceSlice:
    """Devices d1, d2, ... on node-1 with these "root" attributes."""
    devs = [device(f"d{i + 1}", {"root": r}) for i, r in enumerate(roots)]
    return slice_("s", devs, **ON_NODE)


ALL_SAME_ROOT = claim(
    "c", request(allocationMode="All"), constraints=[{"matchAttribute": f"{DRIVER}/root"}]
)

CASES: dict[str, Case] = {
    "empty": Case([], [two()], expect=[]),
    "simple": Case([claim()], [two()], expect=[[("req-0", DRIVER, "pool-1", "dev-1")]]),
    "other-node": Case([claim()], [two(**ON_OTHER)], expect=None),
    "no-slices": Case([claim()], [], expect=None),
    "small-and-large": Case(
        [claim("c", request("req-0", CLASS, 'device.attributes["driver-a"].size >= 2'))],
        [
            slice_(
                "s",
                [device("small", {"size": 1}), device("large", {"size": 2})],
                **ON_NODE,
            )
        ],
        expect=[[("req-0", DRIVER, "pool-1", "large")]],
    ),
    "count-2": Case(
        [claim("c", request(count=2))],
        [two()],
        expect=[[("req-0", DRIVER, "pool-1", "dev-1"), ("req-0", DRIVER, "pool-1", "dev-2")]],
    ),
    "count-too-large": Case([claim("c", request(count=3))], [two()], expect=None),
    "two-claims-share-nothing": Case(
        [claim("c1"), claim("c2")],
        [two()],
        expect=[
            [("req-0", DRIVER, "pool-1", "dev-1")],
            [("req-0", DRIVER, "pool-1", "dev-2")],
        ],
    ),
    "three-claims-two-devices": Case([claim("c1"), claim("c2"), claim("c3")], [two()]),
    "already-allocated": Case(
        [claim()],
        [two()],
        allocated={(DRIVER, "pool-1", "dev-1")},
        expect=[[("req-0", DRIVER, "pool-1", "dev-2")]],
    ),
    "all-allocated": Case(
        [claim()],
        [two()],
        allocated={(DRIVER, "pool-1", "dev-1"), (DRIVER, "pool-1", "dev-2")},
    ),
    "admin-access-takes-allocated-device": Case(
        [claim("c", request(adminAccess=True))],
        [two()],
        allocated={(DRIVER, "pool-1", "dev-1"), (DRIVER, "pool-1", "dev-2")},
        expect=[[("req-0", DRIVER, "pool-1", "dev-1")]],
    ),
    "admin-access-disabled": Case(
        [claim("c", request(adminAccess=True))],
        [two()],
        admin_access=False,
        error="claim default/c, request req-0: admin access is requested, but the feature is disabled",
    ),
    "all-devices": Case(
        [claim("c", request(allocationMode="All"))],
        [two()],
        expect=[[("req-0", DRIVER, "pool-1", "dev-1"), ("req-0", DRIVER, "pool-1", "dev-2")]],
    ),
    "all-devices-one-allocated": Case(
        [claim("c", request(allocationMode="All"))],
        [two()],
        allocated={(DRIVER, "pool-1", "dev-2")},
    ),
    "all-devices-none-match": Case(
        [claim("c", request("req-0", CLASS, "false", allocationMode="All"))], [two()]
    ),
    "all-devices-incomplete-pool": Case(
        [claim("c", request(allocationMode="All"))],
        [slice_("s", [device("dev-1")], count=2, **ON_NODE)],
        error="claim default/c, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently being updated",
    ),
    "old-generation-ignored": Case(
        [claim()],
        [
            slice_("old", [device("old-dev")], generation=1, **ON_NODE),
            slice_("new", [device("new-dev")], generation=2, **ON_NODE),
        ],
        expect=[[("req-0", DRIVER, "pool-1", "new-dev")]],
    ),
    "network-attached-all-nodes": Case(
        [claim()],
        [slice_("s", [device("net")], all_nodes=True)],
        expect=[[("req-0", DRIVER, "pool-1", "net")]],
    ),
    "network-attached-node-selector": Case(
        [claim()],
        [slice_("s", [device("net")], node_selector=in_region("west"))],
        expect=[[("req-0", DRIVER, "pool-1", "net")]],
    ),
    "network-attached-node-selector-other-region": Case(
        [claim()],
        [slice_("s", [device("net")], node_selector=in_region("east"))],
    ),
    "per-device-node-selection": Case(
        [claim("c", request(count=2))],
        [
            slice_(
                "s",
                [
                    device("here", nodeName="node-1"),
                    device("there", nodeName="node-2"),
                    device("everywhere", allNodes=True),
                ],
                per_device_node_selection=True,
            )
        ],
        expect=[[("req-0", DRIVER, "pool-1", "here"), ("req-0", DRIVER, "pool-1", "everywhere")]],
    ),
    "several-drivers": Case(
        [claim("c", request("a", "class-a"), request("b", "class-b"))],
        [
            slice_("sa", [device("dev-a")], driver=DRIVER, **ON_NODE),
            slice_("sb", [device("dev-b")], driver=DRIVER_B, **ON_NODE),
        ],
        classes=[
            device_class("class-a", f'device.driver == "{DRIVER}"'),
            device_class("class-b", f'device.driver == "{DRIVER_B}"'),
        ],
        expect=[[("a", DRIVER, "pool-1", "dev-a"), ("b", DRIVER_B, "pool-1", "dev-b")]],
    ),
    "class-selector-filters": Case(
        [claim()],
        [two()],
        classes=[device_class(CLASS, 'device.driver == "someone-else"')],
    ),
    "match-attribute": Case(
        [
            claim(
                "c",
                request(count=2),
                constraints=[{"matchAttribute": f"{DRIVER}/root"}],
            )
        ],
        [rooted("r1", "r2", "r2")],
        expect=[[("req-0", DRIVER, "pool-1", "d2"), ("req-0", DRIVER, "pool-1", "d3")]],
    ),
    "match-attribute-across-requests": Case(
        [
            claim(
                "c",
                request("a"),
                request("b"),
                constraints=[{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/root"}],
            )
        ],
        [rooted("r1", "r2", "r1")],
        expect=[[("a", DRIVER, "pool-1", "d1"), ("b", DRIVER, "pool-1", "d3")]],
    ),
    "match-attribute-missing-attribute": Case(
        [claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/root"}])],
        [two()],
    ),
    "match-attribute-no-match": Case(
        [claim("c", request(count=2), constraints=[{"matchAttribute": f"{DRIVER}/root"}])],
        [rooted("r1", "r2")],
    ),
    # upstream's allocateDevice with must=true: an "All" request's devices must all fit
    # the claim's constraints, else the claim is wrong (an error, not a dead end)
    "all-devices-constraint-not-satisfied": Case(
        [ALL_SAME_ROOT],
        [rooted("r1", "r2")],
        error="claim default/c, request req-0: cannot add device driver-a/pool-1/d2 because "
        "a claim constraint would not be satisfied",
    ),
    # upstream names a subrequest by its own name (requestAccessor.name()), not "req/sub"
    "all-devices-subrequest-constraint-names-the-subrequest": Case(
        [
            claim(
                "c",
                {
                    "name": "req-0",
                    "firstAvailable": [
                        {"name": "every", "deviceClassName": CLASS, "allocationMode": "All"}
                    ],
                },
                constraints=[{"matchAttribute": f"{DRIVER}/root"}],
            )
        ],
        [rooted("r1", "r2")],
        error="claim default/c, request every: cannot add device driver-a/pool-1/d2 because "
        "a claim constraint would not be satisfied",
    ),
    "all-devices-constraint-satisfied": Case(
        [ALL_SAME_ROOT],
        [rooted("r1", "r1")],
        expect=[[("req-0", DRIVER, "pool-1", "d1"), ("req-0", DRIVER, "pool-1", "d2")]],
    ),
    "distinct-attribute": Case(
        [claim("c", request(count=2), constraints=[{"distinctAttribute": f"{DRIVER}/root"}])],
        [rooted("r1", "r1", "r2")],
        expect=[[("req-0", DRIVER, "pool-1", "d1"), ("req-0", DRIVER, "pool-1", "d3")]],
    ),
    "prioritized-list-first": Case(
        [claim("c", first_available(("big", 2), ("small", 1)))],
        [two()],
        expect=[
            [("req-0/big", DRIVER, "pool-1", "dev-1"), ("req-0/big", DRIVER, "pool-1", "dev-2")]
        ],
    ),
    "prioritized-list-falls-back": Case(
        [claim("c", first_available(("big", 3), ("small", 1)))],
        [two()],
        expect=[[("req-0/small", DRIVER, "pool-1", "dev-1")]],
    ),
    "prioritized-list-with-constraint": Case(
        [
            claim(
                "c",
                first_available(("pair", 2), ("one", 1)),
                constraints=[{"requests": ["req-0"], "matchAttribute": f"{DRIVER}/root"}],
            )
        ],
        [rooted("r1", "r2")],
        expect=[[("req-0/one", DRIVER, "pool-1", "d1")]],
    ),
    "backtracking-across-claims": Case(
        [
            claim("c1", request("req-0", CLASS, 'device.attributes["driver-a"].ok')),
            claim("c2", request("req-0", CLASS, 'device.attributes["driver-a"].only')),
        ],
        [
            slice_(
                "s",
                [
                    device("d1", {"ok": True, "only": True}),
                    device("d2", {"ok": True, "only": False}),
                ],
                **ON_NODE,
            )
        ],
        expect=[[("req-0", DRIVER, "pool-1", "d2")], [("req-0", DRIVER, "pool-1", "d1")]],
    ),
    "tainted-device-skipped": Case(
        [claim()],
        [
            slice_(
                "s",
                [device("bad", taints=[{"key": "k", "effect": "NoSchedule"}]), device("good")],
                **ON_NODE,
            )
        ],
        expect=[[("req-0", DRIVER, "pool-1", "good")]],
    ),
    "tainted-device-tolerated": Case(
        [claim("c", request(tolerations=[{"key": "k", "operator": "Exists"}]))],
        [slice_("s", [device("bad", taints=[{"key": "k", "effect": "NoSchedule"}])], **ON_NODE)],
        expect=[[("req-0", DRIVER, "pool-1", "bad")]],
    ),
    "missing-class": Case(
        [claim("c", request("req-0", "no-such-class"))],
        [two()],
        error="claim default/c, request req-0: could not retrieve device class no-such-class",
    ),
    "invalid-cel-in-class": Case(
        [claim()],
        [two()],
        classes=[device_class(CLASS, "noSuchVar")],
        error="class class-a: selector #0 on device driver-a/pool-1/dev-1: CEL runtime error:",
    ),
    "cel-compile-error-in-claim": Case(
        [claim("c", request("req-0", CLASS, "1 +"))],
        [two()],
        error="claim default/c: selector #0: CEL compile error:",
    ),
    "cel-runtime-error-in-claim": Case(
        [claim("c", request("req-0", CLASS, 'device.attributes["x"].y'))],
        [two()],
        # "x": an empty map
        error="claim default/c: selector #0 on device driver-a/pool-1/dev-1: CEL runtime "
        "error: no such key: y. consider using CEL optional chaining (.? followed by "
        "orValue()) or guarding the check with has() for optional fields",
    ),
    "cel-runtime-error-in-claim-1.36": Case(
        [claim("c", request("req-0", CLASS, 'device.attributes["x"].y'))],
        [two()],
        kube_1_37=False,
        error="claim default/c: selector #0: CEL runtime error: no such key: y",
    ),
    # Upstream gathers an "All" request's devices while validating the requests, before
    # the search: the second claim's selector fails on dev-2 although the first claim
    # (three devices of two) could never be satisfied (oracle seed 4032).
    "cel-runtime-error-in-all-request-before-the-search": Case(
        [
            claim("c1", request("req-0", CLASS, allocationMode="ExactCount", count=3)),
            claim(
                "c2",
                request(
                    "req-0",
                    CLASS,
                    'device.attributes["driver-a"].index / (device.attributes["driver-a"].index - 2) >= 0',
                    allocationMode="All",
                ),
            ),
        ],
        [slice_("s", [device("dev-1", {"index": 1}), device("dev-2", {"index": 2})], **ON_NODE)],
        error="claim default/c2: selector #0 on device driver-a/pool-1/dev-2: CEL runtime error: division by zero",
    ),
    "unsupported-mode": Case(
        [claim("c", request(allocationMode="Some"))],
        [two()],
        error="claim default/c, request req-0: unsupported count mode Some",
    ),
    "too-many-devices": Case(
        [claim("c", request(count=33))],
        [two()],
        error="claim default/c, request req-0: exceeds the claim limit of 32 devices",
    ),
    "requests-together-over-the-claim-limit-1.36": Case(
        [claim("c", request("req-0", count=20), request("req-1", count=20))],
        [two()],
        kube_1_37=False,
        error="claim default/c: number of requested devices 40 exceeds the claim limit of 32",
    ),
    "requests-together-over-the-claim-limit-1.37": Case(
        # v1.37 stops at the request that passes the limit (subrequests: the least)
        [
            claim(
                "c",
                request("req-a", count=20),
                first_available(("x", 30), ("y", 12)),
                request("req-b", count=1),
            )
        ],
        [two()],
        error="claim default/c, request req-b: adding 1 devices exceeds the claim limit of "
        "32, with 32 already accounted for",
    ),
    "duplicate-device-names-invalid-pool": Case(
        [claim()],
        [slice_("s", [device("d"), device("d")], **ON_NODE)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocator_table(name: str) -> None:
    c = CASES[name]
    if c.error:
        with pytest.raises(AllocationError) as e:
            run(c)
        assert c.error in str(e.value)
        return
    got = run(c)
    assert _picked(got) == (c.expect if c.expect is not None else [])


def test_node_local_allocation_selects_the_node() -> None:
    (a,) = run(Case([claim()], [two()]))
    assert a.node_selector is not None
    (term,) = a.node_selector.node_selector_terms
    assert [(r.key, r.operator, r.values) for r in term.match_fields] == [
        ("metadata.name", "In", ["node-1"])
    ]


def test_network_attached_allocation_carries_the_slice_selector_or_none() -> None:
    (a,) = run(Case([claim()], [slice_("s", [device("net")], node_selector=in_region("west"))]))
    assert a.node_selector is not None
    assert a.node_selector.node_selector_terms[0].match_expressions[0].key == "region"
    (b,) = run(Case([claim()], [slice_("s", [device("net")], all_nodes=True)]))
    assert b.node_selector is None


OPAQUE = {"opaque": {"driver": DRIVER, "parameters": {"x": 1}}}


def _configs(c: ResourceClaim, kube_1_37: bool, *classes: DeviceClass) -> Any:
    cls = list(classes) or [device_class(CLASS, config=[OPAQUE])]
    slices = [slice_("s", [device(f"dev-{i}") for i in range(3)], **ON_NODE)]
    (a,) = run(Case([c], slices, classes=cls, kube_1_37=kube_1_37))
    return a.devices.config


def test_config_from_class_and_claim() -> None:
    """A class's configs come once, naming the requests that chose the class; v1.37
    drops the names of a config naming every request (empty means all)."""
    c = claim("c", request("a"), request("b"), config=[{"requests": ["b"], **OPAQUE}, OPAQUE])
    assert _configs(c, False) == [
        {"source": "FromClass", "requests": ["a", "b"], **OPAQUE},
        {"source": "FromClaim", "requests": ["b"], **OPAQUE},
        {"source": "FromClaim", **OPAQUE},
    ]
    assert _configs(c, True) == [
        {"source": "FromClass", **OPAQUE},
        {"source": "FromClaim", "requests": ["b"], **OPAQUE},
        {"source": "FromClaim", **OPAQUE},
    ]


def test_claim_config_naming_several_requests() -> None:
    """v1.36 adds a claim config once per request it names (upstream's ``continue``),
    v1.37 once; a subrequest is named as "request/subrequest"."""
    other = device_class("class-b", f'device.driver == "{DRIVER}"')
    reqs = [request("a"), request("b"), request("c", "class-b")]
    c = claim("c", *reqs, config=[{"requests": ["a", "b"], **OPAQUE}])
    plain = device_class(CLASS)
    assert _configs(c, False, plain, other) == [
        {"source": "FromClaim", "requests": ["a", "b"], **OPAQUE},
        {"source": "FromClaim", "requests": ["a", "b"], **OPAQUE},
    ]
    assert _configs(c, True, plain, other) == [
        {"source": "FromClaim", "requests": ["a", "b"], **OPAQUE}
    ]
    sub = claim(
        "s", first_available(("x", 1)), request("b"), config=[{"requests": ["req-0/x", "b"]}]
    )
    assert (
        _configs(sub, False, plain) == [{"source": "FromClaim", "requests": ["req-0/x", "b"]}] * 2
    )
    assert _configs(sub, True, plain) == [{"source": "FromClaim"}]


def test_admin_access_result_is_marked() -> None:
    (a,) = run(Case([claim("c", request(adminAccess=True))], [two()]))
    assert a.devices.results[0].admin_access is True


def test_allocated_devices_skip_admin_access() -> None:
    taken = claim("t", status=allocated_status("node-1", (DRIVER, "pool-1", "dev-1")))
    admin = claim("a", status=allocated_status("node-1", (DRIVER, "pool-1", "dev-2")))
    assert admin.status.allocation is not None
    admin.status.allocation.devices.results[0].admin_access = True
    assert allocated_devices([taken, admin, claim("free")]) == {(DRIVER, "pool-1", "dev-1")}


def test_search_budget_ends_in_a_timeout() -> None:
    # 12 devices, 6 requested, a constraint no pair satisfies: a large search.
    devs = [device(f"d{i}", {"root": f"r{i}"}) for i in range(12)]
    c = claim("c", request(count=6), constraints=[{"matchAttribute": f"{DRIVER}/root"}])
    alloc = Allocator(
        Inventory([slice_("s", devs, **ON_NODE)]),
        {CLASS: device_class()},
        set(),
        ExpressionCache(),
        max_steps=50,
    )
    with pytest.raises(AllocationTimeout):
        alloc.allocate(NODE, [c])


def test_inventory_per_node_view_is_cached_until_the_node_object_changes() -> None:
    inv = Inventory([two()])
    first = inv.for_node(NODE)
    assert inv.for_node(NODE) is not None and inv.for_node(NODE)[1] is first[1]
    changed = node("node-1", region="east")
    assert inv.for_node(changed)[1] is not first[1]
