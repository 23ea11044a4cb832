"""``DynamicResourcesArgs`` with v1 defaulting and ``ValidateDynamicResourcesArgs``."""

from __future__ import annotations

from ...framework.args import ArgsErrors, Duration, KubeArgs
from ...util.duration import format_duration

__all__ = ["DEFAULT_FILTER_TIMEOUT", "DynamicResourcesArgs"]

DEFAULT_FILTER_TIMEOUT = 10.0


class DynamicResourcesArgs(KubeArgs):
    """``filterTimeout``: how long Filter may search for devices on one node (0: no
    limit); past it the node is "timed out trying to allocate devices".
    ``bindingTimeout``: how long PreBind waits for binding conditions (devices with
    binding conditions are an alpha feature ksched does not implement: parsed only, and
    not defaulted, as upstream defaults it only with that feature's gates)."""

    filter_timeout: Duration = DEFAULT_FILTER_TIMEOUT
    binding_timeout: Duration | None = None

    def validate(self, errs: ArgsErrors) -> None:
        if self.filter_timeout < 0:
            errs.invalid(
                "filterTimeout", format_duration(self.filter_timeout), "must be zero or positive"
            )
        if self.binding_timeout is not None and self.binding_timeout <= 0:
            errs.invalid(
                "bindingTimeout", format_duration(self.binding_timeout), "must be positive"
            )
