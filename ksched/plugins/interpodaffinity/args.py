"""``InterPodAffinityArgs`` with v1 defaulting and ``ValidateInterPodAffinityArgs``."""

from __future__ import annotations

from ...framework.args import ArgsErrors, Int32, KubeArgs

__all__ = ["DEFAULT_HARD_POD_AFFINITY_WEIGHT", "InterPodAffinityArgs"]

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1


class InterPodAffinityArgs(KubeArgs):
    """``hardPodAffinityWeight`` scores existing pods' required affinity matched by the
    incoming pod; ``ignorePreferredTermsOfExistingPods`` skips their preferred terms
    (and all scoring) unless the incoming pod has preferred terms of its own."""

    hard_pod_affinity_weight: Int32 = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False

    def validate(self, errs: ArgsErrors) -> None:
        """``validateHardPodAffinityWeight``."""
        weight = self.hard_pod_affinity_weight
        if not 0 <= weight <= 100:
            errs.invalid("hardPodAffinityWeight", weight, "not in valid range [0, 100]")
