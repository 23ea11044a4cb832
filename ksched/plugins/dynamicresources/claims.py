"""The API writes DynamicResources makes (ResourceClaims and a pod's extended-resource
claim status): declared by the plugin, not the framework, since no other plugin makes
them. Every cluster client ksched builds a scheduler with implements them
(``ksched.profile.SchedulerCluster``)."""

from __future__ import annotations

from typing import Any, Protocol

from ...api.resource import ResourceClaim
from ...framework.types import PodInfo

__all__ = ["ClaimWriter"]


class ClaimWriter(Protocol):
    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The claim as stored now (the read after a conflict)."""

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """Write the claim's finalizers if its resourceVersion is still the stored one;
        ``ConflictError`` if not, ``BindError`` for other failures."""

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        """Write the claim's status (allocation, reservedFor, devices) if its
        resourceVersion is still the stored one; ``ConflictError`` if not."""

    async def patch_resource_claim_status(
        self, namespace: str, name: str, patch: dict[str, Any]
    ) -> None:
        """A strategic merge patch of the claim's status (Unreserve drops one reservedFor
        entry by uid without the latest claim)."""

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """Create ``claim`` (named from ``metadata.generateName``): the claim for DRA-backed
        extended resources; return the stored claim. Raise ``BindError``."""

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        """Delete a claim (already gone is fine). Raise ``BindError``."""

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        """Write the pod's ``status.extendedResourceClaimStatus``. Raise ``BindError``."""
