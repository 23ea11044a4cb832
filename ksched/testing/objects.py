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
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    tolerations: list[JSON] | None = None,
    node_selector: dict[str, str] | None = None,
    priority: int | None = None,
    uid: str | None = None,
    **spec: Any,
) -> JSON:
    """A one-container pod; extra keyword arguments go into spec verbatim. ``owner``: a
    stored controller object (with its uid), referenced as the pod's controller.

    ``requests``/``limits`` are the container's (``cpu``/``memory`` add to the requests);
    ``priority`` sets ``spec.priority`` as admission would from a PriorityClass."""
    requests = {
        **(requests or {}),
        **{k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None},
    }
    container: JSON = {"name": "main", "image": image}
    resources = {k: dict(v) for k, v in (("requests", requests), ("limits", limits)) if v}
    if resources:
        container["resources"] = resources
    pod_spec: JSON = {"containers": [container], **spec}
    if node_name:
        pod_spec["nodeName"] = node_name
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    if priority_class_name:
        pod_spec["priorityClassName"] = priority_class_name
    if tolerations:
        pod_spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    if priority is not None:
        pod_spec["priority"] = priority
    meta: JSON = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
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
    allocatable: dict[str, Any] | None = None,
    images: list[JSON] | None = None,
    declared_features: list[str] | None = None,
) -> JSON:
    """A node with capacity == allocatable and a Ready condition, as a kubelet would report.

    ``allocatable`` adds resources or overrides ``cpu``/``memory``/``pods``; ``images``
    is ``status.images`` (``[{"names": [...], "sizeBytes": n}]``, for ImageLocality);
    ``declared_features`` is ``status.declaredFeatures`` (sorted here, as the API server
    requires)."""
    resources: JSON = {"cpu": cpu, "memory": memory, "pods": pods, **(allocatable or {})}
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
            **({"images": [dict(i) for i in images]} if images else {}),
            **({"declaredFeatures": sorted(declared_features)} if declared_features else {}),
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


def make_pvc(
    name: str,
    namespace: str = "default",
    *,
    storage: str = "1Gi",
    storage_class: str | None = None,
    volume_name: str = "",
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
    phase: str | None = None,
) -> JSON:
    """A PersistentVolumeClaim; ``storage_class=None`` leaves the class to the default one,
    ``phase`` (``Bound``, say) seeds its status."""
    spec: JSON = {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": storage}},
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume_name:
        spec["volumeName"] = volume_name
    return _volume_object(
        "PersistentVolumeClaim", {"name": name, "namespace": namespace}, spec, phase
    )


def _volume_object(kind: str, meta: JSON, spec: JSON, phase: str | None) -> JSON:
    obj: JSON = {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def make_pv(
    name: str,
    *,
    storage: str = "1Gi",
    storage_class: str = "",
    claim: tuple[str, str] | None = None,
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
    csi_driver: str | None = None,
    node_affinity: dict[str, list[str]] | None = None,
    phase: str | None = None,
) -> JSON:
    """A PersistentVolume: ``claim`` (namespace, name) pre-binds it, ``csi_driver`` makes it a
    CSI volume (handle: its name), ``node_affinity`` (label -> values) limits its nodes."""
    spec: JSON = {"capacity": {"storage": storage}, "accessModes": list(access_modes)}
    if storage_class:
        spec["storageClassName"] = storage_class
    if claim is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": claim[0],
            "name": claim[1],
        }
    if csi_driver is not None:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": name}
    else:
        spec["hostPath"] = {"path": f"/mnt/{name}"}
    if node_affinity:
        exprs = [{"key": k, "operator": "In", "values": list(v)} for k, v in node_affinity.items()]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    return _volume_object("PersistentVolume", {"name": name}, spec, phase)


def make_storage_class(
    name: str,
    provisioner: str = "csi.example.com",
    *,
    binding_mode: str | None = None,
    default: bool = False,
) -> JSON:
    """A StorageClass; ``binding_mode="WaitForFirstConsumer"`` delays binding to scheduling."""
    meta: JSON = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    obj: JSON = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta,
        "provisioner": provisioner,
    }
    if binding_mode is not None:
        obj["volumeBindingMode"] = binding_mode
    return obj


