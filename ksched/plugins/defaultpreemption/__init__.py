"""DefaultPreemption (PostFilter; PodGroupPostFilter at v1.37 with GenericWorkload) and the
generic preemption logic it is built on."""

from __future__ import annotations

from .default_preemption import (
    DefaultPreemption,
    DefaultPreemptionArgs,
    IsEligiblePodFunc,
    filter_pods_with_pdb_violation,
    pod_terminating_by_preemption,
)
from .podgroup_preemption import (
    DomainVictim,
    PodGroupEvaluator,
    SnapshotMutations,
    more_important_victim,
)
from .preemption import (
    Candidate,
    Evaluator,
    MoreImportantPodFunc,
    Victims,
    get_earliest_pod_start_time,
    get_pod_start_time,
    more_important_pod,
    pick_one_node_for_preemption,
)

__all__ = [
    "Candidate",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "DomainVictim",
    "Evaluator",
    "IsEligiblePodFunc",
    "MoreImportantPodFunc",
    "PodGroupEvaluator",
    "SnapshotMutations",
    "Victims",
    "filter_pods_with_pdb_violation",
    "get_earliest_pod_start_time",
    "get_pod_start_time",
    "more_important_pod",
    "more_important_victim",
    "pick_one_node_for_preemption",
    "pod_terminating_by_preemption",
]
