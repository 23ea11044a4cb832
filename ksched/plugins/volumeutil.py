"""Lookups the volume plugins share: storage listers, not-found errors, claim names.

The volume plugins read PersistentVolumeClaims, PersistentVolumes and StorageClasses
through ``handle.listers`` (typed objects keyed ``namespace/name`` or ``name``). A lister
the daemon does not fill reads as empty, so a claim is then "not found" as with an
informer that has not seen it. Not-found messages are client-go's lister errors
(``persistentvolumeclaim "x" not found``), which upstream plugins pass on verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.objects import PersistentVolumeClaim, Pod, Volume
from ..features import default_feature_gates
from ..framework.events import EventResource
from ..framework.handle import Handle
from ..framework.listers import Listers
from ..util.errors import KschedError

__all__ = [
    "ANN_STORAGE_CLASS",
    "NotFoundError",
    "claim_class",
    "claim_names",
    "deleted_pod_resource",
    "ephemeral_claim_name",
    "ephemeral_volume_is_for_pod",
    "get_pv",
    "get_pvc",
    "get_storage_class",
    "lister",
    "store_revision",
]

# ``v1.BetaStorageClassAnnotation``: wins over spec.storageClassName when set.
ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"

_EMPTY: Mapping[str, Any] = {}


class NotFoundError(KschedError, LookupError):
    """``apierrors.IsNotFound``: the lister has no such object."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource} "{name}" not found')


def lister(handle: Handle | None, key: str) -> Mapping[str, Any]:
    """``handle.listers[key]``, or an empty mapping when nobody fills it."""
    if handle is None:
        return _EMPTY
    got: Mapping[str, Any] | None = handle.listers.get(key)
    return got if got is not None else _EMPTY


def deleted_pod_resource(handle: Handle | None) -> str:
    """The resource whose deletions free volumes: v1.37 registers bound pods only
    (``AssignedPod``), v1.36 every pod (``Pod``)."""
    features = handle.features if handle is not None else default_feature_gates()
    return EventResource.ASSIGNED_POD if features.at_least("1.37") else EventResource.POD


def store_revision(store: Mapping[str, Any]) -> int | None:
    """A ``RevisionedStore``'s revision; None for a store that cannot say it changed."""
    rev = getattr(store, "revision", None)
    return rev if isinstance(rev, int) else None


def get_pvc(handle: Handle | None, namespace: str, name: str) -> Any:
    pvc = lister(handle, Listers.PERSISTENT_VOLUME_CLAIMS).get(f"{namespace}/{name}")
    if pvc is None:
        raise NotFoundError("persistentvolumeclaim", name)
    return pvc


def get_pv(handle: Handle | None, name: str) -> Any:
    pv = lister(handle, Listers.PERSISTENT_VOLUMES).get(name)
    if pv is None:
        raise NotFoundError("persistentvolume", name)
    return pv


def get_storage_class(handle: Handle | None, name: str) -> Any:
    sc = lister(handle, Listers.STORAGE_CLASSES).get(name)
    if sc is None:
        raise NotFoundError("storageclass.storage.k8s.io", name)
    return sc


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """``storagehelpers.GetPersistentVolumeClaimClass``: the beta annotation, else the
    spec's class, else "" (no class)."""
    ann = pvc.metadata.annotations.get(ANN_STORAGE_CLASS)
    if ann is not None:
        return ann
    return pvc.spec.storage_class_name or ""


def claim_names(pod: Pod) -> list[str]:
    """The claim names of the pod's PersistentVolumeClaim volumes, in order."""
    if not pod.spec.volumes:
        return []
    return [
        v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim
    ]


def ephemeral_claim_name(pod: Pod, volume: Volume) -> str:
    """``ephemeral.VolumeClaimName``: a generic ephemeral volume's PVC is ``<pod>-<volume>``."""
    return f"{pod.metadata.name}-{volume.name}"


def ephemeral_volume_is_for_pod(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """``ephemeral.VolumeIsForPod``: None when the pod controls the claim, else the error."""
    controller = next((r for r in pvc.metadata.owner_references if r.controller), None)
    if (
        pvc.metadata.namespace == pod.metadata.namespace
        and controller is not None
        and controller.uid == pod.metadata.uid
    ):
        return None
    return (
        f"PVC {pvc.metadata.namespace}/{pvc.metadata.name} was not created for pod "
        f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
    )
