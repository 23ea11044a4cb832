"""Why a pod did not fit: the Diagnosis and kube-scheduler's FitError text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..util.errors import KschedError
from .interface import NodeToStatus

__all__ = ["NO_NODE_AVAILABLE_MSG", "Diagnosis", "FitError"]

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


@dataclass(slots=True)
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class FitError(KschedError):
    """No node fits; ``str()`` is exactly kube-scheduler's ``FitError.Error()``."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__(pod_key)
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def reason_histogram(self) -> dict[str, int]:
        d = self.diagnosis
        reasons: dict[str, int] = {}
        nts = d.node_to_status
        # Nodes with the same verdict share one Status (Fit's batch statuses do): count
        # each object's nodes first, then word its reasons once (same first-seen order).
        seen: dict[int, list[Any]] = {}
        for st in nts.statuses.values():
            e = seen.get(id(st))
            if e is None:
                seen[id(st)] = [st, 1]
            else:
                e[1] += 1
        for st, n in seen.values():
            for r in st.all_reasons():
                reasons[r] = reasons.get(r, 0) + n
        absent = self.num_all_nodes - len(nts)
        if absent > 0 and nts.absent is not None:
            for r in nts.absent.all_reasons():
                reasons[r] = reasons.get(r, 0) + absent
        return reasons

    def __str__(self) -> str:
        d = self.diagnosis
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            # Go sorts the formatted "count reason" strings, so "10 x" sorts before "2 y".
            items = sorted(f"{v} {k}" for k, v in self.reason_histogram().items())
            if items:
                msg += f" {', '.join(items)}."
        # Upstream appends the PostFilter message as is: preemption's own FitError text
        # already ends with a period.
        if d.post_filter_msg:
            msg += f" {d.post_filter_msg}"
        return msg
