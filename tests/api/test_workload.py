"""Decoding scheduling.k8s.io/v1beta1 Workloads and PodGroups, and a pod's schedulingGroup."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest

from ksched.api.objects import DecodeError, Pod, decode, decode_json
from ksched.api.workload import (
    V1ALPHA2,
    BasicSchedulingPolicy,
    DisruptionMode,
    PodGroup,
    PodGroupV1Alpha2,
    Workload,
    WorkloadReference,
    WorkloadV1Alpha2,
    _Empty,
    pod_group_from_json,
)

TEMPLATE: dict[str, Any] = {
    "name": "workers",
    "schedulingPolicy": {"gang": {"minCount": 4}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
    "resourceClaims": [
        {"name": "shared", "resourceClaimTemplateName": "gpu-pair"},
        {"name": "fixed", "resourceClaimName": "nvlink"},
    ],
    "disruptionMode": {"all": {}},
    "priorityClassName": "high",
    "priority": 1000,
    "preemptionPolicy": "Never",
}

WORKLOAD: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "training", "namespace": "ml", "uid": "w-1"},
    "spec": {
        "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "training"},
        "podGroupTemplates": [
            TEMPLATE,
            {"name": "driver", "schedulingPolicy": {"basic": {}}, "schedulingConstraints": None},
        ],
        "compositePodGroupTemplates": [
            {
                "name": "replicas",
                "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                "schedulingConstraints": {"topology": [{"key": "rack"}]},
                "disruptionMode": {"single": {}},
                "podGroupTemplates": [{"name": "leader", "schedulingPolicy": {"basic": {}}}],
                "compositePodGroupTemplates": [
                    {"name": "inner", "schedulingPolicy": {"basic": {}}}
                ],
            }
        ],
    },
}

POD_GROUP: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "training-workers-0", "namespace": "ml", "uid": "pg-1"},
    "spec": {
        "parentCompositePodGroupName": "training-replicas-0",
        "workloadRef": {"workloadName": "training", "templateName": "workers"},
        **{k: v for k, v in TEMPLATE.items() if k != "name"},
    },
    "status": {
        "conditions": [
            {
                "type": "PodGroupInitiallyScheduled",
                "status": "True",
                "observedGeneration": 1,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "Scheduled",
                "message": "",
            }
        ],
        "resourceClaimStatuses": [{"name": "shared", "resourceClaimName": "pg-shared-x"}],
    },
}


def test_workload_decodes_templates_composites_and_controller() -> None:
    w = decode(WORKLOAD, Workload)
    assert (w.metadata.namespace, w.metadata.name) == ("ml", "training")
    assert w.spec.controller_ref is not None and w.spec.controller_ref.kind == "Job"
    workers, driver = w.spec.pod_group_templates
    assert workers.scheduling_policy.gang is not None
    assert workers.scheduling_policy.gang.min_count == 4
    assert workers.scheduling_policy.basic is None
    assert workers.scheduling_constraints is not None
    assert [t.key for t in workers.scheduling_constraints.topology] == [
        "topology.kubernetes.io/zone"
    ]
    assert workers.resource_claims[0].resource_claim_template_name == "gpu-pair"
    assert workers.resource_claims[1].resource_claim_name == "nvlink"
    assert workers.disruption_mode is not None and workers.disruption_mode.all is not None
    assert workers.disruption_mode.single is None
    assert (workers.priority_class_name, workers.priority) == ("high", 1000)
    assert workers.preemption_policy == "Never"
    # `basic: {}` is the chosen policy, not an absent one; a null constraint is none
    assert driver.scheduling_policy.basic == BasicSchedulingPolicy()
    assert driver.scheduling_policy.gang is None and driver.scheduling_constraints is None
    (composite,) = w.spec.composite_pod_group_templates
    assert composite.scheduling_policy.gang is not None
    assert composite.scheduling_policy.gang.min_group_count == 2
    assert composite.disruption_mode is not None and composite.disruption_mode.single is not None
    assert [t.name for t in composite.pod_group_templates] == ["leader"]
    assert [t.name for t in composite.composite_pod_group_templates] == ["inner"]


def test_pod_group_decodes_spec_and_status_from_dict_and_json() -> None:
    for pg in (decode(POD_GROUP, PodGroup), decode_json(json.dumps(POD_GROUP).encode(), PodGroup)):
        assert pg.kind == "PodGroup" and pg.api_version == "scheduling.k8s.io/v1beta1"
        assert pg.spec.parent_composite_pod_group_name == "training-replicas-0"
        assert pg.spec.workload_ref is not None
        assert pg.spec.workload_ref.workload_name == "training"
        assert pg.spec.workload_ref.template_name == "workers"
        assert pg.spec.scheduling_policy.gang is not None
        assert pg.spec.scheduling_policy.gang.min_count == 4
        assert pg.spec.priority == 1000
        (cond,) = pg.status.conditions
        assert (cond.type, cond.status, cond.observed_generation) == (
            "PodGroupInitiallyScheduled",
            "True",
            1,
        )
        assert pg.status.resource_claim_statuses[0].resource_claim_name == "pg-shared-x"


def test_encoding_round_trips() -> None:
    """Encoded back (omitting defaults), an object decodes to itself: what ``simulate``
    output and a status write would send."""
    for raw, cls in ((WORKLOAD, Workload), (POD_GROUP, PodGroup)):
        obj = decode(raw, cls)
        assert decode_json(msgspec.json.encode(obj), cls) == obj


def test_minimal_pod_group_takes_defaults() -> None:
    pg = decode({"metadata": {"name": "g"}, "spec": {"schedulingPolicy": {}}}, PodGroup)
    assert pg.spec.workload_ref is None and pg.spec.priority is None
    assert pg.spec.scheduling_policy.basic is None and pg.spec.scheduling_policy.gang is None
    assert pg.status.conditions == [] and pg.spec.resource_claims == []


def test_pod_scheduling_group() -> None:
    raw = {"metadata": {"name": "p"}, "spec": {"schedulingGroup": {"podGroupName": "g"}}}
    assert decode(raw, Pod).spec.scheduling_group is not None
    assert decode(raw, Pod).spec.scheduling_group.pod_group_name == "g"  # type: ignore[union-attr]
    assert decode({"metadata": {"name": "p"}}, Pod).spec.scheduling_group is None
    with pytest.raises(DecodeError, match=r"spec\.schedulingGroup\.podGroupName"):
        decode({"metadata": {"name": "p"}, "spec": {"schedulingGroup": {"podGroupName": 3}}}, Pod)


def _set(raw: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    cur: Any = out
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("path", "bad", "where"),
    [
        (("spec", "schedulingPolicy", "gang", "minCount"), "4", "spec.schedulingPolicy.gang"),
        # Go's int32: the API server refuses a number out of its range
        (("spec", "schedulingPolicy", "gang", "minCount"), 2**31, "spec.schedulingPolicy.gang"),
        (("spec", "priority"), -(2**31) - 1, "spec.priority"),
        (("spec", "priority"), True, "spec.priority"),
        (("spec", "schedulingPolicy", "basic"), [], "spec.schedulingPolicy.basic"),
        (("spec", "disruptionMode"), "PodGroup", "spec.disruptionMode"),  # v1alpha2's shape
        (("spec", "schedulingConstraints", "topology"), {"key": "x"}, "topology"),
        (("spec", "workloadRef"), "training", "spec.workloadRef"),
        (("status", "conditions", 0, "observedGeneration"), "1", "status.conditions[0]"),
        (("metadata",), [], "metadata"),
    ],
)
def test_wrong_shapes_name_object_and_field(
    path: tuple[str | int, ...], bad: Any, where: str
) -> None:
    raw = _set(POD_GROUP, path, bad)
    for decoded in (lambda: decode(raw, PodGroup), lambda: decode_json(_json(raw), PodGroup)):
        with pytest.raises(DecodeError) as e:
            decoded()
        msg = str(e.value)
        assert where in msg
        if path != ("metadata",):
            assert "PodGroup ml/training-workers-0" in msg


def _json(raw: Any) -> bytes:
    return json.dumps(raw).encode()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"[]",
        b'{"spec": {"podGroupTemplates": {}}}',
        b'{"spec": {"podGroupTemplates": [{"priority": 1e400}]}}',
        b'{"spec": {"podGroupTemplates": [{"name": "\xff"}]}}',
    ],
)
def test_hostile_json_is_a_decode_error(data: bytes) -> None:
    """Bad JSON, wrong shapes, numbers and UTF-8: a DecodeError, nothing else."""
    with pytest.raises(DecodeError):
        decode_json(data, Workload)


# ---- v1alpha2 (kube-apiserver v1.36) -------------------------------------------------------

V1ALPHA2_POD_GROUP: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1alpha2",
    "kind": "PodGroup",
    "metadata": {"name": "g", "namespace": "ml"},
    "spec": {
        "podGroupTemplateRef": {
            "workload": {"workloadName": "training", "podGroupTemplateName": "workers"}
        },
        "schedulingPolicy": {"gang": {"minCount": 3}},
        "schedulingConstraints": {"topology": [{"key": "rack"}]},
        "resourceClaims": [{"name": "shared", "resourceClaimName": "c"}],
        "disruptionMode": "Pod",
        "priorityClassName": "high",
        "priority": 7,
    },
    "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]},
}


def test_v1alpha2_pod_group_converts_to_the_v1beta1_shape() -> None:
    pg = pod_group_from_json(_json(V1ALPHA2_POD_GROUP), V1ALPHA2)
    assert pg.api_version == V1ALPHA2  # where it came from
    assert pg.spec.workload_ref == WorkloadReference(
        workload_name="training", template_name="workers"
    )
    assert pg.spec.disruption_mode == DisruptionMode(single=_Empty())
    assert pg.spec.scheduling_policy.gang is not None
    assert pg.spec.scheduling_policy.gang.min_count == 3
    assert pg.spec.scheduling_constraints is not None
    assert pg.spec.scheduling_constraints.topology[0].key == "rack"
    assert pg.spec.resource_claims[0].resource_claim_name == "c"
    assert (pg.spec.priority_class_name, pg.spec.priority) == ("high", 7)
    assert pg.status.conditions[0].type == "PodGroupInitiallyScheduled"
    whole = _set(V1ALPHA2_POD_GROUP, ("spec", "disruptionMode"), "PodGroup")
    assert decode(whole, PodGroupV1Alpha2).convert().spec.disruption_mode == DisruptionMode(
        all=_Empty()
    )
    bare = decode({"metadata": {"name": "g"}}, PodGroupV1Alpha2).convert()
    assert bare.spec.workload_ref is None and bare.spec.disruption_mode is None
    no_workload = _set(V1ALPHA2_POD_GROUP, ("spec", "podGroupTemplateRef"), {})
    assert decode(no_workload, PodGroupV1Alpha2).convert().spec.workload_ref is None
    # a v1beta1 document by default
    assert pod_group_from_json(_json(POD_GROUP)).spec.workload_ref is not None


def test_v1alpha2_workload_converts_its_templates() -> None:
    raw = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "training", "namespace": "ml"},
        "spec": {
            "controllerRef": {"kind": "Job", "name": "training"},
            "podGroupTemplates": [
                {
                    "name": "workers",
                    "schedulingPolicy": {"gang": {"minCount": 2}},
                    "schedulingConstraints": None,
                    "disruptionMode": "PodGroup",
                    "priority": 5,
                }
            ],
        },
    }
    w = decode(raw, WorkloadV1Alpha2).convert()
    assert isinstance(w, Workload) and w.api_version == V1ALPHA2
    assert w.spec.controller_ref is not None and w.spec.controller_ref.name == "training"
    (t,) = w.spec.pod_group_templates
    assert t.name == "workers" and t.disruption_mode == DisruptionMode(all=_Empty())
    assert t.scheduling_policy.gang is not None and t.priority == 5


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        (("spec", "disruptionMode"), "Everything"),  # not one of the enum's values
        (("spec", "disruptionMode"), {"all": {}}),  # v1beta1's shape
        (("spec", "podGroupTemplateRef", "workload"), "training"),
        (("spec", "priority"), 2**31),
    ],
)
def test_v1alpha2_wrong_shapes_are_decode_errors(path: tuple[str, ...], bad: Any) -> None:
    raw = _set(V1ALPHA2_POD_GROUP, path, bad)
    with pytest.raises(DecodeError) as e:
        pod_group_from_json(_json(raw), V1ALPHA2)
    assert "PodGroup ml/g" in str(e.value) and ".".join(path[:2]) in str(e.value)
