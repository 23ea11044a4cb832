"""``DynamicResourcesArgs`` with v1 defaulting and ``ValidateDynamicResourcesArgs``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config.types import format_duration, parse_duration
from ..noderesources.resource_allocation import ArgsErrors

__all__ = ["DEFAULT_BINDING_TIMEOUT", "DEFAULT_FILTER_TIMEOUT", "DynamicResourcesArgs"]

DEFAULT_FILTER_TIMEOUT = 10.0
DEFAULT_BINDING_TIMEOUT = 600.0
_FIELDS = ("filterTimeout", "bindingTimeout")


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs:
    """``filterTimeout``: how long Filter may search for devices on one node (0: no
    limit); past it the node is "timed out trying to allocate devices".
    ``bindingTimeout``: how long PreBind waits for binding conditions (devices with
    binding conditions are an alpha feature ksched does not implement: parsed only)."""

    filter_timeout: float = DEFAULT_FILTER_TIMEOUT
    binding_timeout: float = DEFAULT_BINDING_TIMEOUT

    @classmethod
    def parse(cls, plugin_name: str, data: dict[str, Any]) -> DynamicResourcesArgs:
        errs = ArgsErrors(plugin_name)
        m = errs.obj(data, "", _FIELDS)
        out = {"filterTimeout": DEFAULT_FILTER_TIMEOUT, "bindingTimeout": DEFAULT_BINDING_TIMEOUT}
        for key in _FIELDS:
            if key not in m:
                continue
            text = errs.string(m, key, "")
            try:
                out[key] = parse_duration(text)
            except ValueError:
                errs.invalid(key, text, "must be a duration")
        errs.raise_if_any()
        if out["filterTimeout"] < 0:
            errs.invalid(
                "filterTimeout", format_duration(out["filterTimeout"]), "must be zero or positive"
            )
        if out["bindingTimeout"] <= 0:
            errs.invalid(
                "bindingTimeout", format_duration(out["bindingTimeout"]), "must be positive"
            )
        errs.raise_if_any()
        return cls(out["filterTimeout"], out["bindingTimeout"])
