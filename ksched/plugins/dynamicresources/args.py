"""``DynamicResourcesArgs`` with v1 defaulting and ``ValidateDynamicResourcesArgs``."""

from __future__ import annotations

from typing import Any, ClassVar

from ...framework.args import ArgsErrors, Duration, KubeArgs
from ...util.duration import format_duration

__all__ = ["DEFAULT_BINDING_TIMEOUT", "DEFAULT_FILTER_TIMEOUT", "DynamicResourcesArgs"]

DEFAULT_FILTER_TIMEOUT = 10.0
DEFAULT_BINDING_TIMEOUT = 600.0


class DynamicResourcesArgs(KubeArgs):
    """``filterTimeout``: how long Filter may search for devices on one node (0 or unset:
    no limit); past it the node is "timed out trying to allocate devices".
    ``bindingTimeout``: how long PreBind waits for the binding conditions of the devices
    it allocated, and how long after its allocation such a claim counts as timed out.
    Both are defaulted by the configuration only while their feature gates are on
    (``ksched.config.GATED_ARG_DEFAULTS``: 10s with DRASchedulerFilterTimeout, 10m with
    DRADeviceBindingConditions and DRAResourceClaimDeviceStatus, all on in v1.36), as
    upstream's ``SetDefaults_DynamicResourcesArgs``; unset here is the gates-off value."""

    filter_timeout: Duration | None = None
    binding_timeout: Duration | None = None
    gated_defaults: ClassVar[dict[str, Any]] = {
        "filterTimeout": format_duration(DEFAULT_FILTER_TIMEOUT),
        "bindingTimeout": format_duration(DEFAULT_BINDING_TIMEOUT),
    }

    def validate(self, errs: ArgsErrors) -> None:
        if self.filter_timeout is not None and self.filter_timeout < 0:
            errs.invalid(
                "filterTimeout", format_duration(self.filter_timeout), "must be zero or positive"
            )
        if self.binding_timeout is not None and self.binding_timeout <= 0:
            errs.invalid(
                "bindingTimeout", format_duration(self.binding_timeout), "must be positive"
            )
