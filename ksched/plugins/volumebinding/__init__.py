"""VolumeBinding: PersistentVolumeClaims bound or provisioned where the pod goes."""

from .args import VolumeBindingArgs
from .plugin import VolumeBinding

__all__ = ["VolumeBinding", "VolumeBindingArgs"]
