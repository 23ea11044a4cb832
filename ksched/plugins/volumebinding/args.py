"""``VolumeBindingArgs`` with v1 defaulting and ``ValidateVolumeBindingArgs``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..noderesources.fit import parse_shape, validate_shape
from ..noderesources.resource_allocation import ArgsErrors

__all__ = ["DEFAULT_BIND_TIMEOUT_SECONDS", "VolumeBindingArgs"]

DEFAULT_BIND_TIMEOUT_SECONDS = 600
_FIELDS = ("bindTimeoutSeconds", "shape")


@dataclass(frozen=True, slots=True)
class VolumeBindingArgs:
    """``bindTimeoutSeconds``: how long PreBind waits for the PV controller (0: one look).

    ``shape``: (utilization, score) points of the storage capacity score. Upstream only
    accepts it with the StorageCapacityScoring feature gate (off by default); ksched has
    no feature gates, so a shape given here turns that scoring on, and none (the
    default) leaves Score off, as upstream's default.
    """

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, plugin_name: str, data: dict[str, Any]) -> VolumeBindingArgs:
        errs = ArgsErrors(plugin_name)
        m = errs.obj(data, "", _FIELDS)
        timeout = DEFAULT_BIND_TIMEOUT_SECONDS
        if "bindTimeoutSeconds" in m:
            timeout = errs.integer(m, "bindTimeoutSeconds", "", bits=64)
        shape = parse_shape(errs, errs.lst(m, "shape", ""), "shape")
        errs.raise_if_any()
        if timeout < 0:
            errs.invalid(
                "bindTimeoutSeconds",
                timeout,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        if shape:
            validate_shape(errs, shape, "shape")
        errs.raise_if_any()
        return cls(timeout, shape)
