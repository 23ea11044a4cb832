"""The DynamicResources plugin (upstream ``dynamicresources/dynamicresources.go``, v1.36).

Pods ask for devices through ResourceClaims (``spec.resourceClaims``: a claim by name,
or a template the cluster's resourceclaim controller turns into the pod's own claim).
PreEnqueue keeps a pod out of the active queue while a claim is missing; PreFilter
checks the claims (in use, being deleted, allocation in flight, classes exist) and sets
up the structured allocator; Filter allocates on each node (``ksched.dra.allocator``)
and remembers the result; Score prefers nodes where prioritized lists got earlier
choices; Reserve marks the chosen node's allocations in flight, so no other pod gets
those devices; PreBind writes ``status.allocation`` and adds the pod to
``status.reservedFor`` (update with the resourceVersion, a fresh read and retry on
conflict, as upstream) and then, when a device it got has binding conditions, waits for
them (``bindingTimeout``; a failure condition or the timeout fails the attempt, and the
next attempt's Filter finds that claim unavailable); Unreserve rolls the in-flight
allocation back; PostFilter deallocates a claim that is allocated where the pod cannot go
(or whose binding failed or timed out) and used by no one else. ``features`` holds the
optional DRA behaviours (admin access, device taints, consumable capacity, binding
conditions: v1.36's defaults), each a feature gate's switch.
Messages, statuses and events to register are upstream's.

Extended resources backed by DRA (KEP-5004, ``ksched.dra.extended``): when a DeviceClass
backs a scalar the pod's containers ask for, PreFilter adds a special claim (made in
memory, or the one an earlier cycle created); Filter gives it, per node, one request per
container for the resources the node does not advertise; PreBind creates it (annotated,
owned by the pod), allocates and reserves it like the others, and writes the pod's
``status.extendedResourceClaimStatus``; Unreserve and PostFilter delete a created one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

import msgspec
import numpy as np
import structlog

from ...api.objects import Node, Pod
from ...api.resource import (
    FINALIZER,
    AllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceSlice,
)
from ...api.selectors import CompiledNodeSelector, SelectorError, compile_node_selector
from ...dra.extended import (
    IN_MEMORY_NAME,
    ClassResolver,
    RequestMapping,
    find_extended_claim,
    in_memory_claim,
    is_dra_extended_name,
    requests_and_mappings,
)
from ...dra.features import Features
from ...framework.cycle_state import CycleState
from ...framework.events import ActionType, EventResource
from ...framework.handle import BindError, ConflictError, Handle
from ...framework.interface import (
    NOT_SIGNABLE,
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    NodeToStatus,
    PodGroupSchedulingFunc,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ReservePlugin,
    ScorePlugin,
)
from ...framework.listers import Listers, RevisionedStore
from ...framework.podgroup import PodGroupInfo, PodGroupPostFilterResult
from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.status import Code, RowErrors, Status
from ...framework.types import NodeInfo, PodInfo
from ...util.clock import rfc3339
from ...util.coro import run_sync
from .. import names
from ..helper import default_normalize_score
from ..volumebinding.assume_cache import AssumeCache, resource_version
from .args import DEFAULT_BINDING_TIMEOUT, DynamicResourcesArgs
from .claims import ClaimWriter

if TYPE_CHECKING:
    from ...dra.allocator import Allocator, DeviceID, Inventory, Shared
    from ...dra.cel import ExpressionCache

__all__ = ["CLAIMS", "CLASSES", "SLICES", "DynamicResources", "claim_name"]

log = structlog.get_logger("ksched.plugins.dynamicresources")

STATE_KEY = names.DYNAMIC_RESOURCES
# The pod-group cycle's state: each tried member's ``_State`` by pod key.
_GROUP_STATE_KEY = STATE_KEY + "/podGroup"
CLAIMS = Listers.RESOURCE_CLAIMS
SLICES = Listers.RESOURCE_SLICES
CLASSES = Listers.DEVICE_CLASSES
TAINT_RULES = Listers.DEVICE_TAINT_RULES
#: What a lister the handle does not have lists: one object, so the inventory's stamp
#: (which names each store by identity) stays the same from one cycle to the next.
_NO_OBJECTS: Mapping[str, Any] = MappingProxyType({})
# resourceapi.ResourceClaimReservedForMaxSize
RESERVED_FOR_MAX_SIZE = 256
# resourceapi.FirstAvailableDeviceRequestMaxSize
FIRST_AVAILABLE_MAX_SIZE = 8
# retry.DefaultRetry: attempts of a claim status update that meets conflicts.
_UPDATE_ATTEMPTS = 5
# AssumeExtendedResourceTimeoutDefaultSeconds: how long PreBind waits for the claim it
# created to reach the informer (its devices stay in flight until then).
EXTENDED_CLAIM_WAIT = 120.0
# How often PreBind looks at the claims while it waits for binding conditions.
BINDING_POLL = 5.0


class _BindingFailed(Exception):
    """``ErrDeviceBindingFailed`` / ``ErrDeviceBindingTimeout`` with upstream's text."""


def _device_status(claim: ResourceClaim, r: Any) -> dict[str, Any] | None:
    """``getAllocatedDeviceStatus``: the claim's status.devices entry of a result."""
    for d in claim.status.devices:
        if (
            isinstance(d, dict)
            and d.get("driver") == r.driver
            and d.get("pool") == r.pool
            and d.get("device") == r.device
        ):
            return d
    return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conds = status.get("conditions")
    for c in conds if isinstance(conds, list) else ():
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def _claim_ready_for_binding(claim: ResourceClaim) -> bool:
    """``isClaimReadyForBinding``: every binding condition of its devices True (none at
    all counts); a failure condition True raises ``_BindingFailed``."""
    alloc = claim.status.allocation
    if alloc is None:
        return False
    for r in alloc.devices.results:
        if not r.binding_conditions:
            continue
        st = _device_status(claim, r)
        if st is None:
            return False
        for kind in r.binding_failure_conditions:
            c = _condition(st, kind)
            if c is not None and c.get("status") == "True":
                raise _BindingFailed(
                    f"device binding failed: claim={claim.metadata.name}, "
                    f"reason={c.get('reason', '')}, "
                    f"message={json.dumps(str(c.get('message', '')), ensure_ascii=False)}"
                )
        for kind in r.binding_conditions:
            c = _condition(st, kind)
            if c is None or c.get("status") != "True":
                return False
    return True


