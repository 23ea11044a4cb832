"""Typed Kubernetes objects holding what scheduling needs.

Decoded with msgspec straight from API JSON (or from YAML-loaded dicts): unknown
fields are ignored, a wrong type is an error naming the object and the field path.
The original mapping is kept in ``raw`` only where a caller must send it back
(extender payloads, simulate output), never re-derived.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ..util.errors import KschedError
from ..util.limits import utf8_error_offset

__all__ = [
    "AWSElasticBlockStoreVolumeSource",
    "Affinity",
    "CSIDriver",
    "CSIDriverSpec",
    "CSINode",
    "CSINodeDriver",
    "CSINodeSpec",
    "CSIPersistentVolumeSource",
    "CSIStorageCapacity",
    "CSIVolumeSource",
    "Container",
    "ContainerImage",
    "ContainerPort",
    "ContainerRestartRule",
    "DecodeError",
    "EphemeralVolumeSource",
    "GCEPersistentDiskVolumeSource",
    "HeadMeta",
    "ISCSIVolumeSource",
    "InvalidObjectError",
    "KObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "LabelSelectorSpec",
    "MapSelectorSpec",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectHead",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimStatus",
    "PersistentVolumeClaimVolumeSource",
    "PersistentVolumeSpec",
    "PersistentVolumeStatus",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodDisruptionBudget",
    "PodResourceClaim",
    "PodResourceClaimStatus",
    "PodSchedulingGroup",
    "PodSpec",
    "PodStatus",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "RBDVolumeSource",
    "ReplicaSet",
    "ReplicationController",
    "Service",
    "StatefulSet",
    "StorageClass",
    "Taint",
    "Toleration",
    "TopologySelectorLabelRequirement",
    "TopologySelectorTerm",
    "TopologySpreadConstraint",
    "Volume",
    "VolumeAttachment",
    "VolumeAttachmentSource",
    "VolumeAttachmentSpec",
    "VolumeAttachmentStatus",
    "VolumeMount",
    "VolumeNodeAffinity",
    "VolumeNodeResources",
    "WeightedPodAffinityTerm",
    "decode",
    "decode_json",
    "object_ref",
    "without_nulls",
]

Quantity = str | int | float
ResourceList = dict[str, Quantity]


class InvalidObjectError(KschedError, ValueError):
    """An object whose fields cannot be interpreted; the message names object and field.

    Raised by decoding, quantity parsing and selector compilation alike; the
    scheduling runtime turns it into UnschedulableAndUnresolvable for that pod only.
    """


class DecodeError(InvalidObjectError):
    """A manifest whose fields have the wrong shape."""


class _S(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True, gc=False):
    """API objects hold only strings, numbers, lists, dicts and other API objects, so no
    reference cycle can run through one: untracked by the cyclic GC (``gc=False``), every
    pod and node kept in the cache stops adding to what each collection has to scan."""


class OwnerReference(_S):
    kind: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    controller: bool | None = None


class ObjectMeta(_S):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


# ---- selectors -------------------------------------------------------------------


class LabelSelectorRequirement(_S):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(_S):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class NodeSelectorRequirement(_S):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(_S):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_S):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_S):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(_S):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(_S):
    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_S):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_S):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class PodAntiAffinity(_S):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_S):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class Taint(_S):
    key: str
    effect: str
    value: str = ""
    time_added: str | None = None


class Toleration(_S):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class TopologySpreadConstraint(_S):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


# ---- pods ------------------------------------------------------------------------


class ContainerPort(_S):
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")
    name: str = ""


class ResourceRequirements(_S):
    requests: ResourceList = {}
    limits: ResourceList = {}


class ContainerRestartRule(_S):
    """``restartPolicyRules[]``: only the action matters here (NodeDeclaredFeatures infers
    ``RestartAllContainersOnContainerExits`` from it)."""

    action: str = ""


class VolumeMount(_S):
    """``volumeMounts[]``: only ``bindMountOptions`` matters here (NodeDeclaredFeatures
    infers ``VolumeBindMountOptions`` from it, v1.37)."""

    name: str = ""
    mount_path: str = ""
    bind_mount_options: list[str] = []


class Container(_S):
    name: str = ""
    image: str = ""
    ports: list[ContainerPort] = []
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] = []
    volume_mounts: list[VolumeMount] = []


class PodSchedulingGate(_S):
    name: str


# ---- volumes: the sources the volume plugins look at ------------------------------


class PersistentVolumeClaimVolumeSource(_S):
    claim_name: str = ""
    read_only: bool = False


class EphemeralVolumeSource(_S):
    """A generic ephemeral volume: its PVC is named ``<pod name>-<volume name>``."""

    volume_claim_template: dict[str, Any] | None = None


class GCEPersistentDiskVolumeSource(_S):
    pd_name: str = ""
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(_S):
    volume_id: str = msgspec.field(default="", name="volumeID")
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


class ISCSIVolumeSource(_S):
    target_portal: str = ""
    iqn: str = ""
    lun: int = 0
    read_only: bool = False


class RBDVolumeSource(_S):
    monitors: list[str] = []
    image: str = ""
    pool: str = "rbd"
    read_only: bool = False


class CSIVolumeSource(_S):
    driver: str = ""
    read_only: bool | None = None
    volume_attributes: dict[str, str] = {}


class ImageVolumeSource(_S):
    """``volumes[].image`` (ImageVolume): an OCI image mounted as a volume; ImageLocality
    counts its reference like a container's image."""

    reference: str = ""
    pull_policy: str = ""


