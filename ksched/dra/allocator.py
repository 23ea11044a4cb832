"""The structured-parameters allocator (``k8s.io/dynamic-resource-allocation/structured``).

Given the ResourceSlices drivers published, the DeviceClasses and the devices already
taken, ``Allocator.allocate(node, claims)`` finds devices on (or reachable from) one node
for every request of every claim, or says it cannot. The search is upstream's: pools in
a fixed order, slices of a pool's newest generation, devices in slice order; a request
takes ``count`` devices (``ExactCount``) or every matching one (``All``), a
``firstAvailable`` request the first of its subrequests that works out; ``matchAttribute``
and ``distinctAttribute`` constraints bind requests of a claim together; on a dead end
it backtracks. A device already allocated (to any claim, or in flight for a pod being
bound) is never handed out again, except to admin-access requests, which do not take a
device from others (though one claim's admin requests take a device once).

The optional behaviours of v1.36 (``Features``, upstream's ``structured.Features``; the
"incubating" allocator its default gates select) are each behind one switch:

- admin access (DRAAdminAccess, GA): see above; a request asking for it while off is an
  error.
- device taints (DRADeviceTaints, beta and on): a device with a NoSchedule or NoExecute
  taint goes only to requests tolerating it (None and unknown effects do not count).
  Checked where upstream's ``allocateDevice`` checks it: after the selectors (a CEL error
  on a tainted device is still an error) and after the shared counters, so an "All"
  request over a tainted device does not fit the node.
- consumable capacity (DRAConsumableCapacity, beta and on): a device with
  ``allowMultipleAllocations`` is not taken by a claim: every request may get a share,
  as long as its capacity requests (rounded up by the capacity's ``requestPolicy``) and
  the shares allocated or being allocated fit every capacity of the device. A share's
  result carries a ``shareID`` and its ``consumedCapacity``. Capacity requests also
  filter devices that cannot be shared (a request naming a capacity the device lacks, or
  more than it has, does not take it).
- binding conditions (DRADeviceBindingConditions with DRAResourceClaimDeviceStatus, beta
  and on): a device with ``bindingConditions`` may be handed out, its pool searched after
  every pool without such devices; its result carries the conditions, and one that
  ``bindsToNode`` ties the allocation to the node. With the feature off such devices go
  to no one.

Partitionable devices (DRAPartitionableDevices, beta and on in v1.36): a pool's slices
may publish ``sharedCounters`` (counter sets), and a device may ``consumesCounters``
from them; a device is handed out only while, for every counter of its pool, what the
allocated devices and the devices being allocated consume stays within the counter's
value (upstream ``checkAvailableCounters``).

The node-independent work (pools, per-device CEL activations and selector verdicts) is
an ``Inventory`` built once per version of the slice list and shared by every pod.
Errors about claims or classes (a selector that does not compile or evaluate, a missing
class, an "All" request over a pool being updated) are ``AllocationError`` with
upstream's text; "does not fit this node" is an empty answer.
"""

from __future__ import annotations

import functools
import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ..api.objects import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from ..api.quantity import format_quantity, parse_quantity
from ..api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    AllocationResult,
    Device,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceSelector,
    ResourceClaim,
    ResourceSlice,
)
from ..api.selectors import (
    CompiledNodeSelector,
    SelectorError,
    compile_node_selector,
    tolerations_tolerate_taint,
)
from ..util.errors import KschedError
from .cel import CELError, CELTimeout, DeviceEnv, ExpressionCache, qualified_name
from .features import DEFAULT_FEATURES, Features

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "AllocationError",
    "Allocator",
    "DeviceID",
    "Features",
    "Inventory",
    "Shared",
    "allocated_devices",
    "claim_shares",
    "shared_allocations",
]

# resourceapi.AllocationResultsMaxSize: devices one claim may get.
ALLOCATION_RESULTS_MAX_SIZE = 32
# Backtracking steps one allocate() may take before it gives up on the node, besides
# DynamicResources' filterTimeout (``max_seconds``), upstream's only bound.
MAX_STEPS = 200_000
# Device taint effects that keep a device from being allocated (None and unknown ones
# do not).
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")

DeviceID = tuple[str, str, str]  # driver, pool, device
IntArray = npt.NDArray[np.int64]


class AllocationError(KschedError):
    """Something wrong with a claim, class or pool: scheduling the pod is an error."""


class AllocationTimeout(KschedError):
    """The search took too many steps ("timed out trying to allocate devices")."""


def _kobj(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


Capacity = dict[str, Fraction]


@dataclass(slots=True)
class Shared:
    """What shares of devices allocated claims hold (``AllocatedSharedDeviceIDs`` and
    ``AggregatedCapacity`` of upstream's ``AllocatedState``)."""

    # Devices some allocated claim holds a share of.
    devices: set[DeviceID] = field(default_factory=set)
    # Per device, the capacity its allocated shares consume together (only shares that
    # recorded a consumedCapacity).
    capacity: dict[DeviceID, Capacity] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.devices or self.capacity)


def _is_share(r: DeviceRequestAllocationResult, features: Features) -> bool:
    return features.consumable_capacity and r.share_id is not None


def allocated_devices(
    claims: Iterable[ResourceClaim], features: Features = DEFAULT_FEATURES
) -> set[DeviceID]:
    """Devices taken by allocated claims (admin access takes none, nor does a share of a
    device allowing multiple allocations: ``foreachAllocatedDevice``)."""
    out: set[DeviceID] = set()
    for c in claims:
        alloc = c.status.allocation
        if alloc is None:
            continue
        for r in alloc.devices.results:
            if not r.admin_access and not _is_share(r, features):
                out.add((r.driver, r.pool, r.device))
    return out


def claim_shares(claim: ResourceClaim) -> tuple[tuple[DeviceID, Capacity | None], ...]:
    """The device shares one allocated claim holds, each with the capacity it consumes
    (None: no consumedCapacity recorded; an unreadable amount counts as none)."""
    alloc = claim.status.allocation
    if alloc is None:
        return ()
    out: list[tuple[DeviceID, Capacity | None]] = []
    for r in alloc.devices.results:
        if r.admin_access or r.share_id is None:
            continue
        consumed: Capacity | None = None
        if r.consumed_capacity is not None:
            consumed = {}
            for name, q in r.consumed_capacity.items():
                try:
                    consumed[name] = parse_quantity(q)
                except ValueError:
                    consumed[name] = Fraction(0)
        out.append(((r.driver, r.pool, r.device), consumed))
    return tuple(out)


def shared_allocations(
    shares: Iterable[tuple[DeviceID, Capacity | None]], features: Features = DEFAULT_FEATURES
) -> Shared:
    """The ``Shared`` state of these shares (``claim_shares`` of every allocated claim);
    empty with consumable capacity off (the shares then count as taken devices)."""
    out = Shared()
    if not features.consumable_capacity:
        return out
    for dev, consumed in shares:
        out.devices.add(dev)
        if consumed is not None:
            _add_capacity(out.capacity.setdefault(dev, {}), consumed)
    return out


def _add_capacity(into: Capacity, amounts: Mapping[str, Fraction]) -> None:
    for name, q in amounts.items():
        into[name] = into.get(name, Fraction(0)) + q


