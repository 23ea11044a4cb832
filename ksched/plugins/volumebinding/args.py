"""``VolumeBindingArgs`` with v1 defaulting and ``ValidateVolumeBindingArgs``."""

from __future__ import annotations

from ...framework.args import ArgsErrors, KubeArgs
from ..noderesources.fit import UtilizationShapePoint, shape_pairs, validate_shape

__all__ = ["DEFAULT_BIND_TIMEOUT_SECONDS", "VolumeBindingArgs"]

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class VolumeBindingArgs(KubeArgs):
    """``bindTimeoutSeconds``: how long PreBind waits for the PV controller (0: one look).

    ``shape``: (utilization, score) points of the storage capacity score. Upstream only
    accepts it with the StorageCapacityScoring feature gate (off by default); ksched has
    no feature gates, so a shape given here turns that scoring on, and none (the
    default) leaves Score off, as upstream's default.
    """

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: tuple[UtilizationShapePoint, ...] = ()

    def validate(self, errs: ArgsErrors) -> None:
        if self.bind_timeout_seconds < 0:
            errs.invalid(
                "bindTimeoutSeconds",
                self.bind_timeout_seconds,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        if self.shape:
            validate_shape(errs, shape_pairs(self.shape), "shape")
