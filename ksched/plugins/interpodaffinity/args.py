"""``InterPodAffinityArgs`` with v1 defaulting and ``ValidateInterPodAffinityArgs``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..noderesources.resource_allocation import ArgsErrors

__all__ = ["DEFAULT_HARD_POD_AFFINITY_WEIGHT", "InterPodAffinityArgs"]

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
_FIELDS = ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    """``hardPodAffinityWeight`` scores existing pods' required affinity matched by the
    incoming pod; ``ignorePreferredTermsOfExistingPods`` skips their preferred terms
    (and all scoring) unless the incoming pod has preferred terms of its own."""

    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False

    @classmethod
    def parse(cls, plugin_name: str, data: dict[str, Any]) -> InterPodAffinityArgs:
        errs = ArgsErrors(plugin_name)
        m = errs.obj(data, "", _FIELDS)
        weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
        if "hardPodAffinityWeight" in m:
            weight = errs.integer(m, "hardPodAffinityWeight", "")
        ignore = m.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            errs.fail("ignorePreferredTermsOfExistingPods", f"must be a boolean, got {ignore!r}")
            ignore = False
        errs.raise_if_any()
        # validateHardPodAffinityWeight
        if not 0 <= weight <= 100:
            errs.invalid("hardPodAffinityWeight", weight, "not in valid range [0, 100]")
        errs.raise_if_any()
        return cls(weight, ignore)
