"""What ``ksched simulate`` does in place of the resourceclaim controller (DRA).

The cluster file's DeviceClasses, ResourceSlices and ResourceClaims become the listers
DynamicResources reads. A pod naming a ResourceClaimTemplate gets its own claim made
from it, owned by the pod, and the claim's name in ``status.resourceClaimStatuses``, as
kube-controller-manager's resourceclaim controller does before the pod can be
scheduled. The scheduler's writes (finalizer, status with allocation and reservedFor,
Unreserve's patch) are applied with the API server's resourceVersion checks, and each
change is reported to the scheduler as the informers would.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import msgspec

from ..api.objects import ObjectMeta, OwnerReference, Pod, PodResourceClaimStatus
from ..api.resource import FINALIZER, ResourceClaim, ResourceClaimTemplate
from ..framework.handle import BindError, ConflictError
from ..framework.interface import ClusterEvent
from ..framework.listers import Listers, RevisionedStore
from ..queue import events as ev
from .cluster_file import DRA_LISTERS, ClusterFile

__all__ = ["SimulatedClaimController"]

Emit = Callable[[ClusterEvent, Any, Any], None]
TEMPLATES = "resourceclaimtemplates"


def _key(obj: Any) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class SimulatedClaimController:
    """The DRA stores, claims made from templates, and the scheduler's claim writes."""

    def __init__(self, cluster: ClusterFile, emit: Emit) -> None:
        self.emit = emit
        self._rv = itertools.count(1)
        self._names = itertools.count(1)
        self.stores: dict[str, RevisionedStore[Any]] = {}
        for lister in DRA_LISTERS.values():
            store: RevisionedStore[Any] = RevisionedStore()
            for obj in cluster.dra.get(lister, ()):
                store[_key(obj)] = self._versioned(obj)
            self.stores[lister] = store

    @property
    def claims(self) -> RevisionedStore[ResourceClaim]:
        return self.stores[Listers.RESOURCE_CLAIMS]

    def listers(self) -> dict[str, RevisionedStore[Any]]:
        """What the scheduler's plugins read (the templates are the controller's own)."""
        return {k: v for k, v in self.stores.items() if k != TEMPLATES}

    def _versioned(self, obj: Any) -> Any:
        meta = msgspec.structs.replace(obj.metadata, resource_version=str(next(self._rv)))
        return msgspec.structs.replace(obj, metadata=meta)

    def _store(self, claim: ResourceClaim) -> ResourceClaim:
        key = _key(claim)
        old = self.claims.get(key)
        new = self._versioned(claim)
        self.claims[key] = new
        self.claims.bump(new)
        resource = ev.RESOURCE_CLAIM
        event = ClusterEvent(
            resource, "Update" if old else "Add", f"{resource}{'Update' if old else 'Add'}"
        )
        self.emit(event, old, new)
        return new  # type: ignore[no-any-return]

    # -- the resourceclaim controller ------------------------------------------------------
    def claims_for(self, pod: Pod) -> Pod:
        """``pod`` with a claim made for each of its template entries that has none."""
        have = {s.name for s in pod.status.resource_claim_statuses}
        statuses = list(pod.status.resource_claim_statuses)
        meta = pod.metadata
        templates = self.stores[TEMPLATES]
        for pc in pod.spec.resource_claims:
            if pc.resource_claim_template_name is None or pc.name in have:
                continue
            tpl: ResourceClaimTemplate | None = templates.get(
                f"{meta.namespace}/{pc.resource_claim_template_name}"
            )
            if tpl is None:
                continue  # the controller waits for the template; so does the pod
            name = f"{meta.name}-{pc.name}"
            owner = OwnerReference(
                kind="Pod", name=meta.name, uid=meta.uid, api_version="v1", controller=True
            )
            claim = ResourceClaim(
                metadata=ObjectMeta(
                    name=name,
                    namespace=meta.namespace,
                    uid=f"sim-claim-{meta.namespace}-{name}",
                    labels=dict(tpl.spec.metadata.labels),
                    annotations={
                        **tpl.spec.metadata.annotations,
                        "resource.kubernetes.io/pod-claim-name": pc.name,
                    },
                    owner_references=[owner],
                ),
                spec=tpl.spec.spec,
            )
            self._store(claim)
            statuses.append(PodResourceClaimStatus(name=pc.name, resource_claim_name=name))
        if len(statuses) == len(pod.status.resource_claim_statuses):
            return pod
        status = msgspec.structs.replace(pod.status, resource_claim_statuses=statuses)
        return msgspec.structs.replace(pod, status=status)

    def release(self, pod_uid: str) -> None:
        """The resourceclaim controller on a pod that is gone: its ``reservedFor`` entries
        are dropped, a claim left with none is deallocated (its finalizer and device
        statuses go too), and a claim generated for the pod is deleted (the garbage
        collector's part). Without this the pod's devices would stay taken for good."""
        for key, claim in list(self.claims.items()):
            st = claim.status
            kept = [r for r in st.reserved_for if not (r.resource == "pods" and r.uid == pod_uid)]
            owned = any(o.controller and o.uid == pod_uid for o in claim.metadata.owner_references)
            if len(kept) < len(st.reserved_for):
                status = msgspec.structs.replace(st, reserved_for=kept)
                if not kept and FINALIZER in claim.metadata.finalizers:
                    status = msgspec.structs.replace(status, allocation=None, devices=[])
                claim = self._store(msgspec.structs.replace(claim, status=status))
                if claim.status.allocation is None and FINALIZER in claim.metadata.finalizers:
                    fin = [f for f in claim.metadata.finalizers if f != FINALIZER]
                    meta = msgspec.structs.replace(claim.metadata, finalizers=fin)
                    claim = self._store(msgspec.structs.replace(claim, metadata=meta))
            if owned and not claim.status.reserved_for:
                ns, _, name = key.partition("/")
                self.delete(ns, name)

    def devices_by_node(self) -> dict[str, dict[str, str | None]]:
        """For ``--explain``: each node's devices (``driver/pool/device``, from slices
        naming the node) and the claims allocated each, comma-separated (a shared device,
        admin access; None: free)."""
        holders: dict[tuple[str, str, str], list[str]] = {}
        for key, claim in self.claims.items():
            alloc = claim.status.allocation
            for r in alloc.devices.results if alloc is not None else ():
                keys = holders.setdefault((r.driver, r.pool, r.device), [])
                if key not in keys:
                    keys.append(key)
        holder = {d: ", ".join(keys) for d, keys in holders.items()}
        out: dict[str, dict[str, str | None]] = {}
        for s in self.stores[Listers.RESOURCE_SLICES].values():
            node = s.spec.node_name or ("(all nodes)" if s.spec.all_nodes else "(selected nodes)")
            mine = out.setdefault(node, {})
            for d in s.spec.devices:
                ident = (s.spec.driver, s.spec.pool.name, d.name)
                mine["/".join(ident)] = holder.get(ident)
        return out

    # -- the scheduler's writes ---------------------------------------------------------------
    def get(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claims.get(f"{namespace}/{name}")

    def _current(self, claim: ResourceClaim) -> ResourceClaim:
        cur = self.claims.get(_key(claim))
        if cur is None:
            raise BindError(
                f'resourceclaims.resource.k8s.io "{claim.metadata.name}" not found', retry=False
            )
        if claim.metadata.resource_version != cur.metadata.resource_version:
            raise ConflictError(
                f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "'
                f'{claim.metadata.name}": the object has been modified; please apply your '
                "changes to the latest version and try again"
            )
        return cur

    def update(self, claim: ResourceClaim) -> ResourceClaim:
        cur = self._current(claim)
        meta = msgspec.structs.replace(cur.metadata, finalizers=list(claim.metadata.finalizers))
        return self._store(msgspec.structs.replace(cur, metadata=meta))

    def update_status(self, claim: ResourceClaim) -> ResourceClaim:
        cur = self._current(claim)
        return self._store(msgspec.structs.replace(cur, status=claim.status))

    def create(self, claim: ResourceClaim) -> ResourceClaim:
        """A POST: the name from ``generateName`` (as the API server does), a uid."""
        meta = claim.metadata
        name = meta.name
        while not name or f"{meta.namespace}/{name}" in self.claims:
            name = f"{meta.generate_name}{next(self._names):05d}"
        meta = msgspec.structs.replace(meta, name=name, uid=f"sim-claim-{meta.namespace}-{name}")
        return self._store(msgspec.structs.replace(claim, metadata=meta))

    def delete(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        old = self.claims.get(key)
        if old is None:
            return
        del self.claims[key]
        self.claims.bump(old)
        resource = ev.RESOURCE_CLAIM
        self.emit(ClusterEvent(resource, "Delete", f"{resource}Delete"), old, None)

    def patch_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Unreserve's patch: drop the reservedFor entries of the uids it deletes."""
        cur = self.get(namespace, name)
        if cur is None:
            raise BindError(f'resourceclaims.resource.k8s.io "{name}" not found', retry=False)
        drop = {
            e.get("uid")
            for e in (patch.get("status") or {}).get("reservedFor") or []
            if isinstance(e, dict) and e.get("$patch") == "delete"
        }
        kept = [r for r in cur.status.reserved_for if r.uid not in drop]
        status = msgspec.structs.replace(cur.status, reserved_for=kept)
        self._store(msgspec.structs.replace(cur, status=status))
