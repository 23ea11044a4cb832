"""The PodGroup CRD (``scheduling.x-k8s.io/v1alpha1``) as Coscheduling reads it.

PodGroups arrive as raw objects (from a cluster file in ``ksched simulate``, from an
informer in the daemon), so they are parsed defensively here: a malformed field is an
``InvalidObjectError`` naming the object and field, which the framework turns into an
UnschedulableAndUnresolvable status for the pods of that group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ksched import InvalidObjectError

__all__ = [
    "API_VERSION",
    "KIND",
    "POD_GROUP_LABEL",
    "PodGroup",
    "parse_podgroup",
    "parse_timestamp",
]

API_VERSION = "scheduling.x-k8s.io/v1alpha1"
KIND = "PodGroup"
# The label that puts a pod in a group (``v1alpha1.PodGroupLabel``).
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int = 0
    schedule_timeout_seconds: int | None = None
    min_resources: Mapping[str, Any] | None = None
    # Seconds since the epoch; None when the object carries no creationTimestamp.
    creation_timestamp: float | None = None

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_timestamp(value: Any) -> float | None:
    """RFC 3339 (``2024-05-01T10:00:00Z``) to epoch seconds; None if absent or unparsable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _int_field(raw: Any, where: str, field: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InvalidObjectError(f"{where}: spec.{field}: must be an integer, got {raw!r}")
    return raw


def parse_podgroup(raw: Mapping[str, Any]) -> PodGroup:
    meta = raw.get("metadata") or {}
    ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    where = f"PodGroup {ns}/{name}"
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InvalidObjectError(f"{where}: spec: must be an object")
    min_member = _int_field(spec.get("minMember"), where, "minMember") or 0
    if min_member < 0:
        raise InvalidObjectError(f"{where}: spec.minMember: must be non-negative, got {min_member}")
    timeout = _int_field(spec.get("scheduleTimeoutSeconds"), where, "scheduleTimeoutSeconds")
    min_res = spec.get("minResources")
    if min_res is not None and not isinstance(min_res, Mapping):
        raise InvalidObjectError(f"{where}: spec.minResources: must be a map of quantities")
    return PodGroup(
        namespace=ns,
        name=name,
        min_member=min_member,
        schedule_timeout_seconds=timeout,
        min_resources=min_res or None,
        creation_timestamp=parse_timestamp(meta.get("creationTimestamp")),
    )
