"""Which optional DRA behaviours allocation has: a light module, so the plugin can hold
them without loading the allocator."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_FEATURES", "Features"]


@dataclass(frozen=True, slots=True)
class Features:
    """Optional allocation behaviours (upstream's ``structured.Features``), each the
    switch of a feature gate (or the emulated version); the defaults are v1.37.2's."""

    admin_access: bool = True  # DRAAdminAccess (GA)
    device_taints: bool = True  # DRADeviceTaints (beta, on)
    consumable_capacity: bool = True  # DRAConsumableCapacity (beta, on)
    # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus (both beta, on): devices
    # with binding conditions are handed out (last), and PreBind waits for the conditions.
    binding_conditions: bool = True
    # DRAFractionalCapacityRange (v1.37, beta and off): request policy ranges in
    # thousandths when every bound is exact in them.
    fractional_capacity_range: bool = False
    # Upstream v1.37's allocator changes without a gate: a config naming every request
    # names none (and is added once), counters are kept per driver and pool.
    kube_1_37: bool = True

    @property
    def stable(self) -> bool:
        """Upstream then picks its "stable" allocator, the oldest, which knows nothing of
        consumable capacity (capacity requests are ignored, ``allowMultipleAllocations``
        reads false in CEL) nor of ``distinctAttribute`` constraints (an error)."""
        return not self.consumable_capacity and not self.binding_conditions


DEFAULT_FEATURES = Features()