# ---- the inventory: pools, slices and devices, independent of nodes ----------------------


@dataclass(slots=True)
class _Dev:
    id: DeviceID
    slice: ResourceSlice
    device: Device
    env: DeviceEnv
    # Per-device node selection: ("name", n) / ("selector", s) / ("all", None).
    node_scope: tuple[str, Any] | None = None
    # Whether requests with this ``_Request.key`` may take the device (selectors, taints).
    verdicts: dict[Any, bool] = field(default_factory=dict)
    # consumesCounters: (counter set, counter, amount); None when an amount is unreadable
    # (the device is then never handed out).
    consumes: tuple[tuple[str, str, Fraction], ...] | None = ()
    # allowMultipleAllocations: shares of the device go to any number of requests.
    multi: bool = False
    # Its capacities (None: some amount unreadable; it is then never handed out while
    # consumable capacity is on).
    capacity: dict[str, _Cap] | None = None
    # What CEL sees with upstream's "stable" allocator (``Features.stable``): no
    # ``allowMultipleAllocations``.
    _stable_env: DeviceEnv | None = None

    def stable_env(self) -> DeviceEnv:
        if self._stable_env is None:
            plain = msgspec.structs.replace(self.device, allow_multiple_allocations=None)
            self._stable_env = DeviceEnv(self.id[0], plain)
        return self._stable_env


@dataclass(slots=True)
class _Pool:
    driver: str
    name: str
    generation: int
    slices: list[ResourceSlice]
    devices: list[_Dev] = field(default_factory=list)
    incomplete: bool = False
    invalid: str = ""
    # sharedCounters of the pool's slices: counter set -> counter -> value.
    counters: dict[str, dict[str, Fraction]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


def _amount(counter: Any) -> Fraction | None:
    """A Counter's ``value`` (None: missing or not a quantity)."""
    if not isinstance(counter, dict):
        return None
    try:
        return parse_quantity(counter.get("value"))
    except (ValueError, TypeError):
        return None


def _counter_sets(slices: Iterable[ResourceSlice]) -> dict[str, dict[str, Fraction]]:
    """The pool's counter sets (an unreadable value counts as none available)."""
    out: dict[str, dict[str, Fraction]] = {}
    for s in slices:
        for cs in s.spec.shared_counters:
            if not isinstance(cs, dict) or not isinstance(cs.get("name"), str):
                continue
            counters = cs.get("counters")
            values = out.setdefault(cs["name"], {})
            for name, c in counters.items() if isinstance(counters, dict) else ():
                values[str(name)] = _amount(c) or Fraction(0)
    return out


def _consumption(d: Device) -> tuple[tuple[str, str, Fraction], ...] | None:
    out: list[tuple[str, str, Fraction]] = []
    for entry in d.consumes_counters:
        if not isinstance(entry, dict) or not isinstance(entry.get("counterSet"), str):
            return None
        counters = entry.get("counters")
        for name, c in counters.items() if isinstance(counters, dict) else ():
            amount = _amount(c)
            if amount is None:
                return None
            out.append((entry["counterSet"], str(name), amount))
    return tuple(out)


# ---- consumable capacity (upstream consumable_capacity.go) --------------------------------


@dataclass(frozen=True, slots=True)
class _Cap:
    """One capacity of a device with its request policy, parsed."""

    value: Fraction
    has_policy: bool = False
    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] | None = None
    # validRange: (min, max, step), each optional.
    valid_range: tuple[Fraction | None, Fraction | None, Fraction | None] | None = None


def _opt_quantity(raw: Any) -> Fraction | None:
    return None if raw is None else parse_quantity(raw)


def _capacities(d: Device) -> dict[str, _Cap] | None:
    """The device's capacities (None when some amount is not a quantity)."""
    out: dict[str, _Cap] = {}
    try:
        for name, cap in d.capacity.items():
            p = cap.request_policy
            if p is None:
                out[name] = _Cap(parse_quantity(cap.value))
                continue
            r = p.valid_range
            out[name] = _Cap(
                parse_quantity(cap.value),
                True,
                _opt_quantity(p.default),
                None if p.valid_values is None else tuple(map(parse_quantity, p.valid_values)),
                None
                if r is None
                else (_opt_quantity(r.min), _opt_quantity(r.max), _opt_quantity(r.step)),
            )
    except ValueError:
        return None
    return out


def _whole(q: Fraction) -> int:
    """``Quantity.Value()``: rounded up (away from zero)."""
    return math.ceil(q) if q >= 0 else math.floor(q)


def _go_rem(a: int, b: int) -> int:
    """Go's ``a % b`` (the sign of ``a``)."""
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


_MAX_INT64 = 2**63 - 1


class CapacityError(KschedError):
    """A capacity request the range arithmetic cannot represent: upstream aborts the
    allocation (v1.37) rather than skip the device."""


def _milli(q: Fraction) -> int | None:
    """``safeMilliValue``: ``q`` in thousandths when that is exact (and fits an int64)."""
    m = q * 1000
    if m.denominator != 1 or abs(m) > _MAX_INT64:
        return None
    return int(m)


def _use_milli(rng: tuple[Fraction | None, ...]) -> bool:
    """``useMilli`` (DRAFractionalCapacityRange on): every bound exact in thousandths and a
    step of at least 1m."""
    lo, hi, step = rng
    if any(q is not None and _milli(q) is None for q in (lo, hi, step)):
        return False
    return step is None or (_milli(step) or 0) >= 1


