"""Decoding Kubernetes manifests into ksched objects (dicts and JSON bytes)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ksched.api.objects import (
    DecodeError,
    InvalidObjectError,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    decode,
    decode_json,
    object_ref,
)

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-0",
        "namespace": "shop",
        "uid": "u-1",
        "resourceVersion": "42",
        "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "ownerReferences": [
            {
                "kind": "StatefulSet",
                "name": "web",
                "uid": "s-1",
                "apiVersion": "apps/v1",
                "controller": True,
            }
        ],
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "managedFields": [{"manager": "kubectl"}],  # unknown to ksched
    },
    "spec": {
        "schedulerName": "ksched",
        "priorityClassName": "high",
        "priority": 1000,
        "preemptionPolicy": "Never",
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["a", "b"]}
                            ]
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ]
                        },
                    }
                ],
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "matchLabelKeys": ["pod-template-hash"],
                    }
                ]
            },
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                "minDomains": 2,
            }
        ],
        "schedulingGates": [{"name": "wait"}],
        "overhead": {"cpu": "10m"},
        "initContainers": [
            {"name": "init", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}
        ],
        "containers": [
            {
                "name": "app",
                "image": "nginx",
                "ports": [
                    {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1", "protocol": "UDP"}
                ],
                "resources": {
                    "requests": {"cpu": "500m", "memory": 1073741824},
                    "limits": {"cpu": 1.5},
                },
                "livenessProbe": {"httpGet": {"path": "/"}},  # unknown to ksched
            }
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],  # unknown to ksched
    },
    "status": {
        "phase": "Pending",
        "nominatedNodeName": "n9",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        "qosClass": "Burstable",
    },
}

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"zone": "a"}},
    "spec": {
        "unschedulable": True,
        "podCIDR": "10.1.0.0/24",
        "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule", "timeAdded": None}],
        "providerID": "aws://x",
    },
    "status": {
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "allocatable": {"cpu": "7800m", "memory": "31Gi", "pods": 110, "nvidia.com/gpu": "2"},
        "images": [{"names": ["nginx:1", "docker.io/nginx:1"], "sizeBytes": 1234}],
        "nodeInfo": {"kubeletVersion": "v1.31.0"},
    },
}


def _check_pod(p: Pod) -> None:
    assert p.key == "shop/web-0"
    m = p.metadata
    assert (m.uid, m.resource_version, m.labels, m.annotations) == (
        "u-1",
        "42",
        {"app": "web"},
        {"a": "b"},
    )
    assert m.owner_references[0].kind == "StatefulSet"
    assert m.owner_references[0].controller is True
    assert m.creation_timestamp == "2024-01-01T00:00:00Z"
    s = p.spec
    assert (s.scheduler_name, s.priority_class_name, s.priority, s.preemption_policy) == (
        "ksched",
        "high",
        1000,
        "Never",
    )
    assert s.node_selector == {"disk": "ssd"}
    t = s.tolerations[0]
    assert (t.key, t.operator, t.value, t.effect, t.toleration_seconds) == (
        "k",
        "Exists",
        "",
        "NoSchedule",
        30,
    )
    assert s.affinity is not None and s.affinity.node_affinity is not None
    req = s.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert req is not None
    expr = req.node_selector_terms[0].match_expressions[0]
    assert (expr.key, expr.operator, expr.values) == ("zone", "In", ["a", "b"])
    pref = s.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution[0]
    assert pref.weight == 5 and pref.preference.match_fields[0].values == ["n1"]
    assert s.affinity.pod_anti_affinity is not None
    anti = s.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution[0]
    assert anti.topology_key == "kubernetes.io/hostname"
    assert anti.label_selector is not None and anti.label_selector.match_labels == {"app": "web"}
    assert anti.match_label_keys == ["pod-template-hash"]
    tsc = s.topology_spread_constraints[0]
    assert (tsc.max_skew, tsc.topology_key, tsc.when_unsatisfiable, tsc.min_domains) == (
        1,
        "zone",
        "DoNotSchedule",
        2,
    )
    assert tsc.label_selector is not None
    assert tsc.label_selector.match_expressions[0].values == []
    assert [g.name for g in s.scheduling_gates] == ["wait"]
    assert s.overhead == {"cpu": "10m"}
    assert s.init_containers[0].restart_policy == "Always"
    c = s.containers[0]
    assert (c.name, c.image) == ("app", "nginx")
    port = c.ports[0]
    assert (port.container_port, port.host_port, port.host_ip, port.protocol) == (
        80,
        8080,
        "10.0.0.1",
        "UDP",
    )
    assert c.resources.requests == {"cpu": "500m", "memory": 1073741824}
    assert c.resources.limits == {"cpu": 1.5}
    assert p.status.phase == "Pending" and p.status.nominated_node_name == "n9"
    assert p.status.conditions[0].reason == "Unschedulable"


def test_pod_from_dict() -> None:
    _check_pod(decode(POD, Pod))


def test_pod_from_json_bytes() -> None:
    _check_pod(decode_json(json.dumps(POD).encode(), Pod))


def test_defaults_for_omitted_fields() -> None:
    p = decode({"metadata": {"name": "p"}}, Pod)
    assert p.kind == "Pod" and p.api_version == "v1"
    assert p.metadata.namespace == "" and p.metadata.labels == {}
    assert p.spec.scheduler_name == "default-scheduler"
    assert p.spec.priority is None and p.spec.affinity is None
    assert p.spec.containers == [] and p.spec.tolerations == []
    port = decode({"spec": {"containers": [{"ports": [{"containerPort": 1}]}]}}, Pod)
    assert port.spec.containers[0].ports[0].protocol == "TCP"
    assert port.spec.containers[0].restart_policy is None
    # Mutable defaults are not shared between objects.
    a, b = decode({}, Pod), decode({}, Pod)
    a.metadata.labels["x"] = "y"
    assert b.metadata.labels == {}


def test_node_from_dict_and_json() -> None:
    for n in (decode(NODE, Node), decode_json(json.dumps(NODE).encode(), Node)):
        assert n.name == "n1" and n.metadata.labels == {"zone": "a"}
        assert n.spec.unschedulable is True and n.spec.pod_cidr == "10.1.0.0/24"
        t = n.spec.taints[0]
        assert (t.key, t.value, t.effect, t.time_added) == ("gpu", "true", "NoSchedule", None)
        assert n.status.allocatable == {
            "cpu": "7800m",
            "memory": "31Gi",
            "pods": 110,
            "nvidia.com/gpu": "2",
        }
        assert n.status.capacity["memory"] == "32Gi"
        assert n.status.images[0].names == ["nginx:1", "docker.io/nginx:1"]
        assert n.status.images[0].size_bytes == 1234


def test_namespace_priority_class_pdb() -> None:
    ns = decode(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "shop", "labels": {"team": "a"}},
            "spec": {"finalizers": ["kubernetes"]},
        },
        Namespace,
    )
    assert ns.metadata.name == "shop" and ns.metadata.labels == {"team": "a"}

    pc_raw = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000000,
        "globalDefault": True,
        "preemptionPolicy": "Never",
        "description": "ignored",
    }
    for pc in (
        decode(pc_raw, PriorityClass),
        decode_json(json.dumps(pc_raw).encode(), PriorityClass),
    ):
        assert (pc.metadata.name, pc.value, pc.global_default, pc.preemption_policy) == (
            "high",
            1000000,
            True,
            "Never",
        )

    pdb_raw = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "minAvailable": "50%",
            "selector": {"matchLabels": {"app": "web"}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
        "status": {
            "disruptionsAllowed": 1,
            "currentHealthy": 3,
            "desiredHealthy": 2,
            "expectedPods": 3,
            "disruptedPods": {"web-1": "2024-01-01T00:00:00Z"},
            "observedGeneration": 4,
        },
    }
    for pdb in (
        decode(pdb_raw, PodDisruptionBudget),
        decode_json(json.dumps(pdb_raw).encode(), PodDisruptionBudget),
    ):
        assert pdb.spec.min_available == "50%" and pdb.spec.max_unavailable is None
        assert pdb.spec.selector is not None
        assert pdb.spec.selector.match_labels == {"app": "web"}
        assert pdb.status.disruptions_allowed == 1
        assert pdb.status.disrupted_pods == {"web-1": "2024-01-01T00:00:00Z"}
    pdb2 = decode({"spec": {"maxUnavailable": 1}}, PodDisruptionBudget)
    assert pdb2.spec.max_unavailable == 1 and pdb2.spec.min_available is None


def test_unknown_fields_are_ignored_everywhere() -> None:
    raw = {
        "kind": "Pod",
        "zzz": 1,
        "metadata": {"name": "p", "zzz": {"a": 1}},
        "spec": {
            "zzz": [1],
            "containers": [{"name": "c", "zzz": None, "resources": {"claims": [{"name": "x"}]}}],
        },
        "status": {"zzz": "x", "podIPs": [{"ip": "1.2.3.4"}]},
    }
    p = decode(raw, Pod)
    assert p.metadata.name == "p" and p.spec.containers[0].name == "c"
    assert decode_json(json.dumps(raw).encode(), Pod).spec.containers[0].name == "c"


BAD_HOST_PORT = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "x", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": "80"}]}]},
}


def test_wrong_type_names_object_and_field_path_dict() -> None:
    with pytest.raises(DecodeError) as ei:
        decode(BAD_HOST_PORT, Pod)
    msg = str(ei.value)
    assert msg.startswith("Pod default/x: ")
    assert "`spec.containers[0].ports[0].hostPort`" in msg
    assert "$" not in msg


def test_wrong_type_names_object_and_field_path_json() -> None:
    with pytest.raises(DecodeError) as ei:
        decode_json(json.dumps(BAD_HOST_PORT).encode(), Pod)
    msg = str(ei.value)
    assert msg.startswith("Pod default/x: ")
    assert "`spec.containers[0].ports[0].hostPort`" in msg


@pytest.mark.parametrize(
    ("raw", "cls", "ref", "path"),
    [
        (
            {"kind": "Node", "metadata": {"name": "n1"}, "spec": {"unschedulable": "yes"}},
            Node,
            "Node n1",
            "spec.unschedulable",
        ),
        (
            {
                "kind": "Node",
                "metadata": {"name": "n1"},
                "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b"}]},
            },
            Node,
            "Node n1",
            "spec.taints[1]",
        ),
        (
            {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": True}}},
            Node,
            "Node n1",
            "status.allocatable",
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": {"tolerations": {"key": "a"}},
            },
            Pod,
            "Pod ns/p",
            "spec.tolerations",
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": {"priority": "high"},
            },
            Pod,
            "Pod ns/p",
            "spec.priority",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "labels": {"a": 1}}},
            Pod,
            "Pod ns/p",
            "metadata.labels",
        ),
        (
            {"kind": "PriorityClass", "metadata": {"name": "pc"}, "value": "1"},
            PriorityClass,
            "PriorityClass pc",
            "value",
        ),
        (
            {
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "b", "namespace": "ns"},
                "spec": {"minAvailable": [1]},
            },
            PodDisruptionBudget,
            "PodDisruptionBudget ns/b",
            "spec.minAvailable",
        ),
        ({"kind": "Namespace", "metadata": {"name": 7}}, Namespace, "Namespace 7", "metadata.name"),
    ],
)
def test_decode_errors_name_object_and_path(
    raw: dict[str, Any], cls: Any, ref: str, path: str
) -> None:
    decoders: list[Callable[[], object]] = [
        lambda: decode(raw, cls),
        lambda: decode_json(json.dumps(raw).encode(), cls),
    ]
    for decoder in decoders:
        with pytest.raises(DecodeError) as ei:
            decoder()
        msg = str(ei.value)
        assert msg.startswith(ref + ": "), msg
        assert f"`{path}" in msg, msg


def test_bool_is_not_an_int_and_int_is_not_a_string() -> None:
    with pytest.raises(DecodeError, match=r"spec\.priority"):
        decode({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": True}}, Pod)
    with pytest.raises(DecodeError, match=r"spec\.nodeName"):
        decode({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": 5}}, Pod)


def test_object_without_kind_is_named_by_its_type() -> None:
    # Items of API list responses carry no kind.
    raw = {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"priority": "1"}}
    with pytest.raises(DecodeError, match=r"^Pod ns/x: "):
        decode(raw, Pod)
    with pytest.raises(DecodeError, match=r"^Pod ns/x: "):
        decode_json(json.dumps(raw).encode(), Pod)


def test_not_a_mapping_and_invalid_json() -> None:
    with pytest.raises(DecodeError, match="<list>"):
        decode([1, 2], Pod)
    with pytest.raises(DecodeError, match="<str>"):
        decode("pod", Pod)
    with pytest.raises(DecodeError, match="invalid JSON"):
        decode_json(b'{"metadata": ', Pod)
    with pytest.raises(DecodeError):
        decode_json(b"[]", Node)


def test_decode_error_is_an_invalid_object_error() -> None:
    with pytest.raises(InvalidObjectError):
        decode(BAD_HOST_PORT, Pod)
    assert issubclass(DecodeError, ValueError)


def test_object_ref() -> None:
    assert object_ref({"kind": "Pod", "metadata": {"name": "a", "namespace": "b"}}) == "Pod b/a"
    assert object_ref({"kind": "Node", "metadata": {"name": "n"}}) == "Node n"
    assert object_ref({"metadata": {"name": "n"}}) == "object n"
    assert object_ref({"metadata": {"name": "n"}}, "Node") == "Node n"
    assert object_ref({"kind": "Pod"}) == "Pod ?"
    assert object_ref(3) == "<int>"


def test_api_objects_are_not_tracked_by_the_cyclic_gc() -> None:
    """Cached pods and nodes must not add to every collection's scan (see ``_S``)."""
    import gc

    from ksched.api.objects import Node, Pod, decode

    pod = decode({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {}}, Pod)
    node = decode({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1"}}}, Node)
    for obj in (pod, pod.metadata, pod.spec, pod.status, node, node.status):
        assert not gc.is_tracked(obj), type(obj).__name__
