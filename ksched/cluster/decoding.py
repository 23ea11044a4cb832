"""Raw API JSON → ksched objects for the informers.

A pod ksched cannot decode still has to reach the scheduler: it becomes a PodInfo built
from whatever identity survives (metadata, schedulerName, nodeName) with ``error`` set,
so the scheduling cycle reports it Unschedulable with an event instead of the pod
silently never being scheduled — and a bad pod never stops the informer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeVar

import msgspec

from ..api.intern import intern_node, intern_pod
from ..api.objects import (
    DecodeError,
    Node,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    decode,
    decode_json,
    without_nulls,
)
from ..framework.types import PodInfo

__all__ = ["node_decoder", "null_tolerant_decoder", "pod_decoder", "struct_decoder"]

S = TypeVar("S", bound=msgspec.Struct)


def struct_decoder(cls: type[S]) -> Callable[[bytes], S]:
    """A decoder raising ``DecodeError`` (the informer logs and skips the object)."""

    def decode(raw: bytes) -> S:
        return decode_json(raw, cls)  # type: ignore[type-var]

    return decode


def node_decoder() -> Callable[[bytes], Node]:
    """``struct_decoder(Node)`` with the strings nodes share (labels, image names) shared."""

    def decode(raw: bytes) -> Node:
        return intern_node(decode_json(raw, Node))

    return decode


def null_tolerant_decoder(cls: type[S]) -> Callable[[bytes], S]:
    """``struct_decoder`` for kinds whose empty lists the API sends as ``null`` (CSINode):
    nulls decode as the field defaults. Slower (through dicts), so only for small kinds."""

    def decode_tolerant(raw: bytes) -> S:
        try:
            obj = msgspec.json.decode(raw)
        except msgspec.DecodeError as e:
            raise DecodeError(f"{cls.__name__}: invalid JSON: {e}") from None
        return decode(without_nulls(obj), cls)  # type: ignore[type-var]

    return decode_tolerant


class _LooseMeta(msgspec.Struct, rename="camel"):
    name: Any = ""
    namespace: Any = ""
    uid: Any = ""
    resource_version: Any = ""
    labels: Any = None
    annotations: Any = None
    deletion_timestamp: Any = None


class _LooseSpec(msgspec.Struct, rename="camel"):
    node_name: Any = ""
    scheduler_name: Any = "default-scheduler"


class _LooseStatus(msgspec.Struct, rename="camel"):
    phase: Any = ""
    nominated_node_name: Any = ""


class _LoosePod(msgspec.Struct):
    metadata: _LooseMeta = msgspec.field(default_factory=_LooseMeta)
    spec: _LooseSpec = msgspec.field(default_factory=_LooseSpec)
    status: _LooseStatus = msgspec.field(default_factory=_LooseStatus)


def _s(v: Any, default: str = "") -> str:
    return v if isinstance(v, str) else default


def _str_map(v: Any) -> dict[str, str]:
    if not isinstance(v, dict):
        return {}
    return {k: x for k, x in v.items() if isinstance(k, str) and isinstance(x, str)}


def minimal_pod(raw: bytes) -> Pod:
    """The identity of a pod whose full decoding failed (raises DecodeError if none)."""
    try:
        lp = msgspec.json.decode(raw, type=_LoosePod)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise DecodeError(f"Pod: {e}") from None
    m = lp.metadata
    meta = ObjectMeta(
        name=_s(m.name),
        namespace=_s(m.namespace),
        uid=_s(m.uid),
        resource_version=_s(m.resource_version),
        labels=_str_map(m.labels),
        annotations=_str_map(m.annotations),
        deletion_timestamp=m.deletion_timestamp if isinstance(m.deletion_timestamp, str) else None,
    )
    spec = PodSpec(
        node_name=_s(lp.spec.node_name),
        scheduler_name=_s(lp.spec.scheduler_name, "default-scheduler"),
    )
    status = PodStatus(
        phase=_s(lp.status.phase), nominated_node_name=_s(lp.status.nominated_node_name)
    )
    return Pod(metadata=meta, spec=spec, status=status)


def pod_decoder(profiles: Collection[str] | None = None) -> Callable[[bytes], PodInfo]:
    """Pods as PodInfo; ``raw`` (the JSON as a dict, for extenders and simulate output) is
    kept only for pods still to be scheduled by one of ``profiles`` (None: all pending)."""

    def wants_raw(pod: Pod) -> bool:
        if pod.spec.node_name:
            return False
        return profiles is None or pod.spec.scheduler_name in profiles

    def decode(raw: bytes) -> PodInfo:
        try:
            pod = decode_json(raw, Pod)
        except DecodeError as e:
            stub = minimal_pod(raw)
            if not stub.metadata.name:
                raise
            info = PodInfo(stub)
            info.error = str(e)
            return info
        # Kept undecoded (a copy: ``raw`` may be a view into a whole list response).
        return PodInfo(intern_pod(pod), bytes(raw) if wants_raw(pod) else None)

    return decode


def pod_meta(info: PodInfo) -> ObjectMeta:
    return info.pod.metadata
