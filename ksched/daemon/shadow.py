"""Shadow mode (``ksched run --shadow-of NAME``): decide, write nothing, compare.

A platform team wants to know what a profile (a custom plugin, other weights) would do on
the real cluster before it places a single pod. In shadow mode the daemon watches the
cluster as ever, takes the pending pods of scheduler ``NAME`` (``Scheduler.adopted``)
into its queue for its first profile, and for each one runs the scheduling algorithm —
PreFilter, Filter, PreScore, Score, node selection — against its cache as it stands, with
nothing after it: no assume, no Reserve or Permit, no PostFilter (preemption), no binding,
no status patch, no event (and the daemon takes no lease). When ``NAME`` binds the pod the
decision is compared with its node; when ``NAME`` reports the pod Unschedulable
(``PodScheduled=False``) with ksched's. A pod bound before ksched got to it is decided at
that moment, on the cache just before the binding is applied.

Results (``ksched_shadow_decisions_total{profile, result}``):

* ``agree``: the same node, or both found it unschedulable;
* ``tie``: different nodes that ksched scored the same (both schedulers break a tie
  between equally scored nodes at random, so neither choice is wrong);
* ``disagree``: a node ksched scored lower than its own, or found infeasible (or never
  evaluated: not in its cache, beyond percentageOfNodesToScore);
* ``unschedulable_here``: ``NAME`` bound it, ksched found no node;
* ``unschedulable_there``: ``NAME`` found it unschedulable, ksched had a node.

A pod ksched finds unschedulable waits in its unschedulable pool and is decided again on
the cluster events that may help, as a scheduler would retry it; a pod it placed is not
decided again. Only the latest decision counts. A pod ``NAME`` reports unschedulable and
binds later is compared at both moments. HTTP extenders in the config are not consulted.

A pod group (GenericWorkload) is decided whole, all members placed or none, and is compared
as one too (``ksched_shadow_pod_group_decisions_total{profile, result}``): at the first
verdict of ``NAME`` on one of its members after ksched's decision, ``agree`` (ksched
placed the group and ``NAME`` bound a member, or neither placed it), ``unschedulable_here``
(``NAME`` started it, ksched held it) or ``unschedulable_there`` (the other way round).
Each of ksched's decisions of a group is compared once.

``/debug/shadow`` shows the counts, the latest disagreements and the latest ties, each
with both nodes' breakdowns: total and weighted score per Score plugin for a node ksched
found feasible, the Filter verdicts that rejected it otherwise.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry
from prometheus_client import Counter as PromCounter

from .. import logging as klog
from ..framework.podgroup import pod_group_of
from ..framework.types import PodInfo
from ..queue.scheduling_queue import Entity, QueuedPodInfo
from ..scheduler.loop import Decided, GroupDecision, decide_pod

if TYPE_CHECKING:
    from ..scheduler.scheduler import Scheduler

__all__ = ["GROUP_RESULTS", "RESULTS", "Shadow"]

RESULTS = ("agree", "tie", "disagree", "unschedulable_here", "unschedulable_there")
GROUP_RESULTS = ("agree", "unschedulable_here", "unschedulable_there")
# Decisions kept for pods not yet compared; disagreements (and ties) kept for /debug/shadow.
MAX_DECISIONS = 10_000
MAX_DISAGREEMENTS = 100
_OK_VERDICTS = ("Success", "Skip")

log = klog.get_logger("ksched.shadow")


@dataclass(slots=True)
class Decision:
    """Where ksched would have put a pod, and why (per-node breakdowns)."""

    node: str | None
    message: str
    at: float
    # node -> {"total": N, "scores": {plugin: weighted}} for the feasible nodes
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    # node -> {plugin: verdict} of the Filter plugins that rejected it
    rejected: dict[str, dict[str, str]] = field(default_factory=dict)

    def breakdown(self, node: str | None) -> dict[str, Any] | None:
        if node is None:
            return None
        if node in self.scores:
            return {"node": node, **self.scores[node]}
        if node in self.rejected:
            return {"node": node, "filter": self.rejected[node]}
        return {"node": node, "note": "not evaluated by ksched (not in its cache)"}


def _decision(res: Any, at: float) -> Decision:
    ok = res.status.is_success()
    d = Decision(res.node if ok else None, "" if ok else res.message, at)
    explain = res.explain or {}
    for node, total in (explain.get("total") or {}).items():
        d.scores[node] = {"total": total, "scores": {}}
    for plugin, per_node in (explain.get("score") or {}).items():
        for node, s in per_node.items():
            if node in d.scores:
                d.scores[node]["scores"][plugin] = s["weighted"]
    for node, verdicts in (explain.get("filter") or {}).items():
        bad = {p: v for p, v in verdicts.items() if v not in _OK_VERDICTS}
        if bad:
            d.rejected[node] = bad
    if ok and not d.scores and d.node is not None:
        d.scores[d.node] = {"total": None, "scores": {}}  # the only feasible node
    return d


def _bound_result(d: Decision, there: str) -> str:
    """How ksched's decision compares with a binding to ``there``: a node ksched scored
    as high as its own choice is a tie (the other scheduler's random tie-break), not a
    disagreement."""
    if d.node is None:
        return "unschedulable_here"
    if d.node == there:
        return "agree"
    mine = d.scores[d.node]["total"] if d.node in d.scores else None
    theirs = d.scores[there]["total"] if there in d.scores else None
    return "tie" if theirs is not None and theirs == mine else "disagree"


def _unschedulable_condition(pod: PodInfo) -> str | None:
    """The message of a ``PodScheduled=False, reason Unschedulable`` condition, if any."""
    for c in pod.pod.status.conditions:
        if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
            return c.message or ""
    return None


class Shadow:
    """Decides for ``shadowed``'s pending pods with ``profile`` and keeps the score."""

    def __init__(
        self,
        sched: Scheduler,
        registry: CollectorRegistry,
        *,
        shadowed: str,
        profile: str,
    ) -> None:
        self.sched = sched
        self.shadowed = shadowed
        self.profile = profile
        if sched.adopted.get(shadowed) != profile:
            raise ValueError(
                f"the scheduler must adopt {shadowed}'s pods for profile {profile} "
                "(Scheduler's adopt), and tell the shadow of pod updates (before_pod_update)"
            )
        self.decisions: OrderedDict[str, Decision] = OrderedDict()
        self.disagreements: deque[dict[str, Any]] = deque(maxlen=MAX_DISAGREEMENTS)
        self.ties: deque[dict[str, Any]] = deque(maxlen=MAX_DISAGREEMENTS)
        self.counts: Counter[str] = Counter()
        self.metric = PromCounter(
            "ksched_shadow_decisions_total",
            "Pods of the shadowed scheduler that ksched's profile decided, by how its "
            "decision compares with the shadowed scheduler's.",
            ["profile", "result"],
            registry=registry,
        )
        for r in RESULTS:  # every series exists from the start, at 0
            self.metric.labels(profile, r)
        # a pod group's latest decision not yet compared: PodGroup key -> placed
        self.group_decisions: OrderedDict[str, bool] = OrderedDict()
        self.group_counts: Counter[str] = Counter()
        self.group_metric = PromCounter(
            "ksched_shadow_pod_group_decisions_total",
            "Pod groups of the shadowed scheduler that ksched's profile decided, by how its "
            "decision (the whole group placed or not) compares with the shadowed scheduler's.",
            ["profile", "result"],
            registry=registry,
        )
        for r in GROUP_RESULTS:
            self.group_metric.labels(profile, r)

    def _key(self, pod: PodInfo) -> str:
        return pod.uid or pod.key

    def record(self, entity: Entity, decided: Decided) -> None:
        """The loop's step after deciding a popped pod or pod group (``LoopMode.DECIDE``,
        which has requeued it already): remember each pod's decision."""
        now = time.time()
        if isinstance(decided, GroupDecision):
            for m in decided.members:
                self._remember(m.qpi.pod_info, Decision(m.node, m.message, now))
            groups = self.group_decisions
            groups[entity.key] = decided.status.is_success()
            groups.move_to_end(entity.key)
            while len(groups) > MAX_DECISIONS:
                groups.popitem(last=False)
        elif decided is not None and isinstance(entity, QueuedPodInfo):
            self._remember(entity.pod_info, _decision(decided, now))

    def _remember(self, pod: PodInfo, d: Decision) -> None:
        decisions = self.decisions
        decisions[self._key(pod)] = d
        decisions.move_to_end(self._key(pod))
        while len(decisions) > MAX_DECISIONS:
            decisions.popitem(last=False)

    def _decide(self, pod: PodInfo) -> Decision:
        """Decide ``pod`` now, outside the loop (bound before ksched got to it)."""
        d = _decision(decide_pod(self.sched, self.sched.frameworks[self.profile], pod), time.time())
        self._remember(pod, d)
        return d

    def observe(self, old: PodInfo, new: PodInfo) -> None:
        """A pod update, before the scheduler applies it: the shadowed scheduler's verdict?
        (Called by the pod informer: a failure here is logged, never raised into it.)"""
        try:
            self._observe(old, new)
        except Exception as e:
            log.error("shadow comparison failed", pod=new.key, error=f"{type(e).__name__}: {e}")

    def _observe(self, old: PodInfo, new: PodInfo) -> None:
        if old.node_name or old.pod.spec.scheduler_name != self.shadowed:
            return
        key = self._key(old)
        msg: str | None = None
        if new.node_name:
            d = self.decisions.pop(key, None)
            if d is None:  # bound before ksched got to it: decide on the cache as it is
                d = self._decide(old)
                self.decisions.pop(key, None)
            there: str | None = new.node_name
            result = _bound_result(d, new.node_name)
        else:
            msg = _unschedulable_condition(new)
            if msg is None or _unschedulable_condition(old) == msg:
                return  # no verdict, or one already counted
            got = self.decisions.get(key)
            d = got if got is not None else self._decide(old)
            there = None
            result = "agree" if d.node is None else "unschedulable_there"
        self._count(new, d, there, result, msg)
        group = pod_group_of(old.pod)
        if group is not None and group in self.group_decisions:
            placed = self.group_decisions.pop(group)
            if new.node_name:
                verdict = "agree" if placed else "unschedulable_here"
            else:
                verdict = "unschedulable_there" if placed else "agree"
            self.group_counts[verdict] += 1
            self.group_metric.labels(self.profile, verdict).inc()

    def _count(
        self, pod: PodInfo, d: Decision, there: str | None, result: str, msg: str | None = None
    ) -> None:
        self.counts[result] += 1
        self.metric.labels(self.profile, result).inc()
        if result == "agree":
            return
        entry = {
            "pod": pod.key,
            "result": result,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "decidedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(d.at)),
            "ksched": d.breakdown(d.node) or {"node": None, "message": d.message},
            self.shadowed: d.breakdown(there) or {"node": None, "message": msg},
        }
        if result == "tie":
            self.ties.append(entry)
            if klog.enabled(4):
                log.info("shadow decision ties", pod=pod.key, node=d.node, their_node=there, v=4)
            return
        self.disagreements.append(entry)
        if klog.enabled(2):
            log.info(
                "shadow decision differs",
                pod=pod.key,
                result=result,
                profile=self.profile,
                node=d.node,
                shadowed=self.shadowed,
                their_node=there,
                v=2,
            )

    def to_dict(self) -> dict[str, Any]:
        """``/debug/shadow``: counts, then the latest disagreements and ties, newest first."""
        return {
            "shadowOf": self.shadowed,
            "profile": self.profile,
            "counts": {r: self.counts[r] for r in RESULTS},
            "podGroupCounts": {r: self.group_counts[r] for r in GROUP_RESULTS},
            # waiting for a decision (activeQ, backoffQ); the pool holds those with no node
            "undecided": sum(1 for _ in self.sched.queue.active_pods())
            + sum(1 for _ in self.sched.queue.backoff_pods()),
            # decided here, waiting for the shadowed scheduler's verdict
            "decided": len(self.decisions),
            "disagreements": list(reversed(self.disagreements)),
            "ties": list(reversed(self.ties)),
        }