class Volume(_S):
    name: str = ""
    image: ImageVolumeSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    csi: CSIVolumeSource | None = None


class PodResourceClaim(_S):
    """An entry of ``spec.resourceClaims`` (DRA): a claim by name, or a template the
    resourceclaim controller makes the pod's own claim from."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSchedulingGroup(_S):
    """``spec.schedulingGroup`` (GenericWorkload): the PodGroup, in the pod's namespace,
    the pod is scheduled with; exactly one member is set (a union, by API validation)."""

    pod_group_name: str | None = None


class PodSpec(_S):
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    containers: list[Container] = []
    init_containers: list[Container] = []
    # read only for their volume mounts (NodeDeclaredFeatures); never for resources
    ephemeral_containers: list[Container] = []
    overhead: ResourceList = {}
    scheduling_gates: list[PodSchedulingGate] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    host_network: bool = False
    # None: the API server's default (true: the host's user namespace)
    host_users: bool | None = None
    resources: ResourceRequirements | None = None
    volumes: list[Volume] = []
    resource_claims: list[PodResourceClaim] = []
    # None: the pod is a single unit (no workload-aware scheduling)
    scheduling_group: PodSchedulingGroup | None = None
    # None: the API server's default (30 s); 0 or a pod off any node: deleted at once
    termination_grace_period_seconds: int | None = None


class PodCondition(_S):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    last_probe_time: str | None = None
    observed_generation: int = 0


class PodResourceClaimStatus(_S):
    """``status.resourceClaimStatuses[]``: the claim the resourceclaim controller made
    from a template (``resourceClaimName`` None: none is needed)."""

    name: str = ""
    resource_claim_name: str | None = None


class PodStatus(_S):
    phase: str = ""
    nominated_node_name: str = ""
    conditions: list[PodCondition] = []
    start_time: str | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    # KEP-5004: the claim DynamicResources made for DRA-backed extended resources.
    extended_resource_claim_status: Any = None


class Pod(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)
    kind: str = "Pod"
    api_version: str = "v1"

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


# ---- nodes -----------------------------------------------------------------------


class ContainerImage(_S):
    names: list[str] = []
    size_bytes: int = 0


class NodeSpec(_S):
    unschedulable: bool = False
    taints: list[Taint] = []
    pod_cidr: str = msgspec.field(default="", name="podCIDR")


class NodeCondition(_S):
    """Only what makes a change a NodeUpdateNodeCondition event: the type's status."""

    type: str = ""
    status: str = ""


class NodeStatus(_S):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}
    images: list[ContainerImage] = []
    conditions: list[NodeCondition] = []
    # NodeDeclaredFeatures: what the kubelet declares it supports, sorted and unique (the
    # API server's validation), read as upstream's ``TryMap`` reads it.
    declared_features: list[str] = []


class Node(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)
    kind: str = "Node"
    api_version: str = "v1"

    @property
    def name(self) -> str:
        return self.metadata.name


# ---- others ----------------------------------------------------------------------


