"""Decoding resource.k8s.io/v1 objects (DRA) and the pod fields that refer to them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ksched.api.objects import DecodeError, Pod, decode, decode_json
from ksched.api.resource import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)

SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu.example.com-abcde", "resourceVersion": "7"},
    "spec": {
        "driver": "gpu.example.com",
        "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "model": {"string": "a100"},
                    "index": {"int": 0},
                    "healthy": {"bool": True},
                    "driverVersion": {"version": "1.2.3"},
                    "example.com/pcieRoot": {"string": "pci0000:00"},
                },
                "capacity": {"memory": {"value": "80Gi"}},
                "taints": [{"key": "broken", "effect": "NoSchedule"}],
            }
        ],
        "sharedCounters": [{"name": "x", "counters": {"mem": {"value": "1"}}}],
    },
}

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {
        "name": "pod-gpu-x1",
        "namespace": "ml",
        "uid": "c-1",
        "finalizers": ["resource.kubernetes.io/delete-protection"],
        "ownerReferences": [{"kind": "Pod", "name": "pod", "uid": "p-1", "controller": True}],
    },
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "gpu.example.com",
                        "allocationMode": "ExactCount",
                        "count": 2,
                        "selectors": [{"cel": {"expression": "device.driver == 'x'"}}],
                        "tolerations": [{"key": "broken", "operator": "Exists"}],
                    },
                },
                {
                    "name": "any",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "big"},
                        {"name": "small", "deviceClassName": "small", "count": 2},
                    ],
                },
            ],
            "constraints": [{"requests": ["gpu"], "matchAttribute": "example.com/pcieRoot"}],
            "config": [{"requests": ["gpu"], "opaque": {"driver": "d", "parameters": {}}}],
        }
    },
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "d", "pool": "p", "device": "gpu-0"},
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                        ]
                    }
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "pod", "uid": "p-1"}],
    },
}


def test_slice_decodes_every_attribute_kind_and_capacity() -> None:
    s = decode(SLICE, ResourceSlice)
    assert s.spec.pool.generation == 3 and s.spec.pool.resource_slice_count == 1
    d = s.spec.devices[0]
    attrs = d.attributes
    assert attrs["model"].string == "a100"
    assert attrs["index"].int_ == 0
    assert attrs["healthy"].bool_ is True
    assert attrs["driverVersion"].version == "1.2.3"
    assert attrs["example.com/pcieRoot"].string == "pci0000:00"
    assert d.capacity["memory"].value == "80Gi"
    assert d.taints[0].effect == "NoSchedule"


def test_claim_decodes_requests_constraints_and_status() -> None:
    c = decode_json(json.dumps(CLAIM).encode(), ResourceClaim)
    assert c.key == "ml/pod-gpu-x1"
    assert c.metadata.finalizers == ["resource.kubernetes.io/delete-protection"]
    exact = c.spec.devices.requests[0].exactly
    assert exact is not None and exact.count == 2 and exact.device_class_name == "gpu.example.com"
    assert exact.tolerations[0].operator == "Exists"
    subs = c.spec.devices.requests[1].first_available
    assert [s.name for s in subs] == ["big", "small"] and subs[1].count == 2
    assert c.spec.devices.constraints[0].match_attribute == "example.com/pcieRoot"
    alloc = c.status.allocation
    assert alloc is not None and alloc.devices.results[0].device == "gpu-0"
    assert alloc.node_selector is not None
    assert c.status.reserved_for[0].uid == "p-1"


def test_class_and_template_decode() -> None:
    cls = decode(
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "selectors": [{"cel": {"expression": "true"}}],
                "extendedResourceName": "example.com/gpu",
            },
        },
        DeviceClass,
    )
    assert cls.spec.extended_resource_name == "example.com/gpu"
    assert cls.spec.selectors[0].cel is not None
    tpl = decode(
        {"metadata": {"name": "t", "namespace": "ml"}, "spec": {"spec": CLAIM["spec"]}},
        ResourceClaimTemplate,
    )
    assert tpl.spec.spec.devices.requests[0].name == "gpu"


def test_pod_claims_and_claim_statuses() -> None:
    pod = decode(
        {
            "metadata": {"name": "p", "namespace": "ml"},
            "spec": {
                "resourceClaims": [
                    {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                    {"name": "shared", "resourceClaimName": "shared-gpu"},
                ]
            },
            "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]},
        },
        Pod,
    )
    assert pod.spec.resource_claims[0].resource_claim_template_name == "one-gpu"
    assert pod.status.resource_claim_statuses[0].resource_claim_name == "p-gpu-x"


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        (("spec", "pool", "generation"), "x"),
        (("spec", "devices"), {"not": "a list"}),
    ],
)
def test_wrong_shapes_name_object_and_field(path: tuple[str, ...], bad: Any) -> None:
    raw = json.loads(json.dumps(SLICE))
    cur = raw
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = bad
    with pytest.raises(DecodeError) as e:
        decode(raw, ResourceSlice)
    assert "ResourceSlice node-1-gpu.example.com-abcde" in str(e.value)
    assert ".".join(path) in str(e.value)