def make_csinode(name: str, drivers: dict[str, int | None]) -> JSON:
    """The CSINode of node ``name``: driver name -> its volume limit (None: no limit)."""
    entries: list[JSON] = []
    for driver, limit in drivers.items():
        entry: JSON = {"name": driver, "nodeID": name, "topologyKeys": None}
        if limit is not None:
            entry["allocatable"] = {"count": limit}
        entries.append(entry)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": entries},
    }


def make_csidriver(name: str, **spec: Any) -> JSON:
    """A CSIDriver; keyword arguments (``attachRequired=False``, ...) go into spec verbatim."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": dict(spec),
    }


def make_csistoragecapacity(
    name: str,
    storage_class: str,
    capacity: str | None,
    node_labels: dict[str, str] | None,
    *,
    namespace: str = "default",
    maximum_volume_size: str | None = None,
) -> JSON:
    """A CSIStorageCapacity: ``capacity`` of ``storage_class`` free on the nodes with
    ``node_labels`` (None: no nodeTopology, so no node has access)."""
    obj: JSON = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace},
        "storageClassName": storage_class,
    }
    if node_labels is not None:
        obj["nodeTopology"] = {"matchLabels": dict(node_labels)}
    if capacity is not None:
        obj["capacity"] = capacity
    if maximum_volume_size is not None:
        obj["maximumVolumeSize"] = maximum_volume_size
    return obj


def make_volume_attachment(
    name: str, attacher: str, node_name: str, pv_name: str, *, attached: bool = True
) -> JSON:
    """A VolumeAttachment of PV ``pv_name`` to ``node_name`` by CSI driver ``attacher``."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {
            "attacher": attacher,
            "nodeName": node_name,
            "source": {"persistentVolumeName": pv_name},
        },
        "status": {"attached": attached},
    }


# ---- DRA (resource.k8s.io/v1) ------------------------------------------------------------

RESOURCE_API = "resource.k8s.io/v1"


def make_device_class(name: str, *expressions: str, **spec: Any) -> JSON:
    """A DeviceClass selecting devices by CEL ``expressions`` (all must match)."""
    sels = [{"cel": {"expression": e}} for e in expressions]
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": sels, **spec} if sels else dict(spec),
    }


def make_resource_slice(
    node_name: str,
    driver: str,
    devices: list[JSON],
    *,
    name: str | None = None,
    pool: str | None = None,
    generation: int = 1,
) -> JSON:
    """A driver's slice of ``node_name``'s devices, alone in its pool (named after the
    node). ``devices``: ``{"name": ..., "attributes": ..., "capacity": ...}``."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node_name}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": pool or node_name, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def device_requests(device_class: str, count: int = 1, *selectors: str) -> JSON:
    """``spec.devices`` asking for ``count`` devices of a class as request "req-0"."""
    exactly: JSON = {
        "deviceClassName": device_class,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"requests": [{"name": "req-0", "exactly": exactly}]}


def make_resource_claim(name: str, devices: JSON, namespace: str = "default") -> JSON:
    """A ResourceClaim with ``spec.devices`` (see ``device_requests``)."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": devices},
    }


def make_resource_claim_template(name: str, devices: JSON, namespace: str = "default") -> JSON:
    """A ResourceClaimTemplate whose claims have ``spec.devices``."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": devices}},
    }


SCHEDULING_API = "scheduling.k8s.io/v1beta1"


def _scheduling_policy(min_count: int | None) -> JSON:
    return {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}


def make_workload(name: str, templates: dict[str, int | None], namespace: str = "default") -> JSON:
    """A Workload with one PodGroup template per entry: gang with that ``minCount``, or
    basic for None."""
    return {
        "apiVersion": SCHEDULING_API,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "podGroupTemplates": [
                {"name": t, "schedulingPolicy": _scheduling_policy(n)} for t, n in templates.items()
            ]
        },
    }


def make_pod_group(
    name: str,
    min_count: int | None = None,
    namespace: str = "default",
    workload: tuple[str, str] | None = None,
) -> JSON:
    """A scheduling.k8s.io PodGroup: gang with ``min_count``, else basic; ``workload`` is
    the (Workload, template) it was made from."""
    spec: JSON = {"schedulingPolicy": _scheduling_policy(min_count)}
    if workload is not None:
        spec["workloadRef"] = {"workloadName": workload[0], "templateName": workload[1]}
    return {
        "apiVersion": SCHEDULING_API,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
