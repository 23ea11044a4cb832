"""Where ksched's outcome differs from kube-scheduler's, one ``Divergence`` per fact.

Compared: schedulable or not; the chosen node is one of ksched's top-scored nodes
(kube-scheduler breaks ties at random); the feasible node set; every plugin's weighted
score per node and the final scores (when kube-scheduler logged them: more than one node
feasible); the FitError text and the PodScheduled condition (reason, message,
observedGeneration); preemption's victims and nominated node.

DynamicResources runs in both (v1.36's default profile has it): its PostFilter sentence
(``no new claims to deallocate``, or ``not found`` when an earlier PreFilter rejected the
pod) is compared like every other text. ksched's DynamicResources skips Score unless a
claim has a prioritized list, where kube-scheduler logs 0 on every node: those all-zero
scores are the one thing not compared (the totals are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from ...api.objects import LabelSelector
from ...api.selectors import compile_label_selector
from .generator import JSON
from .outcome import Outcome

__all__ = [
    "DRA_PENDING",
    "Divergence",
    "compare",
    "compare_group",
    "messages_agree",
    "normalize_filter_error",
    "normalize_kube_message",
]

#: True normalizes DynamicResources' PostFilter sentence away on kube-scheduler's side
#: (for comparing a build without the plugin); ksched runs it, so it is compared.
DRA_PENDING = False
_DRA_POSTFILTER = "no new claims to deallocate, "
# DynamicResources' PostFilter without its PreFilter state: CycleState's ErrNotFound
_DRA_NO_STATE = " not found"
_PREEMPTION = " preemption: "
_DRA_PLUGIN = "DynamicResources"


@dataclass
class Divergence:
    """``what``: feasibility, node, feasible, score, total, message, condition,
    victims, nominated, rejected, timeout, group (a PodGroup's outcome)."""

    what: str
    detail: str
    kube: Any
    ksched: Any
    plugin: str = ""
    node: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "plugin": self.plugin,
            "node": self.node,
            "detail": self.detail,
            "kube": self.kube,
            "ksched": self.ksched,
        }


def normalize_kube_message(message: str) -> str:
    """kube-scheduler's text with the DynamicResources PostFilter sentence taken out
    (only while ``DRA_PENDING``)."""
    if DRA_PENDING:
        return message.replace(_DRA_POSTFILTER, "", 1)
    return message


# A claim made from a template: the API server completes generateName "<pod>-<claim>-"
# with 5 random characters; ksched's simulator names it "<pod>-<claim>".
_GENERATED_CLAIM = re.compile(r"claim ([^\s,]+)-[a-z0-9]{5}(?=[,:\s])")
# A device (driver/pool/device): in a Filter error it is the node's own.
_DEVICE = re.compile(r"[\w.-]+/[\w.-]+/[\w.-]+")
_FILTER_ERROR = re.compile(r'running "[^"]+" filter plugin: ')


def normalize_filter_error(kube: str, ours: str) -> tuple[str, str]:
    """Both texts with what is chance in a Filter error masked. kube-scheduler filters
    nodes in parallel from a rotating start (``findNodesThatPassFilters``; the preemption
    dry run too) and reports the first error any node returns, so which node's devices
    the text names is not determined; ksched reports its first node's. Claim names made
    from templates lose the API server's random suffix (where ksched names the same claim
    without it). Only the Filter errors are masked (the whole text of a cycle's error,
    or each one preemption lists), nothing before the first."""
    if not (_FILTER_ERROR.search(kube) and _FILTER_ERROR.search(ours)):
        return kube, ours

    def claim(m: re.Match[str]) -> str:
        return f"claim {m[1]}" if f"claim {m[1]}" in ours else m[0]

    def masked(text: str, rename: bool) -> str:
        first = _FILTER_ERROR.search(text)
        assert first is not None
        head, errors = text[: first.start()], text[first.start() :]
        if rename:
            errors = _GENERATED_CLAIM.sub(claim, errors)
        return head + _DEVICE.sub("<device>", errors)

    return masked(kube, True), masked(ours, False)


def messages_agree(kube: str, ours: str) -> bool:
    """The FitError texts are the same once DynamicResources' PostFilter is accounted for:
    with its ``not found`` error kube-scheduler ran no preemption, so only the Filter
    diagnosis before it is compared (only while ``DRA_PENDING``). A Filter error is
    compared without what chance picks (``normalize_filter_error``)."""
    kube, ours = normalize_filter_error(normalize_kube_message(kube), ours)
    if kube == ours:
        return True
    if DRA_PENDING and kube.endswith("." + _DRA_NO_STATE):
        diagnosis = kube[: -len(_DRA_NO_STATE)]
        return ours.startswith(diagnosis + _PREEMPTION)
    return False


