"""PodGroupPodsCount: prefer the placement that fits more of the pod group.

Upstream ``framework/plugins/podgrouppodscount`` (v1.37, in the default profile with
TopologyAwareWorkloadScheduling, weight 1). A placement's score counts the members already
scheduled (assumed or bound) with the members the placement takes now: counting both keeps
the scores of placements that differ by a pod or two close together. Normalization divides
by the best count only, never by the gang's minCount, so a near miss scores near 100.
"""

from __future__ import annotations

from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE, PlacementScorePlugin
from ..framework.podgroup import PlacementScore, PodGroupAssignments, PodGroupInfo
from ..framework.status import Status, StatusError
from . import names
from .helper import pod_group_state

__all__ = ["PodGroupPodsCount"]

NO_PODS = "no pods from pod group are assigned to any of the candidate placements"


class PodGroupPodsCount(PlacementScorePlugin[NoArgs]):
    name = names.POD_GROUP_PODS_COUNT

    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> int:
        try:
            scheduled = pod_group_state(self.handle, group).scheduled_pods_count()
        except LookupError as e:
            raise StatusError(Status.as_error(str(e))) from None
        return scheduled + len(assignments.assignments)

    def normalize_placement_score(
        self, state: CycleState, group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        best = max((s.score for s in scores), default=0)
        if best == 0:
            # Upstream relies on GangScheduling never passing a placement without pods.
            return Status.as_error(NO_PODS)
        for s in scores:
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // best
        return None
