"""Pods and nodes decoded by the informers share their repeating strings (memory at
50,000 pods), and interning changes no value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ksched.api import intern
from ksched.api.intern import MAX_INTERNED, intern_node, intern_pod
from ksched.api.objects import Node, Pod, decode_json
from ksched.cluster.decoding import node_decoder, pod_decoder


def _pod(i: int) -> bytes:
    doc: dict[str, Any] = {
        "metadata": {
            "name": f"web-{i}",
            "namespace": "".join(["te", "am"]),
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"note": "x" * (MAX_INTERNED + 1), "short": "yes"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1", "uid": "u-1"}],
        },
        "spec": {
            "nodeName": "node-1",
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {"name": "app", "image": "registry/web:v1", "ports": [{"containerPort": 80}]}
            ],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    return json.dumps(doc).encode()


def _node(i: int) -> bytes:
    doc = {
        "metadata": {"name": f"node-{i}", "labels": {"topology.kubernetes.io/zone": "a"}},
        "spec": {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]},
        "status": {
            "images": [{"names": ["registry/web@sha256:abc", "registry/web:v1"], "sizeBytes": 5}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    return json.dumps(doc).encode()


def test_pods_share_strings_and_keep_their_values() -> None:
    a, b = (intern_pod(decode_json(_pod(i), Pod)) for i in (1, 2))
    assert a == decode_json(_pod(1), Pod)  # same values as without interning
    assert a.metadata.namespace is b.metadata.namespace
    (ka, va), (kb, vb) = (
        next(iter(a.metadata.labels.items())),
        next(iter(b.metadata.labels.items())),
    )
    assert ka is kb and va is vb
    assert a.metadata.annotations["short"] is b.metadata.annotations["short"]
    # long values rarely repeat: left out of the intern table
    assert a.metadata.annotations["note"] is not b.metadata.annotations["note"]
    assert a.spec.containers[0].image is b.spec.containers[0].image
    assert a.spec.tolerations[0].key is b.spec.tolerations[0].key
    assert a.metadata.owner_references[0].uid is b.metadata.owner_references[0].uid
    assert a.status.conditions[0].type is b.status.conditions[0].type


def test_nodes_share_image_names() -> None:
    a, b = (intern_node(decode_json(_node(i), Node)) for i in (1, 2))
    assert a == decode_json(_node(1), Node)
    assert a.status.images[0].names[0] is b.status.images[0].names[0]
    assert a.spec.taints[0].value is b.spec.taints[0].value


def test_the_informer_decoders_intern() -> None:
    dec = pod_decoder(None)
    a, b = dec(_pod(1)), dec(_pod(2))
    assert a.pod.spec.containers[0].image is b.pod.spec.containers[0].image
    nd = node_decoder()
    assert nd(_node(1)).status.images[0].names[1] is nd(_node(2)).status.images[0].names[1]


def _imaged(name: str, images: list[tuple[int, list[str]]]) -> bytes:
    doc = {
        "metadata": {"name": name},
        "status": {"images": [{"names": n, "sizeBytes": s} for s, n in images]},
    }
    return json.dumps(doc).encode()


def test_nodes_share_one_struct_per_distinct_image() -> None:
    web, db = (5, ["registry/web@sha256:abc", "registry/web:v1"]), (7, ["registry/db:v2"])
    a = intern_node(decode_json(_imaged("a", [web, db]), Node))
    b = intern_node(decode_json(_imaged("b", [db, web, (6, ["registry/web:v1"])]), Node))
    assert a == decode_json(_imaged("a", [web, db]), Node)  # values unchanged
    assert b == decode_json(_imaged("b", [db, web, (6, ["registry/web:v1"])]), Node)
    assert a.status.images[0] is b.status.images[1]
    assert a.status.images[1] is b.status.images[0]
    assert a.status.images[0].names is b.status.images[1].names
    # another size, or other names, is another image
    assert b.status.images[2] is not a.status.images[0]
    c = intern_node(decode_json(_imaged("c", [(5, ["registry/web:v1"])]), Node))
    assert c.status.images[0] is not a.status.images[0]
    assert c.status.images[0].names == ["registry/web:v1"]


def test_the_shared_images_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intern, "MAX_SHARED_IMAGES", 3)
    monkeypatch.setattr(intern, "_images", {})
    nodes = [
        intern_node(decode_json(_imaged(f"n{i}", [(i, [f"img-{i}:v1"])]), Node)) for i in range(7)
    ]
    assert len(intern._images) <= 3
    assert [n.status.images[0].names for n in nodes] == [[f"img-{i}:v1"] for i in range(7)]
    # what is still remembered is shared; what was dropped is decoded afresh, equal
    again = intern_node(decode_json(_imaged("x", [(6, ["img-6:v1"])]), Node))
    assert again.status.images[0] is nodes[6].status.images[0]
    first = intern_node(decode_json(_imaged("y", [(0, ["img-0:v1"])]), Node))
    assert first.status.images[0] == nodes[0].status.images[0]