def _top(totals: dict[str, int]) -> set[str]:
    if not totals:
        return set()
    best = max(totals.values())
    return {n for n, v in totals.items() if v == best}


def _pdb_violations(victims: list[JSON], pdbs: list[JSON]) -> int:
    """``filterPodsWithPDBViolation``: victims past their PDB's ``disruptionsAllowed``."""
    allowed = [int(p.get("status", {}).get("disruptionsAllowed", 0)) for p in pdbs]
    selectors = [
        compile_label_selector(msgspec.convert(p["spec"].get("selector"), LabelSelector))
        if p["spec"].get("selector")
        else None
        for p in pdbs
    ]
    count = 0
    for v in victims:
        meta = v["metadata"]
        violating = False
        for i, pdb in enumerate(pdbs):
            sel = selectors[i]
            if pdb["metadata"].get("namespace") != meta.get("namespace") or sel is None:
                continue
            if sel.matches(meta.get("labels") or {}):
                allowed[i] -= 1
                violating = violating or allowed[i] < 0
        count += violating
    return count


def preemption_key(state: list[JSON], victims: list[str]) -> tuple[int, int, int, int]:
    """What ``pickOneNodeForPreemption`` ranks candidates by, in order: PDB violations,
    highest victim priority, sum of priorities (each shifted by MaxInt32+1), number of
    victims. Its last criterion, the victims' start time, is nil for pods no kubelet ran,
    and then the first candidate wins: which one is first depends on a random offset and
    parallel dry runs, so candidates equal on this key are a coin toss."""
    pods = {
        f"{o['metadata'].get('namespace')}/{o['metadata']['name']}": o
        for o in state
        if o.get("kind") == "Pod"
    }
    found = [pods[v] for v in victims if v in pods]
    prios = [int(p["spec"].get("priority") or 0) for p in found]
    pdbs = [o for o in state if o.get("kind") == "PodDisruptionBudget"]
    return (
        _pdb_violations(found, pdbs),
        max(prios, default=0),
        sum(p + 2**31 for p in prios),
        len(found),
    )


# v1.37's tail of a FitError whose preemption found a candidate
_PLACEMENT = re.compile(r"found a potential placement for pod on node \S+, preempting")
_PLACEMENT_MASK = "found a potential placement for pod on node *, preempting"


_FIRST_PLACEMENT = re.compile(r"first placement status: .*?(?=, pod group preemption: |$)")


def _placement_blind(message: str) -> str:
    """A PodGroup condition's message without the statuses of its "first" placements.

    Upstream tries placements in a Go map's order, so each run's first placement is
    chance. The replay follows kube-scheduler's order run by run (``ReplayHints``), which
    settles the members' messages (written by the first cycle); but the condition keeps
    whatever the last cycle that changed it wrote, and the live cluster and the simulator
    do not run the same number of cycles. The count of placements and everything else is
    still compared."""
    return _FIRST_PLACEMENT.sub("first placement status: …", message)


def compare_group(kube: JSON | None, ours: JSON | None) -> list[Divergence]:
    """A PodGroup's outcomes (``outcome.group_outcome``): its PodGroupInitiallyScheduled
    condition (written or not; status, reason, message compared as a FitError is),
    whether every member bound, and the pods preempted for it."""
    if kube is None and ours is None:
        return []
    if kube is None or ours is None:
        return [Divergence("group", "a PodGroup's member on one side only", kube, ours)]
    out: list[Divergence] = []
    kc, oc = kube.get("condition"), ours.get("condition")
    if (kc is None) != (oc is None):
        out.append(Divergence("group", "PodGroupInitiallyScheduled written", kc, oc))
    elif kc is not None and oc is not None:
        for field in ("status", "reason"):
            if kc.get(field) != oc.get(field):
                detail = f"PodGroupInitiallyScheduled {field}"
                out.append(Divergence("group", detail, kc.get(field), oc.get(field)))
        km, om = (_placement_blind(str(c.get("message", ""))) for c in (kc, oc))
        if not messages_agree(km, om):
            detail = "PodGroupInitiallyScheduled message"
            out.append(Divergence("group", detail, kc.get("message"), oc.get("message")))
    for field, detail in (("allBound", "every member bound"), ("victims", "victims")):
        if kube.get(field) != ours.get(field):
            out.append(Divergence("group", detail, kube.get(field), ours.get(field)))
    return out


