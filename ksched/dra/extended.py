"""Extended resources backed by DRA (KEP-5004, ``DRAExtendedResource``, beta and on in v1.36).

A DeviceClass with ``spec.extendedResourceName`` (and every class, through the implicit
name ``deviceclass.resource.kubernetes.io/<class>``) lets a container ask for devices
the old way, ``example.com/gpu: 1`` in its resources. On a node that does not advertise
that resource in its allocatable, NodeResourcesFit leaves it to DynamicResources, which
allocates devices of the class through a claim it makes for the pod (upstream
``extendeddynamicresources.go`` and ``extendedresourcecache``). This module holds what
both plugins share: which class backs a resource name, and the claim's requests with
the container-to-request mappings written to ``status.extendedResourceClaimStatus``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ..api.objects import ObjectMeta, OwnerReference, Pod
from ..api.quantity import parse_quantity
from ..api.resource import (
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
)
from ..api.resources import is_extended_resource

__all__ = [
    "CLASS_PREFIX",
    "EXTENDED_CLAIM_ANNOTATION",
    "IN_MEMORY_NAME",
    "ClassResolver",
    "RequestMapping",
    "find_extended_claim",
    "in_memory_claim",
    "is_dra_extended_name",
    "requests_and_mappings",
]

# resourceapi.ResourceDeviceClassPrefix: the implicit extended resource name of a class.
CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
# resourceapi.ExtendedResourceClaimAnnotation: marks the claim the scheduler made.
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# The special claim's name until PreBind creates it (not a valid name on purpose).
IN_MEMORY_NAME = "<extended-resources>"

# (containerName, resourceName, requestName): one entry of requestMappings.
RequestMapping = tuple[str, str, str]


def is_dra_extended_name(name: str) -> bool:
    """``IsDRAExtendedResourceName``: an extended resource or a class's implicit name."""
    return is_extended_resource(name) or name.startswith(CLASS_PREFIX)


def _newer(a: DeviceClass, b: DeviceClass | None) -> bool:
    """Whether ``a`` wins an explicit name over ``b``: the newer class, then the lower name."""
    if b is None:
        return True
    ta, tb = a.metadata.creation_timestamp or "", b.metadata.creation_timestamp or ""
    if ta != tb:
        return ta > tb  # RFC 3339 UTC timestamps order as strings
    return a.metadata.name < b.metadata.name


class ClassResolver:
    """``DeviceClassResolver``: the class backing an extended resource name, rebuilt when
    the class store changes (its ``revision``; a plain mapping is read every time)."""

    def __init__(self) -> None:
        self._stamp: tuple[int, int] | None = None
        self._by_name: dict[str, DeviceClass] = {}

    def mapping(self, classes: Mapping[str, Any]) -> dict[str, DeviceClass]:
        stamp = (id(classes), int(getattr(classes, "revision", -1)))
        if stamp != self._stamp or stamp[1] < 0:
            by_name: dict[str, DeviceClass] = {}
            explicit: dict[str, DeviceClass] = {}
            for c in classes.values():
                if not isinstance(c, DeviceClass):
                    continue
                by_name[CLASS_PREFIX + c.metadata.name] = c
                ext = c.spec.extended_resource_name
                if ext and _newer(c, explicit.get(ext)):
                    explicit[ext] = c
            by_name.update(explicit)
            self._by_name, self._stamp = by_name, stamp
        return self._by_name

    def get(self, classes: Mapping[str, Any], name: str) -> DeviceClass | None:
        return self.mapping(classes).get(name) if classes else None

    def backed(self, classes: Mapping[str, Any], scalars: Iterable[tuple[str, int]]) -> set[str]:
        """The names among the pod's non-zero ``scalars`` a class backs."""
        m = self.mapping(classes) if classes else {}
        if not m:
            return set()
        return {n for n, q in scalars if q and is_dra_extended_name(n) and n in m}


def find_extended_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """The claim an earlier cycle made for ``pod`` (annotated, controlled by the pod)."""
    meta = pod.metadata
    for c in claims:
        if c.metadata.annotations.get(EXTENDED_CLAIM_ANNOTATION) != "true":
            continue
        for o in c.metadata.owner_references:
            if o.controller and o.name == meta.name and o.uid == meta.uid:
                return c
    return None


