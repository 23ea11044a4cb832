"""What one scheduler did with one pending pod, in a form both replays fill in."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

JSON = dict[str, Any]

__all__ = [
    "HELD_AT_PRE_ENQUEUE",
    "HELD_BY_GATES",
    "Outcome",
    "ReplayHints",
    "gated_outcome",
    "group_outcome",
    "victim_units",
]

#: A Pending member's message in both replays: the scheduler wrote nothing about it.
HELD_AT_PRE_ENQUEUE = "no PodScheduled condition (held at PreEnqueue)"

#: A pod whose scheduling gates were never all removed, in both replays.
HELD_BY_GATES = "held at PreEnqueue by its scheduling gates"

#: The PodGroup condition the pod-group cycle writes (``schedule_one_podgroup.go``).
POD_GROUP_CONDITION = "PodGroupInitiallyScheduled"


@dataclass
class Outcome:
    """``status``: Scheduled, Unschedulable, Error, Rejected (the API server refused the
    pod: not compared), Timeout or Pending (held at PreEnqueue: a PodGroup's member the
    scheduler left without a condition until its group is complete, or a pod that kept
    a scheduling gate: ``gated_outcome``). ``condition``
    is the first PodScheduled=False condition written (reason, message,
    observedGeneration); ``scores`` the weighted per-plugin
    scores of the attempt that placed the pod, by plugin then node, and ``totals`` the
    final score per node — kube-scheduler logs both only when more than one node is
    feasible. ``feasible`` is the set of nodes that passed every Filter in that attempt
    (None when unknown). ``group``: for a member of a PodGroup, its group's outcome
    (``group_outcome``), the same for every member."""

    status: str
    node: str | None = None
    message: str = ""
    condition: dict[str, Any] | None = None
    nominated: str = ""
    victims: list[str] = field(default_factory=list)
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    feasible: list[str] | None = None
    group: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ReplayHints:
    """What kube-scheduler drew at random while deciding a PodGroup, for ksched's replay
    to draw the same: the node each member went to (``ties``: taken where it ties with
    ksched's best) and the order it tried the placements in (``placement_orders``, by
    PodGroup key; upstream ranges over a Go map)."""

    ties: dict[str, str] = field(default_factory=dict)
    # per group, one order per run of its placement algorithm (PodGroupPostFilter reruns it)
    placement_orders: dict[str, list[list[str]]] = field(default_factory=dict)


def gated_outcome(pod: JSON) -> Outcome:
    """The outcome of a pod that kept a scheduling gate, from the pod as it stands: the
    scheduler leaves it alone (``Pending``), so its PodScheduled condition is still the
    one the API server wrote at its creation (``SchedulingGated``: kube-apiserver's pod
    strategy, ``applySchedulingGatedCondition``); a node or another condition is the
    scheduler's doing, and differs."""
    conds = (pod.get("status") or {}).get("conditions") or []
    cond = next((c for c in conds if c.get("type") == "PodScheduled"), None)
    seen = None
    if cond is not None:
        seen = {k: cond[k] for k in ("reason", "message", "observedGeneration") if k in cond}
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return Outcome("Scheduled", node=node, condition=seen)
    return Outcome("Pending", message=HELD_BY_GATES, condition=seen)


def victim_units(victims: list[str], state: list[JSON]) -> list[str]:
    """``victims`` (``namespace/name``) with a PodGroup's members as ``namespace/group[]``:
    which of a group's equal members goes is a tie kube-scheduler breaks in no
    reproducible order (same priority, same start time), how many go is not."""
    groups = {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": (
            f"{p['metadata']['namespace']}/{g['podGroupName']}[]"
        )
        for p in state
        if p.get("kind") == "Pod" and (g := (p.get("spec") or {}).get("schedulingGroup"))
    }
    return sorted(groups.get(v, v) for v in victims)


def group_outcome(
    pod_group: JSON | None, members: list[Outcome], victims: list[str]
) -> dict[str, Any]:
    """A PodGroup's outcome: its ``PodGroupInitiallyScheduled`` condition (status, reason,
    message; None before the scheduler wrote one: held at PreEnqueue), whether every
    member created bound, and the pods preempted for the group (``victims``: which
    member a victim went for is the cycle's business, not compared)."""
    conds = ((pod_group or {}).get("status") or {}).get("conditions") or []
    cond = next((c for c in conds if c.get("type") == POD_GROUP_CONDITION), None)
    return {
        "podGroup": str(((pod_group or {}).get("metadata") or {}).get("name", "")),
        "condition": None
        if cond is None
        else {k: str(cond.get(k, "")) for k in ("status", "reason", "message")},
        "allBound": bool(members) and all(m.status == "Scheduled" for m in members),
        "victims": sorted(victims),
    }