def compare(kube: Outcome, ours: Outcome, state: list[JSON] | None = None) -> list[Divergence]:
    """``state``: the objects both saw, to tell a preemption tie from a divergence. A
    PodGroup's member is compared as a pod and by its group's outcome (``compare_group``)."""
    if kube.status == "Timeout":
        return _compare_pod(kube, ours, state)
    return [*compare_group(kube.group, ours.group), *_compare_pod(kube, ours, state)]


def _compare_pod(kube: Outcome, ours: Outcome, state: list[JSON] | None) -> list[Divergence]:
    out: list[Divergence] = []
    if kube.status == "Timeout":
        return [Divergence("timeout", "kube-scheduler gave no outcome", kube.status, ours.status)]
    if kube.status != ours.status:
        out.append(
            Divergence(
                "feasibility",
                f"kube-scheduler: {kube.status}, ksched: {ours.status}",
                kube.message or kube.node,
                ours.message or ours.node,
            )
        )
        return out
    # Equally good preemption candidates are a coin toss (``preemption_key``); 1.37's
    # message names the one drawn, so the node is left out of the comparison then.
    tie = (
        state is not None
        and bool(kube.victims)
        and bool(ours.victims)
        and sorted(kube.victims) != sorted(ours.victims)
        and preemption_key(state, kube.victims) == preemption_key(state, ours.victims)
    )

    def agree(k: str, o: str) -> bool:
        if tie:
            k, o = _PLACEMENT.sub(_PLACEMENT_MASK, k), _PLACEMENT.sub(_PLACEMENT_MASK, o)
        return messages_agree(k, o)

    if not agree(kube.message, ours.message):
        out.append(Divergence("message", "FitError text", kube.message, ours.message))
    if kube.condition is not None or ours.condition is not None:
        kc = kube.condition or {}
        oc = ours.condition or {}
        if not agree(str(kc.get("message", "")), str(oc.get("message", ""))):
            out.append(
                Divergence(
                    "condition", "PodScheduled message", kc.get("message"), oc.get("message")
                )
            )
        for field in ("reason", "observedGeneration"):
            if kc.get(field) != oc.get(field):
                out.append(
                    Divergence("condition", f"PodScheduled {field}", kc.get(field), oc.get(field))
                )
    if sorted(kube.victims) != sorted(ours.victims):
        if (
            state is not None
            and kube.victims
            and ours.victims
            and preemption_key(state, kube.victims) == preemption_key(state, ours.victims)
        ):
            # Equally good candidates, picked at random: from here on the two clusters
            # differ (other victims went), so nothing after preemption is comparable.
            return out
        out.append(Divergence("victims", "preemption victims", kube.victims, ours.victims))
    # A pod nominated for the node it then bound to (a slow binding announced) is judged by
    # its node, below: several may tie for best.
    expected = kube.nominated == kube.node and ours.nominated == ours.node
    if kube.nominated != ours.nominated and not (expected and kube.nominated and ours.nominated):
        out.append(Divergence("nominated", "nominated node", kube.nominated, ours.nominated))
    if kube.status != "Scheduled":
        return out
    if (
        kube.feasible is not None
        and ours.feasible is not None
        and sorted(kube.feasible) != sorted(ours.feasible)
    ):
        out.append(
            Divergence("feasible", "feasible node set", sorted(kube.feasible), ours.feasible)
        )
    for plugin, per_node in sorted(kube.scores.items()):
        mine = ours.scores.get(plugin)
        if mine is None:
            if plugin == _DRA_PLUGIN and not any(per_node.values()):
                # ksched's DynamicResources skips Score (PreScore) unless a claim has a
                # prioritized list; kube-scheduler scores 0 everywhere: same totals.
                continue
            out.append(Divergence("score", "plugin not run by ksched", per_node, None, plugin))
            continue
        for node, value in sorted(per_node.items()):
            if mine.get(node) != value:
                out.append(
                    Divergence("score", "weighted score", value, mine.get(node), plugin, node)
                )
    for plugin in sorted(set(ours.scores) - set(kube.scores)):
        if kube.scores:
            out.append(
                Divergence(
                    "score", "plugin not run by kube-scheduler", None, ours.scores[plugin], plugin
                )
            )
    for node, value in sorted(kube.totals.items()):
        if ours.totals.get(node) != value:
            out.append(Divergence("total", "final score", value, ours.totals.get(node), node=node))
    top = _top(ours.totals) if ours.totals else ({ours.node} if ours.node else set())
    if kube.node not in top:
        out.append(
            Divergence(
                "node",
                "kube-scheduler's node is not among ksched's top-scored",
                kube.node,
                sorted(top),
                node=kube.node or "",
            )
        )
    return out
