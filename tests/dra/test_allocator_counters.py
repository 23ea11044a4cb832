"""Partitionable devices (DRAPartitionableDevices, beta and on in v1.36), after upstream's
allocator_test.go partitionable-device cases: a pool's ``sharedCounters`` bound what its
devices' ``consumesCounters`` may take together, counting the allocated devices (and
those in flight), the devices being allocated now, and backtracking past a device whose
consumption would exceed a counter. Also: devices with binding conditions, which ksched
does not wait for, are not handed out."""

from __future__ import annotations

from typing import Any

from ksched.api.objects import Node
from ksched.api.resource import ResourceClaim, ResourceSlice
from ksched.dra.allocator import Allocator, DeviceID, Inventory
from ksched.dra.cel import ExpressionCache

from .factories import CLASS, DRIVER, claim, device, device_class, node, request, slice_

NODE = node("node-1")
POOL = "pool-1"


def counters(name: str = "gpu-0", memory: str = "40Gi", **more: str) -> dict[str, Any]:
    values = {"memory": {"value": memory}, **{k: {"value": v} for k, v in more.items()}}
    return {"name": name, "counters": values}


def consuming(name: str, memory: str, counter_set: str = "gpu-0", **attrs: Any) -> dict[str, Any]:
    use = [{"counterSet": counter_set, "counters": {"memory": {"value": memory}}}]
    return device(name, attrs or None, consumesCounters=use)


def mig_slice(
    *devices: dict[str, Any], sets: list[dict[str, Any]] | None = None
) -> list[ResourceSlice]:
    """A GPU with a 40Gi counter set and its devices: the whole GPU and two halves."""
    devs = list(devices) or [
        consuming("gpu-0", "40Gi", kind="full"),
        consuming("gpu-0-mig-a", "20Gi", kind="mig"),
        consuming("gpu-0-mig-b", "20Gi", kind="mig"),
    ]
    return [
        slice_(
            "counters",
            [],
            pool=POOL,
            count=2,
            node_name="node-1",
            shared_counters=sets or [counters()],
        ),
        slice_("devices", devs, pool=POOL, count=2, node_name="node-1"),
    ]


def allocate(
    slices: list[ResourceSlice],
    claims: list[ResourceClaim],
    taken: set[DeviceID] = frozenset(),  # type: ignore[assignment]
    at: Node = NODE,
) -> list[list[str]]:
    alloc = Allocator(Inventory(slices), {CLASS: device_class()}, set(taken), ExpressionCache())
    if any(d.device.consumes_counters for p in alloc.inventory.pools for d in p.devices):
        assert alloc.countable(at, claims) is None  # counters: never decided by counting
    return [[r.device for r in a.devices.results] for a in alloc.allocate(at, claims)]


def kind(k: str) -> str:
    return f'device.attributes["{DRIVER}"].kind == "{k}"'


def test_devices_within_the_counters() -> None:
    assert allocate(mig_slice(), [claim("c", request("r", CLASS, kind("mig")))]) == [
        ["gpu-0-mig-a"]
    ]
    # both halves fit together
    two = claim("c", request("r", CLASS, kind("mig"), count=2))
    assert allocate(mig_slice(), [two]) == [["gpu-0-mig-a", "gpu-0-mig-b"]]


def test_whole_device_and_a_part_exceed_the_counter() -> None:
    whole = claim("a", request("r", CLASS, kind("full")))
    part = claim("b", request("r", CLASS, kind("mig")))
    assert allocate(mig_slice(), [whole, part]) == []
    assert allocate(mig_slice(), [whole]) == [["gpu-0"]]


def test_backtracks_past_a_device_that_would_exceed() -> None:
    # two devices of any kind: the whole GPU first, then no half fits: both halves instead
    assert allocate(mig_slice(), [claim("c", request("r", CLASS, count=2))]) == [
        ["gpu-0-mig-a", "gpu-0-mig-b"]
    ]
    # three cannot fit at all
    assert allocate(mig_slice(), [claim("c", request("r", CLASS, count=3))]) == []


def test_allocated_devices_consume_their_counters() -> None:
    c = claim("c", request("r", CLASS))
    assert allocate(mig_slice(), [c], {(DRIVER, POOL, "gpu-0")}) == []
    assert allocate(mig_slice(), [c], {(DRIVER, POOL, "gpu-0-mig-a")}) == [["gpu-0-mig-b"]]


def test_over_consumed_pool_allows_no_consuming_device_but_others() -> None:
    devs = [consuming("gpu-0", "40Gi"), consuming("big", "80Gi"), device("plain")]
    taken = {(DRIVER, POOL, "big")}
    c = claim("c", request("r", CLASS))
    assert allocate(mig_slice(*devs), [c], taken) == [["plain"]]


def test_several_counters_and_sets() -> None:
    sets = [counters("gpu-0", "40Gi", cores="4"), counters("gpu-1", "40Gi", cores="4")]
    cores = [{"counterSet": "gpu-0", "counters": {"cores": {"value": "3"}}}]
    devs = [
        device("a", consumesCounters=cores),
        device("b", consumesCounters=cores),  # 6 cores > 4: not with "a"
        consuming("c", "10Gi", counter_set="gpu-1"),
    ]
    two = claim("c", request("r", CLASS, count=2))
    assert allocate(mig_slice(*devs, sets=sets), [two]) == [["a", "c"]]


def test_unknown_counter_is_ignored_and_an_unreadable_amount_is_never_allocated() -> None:
    devs = [
        device(
            "bad",
            consumesCounters=[{"counterSet": "gpu-0", "counters": {"memory": {"value": "lots"}}}],
        ),
        consuming("other-set", "1Gi", counter_set="nowhere"),
    ]
    c = claim("c", request("r", CLASS))
    assert allocate(mig_slice(*devs), [c]) == [["other-set"]]
    assert allocate(mig_slice(*devs), [claim("c", request("r", CLASS, count=2))]) == []


def test_counters_of_the_pools_current_generation_only() -> None:
    old = slice_(
        "old",
        [],
        pool=POOL,
        generation=0,
        node_name="node-1",
        shared_counters=[counters(memory="80Gi")],
    )
    c = claim("c", request("r", CLASS, count=2))
    # the current generation's 40Gi bound holds, not the old slice's 80Gi
    assert allocate([old, *mig_slice()], [c]) == [["gpu-0-mig-a", "gpu-0-mig-b"]]
