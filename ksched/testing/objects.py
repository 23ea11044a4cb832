"""Builders for the objects tests create most, shaped like what kubectl would send."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def make_pod(
    name: str,
    namespace: str = "default",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    scheduler_name: str | None = None,
    priority_class_name: str | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    owner: JSON | None = None,
    **spec: Any,
) -> JSON:
    """A one-container pod; extra keyword arguments go into spec verbatim. ``owner``: a
    stored controller object (with its uid), referenced as the pod's controller."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: JSON = {"name": "main", "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    pod_spec: JSON = {"containers": [container], **spec}
    if node_name:
        pod_spec["nodeName"] = node_name
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    if priority_class_name:
        pod_spec["priorityClassName"] = priority_class_name
    meta: JSON = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    if owner is not None:
        meta["ownerReferences"] = [controller_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}


def controller_ref(owner: JSON) -> JSON:
    """The ownerReference a controller sets on the pods it creates."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def make_service(
    name: str, selector: dict[str, str] | None, namespace: str = "default", port: int = 80
) -> JSON:
    """A ClusterIP Service; ``selector=None`` leaves it without one (it selects no pod)."""
    spec: JSON = {"ports": [{"port": port, "protocol": "TCP", "targetPort": port}]}
    if selector is not None:
        spec["selector"] = dict(selector)
    meta: JSON = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


_CONTROLLER_API_VERSIONS = {
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicationController": "v1",
}


def make_controller(
    kind: str,
    name: str,
    labels: dict[str, str],
    namespace: str = "default",
    *,
    replicas: int = 1,
) -> JSON:
    """A ReplicaSet, StatefulSet or ReplicationController selecting ``labels`` (its own and
    its pod template's labels too); an RC's selector is a plain map, the others' a
    LabelSelector."""
    api_version = _CONTROLLER_API_VERSIONS[kind]
    template = {
        "metadata": {"labels": dict(labels)},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }
    selector: JSON = dict(labels) if kind == "ReplicationController" else {"matchLabels": labels}
    spec: JSON = {"replicas": replicas, "selector": selector, "template": template}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    meta: JSON = {"name": name, "namespace": namespace, "labels": dict(labels)}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[JSON] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
) -> JSON:
    """A node with capacity == allocatable and a Ready condition, as a kubelet would report."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    meta: JSON = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    spec: JSON = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def make_priority_class(name: str, value: int, *, global_default: bool = False) -> JSON:
    obj: JSON = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if global_default:
        obj["globalDefault"] = True
    return obj


def make_namespace(name: str, labels: dict[str, str] | None = None) -> JSON:
    meta: JSON = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}
