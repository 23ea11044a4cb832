"""NodeAffinity: spec.nodeSelector, required/preferred node affinity and addedAffinity.

Mirrors kube-scheduler's ``nodeaffinity`` plugin and the component-helpers it uses:
Filter rejects nodes outside the pod's nodeSelector AND required node affinity (and
the scheduler-enforced ``addedAffinity``), Score sums the weights of matching
preferred terms. Selectors are compiled once per pod (``PodInfo.cache``); the batch
forms evaluate them over the snapshot's label columns. A term kube-scheduler cannot
parse (e.g. an invalid label value) matches no node, as upstream; a pod that API
validation would have refused (an unknown operator) fails with a message naming the
pod and field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..api import objects
from ..api.objects import Node, PreferredSchedulingTerm
from ..api.selectors import (
    IN,
    CompiledNodeSelector,
    CompiledTerm,
    Selector,
    SelectorError,
    compile_node_selector,
    compile_node_selector_term,
    selector_from_set,
)
from ..framework.args import ArgsErrors, KubeArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.handle import Handle
from ..framework.interface import (
    MAX_NODE_SCORE,
    ClusterEvent,
    ClusterEventWithHint,
    NodeOnlyFilter,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
)
from ..framework.snapshot import BoolArray, IntArray, Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .helper import (
    RowArray,
    all_true,
    default_normalize_score,
    node_selector_mask,
    selector_mask,
    spec_fragment,
)
from .helper import term_mask as _term_mask

__all__ = [
    "ERR_REASON_CONFLICT",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_POD",
    "NodeAffinity",
    "NodeAffinityArgs",
    "PreferredTerms",
    "RequiredNodeAffinity",
    "preferred_terms",
    "required_node_affinity",
]

PRE_FILTER_KEY = "PreFilter" + names.NODE_AFFINITY
PRE_SCORE_KEY = "PreScore" + names.NODE_AFFINITY

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_REQUIRED_CACHE = names.NODE_AFFINITY + "/required"
_PREFERRED_CACHE = names.NODE_AFFINITY + "/preferred"
_EMPTY: Mapping[str, str] = {}


def _labels_and_name(node: Node | None) -> tuple[Mapping[str, str], str]:
    if node is None:
        return _EMPTY, ""
    return node.metadata.labels, node.metadata.name


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: spec.nodeSelector AND required node affinity."""

    node_selector: Selector | None
    affinity: CompiledNodeSelector | None

    def match(self, node: Node | None) -> tuple[bool, str]:
        """Whether ``node`` fits, and the parse problem upstream reports when no term matched."""
        labels, name = _labels_and_name(node)
        if self.node_selector is not None and not self.node_selector.matches(labels):
            return False, ""
        if self.affinity is None:
            return True, ""
        if self.affinity.matches(labels, name):
            return True, ""
        return False, self.affinity.error

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.node_selector is not None and not self.node_selector.matches(labels):
            return False
        return self.affinity is None or self.affinity.matches(labels, name)

    def mask(self, snap: Snapshot) -> BoolArray | None:
        """Rows that fit, or None when everything does (nothing to check)."""
        out: BoolArray | None = None
        if self.node_selector is not None:
            out = selector_mask(self.node_selector, snap)
        if self.affinity is not None:
            m = node_selector_mask(self.affinity, snap)
            out = m if out is None else (out & m)
        return out


@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """``nodeaffinity.PreferredSchedulingTerms``: weighted terms (weight-0/empty ones dropped)."""

    terms: tuple[tuple[CompiledTerm, int], ...]

    def score(self, node: Node | None) -> int:
        labels, name = _labels_and_name(node)
        return sum(w for t, w in self.terms if t.matches(labels, name))

    def scores(self, snap: Snapshot, rows: RowArray) -> IntArray:
        out = np.zeros(len(rows), dtype=np.int64)
        for t, w in self.terms:
            out += _term_mask(t, snap, rows) * np.int64(w)
        return out


def _compile_preferred(
    terms: Sequence[PreferredSchedulingTerm], where: str
) -> tuple[PreferredTerms, str]:
    """Compiled terms and the first unparsable term's problem (upstream fails on any)."""
    out: list[tuple[CompiledTerm, int]] = []
    error = ""
    for i, t in enumerate(terms):
        pref = t.preference
        if t.weight == 0 or (not pref.match_expressions and not pref.match_fields):
            continue
        ct = compile_node_selector_term(pref, f"{where}[{i}].preference")
        if ct.error:
            error = error or ct.error
        else:
            out.append((ct, t.weight))
    return PreferredTerms(tuple(out)), error