def _round_up_range(
    requested: Fraction, rng: tuple[Fraction | None, ...], fractional: bool = False
) -> Fraction:
    lo, _, step = rng
    assert lo is not None
    if requested < lo:
        return lo
    if step is None:
        return requested
    if fractional and _use_milli(rng):
        req_m = _milli(requested)
        if req_m is None:
            raise CapacityError(
                "capacity request cannot be represented in the device's range arithmetic: "
                f"request {format_quantity(requested)} is not a representable milli value"
            )
        step_m, lo_m = _milli(step) or 1, _milli(lo) or 0
        n = -(-(req_m - lo_m) // step_m)
        if n > (_MAX_INT64 - lo_m) // step_m:
            raise CapacityError(
                "capacity request cannot be represented in the device's range arithmetic: "
                f"rounding request {format_quantity(requested)} up to the next step passes "
                "the milli-value range"
            )
        return Fraction(lo_m + step_m * n, 1000)
    if _whole(step) == 0:
        return requested
    s, m = _whole(step), _whole(lo)
    added = _whole(requested) - m
    n = int(added / s)  # Go's division truncates toward zero
    if _go_rem(added, s):
        n += 1
    return Fraction(m + s * n)


def _consumed(requested: Fraction | None, cap: _Cap, fractional: bool = False) -> Fraction:
    """``calculateConsumedCapacity``: what a request takes of one capacity."""
    if requested is None:
        return cap.default if cap.default is not None else cap.value
    if not cap.has_policy:
        return requested
    if cap.valid_range is not None and cap.valid_range[0] is not None:
        return _round_up_range(requested, cap.valid_range, fractional)
    if cap.valid_values is not None:
        return next((v for v in cap.valid_values if requested <= v), requested)
    return requested


def _violates(consumed: Fraction, cap: _Cap, fractional: bool = False) -> bool:
    """``violatesPolicy``: validRange checks max and step only, validValues membership.
    (Upstream compares with the default as Go structs; equal values of one spelling,
    which is what the API server stores, are what that finds equal.)"""
    if not cap.has_policy or (cap.default is not None and consumed == cap.default):
        return False
    if cap.valid_range is not None:
        lo, hi, step = cap.valid_range
        if hi is not None and consumed > hi:
            return True
        if step is not None:
            if fractional and _use_milli(cap.valid_range):
                got = _milli(consumed)
                return (
                    got is None
                    or (got - (_milli(lo or Fraction(0)) or 0)) % (_milli(step) or 1) != 0
                )
            s = _whole(step)
            return s == 0 or _go_rem(_whole(consumed) - _whole(lo or Fraction(0)), s) != 0
        return False
    if cap.valid_values:
        return consumed not in cap.valid_values
    return False


def _consumed_capacity(
    requests: Capacity | None, caps: Mapping[str, _Cap], fractional: bool = False
) -> Capacity:
    """``GetConsumedCapacityFromRequest``: a share's consumption of every capacity."""
    req = requests or {}
    return {name: _consumed(req.get(name), cap, fractional) for name, cap in caps.items()}


def _capacity_fits(
    current: Mapping[str, Fraction],
    requests: Capacity | None,
    caps: Mapping[str, _Cap],
    allocating: Mapping[str, Fraction] | None,
    fractional: bool = False,
) -> bool:
    """``CmpRequestOverCapacity``: the request names only capacities the device has, its
    consumption obeys every request policy, and with what allocated (``current``) and
    allocating shares consume it stays within every capacity. ``CapacityError`` for a
    request the range arithmetic cannot represent (whichever capacity comes first)."""
    if requests and any(name not in caps for name in requests):
        return False  # upstream: an error (v1.37: a plain no), and the device is skipped
    req = requests or {}
    zero = Fraction(0)
    consumption: dict[str, Fraction] = {}
    for name, cap in caps.items():
        try:
            consumption[name] = _consumed(req.get(name), cap, fractional)
        except CapacityError as e:
            raise CapacityError(f'capacity "{name}": {e}') from None
    for name, cap in caps.items():
        consumed = consumption[name]
        if _violates(consumed, cap, fractional):
            return False
        total = current.get(name, zero) + consumed
        if allocating is not None:
            total += allocating.get(name, zero)
        if total > cap.value:
            return False
    return True


def _compile_scope(sel: NodeSelector, where: str) -> CompiledNodeSelector | None:
    try:
        return compile_node_selector(sel, where)
    except SelectorError:
        return None  # an unparsable selector matches no node


def _node_scope(
    node_name: str | None, all_nodes: bool | None, selector: NodeSelector | None
) -> tuple[str, Any]:
    """Which nodes a slice's (or a device's) node fields name."""
    if node_name:
        return ("name", node_name)
    if all_nodes:
        return ("all", None)
    if selector is not None:
        return ("selector", _compile_scope(selector, "nodeSelector"))
    return ("none", None)


def _scope_matches(scope: tuple[str, Any], node: Node) -> bool:
    kind, value = scope
    if kind == "name":
        return bool(value == node.metadata.name)
    if kind == "all":
        return True
    if kind == "selector":
        return value is not None and bool(value.matches(node.metadata.labels, node.metadata.name))
    return False


class _Counts:
    """Inventory.count_free's state for one request key and one node list."""

    def __init__(self, sig: tuple[int, ...]) -> None:
        self.sig = sig
        self.selectable = np.zeros(len(sig), dtype=np.int64)
        self.taken = np.zeros(len(sig), dtype=np.int64)
        self.rows: dict[DeviceID, Any] = {}
        # What ``taken`` counts: a set of devices, or (None) the journal up to ``read``.
        self.allocated: set[DeviceID] | None = set()
        self.journal: tuple[int, int] | None = None
        self.read = 0


class Inventory:
    """Every pool's current slices and devices, ready for allocation on any node."""

    def __init__(self, slices: Iterable[ResourceSlice]) -> None:
        by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
        for s in slices:
            by_pool.setdefault((s.spec.driver, s.spec.pool.name), []).append(s)
        self.pools: list[_Pool] = []
        # Some device consumes shared counters: counting free devices cannot decide.
        self.has_counters = False
        # Some device allows multiple allocations: nor can it then.
        self.has_multi = False
        self.pool_of: dict[tuple[str, str], _Pool] = {}
        # (pool index, slice scope) for slice-level node selection.
        self._slice_scope: dict[int, tuple[str, Any]] = {}
        for (driver, name), group in sorted(by_pool.items()):
            gen = max(s.spec.pool.generation for s in group)
            current = [s for s in group if s.spec.pool.generation == gen]
            current.sort(key=lambda s: s.metadata.name)
            pool = _Pool(driver, name, gen, current)
            pool.incomplete = len(current) != max(s.spec.pool.resource_slice_count for s in current)
            pool.counters = _counter_sets(current)
            self.pool_of[(driver, name)] = pool
            seen: set[str] = set()
            for s in current:
                scope = self._slice_node_scope(s)
                for d in s.spec.devices:
                    if d.name in seen:
                        pool.invalid = f"duplicate device name {d.name}"
                    seen.add(d.name)
                    dev = _Dev((driver, name, d.name), s, d, DeviceEnv(driver, d))
                    if d.consumes_counters:
                        dev.consumes = _consumption(d)
                        self.has_counters = True
                    dev.capacity = _capacities(d)
                    if d.allow_multiple_allocations:
                        dev.multi = True
                        self.has_multi = True
                    if scope[0] == "perdevice":
                        dev.node_scope = self._device_node_scope(d)
                    pool.devices.append(dev)
            self.pools.append(pool)
        # Pools whose slices name one node, by that node; the others are checked per node.
        self._by_node: dict[str, set[int]] = {}
        self._elsewhere: set[int] = set()
        for pi, pool in enumerate(self.pools):
            for s in pool.slices:
                if s.spec.node_name and not s.spec.per_device_node_selection:
                    self._by_node.setdefault(s.spec.node_name, set()).add(pi)
                else:
                    self._elsewhere.add(pi)
        self._node_cache: dict[str, tuple[Node, list[_Pool], dict[int, list[_Dev]]]] = {}
        # count_free's state per request key (see there).
        self._counts: dict[Any, _Counts] = {}
        self._selectable: dict[tuple[str, Any], tuple[Node, tuple[DeviceID, ...]]] = {}

    @staticmethod
    def _slice_node_scope(s: ResourceSlice) -> tuple[str, Any]:
        spec = s.spec
        if spec.per_device_node_selection:
            return ("perdevice", None)
        return _node_scope(spec.node_name, spec.all_nodes, spec.node_selector)

    @staticmethod
    def _device_node_scope(d: Device) -> tuple[str, Any]:
        return _node_scope(d.node_name, d.all_nodes, d.node_selector)

    def selectable_ids(
        self, node: Node, key: Any, judge: Callable[[_Dev], bool]
    ) -> tuple[DeviceID, ...]:
        """The devices usable from ``node`` that requests with ``key`` may take (``judge``),
        in allocation order; cached until the node object or the slices change."""
        ck = (node.metadata.name, key)
        hit = self._selectable.get(ck)
        if hit is not None and hit[0] is node:
            return hit[1]
        pools, devices = self.for_node(node)
        ids = tuple(
            dev.id
            for pi, pool in enumerate(pools)
            if not pool.invalid
            for dev in devices[pi]
            if judge(dev)
        )
        self._selectable[ck] = (node, ids)
        return ids

    def count_free(
        self,
        nodes: Sequence[Node | None],
        key: Any,
        judge: Callable[[Node, _Dev], bool],
        allocated: set[DeviceID],
        journal: Any = None,
    ) -> IntArray:
        """For each of ``nodes`` (a snapshot's rows), how many devices requests with
        ``key`` may take there are not ``allocated``: the selectable devices per row are
        found once per node list, and the taken ones are updated from the devices whose
        allocation changed since the last call, so a pod's Filter costs a few vector
        operations instead of a pass over every node's devices."""
        sig = tuple(map(id, nodes))
        c = self._counts.get(key)
        if c is None or c.sig != sig:
            c = _Counts(sig)
            rows: dict[DeviceID, list[int]] = {}
            for r, node in enumerate(nodes):
                if node is None:
                    continue
                ids = self.selectable_ids(node, key, functools.partial(judge, node))
                c.selectable[r] = len(ids)
                for d in ids:
                    rows.setdefault(d, []).append(r)
            c.rows = {d: np.array(r, dtype=np.intp) for d, r in rows.items()}
            self._counts[key] = c
        if journal is not None and c.journal == (journal.generation, c.read):
            # Only what changed since the last pod: the log's new entries.
            log = journal.log
            for d, delta in log[c.read :]:
                at = c.rows.get(d)
                if at is not None:
                    c.taken[at] += delta
            c.read = len(log)
            c.journal = (journal.generation, c.read)
            c.allocated = None
            return c.selectable - c.taken
        if c.allocated is None:  # counted from the journal: recount from the set
            c.taken[:] = 0
            c.allocated = set()
        for d in allocated.symmetric_difference(c.allocated):
            at = c.rows.get(d)
            if at is not None:
                c.taken[at] += 1 if d in allocated else -1
        c.allocated = set(allocated)
        if journal is not None:  # in step with it from here on
            c.read = len(journal.log)
            c.journal = (journal.generation, c.read)
        else:
            c.journal = None
        return c.selectable - c.taken

    def for_node(self, node: Node) -> tuple[list[_Pool], dict[int, list[_Dev]]]:
        """The pools with slices for ``node`` and, by pool index, its usable devices."""
        name = node.metadata.name
        hit = self._node_cache.get(name)
        if hit is not None and hit[0] is node:
            return hit[1], hit[2]
        found: list[tuple[bool, _Pool, list[_Dev]]] = []
        for pi in sorted(self._by_node.get(name, set()) | self._elsewhere):
            pool = self.pools[pi]
            scopes: dict[int, bool] = {}
            usable: list[_Dev] = []
            for dev in pool.devices:
                key = id(dev.slice)
                ok = scopes.get(key)
                if ok is None:
                    scope = self._slice_node_scope(dev.slice)
                    ok = scopes[key] = scope[0] == "perdevice" or _scope_matches(scope, node)
                if not ok:
                    continue
                if dev.node_scope is not None and not _scope_matches(dev.node_scope, node):
                    continue
                usable.append(dev)
            if any(scopes.values()):
                # Pools with binding conditions on the node's slices go last (GatherPools).
                late = any(d.device.binding_conditions for d in pool.devices if scopes[id(d.slice)])
                found.append((late, pool, usable))
        found.sort(key=lambda f: f[0])  # stable: by id within each part
        pools = [pool for _, pool, _ in found]
        devices = {i: usable for i, (_, _, usable) in enumerate(found)}
        self._node_cache[name] = (node, pools, devices)
        return pools, devices


# ---- one allocation -------------------------------------------------------------------------


@dataclass(slots=True)
class _Request:
    """One request (or the chosen subrequest) of a claim, ready to match devices."""

    claim_index: int
    name: str  # the result's request name: "req" or "req/sub"
    parent: str  # the request name constraints refer to
    class_: DeviceClass
    selectors: Sequence[DeviceSelector]
    mode: str
    count: int
    admin: bool
    tolerations: Sequence[Any]
    # Capacity requests (None: none).
    capacity: Capacity | None
    features: Features
    # What decides which devices the request may take: class, selectors, tolerations,
    # capacity requests (and the features judging them).
    key: Any = None

    @property
    def label(self) -> str:
        """The name upstream's errors give it (``requestAccessor.name()``): a subrequest's
        own name, not "req/sub"."""
        return self.name.rpartition("/")[2]

    def __post_init__(self) -> None:
        exprs = tuple(s.cel.expression for s in self.selectors if s.cel is not None)
        tols = tuple((t.key, t.operator, t.value, t.effect) for t in self.tolerations)
        caps = None if self.capacity is None else tuple(sorted(self.capacity.items()))
        self.key = (id(self.class_), exprs, tols, caps, self.features)


@dataclass(slots=True)
class _Took:
    """What taking one device changed, for ``_Run._release`` to undo (upstream's
    ``deviceRollbackState``)."""

    counters: bool = False
    marked: bool = False
    # A share: its id and what it consumes (counted in ``_Run.allocating``).
    share_id: str | None = None
    consumed: Capacity | None = None
    # ``_Run.allocating`` had an entry for the device before this share.
    entry_existed: bool = False


def _tainted(req: _Request, dev: _Dev) -> bool:
    """``taintPreventsAllocation``: some NoSchedule or NoExecute taint not tolerated."""
    return any(
        taint.effect in _BLOCKING_EFFECTS and not tolerations_tolerate_taint(req.tolerations, taint)
        for taint in dev.device.taints
    )


def _exact_count(req: _Request) -> int:
    """Devices an ExactCount request needs (an "All" request's count is the node's)."""
    return req.count if req.mode == ALLOCATION_MODE_EXACT_COUNT else 0


@dataclass(slots=True)
class _Constraint:
    """A constraint's state while devices are taken. ``matchAttribute``: every device's
    value equals the first's. ``distinctAttribute``, as upstream's
    ``distinctAttributeConstraint`` keeps it: a new device's value differs from the
    value of the latest device of each request (a request's devices overwrite each
    other's entry, and taking one back drops the request's entry); since v1.37
    (``every``) it differs from every taken device's value, and taking back drops the
    latest."""

    requests: frozenset[str]
    match: str | None
    distinct: str | None
    every: bool = True
    count: int = 0
    first: tuple[Any, ...] | None = None
    latest: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    taken: list[tuple[Any, ...]] = field(default_factory=list)

    def applies(self, req: _Request) -> bool:
        return not self.requests or req.parent in self.requests or req.name in self.requests

    def add(self, req: _Request, dev: _Dev) -> bool:
        value = _lookup_attribute(dev, self.match or self.distinct or "")
        if value is None:
            return False
        if self.count == 0:
            self.first = value
        elif self.match is not None:
            if value != self.first:
                return False
        elif value in (self.taken if self.every else self.latest.values()):
            return False
        if self.distinct is not None:
            self.latest[req.parent] = value
            self.taken.append(value)
        self.count += 1
        return True

    def remove(self, req: _Request) -> None:
        self.count -= 1
        if self.distinct is not None:
            self.latest.pop(req.parent, None)
            self.taken.pop()


def _attr_key(a: DeviceAttribute) -> tuple[Any, ...] | None:
    if a.int_ is not None:
        return ("int", a.int_)
    if a.bool_ is not None:
        return ("bool", a.bool_)
    if a.string is not None:
        return ("string", a.string)
    if a.version is not None:
        return ("version", a.version)
    return None


def _lookup_attribute(dev: _Dev, name: str) -> tuple[Any, ...] | None:
    """A fully qualified attribute's value on ``dev`` (unqualified there if the driver's)."""
    attrs = dev.device.attributes
    domain, ident = qualified_name(name, dev.id[0])
    if domain == dev.id[0]:
        a = attrs.get(ident)
        if a is not None:
            return _attr_key(a)
    a = attrs.get(name)
    return None if a is None else _attr_key(a)


class Allocator:
    """Allocation of claims on a node, against one view of what is taken (one pod's
    scheduling cycle; upstream's ``structured.Allocator``)."""

    def __init__(
        self,
        inventory: Inventory,
        classes: Mapping[str, DeviceClass],
        allocated: set[DeviceID],
        cel_cache: ExpressionCache,
        *,
        features: Features = DEFAULT_FEATURES,
        shared: Shared | None = None,
        max_steps: int = MAX_STEPS,
        max_seconds: float = 0.0,
        journal: Any = None,
    ) -> None:
        self.inventory = inventory
        self.classes = classes
        self.allocated = allocated
        self.cel = cel_cache
        self.features = features
        self.shared = shared if shared is not None and features.consumable_capacity else Shared()
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        # Optional: how ``allocated`` came to be (``generation``, ``log`` of (device, +1 or
        # -1)), so free device counts are updated from the log instead of set differences.
        self.journal = journal
        # The claims' prepared requests (or the error preparing them) by the claims' ids:
        # one pod's cycle allocates the same claims on every node.
        self._prep: dict[tuple[int, ...], _Prepared | AllocationError] = {}
        # quick_fit's verdict on the claims' shape: (request, devices needed) or False.
        self._simple: dict[tuple[int, ...], tuple[_Request, int] | None] = {}
        # Per pool (counter_key): its counters less what the allocated devices consume.
        self._available: dict[str, dict[tuple[str, str], Fraction]] = {}

    def counter_key(self, pool: _Pool) -> str:
        """Upstream's key of a pool's counters: v1.36 has the pool's name alone (pools of
        two drivers with one name share the counters of whichever came first), v1.37
        the driver and the name."""
        return pool.id if self.features.kube_1_37 else pool.name

    def available_counters(self, pool: _Pool) -> dict[tuple[str, str], Fraction]:
        """(counter set, counter) -> what the allocated devices leave (may be negative)."""
        got = self._available.get(self.counter_key(pool))
        if got is None:
            got = {(cs, c): v for cs, values in pool.counters.items() for c, v in values.items()}
            shared = self.shared
            for dev in pool.devices:
                if dev.consumes and (
                    dev.id in self.allocated
                    or dev.id in shared.devices
                    or dev.id in shared.capacity
                ):
                    for cs, c, amount in dev.consumes:
                        if (cs, c) in got:  # validation makes every reference exist
                            got[(cs, c)] -= amount
            self._available[self.counter_key(pool)] = got
        return got

    def _prepared(self, run: _Run, claims: Sequence[ResourceClaim]) -> _Prepared:
        key = tuple(id(c) for c in claims)
        got = self._prep.get(key)
        if got is None:
            try:
                got = run.prepare()
            except AllocationError as e:
                got = e
            self._prep[key] = got
        if isinstance(got, AllocationError):
            raise AllocationError(str(got))
        return got

    def countable(self, node: Node, claims: Sequence[ResourceClaim]) -> tuple[_Request, int] | None:
        """(a request standing for all, devices needed) when counting free selectable
        devices decides whether the claims fit a node: every request an ExactCount one
        without admin access, all with the same class, selectors, tolerations and capacity
        requests, and no constraints, no device consuming shared counters or allowing
        multiple allocations, and no shares allocated. None when the claims need the
        search (``allocate``)."""
        if self.inventory.has_counters or self.inventory.has_multi or self.shared:
            return None
        key = tuple(id(c) for c in claims)
        if key not in self._simple:
            run = _Run(self, node, claims)
            self._simple[key] = _simple_need(run.alternatives, run.constraints)
        return self._simple[key]

    def quick_fit(self, node: Node, claims: Sequence[ResourceClaim]) -> bool | None:
        """Whether the claims fit ``node`` by counting (see ``countable``); None when they
        need the search. Errors as ``allocate``."""
        simple = self.countable(node, claims)
        if simple is None:
            return None
        req, need = simple
        ids = self.inventory.selectable_ids(
            node, req.key, lambda dev: _Run(self, node, claims)._selectable(req, dev)
        )
        free = 0
        for d in ids:
            if d not in self.allocated:
                free += 1
                if free >= need:
                    return True
        return need == 0

    def free_counts(
        self, nodes: Sequence[Node | None], claims: Sequence[ResourceClaim], req: _Request
    ) -> IntArray:
        """Free devices ``req`` may take on each node (``Inventory.count_free``)."""
        return self.inventory.count_free(
            nodes,
            req.key,
            lambda n, dev: _Run(self, n, claims)._selectable(req, dev),
            self.allocated,
            self.journal,
        )

    def allocate(self, node: Node, claims: Sequence[ResourceClaim]) -> list[AllocationResult]:
        """An allocation for every claim on ``node``, or ``[]`` when they do not fit.

        Raises ``AllocationError`` for broken claims/classes/pools and
        ``AllocationTimeout`` when the search runs out of steps.
        """
        return _Run(self, node, claims).run()


def _simple_need(
    alternatives: list[list[list[_Request]]], constraints: list[list[_Constraint]]
) -> tuple[_Request, int] | None:
    """(a request standing for all, devices needed) when counting decides; else None."""
    reqs: list[_Request] = []
    for per_claim in alternatives:
        for alts in per_claim:
            if len(alts) != 1:
                return None
            reqs.append(alts[0])
    if any(constraints) or not reqs:
        return None
    first = reqs[0]
    for r in reqs:
        if r.mode != ALLOCATION_MODE_EXACT_COUNT or r.admin or r.key != first.key:
            return None
    return first, sum(r.count for r in reqs)


_ConstraintSpec = tuple[frozenset[str], str | None, str | None]
_Prepared = tuple[list[list[list["_Request"]]], list[list[_ConstraintSpec]]]


class _Run:
    def __init__(self, alloc: Allocator, node: Node, claims: Sequence[ResourceClaim]) -> None:
        self.a = alloc
        self.node = node
        self.claims = claims
        self.pools, self.devices = alloc.inventory.for_node(node)
        self.steps = 0
        limit = alloc.max_seconds
        self.deadline = time.monotonic() + limit if limit > 0 else 0.0
        # allocatingDevices: the devices being taken, each with the claims taking it.
        self.taking: dict[DeviceID, set[int]] = {}
        # allocatingCapacity: what the shares being allocated consume, per device.
        self.allocating: dict[DeviceID, Capacity] = {}
        self.results: list[list[tuple[_Request, _Dev, _Took]]] = [[] for _ in claims]
        # Per claim, per request: the alternatives (one, or one per subrequest); the same
        # for every node of one pod's cycle, so prepared once.
        specs = alloc._prepared(self, claims)
        self.alternatives: list[list[list[_Request]]] = specs[0]
        self.constraints = [
            [_Constraint(r, m, d, alloc.features.kube_1_37) for r, m, d in per_claim]
            for per_claim in specs[1]
        ]
        self.chosen: dict[tuple[int, int], int] = {}
        # Shared counters the devices being taken consume, by counter_key.
        self.consumed: dict[str, dict[tuple[str, str], Fraction]] = {}
        # "All" requests: every device they select on this node (by id of the request).
        self.all_devices: dict[int, list[_Dev]] = {}

    # -- preparation ---------------------------------------------------------------------------
    def _class(self, claim: ResourceClaim, request: str, name: str) -> DeviceClass:
        cls = self.a.classes.get(name)
        if cls is None:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request}: could not retrieve device class "
                f'{name}: deviceclass.resource.k8s.io "{name}" not found'
            )
        return cls

    def _request(
        self, ci: int, claim: ResourceClaim, name: str, parent: str, spec: Any, admin: bool
    ) -> _Request:
        cls = self._class(claim, name, spec.device_class_name)
        mode = spec.allocation_mode or ALLOCATION_MODE_EXACT_COUNT
        count = spec.count or 1
        if mode == ALLOCATION_MODE_EXACT_COUNT:
            if count > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {_kobj(claim)}, request {name}: exceeds the claim limit of "
                    f"{ALLOCATION_RESULTS_MAX_SIZE} devices"
                )
        elif mode != ALLOCATION_MODE_ALL:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {name}: unsupported count mode {mode}"
            )
        if admin and not self.a.features.admin_access:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {name}: admin access is requested, but the "
                "feature is disabled"
            )
        capacity: Capacity | None = None
        if spec.capacity is not None and not self.a.features.stable:
            if not self.a.features.consumable_capacity:
                sub = name.rpartition("/")[2]
                what = f"subrequest {sub}" if parent != name else f"request {name}"
                raise AllocationError(
                    f"claim {_kobj(claim)}, {what}: has capacity requests, but the "
                    "DRAConsumableCapacity feature is disabled"
                )
            try:
                capacity = {k: parse_quantity(v) for k, v in spec.capacity.requests.items()}
            except ValueError as e:
                raise AllocationError(
                    f"claim {_kobj(claim)}, request {name}: capacity.requests: {e}"
                ) from None
        return _Request(
            ci,
            name,
            parent,
            cls,
            spec.selectors,
            mode,
            count,
            admin,
            spec.tolerations,
            capacity,
            self.a.features,
        )

    def _all_devices(self, req: _Request) -> list[_Dev]:
        """The devices an "All" request takes on this node."""
        got = self.all_devices.get(id(req))
        if got is not None:
            return got
        claim = self.claims[req.claim_index]
        got = []
        for pi, pool in enumerate(self.pools):
            if pool.incomplete:
                raise AllocationError(
                    f"claim {_kobj(claim)}, request {req.label}: asks for all devices, but "
                    f"resource pool {pool.id} is currently being updated"
                )
            if pool.invalid:
                raise AllocationError(
                    f"claim {_kobj(claim)}, request {req.label}: asks for all devices, but "
                    f"resource pool {pool.id} is currently invalid"
                )
            # Selectable and within capacity before anything is taken (upstream decides
            # these when it validates the request); taints are checked as each is taken.
            # v1.37 checks only the device's own capacity here: a device the allocated
            # shares leave too little of stays in, and the request does not fit.
            current = not self.a.features.kube_1_37
            got.extend(
                dev
                for dev in self.devices[pi]
                if self._selectors_ok(req, dev)
                and (
                    not self.a.features.consumable_capacity
                    or self._fits_capacity(req, dev, current=current, allocating=False)
                )
            )
        self.all_devices[id(req)] = got
        return got

    def prepare(self) -> tuple[list[list[list[_Request]]], list[list[_ConstraintSpec]]]:
        """The claims' requests and constraints, node-independent (``Allocator._prepared``)."""
        alternatives: list[list[list[_Request]]] = []
        constraints: list[list[_ConstraintSpec]] = []
        v1_37 = self.a.features.kube_1_37
        for ci, claim in enumerate(self.claims):
            per_request: list[list[_Request]] = []
            total = 0
            for r in claim.spec.devices.requests:
                if r.exactly is not None:
                    admin = bool(r.exactly.admin_access)
                    req = self._request(ci, claim, r.name, r.name, r.exactly, admin)
                    per_request.append([req])
                    least = _exact_count(req)
                elif r.first_available:
                    alts = [
                        self._request(ci, claim, f"{r.name}/{sub.name}", r.name, sub, False)
                        for sub in r.first_available
                    ]
                    per_request.append(alts)
                    least = min(_exact_count(a) for a in alts)
                    if not v1_37:
                        least = max(_exact_count(a) for a in alts)
                else:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {r.name}: unsupported request type"
                    )
                if v1_37 and least > ALLOCATION_RESULTS_MAX_SIZE - total:
                    # v1.37 checks the limit request by request (the least each needs).
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {r.name}: adding {least} devices "
                        f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}, with "
                        f"{total} already accounted for"
                    )
                total += least
            if total > ALLOCATION_RESULTS_MAX_SIZE and all(len(alts) == 1 for alts in per_request):
                raise AllocationError(
                    f"claim {_kobj(claim)}: number of requested devices {total} exceeds the "
                    f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            alternatives.append(per_request)
            specs: list[_ConstraintSpec] = []
            for i, c in enumerate(claim.spec.devices.constraints):
                if c.match_attribute:
                    specs.append((frozenset(c.requests), c.match_attribute, None))
                elif c.distinct_attribute and not self.a.features.stable:
                    specs.append((frozenset(c.requests), None, c.distinct_attribute))
                else:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, constraint #{i}: empty constraint (unsupported "
                        "constraint type?)"
                    )
            constraints.append(specs)
        return alternatives, constraints

    # -- device checks -------------------------------------------------------------------------
    def _selectors_match(
        self, req: _Request, dev: _Dev, selectors: Sequence[DeviceSelector], where: str
    ) -> bool:
        for i, sel in enumerate(selectors):
            if sel.cel is None:
                continue
            expr = self.a.cel.get(sel.cel.expression)
            if expr.error:
                raise AllocationError(f"{where}: selector #{i}: CEL compile error: {expr.error}")
            env = dev.env
            if dev.device.allow_multiple_allocations and req.features.stable:
                env = dev.stable_env()
            try:
                if not expr.matches(env, self.deadline):
                    return False
            except CELTimeout:
                raise AllocationTimeout("timed out trying to allocate devices") from None
            except CELError as e:
                raise AllocationError(self._runtime_error(where, i, dev, str(e))) from None
        return True

    def _runtime_error(self, where: str, i: int, dev: _Dev, msg: str) -> str:
        """v1.37 names the device and, for a missing key, hints at ``.?``/``has()``
        (``cel.EnhanceRuntimeError``)."""
        if not self.a.features.kube_1_37:
            return f"{where}: selector #{i}: CEL runtime error: {msg}"
        if "no such key:" in msg:
            msg += (
                ". consider using CEL optional chaining (.? followed by orValue()) or "
                "guarding the check with has() for optional fields"
            )
        device = "/".join(dev.id)
        return f"{where}: selector #{i} on device {device}: CEL runtime error: {msg}"

    def _selectable(self, req: _Request, dev: _Dev) -> bool:
        """Whether ``req`` may take ``dev`` as far as the two alone decide (cached)."""
        verdict = dev.verdicts.get(req.key)
        if verdict is None:
            verdict = dev.verdicts[req.key] = self._judge(req, dev)
        return verdict

    def _judge(self, req: _Request, dev: _Dev) -> bool:
        if not self._selectors_ok(req, dev):
            return False
        features = req.features
        # Not shared: only the request and the device decide whether it fits.
        if (
            features.consumable_capacity
            and not dev.multi
            and not self._fits_capacity(req, dev, current=False, allocating=False)
        ):
            return False
        return not (features.device_taints and _tainted(req, dev))

    def _selectors_ok(self, req: _Request, dev: _Dev) -> bool:
        """``isSelectable``: the class's and the request's selectors (cached)."""
        key = ("selectors", req.key)
        verdict = dev.verdicts.get(key)
        if verdict is None:
            verdict = dev.verdicts[key] = self._selectors_judge(req, dev)
        return verdict

    def _selectors_judge(self, req: _Request, dev: _Dev) -> bool:
        if dev.device.binding_conditions and not req.features.binding_conditions:
            return False  # nobody would wait for the conditions
        cls = req.class_
        if not self._selectors_match(req, dev, cls.spec.selectors, f"class {cls.metadata.name}"):
            return False
        claim = self.claims[req.claim_index]
        return self._selectors_match(req, dev, req.selectors, f"claim {_kobj(claim)}")

    def _fits_capacity(
        self, req: _Request, dev: _Dev, *, current: bool = True, allocating: bool = True
    ) -> bool:
        """``CmpRequestOverCapacity`` with the allocated shares' consumption (``current``)
        and the shares being allocated (``allocating``)."""
        caps = dev.capacity
        if caps is None:
            return False
        try:
            return _capacity_fits(
                self.a.shared.capacity.get(dev.id, {}) if current else {},
                req.capacity,
                caps,
                self.allocating.get(dev.id) if allocating else None,
                req.features.fractional_capacity_range,
            )
        except CapacityError as e:
            # "All" names the device as its slice does, the search by its full id
            device = dev.id[2] if req.mode == ALLOCATION_MODE_ALL else "/".join(dev.id)
            claim = self.claims[req.claim_index]
            raise AllocationError(
                f"claim {_kobj(claim)}, request {req.label}: checking capacity for device "
                f"{device}: {e}"
            ) from None

    def _in_use(self, d: DeviceID) -> bool:
        return d in self.a.allocated or bool(self.taking.get(d))

    def _take(self, req: _Request, dev: _Dev, *, must: bool = False) -> bool:
        """Take ``dev`` for ``req`` if it is free and the claim's constraints allow it.
        ``must`` (an "All" request, which needs every device it selects): a constraint
        refusing one is an error, as upstream's ``allocateDevice`` says, not a dead end."""
        ci = req.claim_index
        features = req.features
        multi = dev.multi and features.consumable_capacity
        if not multi and req.admin and ci in self.taking.get(dev.id, ()):
            return False
        if not req.admin and self._in_use(dev.id):
            return False
        took = _Took()
        # A shared device already in use has its counters counted once, by then.
        if dev.consumes != () and not (multi and self._capacity_in_use(dev.id)):
            if not self._consume(dev):
                return False
            took.counters = True
        if features.device_taints and _tainted(req, dev):
            self._undo(req, dev, took, 0)
            return False
        added = 0
        for c in self.constraints[ci]:
            if c.applies(req):
                if not c.add(req, dev):
                    self._undo(req, dev, took, added)
                    if must:
                        claim = self.claims[ci]
                        raise AllocationError(
                            f"claim {_kobj(claim)}, request {req.label}: cannot add device "
                            f"{'/'.join(dev.id)} because a claim constraint would not be "
                            "satisfied"
                        )
                    return False
                added += 1
        if not multi:
            self.taking.setdefault(dev.id, set()).add(ci)
            took.marked = True
        if features.consumable_capacity:
            if not self._fits_capacity(req, dev):
                self._undo(req, dev, took, added)
                return False
            if multi:
                took.consumed = _consumed_capacity(
                    req.capacity, dev.capacity or {}, req.features.fractional_capacity_range
                )
                took.share_id = str(uuid.uuid4())
                took.entry_existed = dev.id in self.allocating
                _add_capacity(self.allocating.setdefault(dev.id, {}), took.consumed)
        self.results[ci].append((req, dev, took))
        return True

    def _capacity_in_use(self, d: DeviceID) -> bool:
        """``deviceCapacityInUse``; v1.37 counts allocated shares without a recorded
        consumption too (their device's counters are already charged)."""
        shared = self.a.shared
        return (
            d in shared.capacity
            or (self.a.features.kube_1_37 and d in shared.devices)
            or d in self.allocating
        )

    def _undo(self, req: _Request, dev: _Dev, took: _Took, constraints: int) -> None:
        """Undo what ``_take`` did (``rollbackDevice``), its first ``constraints``
        applicable constraints included."""
        if took.consumed is not None:
            entry = self.allocating[dev.id]
            for name, q in took.consumed.items():
                if name in entry:
                    entry[name] -= q
            if not any(entry.values()):
                del self.allocating[dev.id]
            if took.entry_existed and dev.id not in self.allocating:
                self.allocating[dev.id] = {}  # the earlier share still holds the device
        if took.marked:
            self.taking[dev.id].discard(req.claim_index)
        if constraints:
            applied = [c for c in self.constraints[req.claim_index] if c.applies(req)]
            for c in reversed(applied[:constraints]):
                c.remove(req)
        if took.counters:
            self._unconsume(dev)

    def _consume(self, dev: _Dev) -> bool:
        """``checkAvailableCounters``: count the device's consumption in; if then some
        counter of its pool is exceeded, count it out again and say no."""
        if dev.consumes is None:
            return False
        pool = self.a.inventory.pool_of[dev.id[:2]]
        available = self.a.available_counters(pool)
        consumed = self.consumed.setdefault(self.a.counter_key(pool), {})
        for cs, c, amount in dev.consumes:
            consumed[(cs, c)] = consumed.get((cs, c), Fraction(0)) + amount
        zero = Fraction(0)
        if all(v >= consumed.get(k, zero) for k, v in available.items()):
            return True
        self._unconsume(dev)
        return False

    def _unconsume(self, dev: _Dev) -> None:
        consumed = self.consumed[self.a.counter_key(self.a.inventory.pool_of[dev.id[:2]])]
        for cs, c, amount in dev.consumes or ():
            consumed[(cs, c)] -= amount

    def _release(self, req: _Request, dev: _Dev) -> None:
        _, _, took = self.results[req.claim_index].pop()
        applied = sum(1 for c in self.constraints[req.claim_index] if c.applies(req))
        self._undo(req, dev, took, applied)

    # -- search ----------------------------------------------------------------------------------
    def _tick(self) -> None:
        self.steps += 1
        if self.steps > self.a.max_steps:
            raise AllocationTimeout("timed out trying to allocate devices")
        if self.deadline and not self.steps & 1023 and time.monotonic() > self.deadline:
            raise AllocationTimeout("timed out trying to allocate devices")

    def _slots(self) -> list[tuple[int, int]]:
        return [(ci, ri) for ci, reqs in enumerate(self.alternatives) for ri in range(len(reqs))]

    def _solve(self, slots: list[tuple[int, int]], at: int) -> bool:
        if at == len(slots):
            return True
        ci, ri = slots[at]
        for alt_index, req in enumerate(self.alternatives[ci][ri]):
            self._tick()
            self.chosen[(ci, ri)] = alt_index
            if req.mode == ALLOCATION_MODE_ALL:
                if not self._all_devices(req):
                    continue  # nothing to hand out: not satisfiable here
                if self._take_all(req, 0, lambda: self._solve(slots, at + 1)):
                    return True
            elif self._take_n(req, req.count, 0, lambda: self._solve(slots, at + 1)):
                return True
        return False

    def _take_all(self, req: _Request, i: int, then: Callable[[], bool]) -> bool:
        devices = self._all_devices(req)
        if i == len(devices):
            return then()
        dev = devices[i]
        if not self._take(req, dev, must=True):
            return False
        if self._take_all(req, i + 1, then):
            return True
        self._release(req, dev)
        return False

    def _candidates(self, req: _Request) -> Iterable[_Dev]:
        for pi, pool in enumerate(self.pools):
            if pool.invalid:
                continue
            yield from self.devices[pi]

    def _take_n(self, req: _Request, n: int, start: int, then: Callable[[], bool]) -> bool:
        if n == 0:
            return then()
        for k, dev in enumerate(self._candidates(req)):
            if k < start:
                continue
            self._tick()
            if req.admin:
                if req.claim_index in self.taking.get(dev.id, ()):
                    continue
            elif self._in_use(dev.id):
                continue
            if not self._selectable(req, dev):
                continue
            if dev.multi and req.features.consumable_capacity and not self._fits_capacity(req, dev):
                continue
            if not self._take(req, dev):
                continue
            # Devices of one request are interchangeable: later ones only, no permutations.
            if self._take_n(req, n - 1, k + 1, then):
                return True
            self._release(req, dev)
        return False

    def run(self) -> list[AllocationResult]:
        # Upstream gathers what each "All" request takes (evaluating its selectors on every
        # device of the node's pools) while it validates the requests, before any search:
        # a failing selector or an incomplete pool is an error even where an earlier claim
        # could not be satisfied anyway.
        for per_request in self.alternatives:
            for alternatives in per_request:
                for req in alternatives:
                    if req.mode == ALLOCATION_MODE_ALL:
                        self._all_devices(req)
        if not self._solve(self._slots(), 0):
            return []
        return [self._result(ci, claim) for ci, claim in enumerate(self.claims)]

    # -- results ---------------------------------------------------------------------------------
    def _result(self, ci: int, claim: ResourceClaim) -> AllocationResult:
        results = [
            DeviceRequestAllocationResult(
                request=req.name,
                driver=dev.id[0],
                pool=dev.id[1],
                device=dev.id[2],
                admin_access=True if req.admin else None,
                tolerations=list(req.tolerations),
                binding_conditions=list(dev.device.binding_conditions)
                if req.features.binding_conditions
                else [],
                binding_failure_conditions=list(dev.device.binding_failure_conditions)
                if req.features.binding_conditions
                else [],
                share_id=took.share_id,
                consumed_capacity={k: format_quantity(v) for k, v in took.consumed.items()}
                if took.consumed
                else None,
            )
            for req, dev, took in self.results[ci]
        ]
        config: list[dict[str, Any]] = []
        chosen: list[_Request] = []
        for ri, alts in enumerate(self.alternatives[ci]):
            chosen.append(alts[self.chosen.get((ci, ri), 0)])
        # A class's configs once, naming every request that chose the class.
        by_class: dict[str, list[dict[str, Any]]] = {}
        for req in chosen:
            name = req.class_.metadata.name
            if name in by_class:
                for entry in by_class[name]:
                    entry["requests"].append(req.name)
                continue
            by_class[name] = [
                {"source": "FromClass", "requests": [req.name], **_without_requests(cfg)}
                for cfg in req.class_.spec.config
            ]
            config.extend(by_class[name])
        v1_37 = self.a.features.kube_1_37
        for cfg in claim.spec.devices.config:
            wanted = cfg.get("requests") or []
            entry = {"source": "FromClaim", **_without_requests(cfg)}
            if not wanted:
                config.append(entry)
                continue
            # v1.36 adds the config once per request it names, v1.37 once.
            hits = sum(r.parent in wanted or r.name in wanted for r in chosen)
            config.extend(
                {**entry, "requests": list(wanted)} for _ in range(min(hits, 1) if v1_37 else hits)
            )
        if v1_37:
            # v1.37: a config naming every request (or its chosen subrequest) names none,
            # which means all.
            for entry in config:
                named = entry.get("requests")
                if named and all(r.parent in named or r.name in named for r in chosen):
                    del entry["requests"]
        return AllocationResult(
            devices=DeviceAllocationResult(results=results, config=config),
            node_selector=_node_selector(self.node.metadata.name, self.results[ci]),
        )


