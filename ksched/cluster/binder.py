"""``ClusterClient`` over the API: the writes plugins and the binding cycle make.

``bind`` posts a Binding with the pod's UID as precondition (DefaultBinder), so a pod
deleted and recreated under the same name is never bound by a stale decision. The error
class decides whether requeueing can help: 409 (already bound, UID mismatch, being
deleted) and 404 (gone) cannot — the watch brings the truth; 5xx, 429, timeouts and
connection errors can.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import msgspec
import structlog

from ..framework.handle import BindError
from ..framework.types import PodInfo
from .client import MERGE_PATCH, APIClient, APIError

__all__ = ["APIClusterClient", "pod_path"]

log = structlog.get_logger("ksched.cluster.binder")

# answers after which retrying the same binding is pointless
_FINAL_BIND_STATUSES = (404, 409)


# What ``quote(s, safe="")`` leaves as it is: every character of a valid object name.
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~"


def _quote(s: str) -> str:
    return quote(s, safe="") if s.strip(_UNRESERVED) else s


def pod_path(namespace: str, name: str, subresource: str = "") -> str:
    p = f"/api/v1/namespaces/{_quote(namespace)}/pods/{_quote(name)}"
    return f"{p}/{subresource}" if subresource else p


class APIClusterClient:
    """The daemon's ``ClusterClient`` (see ``ksched.framework.handle``)."""

    def __init__(self, client: APIClient, *, bind_timeout: float | None = None) -> None:
        self.client = client
        self.bind_timeout = bind_timeout

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        try:
            await self.client.request(
                "POST",
                pod_path(pod.namespace, pod.name, "binding"),
                body=body,
                timeout=self.bind_timeout,
            )
        except APIError as e:
            retry = e.status not in _FINAL_BIND_STATUSES
            raise BindError(
                f"binding {pod.key} to {node_name}: {e.message or e.reason}", retry=retry
            ) from e

    async def delete_pod(self, pod: PodInfo) -> None:
        """Delete (preemption victims) with a UID precondition; already gone is success."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if pod.uid:
            body["preconditions"] = {"uid": pod.uid}
        try:
            await self.client.request("DELETE", pod_path(pod.namespace, pod.name), body=body)
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

    async def get_object(self, api_path: str) -> dict[str, Any] | None:
        try:
            _, raw = await self.client.request("GET", api_path)
        except APIError as e:
            if e.status == 404:
                return None
            raise
        obj = msgspec.json.decode(raw)
        return obj if isinstance(obj, dict) else None
