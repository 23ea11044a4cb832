"""``VolumeBindingArgs`` with v1 defaulting and ``ValidateVolumeBindingArgs``."""

from __future__ import annotations

from typing import Any, ClassVar

from ...framework.args import ArgsErrors, KubeArgs
from ..noderesources.fit import UtilizationShapePoint, shape_pairs, validate_shape

__all__ = ["DEFAULT_BIND_TIMEOUT_SECONDS", "VolumeBindingArgs"]

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class VolumeBindingArgs(KubeArgs):
    """``bindTimeoutSeconds``: how long PreBind waits for the PV controller (0: one look).

    ``shape``: (utilization, score) points of the storage capacity score. Only accepted
    with the StorageCapacityScoring feature gate (off in v1.36), which also defaults it
    (``ksched.config.GATED_ARG_DEFAULTS``); a shape turns that scoring on, none leaves
    Score off, as upstream.
    """

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: tuple[UtilizationShapePoint, ...] = ()
    # upstream's default shape: utilization 0 -> MaxCustomPriorityScore, 100 -> 0
    gated_defaults: ClassVar[dict[str, Any]] = {
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
    }

    def validate(self, errs: ArgsErrors) -> None:
        if self.bind_timeout_seconds < 0:
            errs.invalid(
                "bindTimeoutSeconds",
                self.bind_timeout_seconds,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        if self.shape:
            validate_shape(errs, shape_pairs(self.shape), "shape")