class Namespace(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    kind: str = "Namespace"
    api_version: str = "v1"


class PriorityClass(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None
    kind: str = "PriorityClass"
    api_version: str = "scheduling.k8s.io/v1"


class PodDisruptionBudgetSpec(_S):
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


class PodDisruptionBudgetStatus(_S):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)
    kind: str = "PodDisruptionBudget"
    api_version: str = "policy/v1"


# ---- workloads: only their selectors, for PodTopologySpread's default constraints ----


class MapSelectorSpec(_S):
    """The ``spec`` of a Service or ReplicationController: a plain label map, where a nil
    selector (None) selects nothing and ``{}`` selects everything."""

    selector: dict[str, str] | None = None


class LabelSelectorSpec(_S):
    """The ``spec`` of a ReplicaSet or StatefulSet: a ``metav1.LabelSelector``."""

    selector: LabelSelector | None = None


class Service(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: MapSelectorSpec = msgspec.field(default_factory=MapSelectorSpec)
    kind: str = "Service"
    api_version: str = "v1"


class ReplicationController(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: MapSelectorSpec = msgspec.field(default_factory=MapSelectorSpec)
    kind: str = "ReplicationController"
    api_version: str = "v1"


class ReplicaSet(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: LabelSelectorSpec = msgspec.field(default_factory=LabelSelectorSpec)
    kind: str = "ReplicaSet"
    api_version: str = "apps/v1"


class StatefulSet(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: LabelSelectorSpec = msgspec.field(default_factory=LabelSelectorSpec)
    kind: str = "StatefulSet"
    api_version: str = "apps/v1"


KObject = (
    Pod
    | Node
    | Namespace
    | PriorityClass
    | PodDisruptionBudget
    | Service
    | ReplicationController
    | ReplicaSet
    | StatefulSet
)
T = TypeVar("T", bound=_S)

_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def object_ref(raw: Any, kind: str = "object") -> str:
    """A short name for an object in error messages: ``Pod default/web-0``.

    ``kind`` is used when the mapping has none (items of API list responses do not).
    """
    if not isinstance(raw, dict):
        return f"<{type(raw).__name__}>"
    kind = raw.get("kind") or kind
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    name = meta.get("name", "?") if meta else "?"
    ns = meta.get("namespace") if meta else None
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def _field_path(err: msgspec.ValidationError) -> str:
    # msgspec says "... - at `$.spec.containers[0]`"; keep Kubernetes-style paths.
    msg = str(err)
    return msg.replace("`$.", "`").replace("`$`", "`<root>`")


def decode(raw: Any, cls: type[T]) -> T:
    """Decode a YAML/JSON-loaded mapping into ``cls``, naming the object on error."""
    try:
        return msgspec.convert(raw, cls, strict=True)
    except msgspec.ValidationError as e:
        raise DecodeError(f"{object_ref(raw, cls.__name__)}: {_field_path(e)}") from None


def without_nulls(raw: Any) -> Any:
    """``raw`` with every ``null`` mapping value dropped, so it decodes as the field's
    default: Go fields without ``omitempty`` (a CSINode's ``drivers`` and a driver's
    ``topologyKeys``) come back ``null`` once empty, protobuf storage keeping no empty
    lists."""
    if isinstance(raw, dict):
        return {k: without_nulls(v) for k, v in raw.items() if v is not None}
    if isinstance(raw, list):
        return [without_nulls(v) for v in raw]
    return raw


def decode_json(data: bytes, cls: type[T]) -> T:
    """Decode API JSON bytes directly (no intermediate dicts) into ``cls``."""
    dec = _DECODERS.get(cls)
    if dec is None:
        dec = _DECODERS[cls] = msgspec.json.Decoder(cls)
    try:
        return dec.decode(data)  # type: ignore[no-any-return]
    except msgspec.ValidationError as e:
        raise DecodeError(f"{_json_ref(data, cls.__name__)}: {_field_path(e)}") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        # bad UTF-8 inside a string: UnicodeDecodeError up to msgspec 0.22, a DecodeError
        # ("Invalid UTF-8 encoded string") from 0.23; either way, say where
        where = utf8_error_offset(data)
        if where is None:
            raise DecodeError(f"{cls.__name__}: invalid JSON: {e}") from None
        ref = _json_ref(data, cls.__name__)
        raise DecodeError(
            f"{ref}: invalid JSON: invalid UTF-8 at byte {where} of the object"
        ) from None


class HeadMeta(msgspec.Struct):
    name: Any = None
    namespace: Any = None
    uid: Any = None


class ObjectHead(msgspec.Struct):
    """What JSON bytes say an object is, decoded alone (``msgspec.json.decode(data,
    type=ObjectHead)``): every other field is skipped, unbuilt and unchecked. Any type, so
    a wrong one is for the full decoding to report."""

    kind: Any = None
    metadata: HeadMeta | None = None


def _json_ref(data: bytes, kind: str) -> str:
    """``object_ref`` of JSON bytes, from the kind and name alone: the rest of a document
    that failed to decode (a number out of range, bad UTF-8) would fail again."""
    try:
        head = msgspec.json.decode(data, type=ObjectHead)
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
        return kind
    meta = head.metadata or HeadMeta()
    fields = {"name": meta.name, "namespace": meta.namespace}
    scalars = {k: v for k, v in fields.items() if v is not None and not isinstance(v, dict | list)}
    return object_ref(
        {"kind": head.kind if isinstance(head.kind, str) else "", "metadata": scalars}, kind
    )


# ---- storage: what the volume plugins read (listers on request) ------------------


class ObjectReference(_S):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


class PersistentVolumeClaimSpec(_S):
    access_modes: list[str] = []
    selector: LabelSelector | None = None
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    volume_name: str = ""
    # None: the cluster's default class applies; "": explicitly no class.
    storage_class_name: str | None = None
    volume_mode: str | None = None


class PersistentVolumeClaimStatus(_S):
    phase: str = ""
    access_modes: list[str] = []
    capacity: ResourceList = {}


class PersistentVolumeClaim(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)
    kind: str = "PersistentVolumeClaim"
    api_version: str = "v1"


class VolumeNodeAffinity(_S):
    required: NodeSelector | None = None


class CSIPersistentVolumeSource(_S):
    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False
    fs_type: str = ""
    volume_attributes: dict[str, str] = {}


class PersistentVolumeSpec(_S):
    capacity: ResourceList = {}
    access_modes: list[str] = []
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: str = ""
    storage_class_name: str = ""
    mount_options: list[str] = []
    volume_mode: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    csi: CSIPersistentVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None


class PersistentVolumeStatus(_S):
    phase: str = ""


class PersistentVolume(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)
    kind: str = "PersistentVolume"
    api_version: str = "v1"


class TopologySelectorLabelRequirement(_S):
    key: str = ""
    values: list[str] = []


class TopologySelectorTerm(_S):
    match_label_expressions: list[TopologySelectorLabelRequirement] = []


class StorageClass(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    parameters: dict[str, str] = {}
    reclaim_policy: str | None = None
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = []
    kind: str = "StorageClass"
    api_version: str = "storage.k8s.io/v1"


class VolumeNodeResources(_S):
    count: int | None = None


class CSINodeDriver(_S):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    topology_keys: list[str] = []
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(_S):
    drivers: list[CSINodeDriver] = []


class CSINode(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)
    kind: str = "CSINode"
    api_version: str = "storage.k8s.io/v1"


class CSIDriverSpec(_S):
    attach_required: bool | None = None
    pod_info_on_mount: bool | None = None
    storage_capacity: bool | None = None
    # beta with VolumeLimitScaling (v1.37): the driver must be on the node's CSINode
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)
    kind: str = "CSIDriver"
    api_version: str = "storage.k8s.io/v1"


class CSIStorageCapacity(_S):
    """Free space a CSI driver reports for a storage class on the nodes ``node_topology``
    selects; VolumeBinding checks dynamic provisioning against it (namespaced; the
    namespace carries no meaning)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    node_topology: LabelSelector | None = None
    storage_class_name: str = ""
    capacity: Quantity | None = None
    maximum_volume_size: Quantity | None = None
    kind: str = "CSIStorageCapacity"
    api_version: str = "storage.k8s.io/v1"


class VolumeAttachmentSource(_S):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(_S):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = msgspec.field(default_factory=VolumeAttachmentSource)


class VolumeAttachmentStatus(_S):
    attached: bool = False


class VolumeAttachment(_S):
    """A CSI volume attached (or being attached) to a node; NodeVolumeLimits counts a
    node's attachments against its drivers' volume limits."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: VolumeAttachmentSpec = msgspec.field(default_factory=VolumeAttachmentSpec)
    status: VolumeAttachmentStatus = msgspec.field(default_factory=VolumeAttachmentStatus)
    kind: str = "VolumeAttachment"
    api_version: str = "storage.k8s.io/v1"
