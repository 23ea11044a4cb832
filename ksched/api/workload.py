"""``scheduling.k8s.io/v1beta1`` Workloads and PodGroups (workload-aware scheduling).

The objects kube-scheduler v1.37's ``GenericWorkload`` reads: a PodGroup is the runtime
unit pods join through ``spec.schedulingGroup.podGroupName``, with a scheduling policy
(``basic``, or ``gang`` with its ``minCount``), topology constraints, claims shared by the
group, a disruption mode and a priority; a Workload holds the templates PodGroups are
stamped from (a PodGroup's ``workloadRef``). kube-scheduler watches PodGroups only;
Workloads are read here for ``ksched simulate`` files and snapshots. kube-apiserver v1.36
serves them as ``v1alpha2`` instead (another shape), decoded by ``*V1Alpha2`` and converted
to the v1beta1 shape, so one set of types serves both releases.

Decoded with msgspec like the core objects (``ksched.api.objects``): unknown fields are
ignored, a wrong type or an int32 out of range is a ``DecodeError`` naming the object and
the field. Empty policy and mode structs (``basic: {}``, ``all: {}``) mean "this one is
chosen", so they decode to an empty struct, never to None.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from .objects import _S, ObjectMeta, decode_json

__all__ = [
    "API_VERSION",
    "V1ALPHA2",
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
    "PodGroupV1Alpha2",
    "TopologyConstraint",
    "TypedLocalObjectReference",
    "Workload",
    "WorkloadReference",
    "WorkloadSpec",
    "WorkloadV1Alpha2",
    "pod_group_from_json",
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


# ---- v1alpha2: what kube-apiserver v1.36 serves, converted to the v1beta1 shape ----------

V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
# v1alpha2's disruptionMode enum -> v1beta1's union member
_DISRUPTION = {"Pod": "single", "PodGroup": "all"}


class _TemplateV1Alpha2(_S):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy = msgspec.field(
        default_factory=PodGroupSchedulingPolicy
    )
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: Literal["Pod", "PodGroup"] | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None

    def convert(self) -> PodGroupTemplate:
        return PodGroupTemplate(
            name=self.name,
            scheduling_policy=self.scheduling_policy,
            scheduling_constraints=self.scheduling_constraints,
            resource_claims=self.resource_claims,
            disruption_mode=_disruption(self.disruption_mode),
            priority_class_name=self.priority_class_name,
            priority=self.priority,
        )


def _disruption(mode: str | None) -> DisruptionMode | None:
    if mode is None:
        return None
    return DisruptionMode(**{_DISRUPTION[mode]: _Empty()})


class _WorkloadSpecV1Alpha2(_S):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[_TemplateV1Alpha2] = []


class WorkloadV1Alpha2(_S):
    """A v1.36 Workload; ``convert()`` gives the v1beta1 shape ksched works with."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _WorkloadSpecV1Alpha2 = msgspec.field(default_factory=_WorkloadSpecV1Alpha2)
    kind: str = "Workload"
    api_version: str = V1ALPHA2

    def convert(self) -> Workload:
        spec = WorkloadSpec(
            controller_ref=self.spec.controller_ref,
            pod_group_templates=[t.convert() for t in self.spec.pod_group_templates],
        )
        return Workload(metadata=self.metadata, spec=spec, api_version=self.api_version)


class _WorkloadTemplateRefV1Alpha2(_S):
    workload_name: str = ""
    pod_group_template_name: str = ""


class _TemplateRefV1Alpha2(_S):
    workload: _WorkloadTemplateRefV1Alpha2 | None = None


class _PodGroupSpecV1Alpha2(_S):
    pod_group_template_ref: _TemplateRefV1Alpha2 | None = None
    scheduling_policy: PodGroupSchedulingPolicy = msgspec.field(
        default_factory=PodGroupSchedulingPolicy
    )
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: Literal["Pod", "PodGroup"] | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None


class PodGroupV1Alpha2(_S):
    """A v1.36 PodGroup; ``convert()`` gives the v1beta1 shape (``podGroupTemplateRef``'s
    workload as ``workloadRef``, the disruption mode ``Pod``/``PodGroup`` as
    ``single``/``all``), keeping ``api_version`` to say where it came from."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _PodGroupSpecV1Alpha2 = msgspec.field(default_factory=_PodGroupSpecV1Alpha2)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)
    kind: str = "PodGroup"
    api_version: str = V1ALPHA2

    def convert(self) -> PodGroup:
        s = self.spec
        ref = s.pod_group_template_ref.workload if s.pod_group_template_ref else None
        spec = PodGroupSpec(
            workload_ref=(
                WorkloadReference(
                    workload_name=ref.workload_name, template_name=ref.pod_group_template_name
                )
                if ref is not None
                else None
            ),
            scheduling_policy=s.scheduling_policy,
            scheduling_constraints=s.scheduling_constraints,
            resource_claims=s.resource_claims,
            disruption_mode=_disruption(s.disruption_mode),
            priority_class_name=s.priority_class_name,
            priority=s.priority,
        )
        return PodGroup(
            metadata=self.metadata, spec=spec, status=self.status, api_version=self.api_version
        )


def pod_group_from_json(data: bytes, api_version: str = API_VERSION) -> PodGroup:
    """A PodGroup of either served version, in the v1beta1 shape (DecodeError if bad)."""
    if api_version == V1ALPHA2:
        return decode_json(data, PodGroupV1Alpha2).convert()
    return decode_json(data, PodGroup)