def _pod_node_affinity(pod: PodInfo) -> objects.NodeAffinity | None:
    a = pod.pod.spec.affinity
    return a.node_affinity if a is not None else None


def named_nodes(pod: PodInfo) -> set[str] | None:
    """The nodes ``pod``'s required terms name by ``metadata.name`` (PreFilter narrows to
    them; an empty set is a conflict), or None when some term may match any node."""
    na = _pod_node_affinity(pod)
    required = na.required_during_scheduling_ignored_during_execution if na else None
    if required is None:
        return None
    node_names: set[str] | None = None
    for t in required.node_selector_terms:
        term_names: set[str] | None = None
        for r in t.match_fields:
            if r.key == "metadata.name" and r.operator == IN:
                # Requirements are ANDed: intersect.
                s = set(r.values)
                term_names = s if term_names is None else term_names & s
        if term_names is None:
            return None  # a term without a name requirement: any node may match
        node_names = term_names if node_names is None else node_names | term_names
    return node_names


def required_node_affinity(pod: PodInfo) -> RequiredNodeAffinity:
    """``nodeaffinity.GetRequiredNodeAffinity``, compiled once per pod.

    Raises ``SelectorError`` naming the pod and field for selectors API validation
    would have refused.
    """
    cached = pod.cache.get(_REQUIRED_CACHE)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    spec = pod.pod.spec
    sel = selector_from_set(spec.node_selector) if spec.node_selector else None
    na = _pod_node_affinity(pod)
    req = na.required_during_scheduling_ignored_during_execution if na is not None else None
    compiled = None
    if req is not None:
        where = (
            f"Pod {pod.key}: spec.affinity.nodeAffinity."
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        compiled = compile_node_selector(req, where)
    out = RequiredNodeAffinity(sel, compiled)
    pod.cache[_REQUIRED_CACHE] = out
    return out


def preferred_terms(pod: PodInfo) -> tuple[PreferredTerms | None, str]:
    """The pod's preferred terms (None when it has none) and the parse problem, if any."""
    cached = pod.cache.get(_PREFERRED_CACHE)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    na = _pod_node_affinity(pod)
    prefs = na.preferred_during_scheduling_ignored_during_execution if na is not None else []
    out: tuple[PreferredTerms | None, str] = (None, "")
    if prefs:
        where = (
            f"Pod {pod.key}: spec.affinity.nodeAffinity."
            "preferredDuringSchedulingIgnoredDuringExecution"
        )
        out = _compile_preferred(prefs, where)
    pod.cache[_PREFERRED_CACHE] = out
    return out


# ---- args ---------------------------------------------------------------------------------

_ADDED = "addedAffinity"
_ADDED_REQUIRED = _ADDED + ".requiredDuringSchedulingIgnoredDuringExecution"
_ADDED_PREFERRED = _ADDED + ".preferredDuringSchedulingIgnoredDuringExecution"


def _fail(errs: ArgsErrors, text: str) -> None:
    """A selector problem (``path: message``) as an args error at that path."""
    path, _, message = text.partition(": ")
    errs.fail(path, message)


class NodeAffinityArgs(KubeArgs):
    """``NodeAffinityArgs``: ``addedAffinity`` applies to every pod of the profile."""

    added_affinity: objects.NodeAffinity | None = None

    def validate(self, errs: ArgsErrors) -> None:
        """``ValidateNodeAffinityArgs``: the selectors must parse (the first problem)."""
        try:
            req, pref = _compile_added(self.added_affinity)
        except SelectorError as e:
            _fail(errs, str(e))
            return
        if req is not None and req.error:
            _fail(errs, req.error)
        elif pref is not None and pref[1]:
            _fail(errs, pref[1])


def _compile_added(
    added: objects.NodeAffinity | None,
) -> tuple[CompiledNodeSelector | None, tuple[PreferredTerms, str] | None]:
    if added is None:
        return None, None
    ns = added.required_during_scheduling_ignored_during_execution
    req = compile_node_selector(ns, _ADDED_REQUIRED) if ns is not None else None
    terms = added.preferred_during_scheduling_ignored_during_execution
    pref = _compile_preferred(terms, _ADDED_PREFERRED) if terms else None
    return req, pref


# ---- the plugin ---------------------------------------------------------------------------


class NodeAffinity(
    PreFilterPlugin[NodeAffinityArgs],
    NodeOnlyFilter[NodeAffinityArgs],
    PreScorePlugin[NodeAffinityArgs],
    ScorePlugin[NodeAffinityArgs],
):
    name = names.NODE_AFFINITY
    Args = NodeAffinityArgs
    args: NodeAffinityArgs

    def sign_pod(self, pod: PodInfo) -> Any:
        spec = pod.pod.spec
        affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        return spec_fragment(pod, "sign/nodeaffinity", spec.node_selector, affinity)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        req, pref = _compile_added(self.args.added_affinity)
        self.added_node_selector: CompiledNodeSelector | None = req
        self.added_pref_terms: PreferredTerms | None = pref[0] if pref is not None else None

    def narrows_nodes(self, pod: PodInfo) -> bool:
        """``NarrowsNodes``: whether PreFilter narrows ``pod``'s nodes (or rejects it)
        whatever the cluster: the equivalence cache then has nothing to offer and need not
        sign it."""
        return named_nodes(pod) is not None

    # -- PreFilter / Filter ---------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Skip pods with nothing to check; narrow to nodes named by metadata.name terms."""
        na = _pod_node_affinity(pod)
        required = na.required_during_scheduling_ignored_during_execution if na else None
        if required is None and self.added_node_selector is None and not pod.pod.spec.node_selector:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, required_node_affinity(pod))
        node_names = named_nodes(pod)
        if node_names is not None and not node_names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        if node_names:
            return PreFilterResult(node_names), None
        return None, None

    def _required(self, state: CycleState, pod: PodInfo) -> RequiredNodeAffinity:
        s = state.get(PRE_FILTER_KEY)
        return s if isinstance(s, RequiredNodeAffinity) else required_node_affinity(pod)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        labels, name = _labels_and_name(node.node)
        added = self.added_node_selector
        if added is not None and not added.matches(labels, name):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
        if not self._required(state, pod).matches(labels, name):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        out: BoolArray | None = None
        if self.added_node_selector is not None:
            out = node_selector_mask(self.added_node_selector, snap)
        m = self._required(state, pod).mask(snap)
        if m is not None:
            out = m if out is None else (out & m)
        return out if out is not None else all_true(snap.n)

    # -- PreScore / Score -------------------------------------------------------------------
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        pref, error = preferred_terms(pod)
        if error:
            return Status(Code.ERROR, error)
        if pref is None and self.added_pref_terms is None:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_KEY, pref)
        return None

    def _preferred(self, state: CycleState, pod: PodInfo) -> PreferredTerms | None:
        if PRE_SCORE_KEY in state:
            s: PreferredTerms | None = state.read(PRE_SCORE_KEY)
            return s
        pref, error = preferred_terms(pod)
        if error:
            raise ValueError(error)
        return pref

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        count = 0
        if self.added_pref_terms is not None:
            count += self.added_pref_terms.score(node.node)
        pref = self._preferred(state, pod)
        if pref is not None:
            count += pref.score(node.node)
        return count

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: RowArray
    ) -> IntArray:
        out = np.zeros(len(rows), dtype=np.int64)
        if self.added_pref_terms is not None:
            out += self.added_pref_terms.scores(snap, rows)
        pref = self._preferred(state, pod)
        if pref is not None:
            out += pref.scores(snap, rows)
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # -- queueing hints ------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node Add|UpdateNodeLabel (QueueingHints on: no UpdateNodeTaint), as upstream."""
        hint = self.is_schedulable_after_node_change
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD), hint),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL), hint
            ),
        ]

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue only when the node now matches the pod (and did not before an update)."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            raise TypeError(f"expected Node, got {type(old).__name__}, {type(new).__name__}")
        if self.added_node_selector is not None:
            labels, name = _labels_and_name(new)
            if not self.added_node_selector.matches(labels, name):
                return QueueingHint.SKIP
        req = required_node_affinity(pod)
        matched, error = req.match(new)
        if error:
            return QueueingHint.QUEUE  # upstream queues when matching reports an error
        if not matched:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        was, error = req.match(old)
        if error:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if was else QueueingHint.QUEUE
