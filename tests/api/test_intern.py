"""Pods and nodes decoded by the informers share their repeating strings (memory at
50,000 pods), and interning changes no value."""

from __future__ import annotations

import json
from typing import Any

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
