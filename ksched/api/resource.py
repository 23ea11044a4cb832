"""``resource.k8s.io/v1`` objects (Dynamic Resource Allocation with structured parameters).

What the DynamicResources plugin and its allocator read: DeviceClasses, ResourceSlices
(drivers' devices, grouped in pools), ResourceClaims (what pods ask for, and what they
were given in ``status``) and ResourceClaimTemplates. Decoded with msgspec like the
core objects (``ksched.api.objects``); a ResourceClaim keeps its ``raw`` mapping because
PreBind sends the whole object back with its allocation, as upstream's Update does, and
fields ksched does not model must survive that round trip.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .objects import _S, NodeSelector, ObjectMeta, Quantity, Taint, Toleration

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "FINALIZER",
    "AllocationResult",
    "CELDeviceSelector",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CapacityRequirements",
    "Device",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClass",
    "DeviceClassSpec",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceTaintRule",
    "DeviceTaintRuleSpec",
    "DeviceTaintSelector",
    "ExactDeviceRequest",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
]

# The finalizer the scheduler adds before it writes an allocation (resourceapi.Finalizer).
FINALIZER = "resource.kubernetes.io/delete-protection"
ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"


# ---- selectors -------------------------------------------------------------------


class CELDeviceSelector(_S):
    expression: str = ""


class DeviceSelector(_S):
    cel: CELDeviceSelector | None = None


# ---- DeviceClass -------------------------------------------------------------------


class DeviceClassSpec(_S):
    selectors: list[DeviceSelector] = []
    config: list[dict[str, Any]] = []
    # KEP-5004: pods asking for this extended resource get devices of this class.
    extended_resource_name: str | None = None


class DeviceClass(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)
    kind: str = "DeviceClass"
    api_version: str = "resource.k8s.io/v1"


# ---- ResourceSlice -----------------------------------------------------------------


class DeviceAttribute(_S):
    """Exactly one of the four is set (``int``/``bool`` are Go's field names)."""

    int_: int | None = msgspec.field(default=None, name="int")
    bool_: bool | None = msgspec.field(default=None, name="bool")
    string: str | None = None
    version: str | None = None


class CapacityRequestPolicyRange(_S):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(_S):
    """How requests for a shareable device's capacity are checked and rounded up
    (DRAConsumableCapacity)."""

    default: Quantity | None = None
    valid_values: list[Quantity] | None = None
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(_S):
    value: Quantity = "0"
    request_policy: CapacityRequestPolicy | None = None


class Device(_S):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[dict[str, Any]] = []
    # With the slice's perDeviceNodeSelection: exactly one of these three.
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    # DeviceTaints (DRADeviceTaints): same fields and matching as a node's taints.
    taints: list[Taint] = []
    # DRAConsumableCapacity: the device may go to several claims, each consuming a share
    # of its capacity.
    allow_multiple_allocations: bool | None = None
    # Device binding conditions (DRADeviceBindingConditions): ksched does not wait for
    # them, so it hands such devices out to no one (upstream with the gate off).
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    binds_to_node: bool | None = None


class ResourcePool(_S):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(_S):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    # Exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection.
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = []
    shared_counters: list[dict[str, Any]] = []


class ResourceSlice(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)
    kind: str = "ResourceSlice"
    api_version: str = "resource.k8s.io/v1"


# ---- DeviceTaintRule (DRADeviceTaintRules) ------------------------------------------


class DeviceTaintSelector(_S):
    """Unset fields match any device; all set ones must match."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class DeviceTaintRuleSpec(_S):
    # No selector matches no device (the empty one matches all).
    device_selector: DeviceTaintSelector | None = None
    taint: Taint | None = None


class DeviceTaintRule(_S):
    """Adds its taint to the matching devices, as if their slices had it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceTaintRuleSpec = msgspec.field(default_factory=DeviceTaintRuleSpec)
    kind: str = "DeviceTaintRule"
    api_version: str = "resource.k8s.io/v1"


# ---- ResourceClaim -----------------------------------------------------------------


class CapacityRequirements(_S):
    requests: dict[str, Quantity] = {}


class ExactDeviceRequest(_S):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: int = 0
    admin_access: bool | None = None
    tolerations: list[Toleration] = []
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(_S):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: int = 0
    tolerations: list[Toleration] = []
    capacity: CapacityRequirements | None = None


class DeviceRequest(_S):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(_S):
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaim(_S):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[dict[str, Any]] = []


class ResourceClaimSpec(_S):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(_S):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[Toleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    # A share of a device that allows multiple allocations, and what the share consumes.
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, Quantity] | None = None


class DeviceAllocationResult(_S):
    results: list[DeviceRequestAllocationResult] = []
    config: list[dict[str, Any]] = []


class AllocationResult(_S):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(_S):
    resource: str = ""
    name: str = ""
    uid: str = ""
    api_group: str = ""


class ResourceClaimStatus(_S):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[dict[str, Any]] = []


class ResourceClaim(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)
    kind: str = "ResourceClaim"
    api_version: str = "resource.k8s.io/v1"

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class ResourceClaimTemplateSpec(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)
    kind: str = "ResourceClaimTemplate"
    api_version: str = "resource.k8s.io/v1"
