"""``DynamicResourcesArgs`` with v1 defaulting and ``ValidateDynamicResourcesArgs``."""

from __future__ import annotations

from ...framework.args import ArgsErrors, Duration, KubeArgs
from ...util.duration import format_duration

__all__ = ["DEFAULT_BINDING_TIMEOUT", "DEFAULT_FILTER_TIMEOUT", "DynamicResourcesArgs"]

DEFAULT_FILTER_TIMEOUT = 10.0
DEFAULT_BINDING_TIMEOUT = 600.0


class DynamicResourcesArgs(KubeArgs):
    """``filterTimeout``: how long Filter may search for devices on one node (0: no
    limit); past it the node is "timed out trying to allocate devices".
    ``bindingTimeout``: how long PreBind waits for the binding conditions of the devices
    it allocated, and how long after its allocation such a claim counts as timed out.
    v1.36 defaults it to 10m (DRADeviceBindingConditions and DRAResourceClaimDeviceStatus
    are beta and on, as kube-scheduler v1.36.3's ``/configz`` shows)."""

    filter_timeout: Duration = DEFAULT_FILTER_TIMEOUT
    binding_timeout: Duration | None = DEFAULT_BINDING_TIMEOUT

    def validate(self, errs: ArgsErrors) -> None:
        if self.filter_timeout < 0:
            errs.invalid(
                "filterTimeout", format_duration(self.filter_timeout), "must be zero or positive"
            )
        if self.binding_timeout is not None and self.binding_timeout <= 0:
            errs.invalid(
                "bindingTimeout", format_duration(self.binding_timeout), "must be positive"
            )
