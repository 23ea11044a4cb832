"""``scheduling.k8s.io/v1beta1`` Workloads and PodGroups (workload-aware scheduling).

The objects kube-scheduler v1.37's ``GenericWorkload`` reads: a PodGroup is the runtime
unit pods join through ``spec.schedulingGroup.podGroupName``, with a scheduling policy
(``basic``, or ``gang`` with its ``minCount``), topology constraints, claims shared by the
group, a disruption mode and a priority; a Workload holds the templates PodGroups are
stamped from (a controller's ``podGroupTemplateRef``). kube-scheduler watches PodGroups
only; Workloads are read here for ``ksched simulate`` files and snapshots.

Decoded with msgspec like the core objects (``ksched.api.objects``): unknown fields are
ignored, a wrong type or an int32 out of range is a ``DecodeError`` naming the object and
the field. Empty policy and mode structs (``basic: {}``, ``all: {}``) mean "this one is
chosen", so they decode to an empty struct, never to None.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from .objects import _S, ObjectMeta

__all__ = [
    "API_VERSION",
    "BasicSchedulingPolicy",
    "CompositePodGroupSchedulingConstraints",
    "CompositePodGroupSchedulingPolicy",
    "CompositePodGroupTemplate",
    "Condition",
    "DisruptionMode",
    "GangSchedulingPolicy",
    "PodGroup",
    "PodGroupResourceClaim",
    "PodGroupResourceClaimStatus",
    "PodGroupSchedulingConstraints",
    "PodGroupSchedulingPolicy",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupTemplate",
    "TopologyConstraint",
    "TypedLocalObjectReference",
    "Workload",
    "WorkloadReference",
    "WorkloadSpec",
]

API_VERSION = "scheduling.k8s.io/v1beta1"

# Go's int32 fields: the API server refuses a JSON number outside its range.
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]


class _Empty(_S):
    """A oneOf member without fields (``basic: {}``): present means chosen."""


class BasicSchedulingPolicy(_Empty):
    pass


class GangSchedulingPolicy(_S):
    min_count: Int32 = 0


class PodGroupSchedulingPolicy(_S):
    """Exactly one of ``basic`` and ``gang`` (API validation)."""

    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(_S):
    key: str = ""


class PodGroupSchedulingConstraints(_S):
    topology: list[TopologyConstraint] = []


class PodGroupResourceClaim(_S):
    """A claim shared by the group's pods: by name, or a template the resourceclaim
    controller makes the group's claim from."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class DisruptionMode(_S):
    """``single``: a pod may be disrupted alone; ``all``: the group goes as a whole."""

    single: _Empty | None = None
    all: _Empty | None = None


class PodGroupTemplate(_S):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy = msgspec.field(
        default_factory=PodGroupSchedulingPolicy
    )
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class CompositeGangSchedulingPolicy(_S):
    min_group_count: Int32 = 0


class CompositePodGroupSchedulingPolicy(_S):
    basic: _Empty | None = None
    gang: CompositeGangSchedulingPolicy | None = None


class CompositePodGroupSchedulingConstraints(_S):
    topology: list[TopologyConstraint] = []


class CompositePodGroupTemplate(_S):
    """A template of templates (CompositePodGroup, v1.37): nested up to
    ``WorkloadMaxTreeDepth`` levels by API validation."""

    name: str = ""
    scheduling_policy: CompositePodGroupSchedulingPolicy = msgspec.field(
        default_factory=CompositePodGroupSchedulingPolicy
    )
    scheduling_constraints: CompositePodGroupSchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None
    pod_group_templates: list[PodGroupTemplate] = []
    composite_pod_group_templates: list[CompositePodGroupTemplate] = []


class TypedLocalObjectReference(_S):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class WorkloadSpec(_S):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate] = []
    composite_pod_group_templates: list[CompositePodGroupTemplate] = []


class Workload(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    kind: str = "Workload"
    api_version: str = API_VERSION


class WorkloadReference(_S):
    """The Workload and template a PodGroup was made from."""

    workload_name: str = ""
    template_name: str = ""


class PodGroupSpec(_S):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy = msgspec.field(
        default_factory=PodGroupSchedulingPolicy
    )
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class Condition(_S):
    """``metav1.Condition`` (PodGroupInitiallyScheduled, DisruptionTarget)."""

    type: str = ""
    status: str = ""
    observed_generation: int = 0
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


class PodGroupResourceClaimStatus(_S):
    name: str = ""
    resource_claim_name: str | None = None


class PodGroupStatus(_S):
    conditions: list[Condition] = []
    resource_claim_statuses: list[PodGroupResourceClaimStatus] = []


class PodGroup(_S):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)
    kind: str = "PodGroup"
    api_version: str = API_VERSION
