"""``ClusterClient`` over the API: the writes plugins and the binding cycle make.

``bind`` posts a Binding with the pod's UID as precondition (DefaultBinder), so a pod
deleted and recreated under the same name is never bound by a stale decision. A failed
binding fails the pod's attempt whatever the answer: the scheduler requeues it unless its
informer has seen the pod bound or deleted (``BindError.retry`` only says whether the same
request could succeed again: not after a 409 or 404).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote

import anyio
import msgspec
import structlog

from ..api.objects import (
    PersistentVolume,
    PersistentVolumeClaim,
    PodCondition,
    PodStatus,
    decode_json,
)
from ..api.resource import ResourceClaim
from ..framework.handle import BindError, ConflictError
from ..framework.types import PodInfo
from .client import MERGE_PATCH, STRATEGIC_MERGE_PATCH, APIClient, APIConnectionError, APIError

__all__ = ["APIClusterClient", "condition_patch", "patch_pod_status", "pod_path"]

log = structlog.get_logger("ksched.cluster.binder")

T = TypeVar("T", PersistentVolume, PersistentVolumeClaim)

# answers after which retrying the same binding is pointless
_FINAL_BIND_STATUSES = (404, 409)
# client-go retry.DefaultBackoff for PatchPodStatus: 10 ms * 5^n, 4 tries.
_PATCH_RETRY_DELAYS = (0.01, 0.05, 0.25)


# What ``quote(s, safe="")`` leaves as it is: every character of a valid object name.
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~"


def _quote(s: str) -> str:
    return quote(s, safe="") if s.strip(_UNRESERVED) else s


def pod_path(namespace: str, name: str, subresource: str = "") -> str:
    p = f"/api/v1/namespaces/{_quote(namespace)}/pods/{_quote(name)}"
    return f"{p}/{subresource}" if subresource else p


def condition_patch(status: PodStatus, condition: dict[str, Any]) -> dict[str, Any]:
    """The ``status`` of a strategic merge patch setting ``condition`` (merged by type, the
    other conditions kept), with the ``$setElementOrder`` directive client-go's two-way
    patch adds when the pod has conditions."""
    patch: dict[str, Any] = {"conditions": [condition]}
    types = [c.type for c in status.conditions]
    if types:
        if condition["type"] not in types:
            types.append(condition["type"])
        patch["$setElementOrder/conditions"] = [{"type": t} for t in types]
    return patch


def _refused(e: APIError) -> bool:
    """``net.IsConnectionRefused``: nothing reached the server, so a retry is safe."""
    cause: BaseException | None = e
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


async def patch_pod_status(client: APIClient, path: str, body: dict[str, Any]) -> bool:
    """``util.PatchPodStatus``: a strategic merge patch of ``pods/{name}/status`` at
    ``path``, retried like client-go on internal errors and unavailability. False when the
    pod is gone."""
    delays = iter(_PATCH_RETRY_DELAYS)
    while True:
        try:
            await client.request("PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH)
            return True
        except APIError as e:
            if e.status == 404:
                return False
            retriable = isinstance(e, APIConnectionError) or e.status in (500, 503)
            delay = next(delays, None)
            if not retriable or delay is None:
                raise
            await anyio.sleep(delay)


class APIClusterClient:
    """The daemon's ``ClusterClient`` (see ``ksched.framework.handle``), with the writes of
    VolumeBinding and DynamicResources (``ksched.profile.SchedulerCluster``)."""

    def __init__(self, client: APIClient, *, bind_timeout: float | None = None) -> None:
        self.client = client
        self.bind_timeout = bind_timeout
        # Awaited before every write with what it is; raises to refuse it (the daemon's
        # leadership fence), so no write method of a subclass needs its own check.
        self.fence: Callable[[str], Awaitable[None]] | None = None
        # Called right before a binding or eviction goes out; raises to stop it (the
        # daemon's fence: see ``APIClient.request``'s ``guard``).
        self.write_guard: Callable[[], None] | None = None
        # v1.37's util.BindPod: a binding answered 500/503, or refused, is retried (client-go
        # DefaultBackoff, 4 tries); v1.36 posted it once.
        self.retry_bind = False

    async def _fenced(self, what: str) -> None:
        if self.fence is not None:
            await self.fence(what)

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        await self._fenced(f"binding {pod.key} to {node_name}")
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        delays = iter(_PATCH_RETRY_DELAYS if self.retry_bind else ())
        while True:
            try:
                await self.client.request(
                    "POST",
                    pod_path(pod.namespace, pod.name, "binding"),
                    body=body,
                    timeout=self.bind_timeout,
                    guard=self.write_guard,
                )
                return
            except APIError as e:
                delay = next(delays, None)
                if delay is None or not (e.status in (500, 503) or _refused(e)):
                    retry = e.status not in _FINAL_BIND_STATUSES
                    raise BindError(
                        f"binding {pod.key} to {node_name}: {e.message or e.reason}", retry=retry
                    ) from e
            await anyio.sleep(delay)

    async def delete_pod(self, pod: PodInfo) -> None:
        """Delete (preemption victims) with a UID precondition; already gone is success."""
        await self._fenced(f"deleting {pod.key}")
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if pod.uid:
            body["preconditions"] = {"uid": pod.uid}
        try:
            await self.client.request(
                "DELETE", pod_path(pod.namespace, pod.name), body=body, guard=self.write_guard
            )
        except APIError as e:
            if e.status == 404:
                return
            if e.status == 409 and pod.uid:
                # UID precondition failed: the victim is gone, replaced by a new pod
                log.info("victim already replaced", pod=pod.key, error=e.message)
                return
            raise

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        """Record (or, with "", clear) ``status.nominatedNodeName``."""
        await self._fenced(f"nominating {pod.key}")
        patch = {"status": {"nominatedNodeName": node_name or None}}
        try:
            await self.client.request(
                "PATCH",
                pod_path(pod.namespace, pod.name, "status"),
                body=patch,
                content_type=MERGE_PATCH,
            )
        except APIError as e:
            if e.status != 404:
                raise

    async def set_pod_condition(self, pod: PodInfo, condition: PodCondition) -> bool:
        """Merge ``condition`` into ``status.conditions`` by type. A strategic merge patch,
        as upstream's ``PatchPodStatus``: a merge patch would replace the whole list."""
        await self._fenced(f"setting condition {condition.type} of {pod.key}")
        path = pod_path(pod.namespace, pod.name, "status")
        body = {"status": condition_patch(pod.pod.status, msgspec.to_builtins(condition))}
        return await patch_pod_status(self.client, path, body)

    async def get_object(self, api_path: str) -> dict[str, Any] | None:
        try:
            _, raw = await self.client.request("GET", api_path)
        except APIError as e:
            if e.status == 404:
                return None
            raise
        obj = msgspec.json.decode(raw)
        return obj if isinstance(obj, dict) else None

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        """A merge patch of claimRef and annotations; resourceVersion in the patch makes it
        conditional like upstream's Update, without a full PUT of fields ksched does not
        decode."""
        meta = pv.metadata
        await self._fenced(f"binding PersistentVolume {meta.name}")
        spec = {"claimRef": msgspec.to_builtins(pv.spec.claim_ref)}
        body = {"metadata": _write_meta(meta.resource_version, meta.annotations), "spec": spec}
        path = f"/api/v1/persistentvolumes/{_quote(meta.name)}"
        return await self._patch(path, body, PersistentVolume, f"PersistentVolume {meta.name}")

    async def update_persistent_volume_claim(
        self, pvc: PersistentVolumeClaim
    ) -> PersistentVolumeClaim:
        """A conditional merge patch of the claim's annotations."""
        meta = pvc.metadata
        await self._fenced(f"selecting a node for PersistentVolumeClaim {meta.name}")
        body = {"metadata": _write_meta(meta.resource_version, meta.annotations)}
        path = (
            f"/api/v1/namespaces/{_quote(meta.namespace)}/persistentvolumeclaims/"
            f"{_quote(meta.name)}"
        )
        what = f"PersistentVolumeClaim {meta.namespace}/{meta.name}"
        return await self._patch(path, body, PersistentVolumeClaim, what)

    # -- ResourceClaims (DynamicResources' PreBind, Unreserve and PostFilter) --------------------
    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        try:
            _, raw = await self.client.request("GET", _claim_path(namespace, name))
        except APIError as e:
            if e.status == 404:
                return None
            raise BindError(f"{e.message or e.reason}", retry=True) from e
        return decode_json(raw, ResourceClaim)

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """The finalizers, conditional on the resourceVersion like upstream's Update (a
        merge patch: fields ksched does not decode are not sent back)."""
        await self._fenced(f"updating ResourceClaim {claim.key}")
        meta = claim.metadata
        body = {
            "metadata": {"resourceVersion": meta.resource_version, "finalizers": meta.finalizers}
        }
        return await self._claim_write(_claim_path(meta.namespace, meta.name), body, MERGE_PATCH)

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        """The whole status, conditional on the resourceVersion (upstream's UpdateStatus)."""
        await self._fenced(f"updating the status of ResourceClaim {claim.key}")
        meta = claim.metadata
        status = msgspec.to_builtins(claim.status)
        for key in ("allocation", "reservedFor", "devices"):
            status.setdefault(key, None)  # a merge patch must clear what is gone
        body = {"metadata": {"resourceVersion": meta.resource_version}, "status": status}
        path = _claim_path(meta.namespace, meta.name, status=True)
        return await self._claim_write(path, body, MERGE_PATCH)

    async def patch_resource_claim_status(
        self, namespace: str, name: str, patch: dict[str, Any]
    ) -> None:
        await self._fenced(f"patching the status of ResourceClaim {namespace}/{name}")
        await self._claim_write(
            _claim_path(namespace, name, status=True), patch, STRATEGIC_MERGE_PATCH
        )

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        await self._fenced(f"creating a ResourceClaim for {claim.metadata.generate_name}")
        path = _CLAIMS_PATH.format(_quote(claim.metadata.namespace))
        try:
            _, raw = await self.client.request("POST", path, body=msgspec.to_builtins(claim))
        except APIError as e:
            raise BindError(e.message or e.reason, retry=e.status not in (400, 403, 422)) from e
        return decode_json(raw, ResourceClaim)

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        await self._fenced(f"deleting ResourceClaim {namespace}/{name}")
        try:
            await self.client.request("DELETE", _claim_path(namespace, name))
        except APIError as e:
            if e.status != 404:
                raise BindError(e.message or e.reason, retry=True) from e

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        """A strategic merge patch of ``status.extendedResourceClaimStatus``."""
        await self._fenced(f"writing the extended resource claim of {pod.key}")
        path = pod_path(pod.namespace, pod.name, "status")
        try:
            found = await patch_pod_status(
                self.client, path, {"status": {"extendedResourceClaimStatus": status}}
            )
        except APIError as e:
            raise BindError(e.message or e.reason, retry=True) from e
        if not found:
            raise BindError(f'pods "{pod.name}" not found', retry=False)

    async def _claim_write(self, path: str, body: dict[str, Any], patch: str) -> ResourceClaim:
        try:
            _, raw = await self.client.request("PATCH", path, body=body, content_type=patch)
        except APIError as e:
            if e.status == 409:
                raise ConflictError(e.message or e.reason) from e
            raise BindError(e.message or e.reason, retry=e.status != 404) from e
        return decode_json(raw, ResourceClaim)

    async def _patch(self, path: str, body: dict[str, Any], cls: type[T], what: str) -> T:
        try:
            _, raw = await self.client.request("PATCH", path, body=body, content_type=MERGE_PATCH)
        except APIError as e:
            # A conflict (someone else changed it) or a server error: a new attempt, which
            # reads the object again, can help; a deleted object cannot come back.
            raise BindError(
                f"updating {what}: {e.message or e.reason}", retry=e.status != 404
            ) from e
        return decode_json(raw, cls)


_CLAIMS_PATH = "/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims"
_CLAIM_PATH = "/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims/{}"
_CLAIM_STATUS_PATH = "/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims/{}/status"


def _claim_path(namespace: str, name: str, status: bool = False) -> str:
    return (_CLAIM_STATUS_PATH if status else _CLAIM_PATH).format(_quote(namespace), _quote(name))


def _write_meta(resource_version: str, annotations: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"annotations": dict(annotations)}
    if resource_version:
        meta["resourceVersion"] = resource_version
    return meta