def _without_requests(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k != "requests"}


def _node_selector(
    node_name: str, taken: Sequence[tuple[_Request, _Dev, _Took]]
) -> NodeSelector | None:
    """Where the allocated devices can be used: this node (a device local to one node or
    binding to it), a selector's nodes, or anywhere (``createNodeSelector``)."""
    fields: list[NodeSelectorRequirement] = []
    exprs: list[NodeSelectorRequirement] = []
    for req, dev, _ in taken:
        spec = dev.slice.spec
        if spec.per_device_node_selection:
            local, selector = dev.device.node_name, dev.device.node_selector
        else:
            local, selector = spec.node_name, spec.node_selector
        binds = dev.device.binds_to_node and req.features.binding_conditions
        if local or binds:
            return NodeSelector(
                node_selector_terms=[
                    NodeSelectorTerm(
                        match_fields=[
                            NodeSelectorRequirement(
                                key="metadata.name", operator="In", values=[node_name]
                            )
                        ]
                    )
                ]
            )
        if selector is not None and len(selector.node_selector_terms) == 1:
            term = selector.node_selector_terms[0]
            fields.extend(r for r in term.match_fields if r not in fields)
            exprs.extend(r for r in term.match_expressions if r not in exprs)
    if fields or exprs:
        return NodeSelector(
            node_selector_terms=[NodeSelectorTerm(match_expressions=exprs, match_fields=fields)]
        )
    return None