def in_memory_claim(pod: Pod) -> ResourceClaim:
    """The special claim before PreBind creates it: no requests yet (Filter adds each
    node's), a temporary uid for the in-flight bookkeeping."""
    meta = pod.metadata
    return ResourceClaim(
        metadata=ObjectMeta(
            name=IN_MEMORY_NAME,
            namespace=meta.namespace,
            uid=str(uuid.uuid4()),
            generate_name=f"{meta.name}-extended-resources-",
            owner_references=[
                OwnerReference(
                    kind="Pod", name=meta.name, uid=meta.uid, api_version="v1", controller=True
                )
            ],
            annotations={EXTENDED_CLAIM_ANNOTATION: "true"},
        )
    )


def _count(value: Any) -> int | None:
    """A container request as a whole number (``AsInt64``); None when not one."""
    try:
        q = parse_quantity(value)
    except ValueError:
        return None
    if q.denominator != 1:
        return None
    return int(q)


def _container_request(
    index: int,
    container: Any,
    resource: str,
    class_name: str,
    reusable: list[DeviceRequest | None],
) -> tuple[DeviceRequest | None, list[RequestMapping]]:
    """``createResourceRequestAndMappings``: the request one container needs for
    ``resource`` beyond what the ``reusable`` requests (of long-lived containers after
    it) already give, and its mappings."""
    reqs = container.resources.requests
    if resource not in reqs:
        return None, []
    want = _count(reqs[resource])
    if not want:
        return None, []
    mappings: list[RequestMapping] = []
    have = 0
    for r in reusable:
        if r is None or r.exactly is None:
            continue
        have += r.exactly.count
        mappings.append((container.name, resource, r.name))
        if have >= want:
            return None, mappings
    ridx = sorted(reqs).index(resource)
    name = f"container-{index}-request-{ridx}"
    req = DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(
            device_class_name=class_name,
            allocation_mode=ALLOCATION_MODE_EXACT_COUNT,
            count=want - have,
        ),
    )
    mappings.append((container.name, resource, name))
    return req, mappings


def requests_and_mappings(
    pod: Pod, resources: Mapping[str, int], classes: Mapping[str, DeviceClass]
) -> tuple[list[DeviceRequest], list[RequestMapping]]:
    """``createRequestsAndMappings``: one request per container and resource (init
    containers that are not sidecars share the largest of theirs and reuse what later
    long-lived containers get), sorted by name, and every container's mappings."""
    spec = pod.spec
    containers = [*spec.init_containers, *spec.containers]
    n_init = len(spec.init_containers)
    long_lived = [
        i for i, c in enumerate(containers) if i >= n_init or c.restart_policy == "Always"
    ]
    short_lived = [i for i in range(n_init) if i not in long_lived]
    requests: list[DeviceRequest] = []
    mappings: list[RequestMapping] = []
    for resource in sorted(resources):
        cls = classes.get(resource)
        if cls is None:
            continue
        long_reqs: list[DeviceRequest | None] = [None] * len(containers)
        long_maps: list[RequestMapping] = []
        for i in long_lived:
            req, maps = _container_request(i, containers[i], resource, cls.metadata.name, [])
            long_reqs[i] = req
            long_maps += maps
        biggest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_maps: list[RequestMapping] = []
        for i in short_lived:
            req, maps = _container_request(
                i, containers[i], resource, cls.metadata.name, long_reqs[i:]
            )
            if req is not None and req.exactly is not None:
                short_names.add(req.name)
                top = biggest.exactly.count if biggest and biggest.exactly else -1
                if req.exactly.count > top:
                    biggest = req
            short_maps += maps
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest.name)
            short_maps = [(c, r, biggest.name if n in short_names else n) for c, r, n in short_maps]
        if biggest is not None:
            requests.append(biggest)
        requests += [r for r in long_reqs if r is not None]
        mappings += long_maps + short_maps
    requests.sort(key=lambda r: r.name)
    return requests, mappings
