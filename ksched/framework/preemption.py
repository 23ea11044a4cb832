"""What preempting a victim writes on it, shared by the scheduler (which marks victims
before deleting them, as upstream's ``PreemptPod``) and DefaultPreemption (which reads
the mark back to see a victim already on its way out)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..api.objects import PodCondition
from ..util.clock import rfc3339
from .types import PodInfo

__all__ = [
    "DISRUPTION_TARGET",
    "PREEMPTION_BY_SCHEDULER",
    "PreemptionInFlight",
    "preemption_condition",
]

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def preemption_condition(victim: PodInfo, scheduler_name: str) -> PodCondition | None:
    """The DisruptionTarget condition marking ``victim`` as preempted by ``scheduler_name``
    (``PreemptPod``), or None when it already carries that very condition
    (``UpdatePodCondition`` reports no change, so upstream sends no patch).

    As ``UpdatePodCondition``, the transition time is kept when the status was already
    True; ``observedGeneration`` is the victim's generation (PodObservedGenerationTracking,
    on by default since v1.34).
    """
    message = f"{scheduler_name}: preempting to accommodate a higher priority pod"
    old = next((c for c in victim.pod.status.conditions if c.type == DISRUPTION_TARGET), None)
    transition = rfc3339()
    if old is not None and old.status == "True":
        unchanged = (PREEMPTION_BY_SCHEDULER, message, None)
        if (old.reason, old.message, old.last_probe_time) == unchanged:
            return None
        transition = old.last_transition_time or transition
    return PodCondition(
        type=DISRUPTION_TARGET,
        status="True",
        reason=PREEMPTION_BY_SCHEDULER,
        message=message,
        last_transition_time=transition,
        observed_generation=victim.pod.metadata.generation,
    )


@dataclass(eq=False, slots=True)
class PreemptionInFlight:
    """A preemptor's evictions in flight (upstream's ``preempting`` set with
    ``lastVictimsPendingPreemption``). The preemptor stays out of the queue until its last
    victim is on its way out: gone from the pod lister or terminating. Releasing it only
    when the evictions return would lose a victim deletion seen just before that; releasing
    it before the last eviction would retry it with the victim still in place."""

    last_victim: PodInfo | None = None  # set just before the last eviction starts

    def running(self, pods: Mapping[str, PodInfo]) -> bool:
        """``IsPodRunningPreemption`` (looked up by key, or uid where the lister keys so)."""
        v = self.last_victim
        if v is None:
            return True
        cur = pods.get(v.key)
        if cur is None and v.uid:
            cur = pods.get(v.uid)
        return cur is not None and cur.pod.metadata.deletion_timestamp is None