def _has_binding_conditions(claims: Sequence[ResourceClaim]) -> bool:
    return any(
        r.binding_conditions
        for c in claims
        if c.status.allocation is not None
        for r in c.status.allocation.devices.results
    )


class _NotSchedulable(Exception):
    """``foreachPodResourceClaim``'s errors: the pod waits for a claim event."""


def claim_name(pod: Pod, index: int) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim of ``spec.resourceClaims[index]`` and whether it
    must be owned by the pod (made from a template); None when none was needed."""
    pc = pod.spec.resource_claims[index]
    meta = pod.metadata
    if pc.resource_claim_name is not None:
        return pc.resource_claim_name, False
    if pc.resource_claim_template_name is not None:
        for st in pod.status.resource_claim_statuses:
            if st.name == pc.name:
                return st.resource_claim_name, True
        raise _NotSchedulable(f'pod "{meta.namespace}/{meta.name}": resource claim not found')
    raise _NotSchedulable(
        f'pod "{meta.namespace}/{meta.name}", spec.resourceClaim "{pc.name}": resource claim '
        "reference not supported"
    )


def _is_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    return any(o.controller and o.uid == pod.metadata.uid for o in claim.metadata.owner_references)


def _reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    return any(r.uid == pod.metadata.uid for r in claim.status.reserved_for)


def _kobj(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


async def _write(call: Coroutine[Any, Any, ResourceClaim], what: str) -> ResourceClaim:
    """A claim write; a failure other than a conflict (which is retried) says ``what``."""
    try:
        return await call
    except ConflictError:
        raise
    except BindError as e:
        raise BindError(f"{what}: {e}", retry=e.retry) from e


async def _reread(cluster: ClaimWriter, claim: ResourceClaim, what: str) -> ResourceClaim:
    """The claim as stored now, after a conflict; gone is a final error saying ``what``."""
    meta = claim.metadata
    fresh: ResourceClaim | None = await cluster.get_resource_claim(meta.namespace, meta.name)
    if fresh is None:
        raise BindError(
            f'{what}: resourceclaims.resource.k8s.io "{meta.name}" not found', retry=False
        )
    return fresh


# Past this many entries the taken-device log starts over (its readers recount).
_LOG_LIMIT = 100_000


class _Taken:
    """Devices of allocated claims, by claim, updated from a claim store's changes; and
    the shares of devices they hold (consumable capacity)."""

    def __init__(self, features: Features) -> None:
        self.features = features
        self.store: Mapping[str, ResourceClaim] | None = None
        self.revision = -1
        self.by_key: dict[str, tuple[Any, ...]] = {}
        self.count: dict[Any, int] = {}
        self.devices: set[Any] = set()
        # Devices that became taken (+1) or free (-1), in order, since ``generation``
        # began (a full recount starts a new one): Filter's counts follow it.
        self.generation = 0
        self.log: list[tuple[Any, int]] = []
        # Shares by claim (few claims have any), and their sum (None: to be summed).
        self.shares: dict[str, tuple[Any, ...]] = {}
        self._shared: Shared | None = None

    def shared(self) -> Shared:
        """``Shared`` of the claims counted (``Allocator``'s ``shared``)."""
        if self._shared is None:
            from ...dra.allocator import shared_allocations

            self._shared = shared_allocations(
                (s for shares in self.shares.values() for s in shares), self.features
            )
        return self._shared

    def _set(self, key: str, claim: ResourceClaim | None) -> None:
        from ...dra.allocator import allocated_devices, claim_shares

        new = tuple(allocated_devices([claim], self.features)) if claim is not None else ()
        shares = claim_shares(claim) if claim is not None else ()
        if shares != self.shares.get(key, ()):
            self._shared = None
            if shares:
                self.shares[key] = shares
            else:
                del self.shares[key]
        old = self.by_key.pop(key, ())
        if new:
            self.by_key[key] = new
        for d in old:
            n = self.count[d] - 1
            if n:
                self.count[d] = n
            else:
                del self.count[d]
                self.devices.discard(d)
                self.log.append((d, -1))
        for d in new:
            n = self.count.get(d, 0)
            self.count[d] = n + 1
            if not n:
                self.devices.add(d)
                self.log.append((d, 1))

    def refresh(
        self,
        store: Mapping[str, ResourceClaim],
        latest: Callable[[str], ResourceClaim | None],
        dirty: set[str],
    ) -> set[Any]:
        changes = None
        if store is self.store and isinstance(store, RevisionedStore):
            changes = store.changes_since(self.revision)
        if changes is None or len(self.log) > _LOG_LIMIT:
            self.by_key, self.count, self.devices = {}, {}, set()
            self.shares, self._shared = {}, None
            self.generation += 1
            self.log = []
            for key in store:
                self._set(key, latest(key))
        else:
            keys = {f"{c.metadata.namespace}/{c.metadata.name}" for c in changes}
            for key in keys | dirty:
                self._set(key, latest(key))
        dirty.clear()
        self.store = store
        self.revision = int(getattr(store, "revision", -1))
        return self.devices


class _State:
    """``stateData``: shared (not copied) by clones, as upstream's."""

    __slots__ = (
        "allocations",
        "allocator",
        "available_on",
        "blocked",
        "claims",
        "counted",
        "ext",
        "ext_scalars",
        "ext_uid",
        "in_flight",
        "node_allocations",
        "node_ext",
        "pending",
        "prioritized",
        "unavailable",
    )

    def __init__(self) -> None:
        self.claims: list[ResourceClaim] = []
        # The claims to allocate (unallocated ones), in order.
        self.pending: list[ResourceClaim] = []
        self.allocator: Allocator | None = None
        # Per claim: where an allocated claim can be used (None: anywhere / unallocated).
        self.available_on: list[CompiledNodeSelector | None] = []
        # Per claim: the allocation Reserve chose (None: nothing to allocate).
        self.allocations: list[AllocationResult | None] = []
        # Per node Filter rejected for them: the claims not available there. PostFilter
        # reads only the nodes whose status is ours: upstream's Filter never runs where an
        # earlier plugin rejected, while filter_batch and explanations judge every node.
        self.unavailable: dict[str, list[int]] = {}
        # Allocated claims whose binding failed or timed out: available on no node.
        self.blocked: set[int] = set()
        # Filter's allocations by node; a Node: it fits, the allocation is made at Reserve.
        self.node_allocations: dict[str, list[AllocationResult] | Node] = {}
        # The snapshot whose nodes filter_batch counted free devices on (allocated at
        # Reserve, on the chosen node).
        self.counted: Snapshot | None = None
        # Some claim has a prioritized list (firstAvailable): Score has work to do.
        self.prioritized = False
        self.in_flight: list[str] = []
        # The special claim for DRA-backed extended resources: its index in ``claims``
        # (None: the pod has none), its first uid (in-memory claims get a temporary
        # one), the pod's scalar requests, and Filter's per-node claim and mappings.
        self.ext: int | None = None
        self.ext_uid = ""
        self.ext_scalars: dict[str, int] = {}
        self.node_ext: dict[str, tuple[ResourceClaim | None, list[RequestMapping]]] = {}

    def clone(self) -> _State:
        return self

    def to_allocate(self) -> list[int]:
        return [i for i, c in enumerate(self.claims) if c.status.allocation is None]

    def for_node(self, node: str) -> list[tuple[int, ResourceClaim]]:
        """The claims to allocate on ``node``: the special claim as Filter made it for
        the node, left out where the node's device plugins cover it."""
        out: list[tuple[int, ResourceClaim]] = []
        for i in self.to_allocate():
            claim: ResourceClaim | None = self.claims[i]
            if i == self.ext:
                claim = self.node_ext.get(node, (None, []))[0]
            if claim is not None:
                out.append((i, claim))
        return out


def _unschedulable(reasons: tuple[str, ...]) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


class DynamicResources(
    PreEnqueuePlugin[DynamicResourcesArgs],
    PreFilterPlugin[DynamicResourcesArgs],
    FilterPlugin[DynamicResourcesArgs],
    PostFilterPlugin[DynamicResourcesArgs],
    PreScorePlugin[DynamicResourcesArgs],
    ScorePlugin[DynamicResourcesArgs],
    ReservePlugin[DynamicResourcesArgs],
    PreBindPlugin[DynamicResourcesArgs],
):
    """Allocates devices for ResourceClaims (DRA with structured parameters)."""

    name = names.DYNAMIC_RESOURCES
    # DeviceTaintRules are watched only with DRADeviceTaintRules on (ksched.cluster.wiring).
    reads_listers = frozenset({CLAIMS, SLICES, CLASSES, TAINT_RULES})
    Args = DynamicResourcesArgs
    args: DynamicResourcesArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle: Handle = handle if handle is not None else Handle()
        super().__init__(args, self._handle)
        # Upstream bounds Filter only with DRASchedulerFilterTimeout on (and > 0).
        timeout = self.args.filter_timeout
        gated = self._handle.features.enabled("DRASchedulerFilterTimeout")
        self.filter_timeout: float = timeout if gated and timeout else 0.0
        # Claims as the API has them, overlaid with what PreBind wrote (upstream's claim
        # assume cache), and claims whose allocation is in flight (Reserve to PreBind).
        self.claims: AssumeCache[ResourceClaim] = AssumeCache(self._claims_store, "claim")
        self.in_flight: dict[str, ResourceClaim] = {}
        self._in_flight_version = 0
        self._cel: ExpressionCache | None = None
        self._inventory: tuple[tuple[int, int, int, int], Inventory] | None = None
        gates = self._handle.features
        self._features = Features(
            admin_access=gates.enabled("DRAAdminAccess"),
            device_taints=gates.enabled("DRADeviceTaints"),
            consumable_capacity=gates.enabled("DRAConsumableCapacity"),
            binding_conditions=gates.enabled("DRADeviceBindingConditions")
            and gates.enabled("DRAResourceClaimDeviceStatus"),
            fractional_capacity_range="DRAFractionalCapacityRange" in gates.table.gates
            and gates.enabled("DRAFractionalCapacityRange"),
            kube_1_37=gates.at_least("1.37"),
        )
        self._taken = _Taken(self._features)
        # Upstream's slice tracker adds DeviceTaintRules' taints to the slices it lists.
        self._taint_rules = gates.enabled("DRADeviceTaints") and gates.enabled(
            "DRADeviceTaintRules"
        )
        # Claims whose assumed version changed (PreBind, Unreserve): recounted next time.
        self._dirty: set[str] = set()
        self._ext_classes = ClassResolver()
        self.binding_timeout: float = self.args.binding_timeout or DEFAULT_BINDING_TIMEOUT
        # Wall time minus the handle's clock: allocation timestamps are wall time, the
        # waits run on the (maybe virtual) clock.
        self._wall_offset = time.time() - self._handle.clock.now()

    @property
    def features(self) -> Features:
        """The optional DRA behaviours allocation has (feature gates switch them)."""
        return self._features

    @features.setter
    def features(self, value: Features) -> None:
        self._features = value
        self._taken = _Taken(value)  # devices and shares are counted afresh

    # -- listers (looked up late: the daemon fills them after building plugins) -------------
    def _lister(self, key: str) -> Mapping[str, Any]:
        # The store itself even when empty: a fresh ``{}`` per call gave the inventory a
        # new stamp every cycle (no DeviceTaintRules is an empty store), rebuilding it and
        # its selector verdicts twice per pod.
        store: Mapping[str, Any] | None = self._handle.listers.get(key)
        return _NO_OBJECTS if store is None else store

    def _claims_store(self) -> Mapping[str, ResourceClaim]:
        return self._lister(CLAIMS)

    def _get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claims.get(f"{namespace}/{name}")

    @property
    def cel(self) -> ExpressionCache:
        """Compiled selectors (the CEL library is loaded with the first pod with claims)."""
        if self._cel is None:
            from ...dra.cel import ExpressionCache

            self._cel = ExpressionCache(size=256)
        return self._cel

    def inventory(self) -> Inventory:
        """The slices as the allocator sees them, rebuilt when the slice list changes."""
        store = self._lister(SLICES)
        rules = self._lister(TAINT_RULES) if self._taint_rules else _NO_OBJECTS
        stamp = (
            id(store),
            int(getattr(store, "revision", -1)),
            id(rules),
            int(getattr(rules, "revision", -1 if rules else 0)),
        )
        if self._inventory is None or self._inventory[0] != stamp or min(stamp[1], stamp[3]) < 0:
            from ...dra.allocator import Inventory

            slices: Iterable[ResourceSlice] = store.values()
            if rules:
                from ...dra.taintrules import apply_taint_rules

                slices = apply_taint_rules(slices, rules)
            self._inventory = (stamp, Inventory(slices))
        return self._inventory[1]

    def allocated(self) -> set[DeviceID]:
        """Devices taken by allocated claims (their latest known version) or in flight.

        Upstream lists every claim for every pod; here the set is kept up to date from
        the claim store's journal of changes (``RevisionedStore.changes_since``) and the
        claims PreBind assumed, so a pod's cycle does not cost a pass over all claims."""
        from ...dra.allocator import allocated_devices

        taken = self._taken.refresh(self._claims_store(), self.claims.get, self._dirty)
        if not self.in_flight:
            return taken
        return taken | allocated_devices(self.in_flight.values(), self.features)

    def shared(self) -> Shared:
        """Shares of devices allocated claims hold, those in flight included (call after
        ``allocated``, which brings the counted claims up to date)."""
        from ...dra.allocator import claim_shares, shared_allocations

        counted = self._taken.shared()
        flying = [s for c in self.in_flight.values() for s in claim_shares(c)]
        if not flying:
            return counted
        mine = [s for shares in self._taken.shares.values() for s in shares]
        return shared_allocations(mine + flying, self.features)

    def _bump(self) -> None:
        self._in_flight_version += 1

    def _wall_now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self._wall_offset + self._handle.clock.now(), dt.UTC)

    def _claim_timed_out(self, claim: ResourceClaim) -> bool:
        """``isClaimTimeout``: a device with binding conditions allocated longer ago than
        ``bindingTimeout``."""
        alloc = claim.status.allocation
        if not self.features.binding_conditions or alloc is None:
            return False
        if not alloc.allocation_timestamp or not any(
            r.binding_conditions for r in alloc.devices.results
        ):
            return False
        try:
            at = dt.datetime.fromisoformat(alloc.allocation_timestamp)
        except ValueError:
            return False
        if at.tzinfo is None:
            at = at.replace(tzinfo=dt.UTC)
        return at + dt.timedelta(seconds=self.binding_timeout) < self._wall_now()

    def _binding_blocked(self, claim: ResourceClaim) -> bool:
        """An allocated claim whose binding failed or timed out: Filter finds it not
        available, so PostFilter may deallocate it for another try."""
        try:
            ready = _claim_ready_for_binding(claim)
        except _BindingFailed:
            return True
        return not ready and self._claim_timed_out(claim)

    # -- claims of a pod ------------------------------------------------------------------------
    def _pod_claims(self, pod: Pod) -> list[ResourceClaim]:
        """``podResourceClaims``; _NotSchedulable when one cannot be used yet."""
        out: list[ResourceClaim] = []
        ns = pod.metadata.namespace
        for i in range(len(pod.spec.resource_claims)):
            name, must_own = claim_name(pod, i)
            if name is None:
                continue
            claim = self._get_claim(ns, name)
            if claim is None:
                raise _NotSchedulable(f'resourceclaim.resource.k8s.io "{name}" not found')
            if claim.metadata.deletion_timestamp is not None:
                raise _NotSchedulable(f'resourceclaim "{name}" is being deleted')
            if must_own and not _is_for_pod(pod, claim):
                raise _NotSchedulable(
                    f"ResourceClaim {ns}/{name} was not created for pod "
                    f"{ns}/{pod.metadata.name} (pod is not owner)"
                )
            out.append(claim)
        return out

    def sign_pod(self, pod: PodInfo) -> Any:
        """Pods with claims are not signable, as upstream's SignPod; nor are pods with
        extended resources a DeviceClass backs (their Filter verdicts depend on devices
        others take, not on the node alone)."""
        if pod.pod.spec.resource_claims:
            return NOT_SIGNABLE
        scalars = pod.requests.scalar
        if scalars and self._ext_classes.backed(self._lister(CLASSES), scalars.items()):
            return NOT_SIGNABLE
        return None

    # -- PreEnqueue -----------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.pod.spec.resource_claims:
            return None
        try:
            self._pod_claims(pod.pod)
        except _NotSchedulable as e:
            return Status.unresolvable(str(e))
        return None

    # -- PreFilter ------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = _State()
        state.write(STATE_KEY, s)
        group = state.pod_group_cycle
        if group is not None:
            # the group's PodGroupPostFilter frees the members' claims (``podsStateData``)
            members = group.get(_GROUP_STATE_KEY)
            if members is None:
                members = {}
                group.write(_GROUP_STATE_KEY, members)
            members[pod.key] = s
        p = pod.pod
        claims: list[ResourceClaim] = []
        if p.spec.resource_claims:
            try:
                claims = self._pod_claims(p)
            except _NotSchedulable as e:
                return None, Status.unresolvable(str(e))
        ext = self._extended_claim(pod, s)
        if ext is not None:
            s.ext, s.ext_uid = len(claims), ext.metadata.uid
            claims.append(ext)
        if not claims:
            return None, Status(Code.SKIP)
        s.available_on = [None] * len(claims)
        s.allocations = [None] * len(claims)
        to_allocate = 0
        classes = self._lister(CLASSES)
        for i, claim in enumerate(claims):
            alloc = claim.status.allocation
            if alloc is not None:
                if len(claim.status.reserved_for) >= RESERVED_FOR_MAX_SIZE and not (
                    _reserved_for_pod(p, claim)
                ):
                    return None, Status.unresolvable("resourceclaim in use")
                if self.features.binding_conditions and self._binding_blocked(claim):
                    s.blocked.add(i)
                if alloc.node_selector is not None:
                    try:
                        s.available_on[i] = compile_node_selector(
                            alloc.node_selector, "status.allocation.nodeSelector"
                        )
                    except SelectorError as e:
                        return None, Status.as_error(str(e))
                continue
            to_allocate += 1
            if claim.metadata.uid in self.in_flight:
                return None, Status.unresolvable(
                    f"resource claim {_kobj(claim)} is in the process of being allocated"
                )
            if i == s.ext:  # no requests yet, or an earlier cycle's: Filter decides
                continue
            for req in claim.spec.devices.requests:
                if req.exactly is not None:
                    st = self._validate_class(classes, req.exactly.device_class_name, req.name)
                elif req.first_available:
                    st = None
                    for sub in req.first_available:
                        qual = f"{req.name}/{sub.name}"
                        st = st or self._validate_class(classes, sub.device_class_name, qual)
                else:
                    st = Status.unresolvable(
                        f"resource claim {_kobj(claim)}, request {req.name}: unknown request type"
                    )
                if st is not None:
                    return None, st
        if to_allocate:
            from ...dra.allocator import Allocator

            s.prioritized = any(r.first_available for c in claims for r in c.spec.devices.requests)
            s.allocator = Allocator(
                self.inventory(),
                classes,
                self.allocated(),
                self.cel,
                features=self.features,
                shared=self.shared(),
                journal=self._taken if not self.in_flight else None,
                max_seconds=self.filter_timeout,
            )
        s.claims = claims
        s.pending = [c for c in claims if c.status.allocation is None]
        return None, None

    def _extended_claim(self, pod: PodInfo, s: _State) -> ResourceClaim | None:
        """``preFilterExtendedResources``: the special claim when a DeviceClass backs
        one of the pod's scalar requests (the one an earlier cycle created, or a new
        one in memory)."""
        scalars = pod.requests.scalar
        if not scalars or not self._ext_classes.backed(self._lister(CLASSES), scalars.items()):
            return None
        s.ext_scalars = dict(scalars)
        store = self._claims_store()
        found = find_extended_claim(pod.pod, (c for k in store if (c := self.claims.get(k))))
        return found if found is not None else in_memory_claim(pod.pod)

    def _filter_extended(
        self, s: _State, pod: PodInfo, node: NodeInfo
    ) -> tuple[ResourceClaim | None, list[RequestMapping], Status | None]:
        """``filterExtendedResources``: the special claim with the requests ``node``
        needs (None: its device plugins cover them all), or why the node cannot do."""
        if s.ext is None:
            return None, [], None
        claim = s.claims[s.ext]
        if claim.spec.devices.requests:  # an earlier cycle's: PostFilter deletes it
            return None, [], Status.unresolvable("cannot schedule extended resource claim")
        classes = self._ext_classes.mapping(self._lister(CLASSES))
        advertised = node.allocatable.scalar
        wanted: dict[str, int] = {}
        for name, q in s.ext_scalars.items():
            if not q or not is_dra_extended_name(name):
                continue
            if name in classes and advertised.get(name, 0) == 0:
                wanted[name] = q
            elif name not in advertised:
                return None, [], Status.unresolvable("cannot fit resource")
        if not wanted or claim.status.allocation is not None:
            return None, [], None
        requests, mappings = requests_and_mappings(pod.pod, wanted, classes)
        spec = msgspec.structs.replace(
            claim.spec, devices=msgspec.structs.replace(claim.spec.devices, requests=requests)
        )
        return msgspec.structs.replace(claim, spec=spec), mappings, None

    @staticmethod
    def _validate_class(classes: Mapping[str, Any], name: str, request: str) -> Status | None:
        if not name:
            return Status.as_error(f"request {request}: unsupported request type")
        if name not in classes:
            return Status.unresolvable(f"request {request}: device class {name} does not exist")
        return None

    def _state(self, state: CycleState) -> _State:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            raise KeyError(f'reading "{STATE_KEY}" from cycleState: not found')
        return s

    # -- Filter ---------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = self._state(state)
        if not s.claims:
            return None
        n = node.node
        if n is None:
            return Status.as_error("node not found")
        claims = s.pending
        if s.ext is not None:
            node_claim, mappings, st = self._filter_extended(s, pod, node)
            if st is not None:
                return st
            if node_claim is None and len(s.claims) == 1:
                return None  # only extended resources, all from device plugins here
            s.node_ext[n.metadata.name] = (node_claim, mappings)
            claims = [c for _, c in s.for_node(n.metadata.name)]
        unavailable = [
            i
            for i, sel in enumerate(s.available_on)
            if (sel is not None and not sel.matches(n.metadata.labels, n.metadata.name))
            or i in s.blocked
        ]
        allocations: list[AllocationResult] = []
        if s.allocator is not None:
            from ...dra.allocator import AllocationError, AllocationTimeout

            try:
                fits = s.allocator.quick_fit(n, claims) if claims else True
                if fits is None:
                    allocations = s.allocator.allocate(n, claims)
                    fits = len(allocations) == len(claims)
            except AllocationTimeout:
                return Status.unresolvable("timed out trying to allocate devices")
            except AllocationError as e:
                return Status.as_error(str(e))
            if not fits:
                return Status.unresolvable("cannot allocate all claims")
        if unavailable:
            s.unavailable[n.metadata.name] = unavailable
            return Status.unresolvable("resourceclaim not available on the node")
        if s.allocator is not None:
            s.node_allocations[n.metadata.name] = allocations or n
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        """Filter over every node at once. For claims that counting decides (one kind of
        ExactCount request, no constraints) it counts each node's free selectable devices;
        otherwise it runs ``filter`` on each node. Statuses of rejected nodes come from
        ``filter``, as the runtime asks it; an Error status fails the cycle as ``filter``'s
        would, on a node the Filter plugins before this one pass (RowErrors)."""
        from ...dra.allocator import AllocationError

        s = self._state(state)
        infos = snap.node_infos
        mask = np.zeros(snap.n, dtype=np.bool_)
        alloc = s.allocator
        simple = None
        # An AllocationError while counting (a selector failing on some device) is not the
        # cycle's error yet: upstream's Filter fails only on a node the Filter plugins
        # before it pass, so those nodes are judged one by one below (RowErrors).
        if alloc is not None and s.ext is None and not any(s.available_on) and not s.blocked:
            first = next((ni.node for ni in infos if ni.node is not None), None)
            with contextlib.suppress(AllocationError):
                simple = alloc.countable(first, s.pending) if first is not None else None
        if alloc is not None and simple is not None:
            req, need = simple
            nodes = [ni.node for ni in infos]
            try:
                counted = alloc.free_counts(nodes, s.pending, req) >= need
            except AllocationError:
                counted = None
            if counted is not None:
                if None in nodes:
                    counted &= np.array([n is not None for n in nodes], dtype=np.bool_)
                s.counted = snap  # Reserve allocates on the chosen node
                return counted
        errors: dict[int, Status] = {}
        for r, ni in enumerate(infos):
            if ni.node is None:
                continue
            st = self.filter(state, pod, ni)
            if st is None or st.is_success():
                mask[r] = True
            elif st.code == Code.ERROR:
                errors[r] = st
        if errors:
            # fails the cycle only where the Filter plugins before this one pass
            raise RowErrors(errors, mask)
        return mask

    # -- PostFilter -----------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            # An earlier PreFilter rejected the pod, so ours never ran: upstream's
            # getStateData error (framework.ErrNotFound) ends the PostFilter phase with
            # "not found", and preemption does not run.
            return None, Status(Code.ERROR, "not found")
        # v1.37 logs rather than returns these two reasons (an empty status: nothing
        # after the filter reasons in the FitError).
        quiet = self._handle.features.at_least("1.37")
        if not s.claims:
            return None, _unschedulable(() if quiet else ("no new claims to deallocate",))
        uid = pod.pod.metadata.uid
        unavailable = {
            i
            for name, indices in s.unavailable.items()
            if (st := statuses.get(name)) is not None and st.plugin == self.name
            for i in indices
        }
        freed = self._free_claims(uid, s, unavailable)
        if freed is not None:
            return None, freed
        return None, _unschedulable(() if quiet else ("still not schedulable",))

    def _free_claims(self, uid: str, s: _State, unavailable: set[int]) -> Status | None:
        """``deallocateOrDeletePodClaims``: deallocate the first of the ``unavailable``
        claims no other pod holds, else delete an extended-resource claim an earlier
        cycle created; the status saying which (an error if the write failed), None when
        there was nothing to free."""
        for i in sorted(unavailable):
            if i == s.ext:
                continue
            claim = s.claims[i]
            rf = claim.status.reserved_for
            if not rf or (len(rf) == 1 and rf[0].uid == uid):
                status = msgspec.structs.replace(
                    claim.status, allocation=None, reserved_for=[], devices=[]
                )
                freed = msgspec.structs.replace(claim, status=status)
                err = self._io(
                    functools.partial(self._cluster().update_resource_claim_status, freed)
                )
                if err is not None:
                    return Status.as_error(err)
                return Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
        if s.ext is not None and s.claims[s.ext].metadata.name != IN_MEMORY_NAME:
            # An earlier cycle created it and binding failed: start afresh.
            err = self._io(functools.partial(self._delete_claim, s.claims[s.ext]))
            if err is not None:
                return Status.as_error(err)
            return Status(Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
        return None

    def pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        """Upstream's PodGroupPostFilter: each unscheduled member's claims freed as its
        PostFilter would (any claim unavailable on some node); never makes the group
        schedulable itself. Groups with topology constraints are left alone (with TAS)."""
        pg = group.pod_group
        if (
            self._handle.features.enabled_if_known("TopologyAwareWorkloadScheduling")
            and pg.spec.scheduling_constraints is not None
        ):
            return None, Status(Code.UNSCHEDULABLE)
        members: dict[str, _State] | None = state.get(_GROUP_STATE_KEY)
        if members is None:
            # no member's PreFilter got as far as ours this cycle: upstream's
            # getPodGroupStateDataFromPodGroupCycleState error (ErrNotFound)
            return None, Status(Code.ERROR, "not found")
        for pod in group.unscheduled_pods:
            s = members.get(pod.key)
            if s is None:
                continue
            unavailable = {i for indices in s.unavailable.values() for i in indices}
            freed = self._free_claims(pod.pod.metadata.uid, s, unavailable)
            if freed is not None and freed.code == Code.ERROR:
                return None, freed
        return None, Status(
            Code.UNSCHEDULABLE, "deallocation and deletion of ResourceClaims completed"
        )

    async def _delete_claim(self, claim: ResourceClaim) -> None:
        """``deleteClaim``: drop the scheduler's finalizer (read again on conflict), then
        delete the claim (already gone is fine)."""
        cluster = self._cluster()
        for attempt in range(_UPDATE_ATTEMPTS):
            if attempt:
                claim = await _reread(cluster, claim, f"get resourceclaim {_kobj(claim)}")
            meta = claim.metadata
            kept = [f for f in meta.finalizers if f != FINALIZER]
            try:
                await _write(
                    cluster.update_resource_claim(
                        msgspec.structs.replace(
                            claim, metadata=msgspec.structs.replace(meta, finalizers=kept)
                        )
                    ),
                    f"update resourceclaim {_kobj(claim)}",
                )
            except ConflictError:
                if attempt == _UPDATE_ATTEMPTS - 1:
                    raise
                continue
            break
        await cluster.delete_resource_claim(claim.metadata.namespace, claim.metadata.name)

    # -- PreScore / Score ------------------------------------------------------------------------
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        """Skip Score unless a claim has a prioritized list: every node would score 0,
        which changes no total (upstream has no PreScore and scores 0 everywhere)."""
        s = state.get(STATE_KEY)
        return None if isinstance(s, _State) and s.prioritized else Status(Code.SKIP)

    # -- Score ------------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Prioritized lists: earlier subrequests chosen on a node score higher."""
        s = self._state(state)
        allocations = s.node_allocations.get(node.name)
        if not s.claims or allocations is None or isinstance(allocations, Node):
            return 0
        score = 0
        for claim, alloc in zip((s.claims[i] for i in s.to_allocate()), allocations, strict=False):
            chosen = {r.request for r in alloc.devices.results if "/" in r.request}
            for req in claim.spec.devices.requests:
                for k, sub in enumerate(req.first_available):
                    if f"{req.name}/{sub.name}" in chosen:
                        score += FIRST_AVAILABLE_MAX_SIZE - k
        return score

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: IntArray
    ) -> IntArray:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or not s.prioritized:
            return np.zeros(len(rows), dtype=np.int64)
        infos = snap.node_infos
        return np.fromiter(
            (self.score(state, pod, infos[int(r)]) for r in rows), dtype=np.int64, count=len(rows)
        )

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        return default_normalize_score(100, False, scores)

    # -- Reserve / Unreserve ------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = self._state(state)
        pairs = s.for_node(node_name) if s.claims else []
        if not pairs or s.allocator is None:
            return None
        pending = [i for i, _ in pairs]
        allocations = s.node_allocations.get(node_name)
        if allocations is None and s.counted is not None:  # filter_batch counted devices
            ni = s.counted.get(node_name)
            allocations = None if ni is None else ni.node
        if allocations is None:
            return Status.as_error("claim allocation not found for node")
        if isinstance(allocations, Node):  # Filter counted devices: allocate them now
            try:
                allocations = s.allocator.allocate(allocations, [c for _, c in pairs])
            except Exception as e:
                return Status.as_error(str(e))
            if not allocations:
                return Status.as_error("claim allocation not found for node")
        if len(allocations) != len(pending):
            return Status.as_error(
                f"internal error, have {len(allocations)} allocations, {len(pending)} claims "
                f"to allocate, want {len(pending)} claims"
            )
        for (i, claim), alloc in zip(pairs, allocations, strict=True):
            s.allocations[i] = alloc
            meta = claim.metadata
            finalizers = list(meta.finalizers)
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            allocated = msgspec.structs.replace(
                claim,
                metadata=msgspec.structs.replace(meta, finalizers=finalizers),
                status=msgspec.structs.replace(claim.status, allocation=alloc),
            )
            self.in_flight[meta.uid] = allocated
            s.in_flight.append(meta.uid)
        self._bump()
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or not s.claims:
            return
        for i, claim in enumerate(s.claims):
            meta = claim.metadata
            if i == s.ext:
                self._unreserve_extended(s, claim)
                continue
            if self.in_flight.pop(meta.uid, None) is not None:
                self.claims.restore(f"{meta.namespace}/{meta.name}")
                self._dirty.add(f"{meta.namespace}/{meta.name}")
                self._bump()
            if claim.status.allocation is not None and _reserved_for_pod(pod.pod, claim):
                patch = {
                    "metadata": {"uid": meta.uid},
                    "status": {"reservedFor": [{"$patch": "delete", "uid": pod.pod.metadata.uid}]},
                }
                err = self._io(
                    functools.partial(
                        self._cluster().patch_resource_claim_status,
                        meta.namespace,
                        meta.name,
                        patch,
                    )
                )
                if err is not None:
                    log.error("unreserve", resourceclaim=_kobj(claim), error=err)

    def _unreserve_extended(self, s: _State, claim: ResourceClaim) -> None:
        """``unreserveExtendedResourceClaim``: its devices are no longer in flight, and a
        claim PreBind created is deleted."""
        if self.in_flight.pop(s.ext_uid, None) is not None:
            self._bump()
        if claim.metadata.name == IN_MEMORY_NAME:
            return
        self._dirty.add(_kobj(claim))
        err = self._io(functools.partial(self._delete_claim, claim))
        if err is not None:
            log.error("delete", resourceclaim=_kobj(claim), error=err)

    # -- PreBind --------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream ``PreBindPreFlight``: PreBind has work whenever the pod has claims (it
        writes allocations and reservations), so the binding cycle nominates the node first."""
        try:
            s = self._state(state)
        except KeyError as e:
            return Status.as_error(str(e))
        return None if s.claims else Status(Code.SKIP)

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = self._state(state)
        for i, claim in enumerate(s.claims):
            if _reserved_for_pod(pod.pod, claim):
                continue
            try:
                if i == s.ext:
                    if s.allocations[i] is None and not claim.spec.devices.requests:
                        continue  # the node's device plugins provide the resources
                    await self._bind_extended(s, pod, node_name)
                else:
                    s.claims[i] = await self._bind_claim(s, i, pod.pod)
            except BindError as e:
                return Status.as_error(str(e))
        if self.features.binding_conditions and _has_binding_conditions(s.claims):
            return await self._await_binding_conditions(s, pod, node_name)
        return None

    async def _await_binding_conditions(
        self, s: _State, pod: PodInfo, node_name: str
    ) -> Status | None:
        """Poll the claims (every ``BINDING_POLL`` seconds, up to ``bindingTimeout``) until
        every binding condition of their devices is True. A failure condition, a claim
        past its timeout or the wait's own deadline fails the attempt with upstream's
        text; the next attempt's Filter finds such a claim unavailable."""
        self._handle.recorder.event(
            pod,
            "Normal",
            "BindingConditionsPending",
            "Scheduling",
            f"waiting for binding conditions for device on node {node_name}",
        )
        clock = self._handle.clock
        deadline = clock.now() + self.binding_timeout
        while True:
            try:
                if self._pod_ready_for_binding(s):
                    return None
            except _BindingFailed as e:
                return Status.as_error(str(e))
            left = deadline - clock.now()
            await self._handle.park(min(left, BINDING_POLL))
            if left <= BINDING_POLL:
                return Status.as_error("device binding timeout: context deadline exceeded")

    def _pod_ready_for_binding(self, s: _State) -> bool:
        """``isPodReadyForBinding`` on the claims as the informer has them now."""
        for i, claim in enumerate(s.claims):
            fresh = self.claims.get(_kobj(claim))
            if fresh is None:
                raise _BindingFailed(
                    f'resourceclaim.resource.k8s.io "{claim.metadata.name}" not found'
                )
            s.claims[i] = fresh
            if not _claim_ready_for_binding(fresh):
                if self._claim_timed_out(fresh):
                    raise _BindingFailed(f"device binding timeout: claim={fresh.metadata.name}")
                return False
        return True

    async def _bind_extended(self, s: _State, pod: PodInfo, node_name: str) -> None:
        """Create the special claim (when in memory), allocate and reserve it, wait for
        the informer to have it, then record it in the pod's status."""
        assert s.ext is not None
        cluster = self._cluster()
        node_claim, mappings = s.node_ext.get(node_name, (None, []))
        try:
            if s.claims[s.ext].metadata.name == IN_MEMORY_NAME:
                if node_claim is None:
                    raise BindError(
                        f"extended resource claim not found for node {node_name}", retry=False
                    )
                meta = msgspec.structs.replace(node_claim.metadata, name="", uid="")
                fresh = msgspec.structs.replace(
                    node_claim,
                    metadata=meta,
                    status=msgspec.structs.replace(node_claim.status, allocation=None),
                )
                try:
                    s.claims[s.ext] = await cluster.create_resource_claim(fresh)
                except BindError as e:
                    raise BindError(
                        "create claim for extended resources "
                        f"{meta.namespace}/{IN_MEMORY_NAME}: {e}",
                        retry=e.retry,
                    ) from e
            claim = s.claims[s.ext] = await self._bind_claim(s, s.ext, pod.pod)
            await self._await_informer(claim)
        finally:
            if self.in_flight.pop(s.ext_uid, None) is not None:
                self._bump()
        if not mappings:
            raise BindError(
                f"nil or empty request mappings, no update of pod {pod.key} "
                "ExtendedResourceClaimStatus",
                retry=False,
            )
        status = {
            "requestMappings": [
                {"containerName": c, "resourceName": r, "requestName": n} for c, r, n in mappings
            ],
            "resourceClaimName": claim.metadata.name,
        }
        try:
            await cluster.set_extended_resource_claim_status(pod, status)
        except BindError as e:
            raise BindError(
                f"update pod {pod.key} ExtendedResourceClaimStatus: {e}", retry=e.retry
            ) from e

    async def _await_informer(self, claim: ResourceClaim) -> None:
        """``waitForExtendedClaimInAssumeCache``: until the claim store has the created
        claim, its devices would look free; poll (at most ``EXTENDED_CLAIM_WAIT``)."""
        import anyio

        key = _kobj(claim)
        deadline = time.monotonic() + EXTENDED_CLAIM_WAIT
        while True:
            stored = self.claims.get_api(key)
            if stored is not None:
                if resource_version(stored) <= resource_version(claim):
                    try:
                        self.claims.assume(key, claim)
                    except Exception as e:  # a newer version arrived meanwhile: fine
                        log.debug("claim not stored in assume cache", error=str(e))
                self._dirty.add(key)
                return
            if time.monotonic() >= deadline:
                log.info("claim not stored in assume cache after retries", resourceclaim=key)
                return
            await anyio.sleep(0.05)

    async def _bind_claim(self, s: _State, index: int, pod: Pod) -> ResourceClaim:
        claim = s.claims[index]
        allocation = s.allocations[index]
        uid = claim.metadata.uid
        cluster = self._cluster()
        ref = ResourceClaimConsumerReference(
            resource="pods", name=pod.metadata.name, uid=pod.metadata.uid
        )
        try:
            for attempt in range(_UPDATE_ATTEMPTS):
                if attempt:
                    what = f"get updated claim {_kobj(claim)} after conflict"
                    claim = await _reread(cluster, claim, what)
                if claim.metadata.deletion_timestamp is not None:
                    raise BindError(f"claim {_kobj(claim)} got deleted in the meantime", retry=True)
                try:
                    if allocation is not None:
                        if claim.status.allocation is not None:
                            raise BindError(
                                f"claim {_kobj(claim)} got allocated elsewhere in the meantime",
                                retry=True,
                            )
                        if FINALIZER not in claim.metadata.finalizers:
                            meta = msgspec.structs.replace(
                                claim.metadata, finalizers=[*claim.metadata.finalizers, FINALIZER]
                            )
                            claim = await _write(
                                cluster.update_resource_claim(
                                    msgspec.structs.replace(claim, metadata=meta)
                                ),
                                f"add finalizer to claim {_kobj(claim)}",
                            )
                    alloc = allocation or claim.status.allocation
                    if self.features.binding_conditions:
                        if alloc is None:
                            raise BindError(
                                f"claim {_kobj(claim)} got deallocated elsewhere in the meantime",
                                retry=True,
                            )
                        if alloc.allocation_timestamp is None:
                            alloc = msgspec.structs.replace(
                                alloc, allocation_timestamp=rfc3339(self._wall_now())
                            )
                    status = msgspec.structs.replace(
                        claim.status,
                        allocation=alloc,
                        reserved_for=[*claim.status.reserved_for, ref],
                    )
                    what = "allocation and reservation" if allocation else "reservation"
                    claim = await _write(
                        cluster.update_resource_claim_status(
                            msgspec.structs.replace(claim, status=status)
                        ),
                        f"add {what} to claim {_kobj(claim)}",
                    )
                except ConflictError:
                    if attempt == _UPDATE_ATTEMPTS - 1:
                        raise
                    continue
                break
            if allocation is not None:
                key = f"{claim.metadata.namespace}/{claim.metadata.name}"
                stored = self.claims.get_api(key)
                if stored is None or resource_version(stored) <= resource_version(claim):
                    try:
                        self.claims.assume(key, claim)
                        self._dirty.add(key)
                    except Exception as e:  # concurrent delete or update: fine
                        log.debug("claim not stored in assume cache", error=str(e))
            return claim
        finally:
            if allocation is not None and self.in_flight.pop(uid, None) is not None:
                self._bump()

    # -- I/O from synchronous extension points ---------------------------------------------------
    def _cluster(self) -> ClaimWriter:
        # The scheduler's client offers the claim writes (``profile.SchedulerCluster``).
        return cast(ClaimWriter, self._handle.cluster)

    def _io(self, call: Callable[[], Coroutine[Any, Any, Any]]) -> str | None:
        """Run an API call from a synchronous extension point (Unreserve, PostFilter).

        A cluster held in memory (simulate, tests) answers without suspending: run it now.
        A real API call goes to the scheduler's task group (``handle.spawn``)."""
        spawn = self._handle.spawn
        if spawn is None:
            try:
                run_sync(call())
            except BindError as e:
                return str(e)
            except RuntimeError as e:
                return str(e)
            return None

        async def later() -> None:
            try:
                await call()
            except BindError as e:
                log.warning("resourceclaim update failed", error=str(e))

        spawn(later)
        return None

    # -- queueing hints -------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As upstream with queueing hints on (v1.37 adds claims' deletion)."""
        claim = self.is_schedulable_after_claim_change
        deleted = (
            [
                ClusterEventWithHint(
                    ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.DELETE), claim
                )
            ]
            if self._handle.features.at_least("1.37")
            else []
        )
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD), claim),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.UPDATE), claim
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.UPDATE)),
            *deleted,
        ]

    def is_schedulable_after_claim_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        if new is None:
            # deleted (v1.37): only an allocated claim's deletion frees devices
            allocated = old is not None and old.status.allocation is not None
            return QueueingHint.QUEUE if allocated else QueueingHint.SKIP
        try:
            uses = any(c.metadata.uid == new.metadata.uid for c in self._pod_claims(pod.pod))
        except _NotSchedulable:
            return QueueingHint.SKIP
        if old is not None and old.status.allocation is not None and new.status.allocation is None:
            return QueueingHint.QUEUE  # deallocated: devices became free
        if not uses:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if old.status == new.status:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        if pod.pod.metadata.uid != new.pod.metadata.uid:
            return QueueingHint.SKIP
        try:
            self._pod_claims(new.pod)
        except _NotSchedulable:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
