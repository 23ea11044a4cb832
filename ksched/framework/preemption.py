"""What preempting a victim writes on it, shared by the scheduler (which marks victims
before deleting them, as upstream's ``PreemptPod``) and DefaultPreemption (which reads
the mark back to see a victim already on its way out); the victims of one node, as
preemption plugins and extenders exchange them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ..api.objects import PodCondition
from ..util.clock import rfc3339
from .types import PodInfo

if TYPE_CHECKING:
    from ..api.workload import PodGroup

__all__ = [
    "DISRUPTION_TARGET",
    "POD_GROUP_PREEMPTOR",
    "POD_PREEMPTOR",
    "PREEMPTION_BY_SCHEDULER",
    "PodGroupPreemptor",
    "PreemptionInFlight",
    "Victims",
    "pod_group_priority",
    "preemption_condition",
]

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
# What preempts (upstream ``ExecutorPreemptor.Type()``, an ``EntityKeyType``): it words the
# victims' condition and event and labels the ``preemptor`` of the preemption metrics.
POD_PREEMPTOR = "pod"
POD_GROUP_PREEMPTOR = "podgroup"


def preempted_for_pod_group(conditions: Sequence[PodCondition]) -> bool:
    """Whether a pod's DisruptionTarget condition says a pod group's preemption evicts it
    (the simulator and the differential harness finish such victims sooner)."""
    return any(
        c.type == DISRUPTION_TARGET
        and c.status == "True"
        and (c.message or "").endswith(f"a higher priority {POD_GROUP_PREEMPTOR}")
        for c in conditions
    )


@dataclass(slots=True)
class Victims:
    """``extenderv1.Victims``: pods to evict on one node (most important first) and how
    many of them violate a PodDisruptionBudget. Preemption plugins and extenders share it."""

    pods: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0


def preemption_condition(
    victim: PodInfo, scheduler_name: str, preemptor_type: str = POD_PREEMPTOR
) -> PodCondition | None:
    """The DisruptionTarget condition marking ``victim`` as preempted by ``scheduler_name``
    for a ``preemptor_type`` (``PreemptPod``), or None when it already carries that very
    condition (``UpdatePodCondition`` reports no change, so upstream sends no patch).

    As ``UpdatePodCondition``, the transition time is kept when the status was already
    True; ``observedGeneration`` is the victim's generation (PodObservedGenerationTracking,
    on by default since v1.34).
    """
    message = f"{scheduler_name}: preempting to accommodate a higher priority {preemptor_type}"
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
    # set once the evictions' API calls have all returned (whatever their outcome)
    finished: anyio.Event = field(default_factory=anyio.Event)

    def running(self, pods: Mapping[str, PodInfo]) -> bool:
        """``IsPodRunningPreemption`` (looked up by key, or uid where the lister keys so)."""
        v = self.last_victim
        if v is None:
            return True
        cur = pods.get(v.key)
        if cur is None and v.uid:
            cur = pods.get(v.uid)
        return cur is not None and cur.pod.metadata.deletion_timestamp is None


@dataclass(frozen=True, slots=True)
class PodGroupPreemptor:
    """A pod group whose preemption the scheduler carries out (upstream's
    ``podGroupExecutorPreemptor``): the victims' condition and event name it, its uid keys
    its evictions in flight (``Handle.preempting``), its members are retried after them."""

    pod_group: PodGroup
    # the members the cycle tried (``PodGroupInfo.unscheduled_pods``)
    pods: Sequence[PodInfo]

    type = POD_GROUP_PREEMPTOR

    @property
    def uid(self) -> str:
        return self.pod_group.metadata.uid

    @property
    def key(self) -> str:
        return f"{self.pod_group.metadata.namespace}/{self.pod_group.metadata.name}"

    @property
    def scheduler_name(self) -> str:
        """Every member uses one scheduler: the first one's (as upstream)."""
        return self.pods[0].pod.spec.scheduler_name if self.pods else ""

    @property
    def priority(self) -> int:
        return pod_group_priority(self.pod_group)


def pod_group_priority(pg: PodGroup) -> int:
    """``util.PodGroupPriority``: no priority means the static default, 0."""
    p = pg.spec.priority
    return p if p is not None else 0
