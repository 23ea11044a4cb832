"""Pod (anti-)affinity terms, compiled once per pod (``framework.AffinityTerm`` and friends).

A pod's four term lists (required/preferred affinity/anti-affinity) are compiled on
first use and cached on its ``PodInfo``, as upstream's ``PodInfo`` carries
``RequiredAffinityTerms`` etc. Equal terms are interned, so the thousands of replicas
of one template share one ``AffinityTerm`` object: the cluster index groups existing
pods' terms by identity and matches each distinct term once per cycle.

Selectors are built like ``metav1.LabelSelectorAsSelector`` with the validation of
``labels.NewRequirement``, so an unparsable term fails with upstream's message.
``matchLabelKeys``/``mismatchLabelKeys`` are merged into the label selector as the API
server does at pod creation (``applyMatchLabelKeysAndMismatchLabelKeys``), since
manifests given to ``ksched simulate`` never went through one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from ...api.objects import LabelSelector, LabelSelectorRequirement, Namespace, PodAffinityTerm
from ...api.selectors import (
    DOES_NOT_EXIST,
    EVERYTHING,
    EXISTS,
    IN,
    NOT_IN,
    NOTHING,
    LabelRequirement,
    Selector,
)
from ...api.validation import label_value_errors, qualified_name_errors
from ...framework.types import PodInfo
from ...util.errors import KschedError

__all__ = [
    "NAMESPACE_NAME_LABEL",
    "AffinityTerm",
    "NamespaceLabels",
    "PodTerms",
    "WeightedTerm",
    "incoming_terms",
    "pod_matches_all_terms",
    "pod_terms",
]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_CACHE_KEY = "InterPodAffinity/terms"
_INCOMING_V136_KEY = "InterPodAffinity/terms/incoming-v1.36"

NsLabelsFn = Callable[[str], Mapping[str, str]]


@dataclass(frozen=True, slots=True, eq=False)
class AffinityTerm:
    """A processed ``PodAffinityTerm``; hashed by identity (equal terms are interned).

    ``ns_selector`` is NOTHING for a nil namespaceSelector and EVERYTHING for ``{}``.
    """

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    ns_selector: Selector

    def matches_namespace(self, ns: str, ns_labels: NsLabelsFn) -> bool:
        if ns in self.namespaces:
            return True
        sel = self.ns_selector
        if sel.nothing:
            return False
        return not sel.requirements or sel.matches(ns_labels(ns))

    def matches(self, ns: str, labels: Mapping[str, str], ns_labels: NsLabelsFn) -> bool:
        """``AffinityTerm.Matches``: the namespace is selected and the labels match."""
        return self.matches_namespace(ns, ns_labels) and self.selector.matches(labels)


WeightedTerm = tuple[AffinityTerm, int]


@dataclass(slots=True, eq=False)
class PodTerms:
    """What the plugin needs of one pod; ``error`` aggregates unparsable terms."""

    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedTerm, ...]
    preferred_anti_affinity: tuple[WeightedTerm, ...]
    error: str
    # (namespace, labels): pods with equal signatures match every term alike.
    signature: tuple[str, frozenset[tuple[str, str]]]


def pod_matches_all_terms(
    terms: Sequence[AffinityTerm], ns: str, labels: Mapping[str, str], ns_labels: NsLabelsFn
) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    if not terms:
        return False
    return all(t.matches(ns, labels, ns_labels) for t in terms)


class NamespaceLabels:
    """Namespace labels by name, looked up once per cycle.

    Namespaces missing from the lister count as existing with only the
    ``kubernetes.io/metadata.name`` label the API server gives every namespace (so
    ``ksched simulate`` needs no Namespace manifests); that label is also set on
    listed ones, as the API server would have.
    """

    __slots__ = ("_cache", "_lister")

    def __init__(self, lister: Mapping[str, Namespace] | None) -> None:
        self._lister = lister
        self._cache: dict[str, Mapping[str, str]] = {}

    @property
    def read_any(self) -> bool:
        """Whether some namespace's labels were looked up (what was matched depended on
        them)."""
        return bool(self._cache)

    def __call__(self, ns: str) -> Mapping[str, str]:
        got = self._cache.get(ns)
        if got is None:
            obj = self._lister.get(ns) if self._lister is not None else None
            labels = dict(obj.metadata.labels) if obj is not None else {}
            labels[NAMESPACE_NAME_LABEL] = ns
            got = self._cache[ns] = labels
        return got


def no_namespace_labels(ns: str) -> Mapping[str, str]:
    """Matching with nil namespace labels, as upstream's queueing hints do."""
    return _EMPTY


_EMPTY: Mapping[str, str] = {}


# ---- label selector parsing with labels.NewRequirement's errors -----------------------------


class TermError(KschedError, ValueError):
    """An affinity term whose selector kube-scheduler cannot parse."""


_qualified_name_errors = qualified_name_errors
_label_value_errors = label_value_errors


def _go_strings(values: Sequence[str] | None) -> str:
    """A ``[]string`` as Go's ``%#v`` prints it."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(json.dumps(v, ensure_ascii=False) for v in values) + "}"


def _requirement(key: str, op: str, values: list[str], equals: bool = False) -> LabelRequirement:
    """``labels.NewRequirement`` (no field path): every problem, aggregated like Go's."""
    errs: list[str] = []
    key_errs = _qualified_name_errors(key)
    if key_errs:
        errs.append(
            f"key: Invalid value: {json.dumps(key, ensure_ascii=False)}: " + "; ".join(key_errs)
        )
    shown = _go_strings(values or None)
    if equals:
        if len(values) != 1:
            errs.append(
                f"values: Invalid value: {shown}: "
                "exact-match compatibility requires one single value"
            )
    elif op in (IN, NOT_IN):
        if not values:
            errs.append(
                f"values: Invalid value: {shown}: "
                "for 'in', 'notin' operators, values set can't be empty"
            )
    elif values:
        errs.append(
            f"values: Invalid value: {shown}: "
            "values set must be empty for exists and does not exist"
        )
    for i, v in enumerate(values):
        v_errs = _label_value_errors(v)
        if v_errs:
            errs.append(
                f"values[{i}][{key}]: Invalid value: {json.dumps(v, ensure_ascii=False)}: "
                + "; ".join(v_errs)
            )
    if errs:
        raise TermError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    return LabelRequirement(key, op, frozenset(values))


_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector(sel: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: nil selects nothing, empty selects everything."""
    if sel is None:
        return NOTHING
    if not sel.match_labels and not sel.match_expressions:
        return EVERYTHING
    reqs: list[LabelRequirement] = []
    # Go ranges over the map (random order); sorting makes the first error deterministic.
    for k, v in sorted(sel.match_labels.items()):
        reqs.append(_requirement(k, IN, [v], equals=True))
    for e in sel.match_expressions:
        op = _OPERATORS.get(e.operator)
        if op is None:
            raise TermError(f"{json.dumps(e.operator)} is not a valid label selector operator")
        reqs.append(_requirement(e.key, op, list(e.values)))
    return Selector(tuple(reqs))


# ---- compiling a pod's terms -------------------------------------------------------------------

_INTERNED: dict[bytes, AffinityTerm] = {}
_INTERN_LIMIT = 8192


def _merge_label_keys(term: PodAffinityTerm, labels: Mapping[str, str]) -> PodAffinityTerm:
    """The API server's ``applyMatchLabelKeysAndMismatchLabelKeys``."""
    if (not term.match_label_keys and not term.mismatch_label_keys) or term.label_selector is None:
        return term
    extra = [
        LabelSelectorRequirement(key=k, operator=IN, values=[labels[k]])
        for k in term.match_label_keys
        if k in labels
    ]
    extra += [
        LabelSelectorRequirement(key=k, operator=NOT_IN, values=[labels[k]])
        for k in term.mismatch_label_keys
        if k in labels
    ]
    if not extra:
        return term
    sel = msgspec.structs.replace(
        term.label_selector, match_expressions=[*term.label_selector.match_expressions, *extra]
    )
    return msgspec.structs.replace(term, label_selector=sel)


_ENCODER = msgspec.json.Encoder()


def _affinity_term(term: PodAffinityTerm, ns: str, labels: Mapping[str, str]) -> AffinityTerm:
    """``newAffinityTerm``: empty namespaces and a nil namespaceSelector mean the pod's own."""
    term = _merge_label_keys(term, labels)
    own = not term.namespaces and term.namespace_selector is None
    key = _ENCODER.encode(term) + (b"\x00" + ns.encode() if own else b"")
    got = _INTERNED.get(key)
    if got is not None:
        return got
    selector = label_selector(term.label_selector)
    ns_selector = label_selector(term.namespace_selector)
    out = AffinityTerm(
        frozenset((ns,) if own else term.namespaces), selector, term.topology_key, ns_selector
    )
    if len(_INTERNED) >= _INTERN_LIMIT:
        _INTERNED.clear()
    _INTERNED[key] = out
    return out


def _terms(
    terms: Sequence[PodAffinityTerm], ns: str, labels: Mapping[str, str]
) -> tuple[AffinityTerm, ...]:
    return tuple(_affinity_term(t, ns, labels) for t in terms)


def pod_terms(pod: PodInfo) -> PodTerms:
    """``framework.NewPodInfo``'s term lists, cached on the PodInfo.

    A list with an unparsable term is empty (as upstream's ``GetAffinityTerms``
    returns nil on error) and its problem is recorded in ``error``.
    """
    cached: Any = pod.cache.get(_CACHE_KEY)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    meta = pod.pod.metadata
    ns, labels = meta.namespace, meta.labels
    a = pod.pod.spec.affinity
    pa = a.pod_affinity if a is not None else None
    pn = a.pod_anti_affinity if a is not None else None
    if pa is None and pn is None:
        # No inter-pod (anti-)affinity: no terms to parse, only the signature.
        out = PodTerms((), (), (), (), "", (ns, frozenset(labels.items())))
        pod.cache[_CACHE_KEY] = out
        return out
    errors: list[str] = []

    def required(name: str, terms: Sequence[PodAffinityTerm]) -> tuple[AffinityTerm, ...]:
        try:
            return _terms(terms, ns, labels)
        except TermError as e:
            errors.append(f"{name}: {e}")
            return ()

    def preferred(name: str, terms: Sequence[Any]) -> tuple[WeightedTerm, ...]:
        try:
            return tuple((_affinity_term(w.pod_affinity_term, ns, labels), w.weight) for w in terms)
        except TermError as e:
            errors.append(f"{name}: {e}")
            return ()

    out = PodTerms(
        required(
            "requiredAffinityTerms",
            pa.required_during_scheduling_ignored_during_execution if pa else (),
        ),
        required(
            "requiredAntiAffinityTerms",
            pn.required_during_scheduling_ignored_during_execution if pn else (),
        ),
        preferred(
            "preferredAffinityTerms",
            pa.preferred_during_scheduling_ignored_during_execution if pa else (),
        ),
        preferred(
            "preferredAntiAffinityTerms",
            pn.preferred_during_scheduling_ignored_during_execution if pn else (),
        ),
        errors[0] if len(errors) == 1 else ("[" + ", ".join(errors) + "]" if errors else ""),
        (ns, frozenset(labels.items())),
    )
    pod.cache[_CACHE_KEY] = out
    return out


def _selects_all_namespaces_in_v136(t: AffinityTerm) -> bool:
    sel = t.ns_selector
    return not sel.nothing and bool(sel.requirements) and sel.matches(_EMPTY)


def incoming_terms(pod: PodInfo, v136_namespace_selectors: bool) -> PodTerms:
    """The pod's terms as the incoming pod of a cycle (PreFilter, PreScore, preemption's
    AddPod/RemovePod).

    v1.36's ``mergeAffinityTermNamespacesIfNotEmpty`` took the term by value: the
    namespaces its namespaceSelector lists were added (a shared set) but the selector
    stayed, and incoming terms match with nil namespace labels, so a selector matching
    an empty label set (``NotIn``, ``DoesNotExist``) selected every namespace. v1.37 takes
    a pointer and clears the selector, which is what ``pod_terms`` matches; with
    ``v136_namespace_selectors`` such terms select every namespace, as v1.36's did."""
    terms = pod_terms(pod)
    if not v136_namespace_selectors or terms.error:
        return terms
    cached: PodTerms | None = pod.cache.get(_INCOMING_V136_KEY)
    if cached is not None:
        return cached
    lists = (terms.required_affinity, terms.required_anti_affinity)
    weighted = (terms.preferred_affinity, terms.preferred_anti_affinity)
    if not any(_selects_all_namespaces_in_v136(t) for ts in lists for t in ts) and not any(
        _selects_all_namespaces_in_v136(t) for ws in weighted for t, _ in ws
    ):
        cached = terms
    else:

        def widen(t: AffinityTerm) -> AffinityTerm:
            if _selects_all_namespaces_in_v136(t):
                return replace(t, ns_selector=EVERYTHING)
            return t

        cached = PodTerms(
            tuple(widen(t) for t in terms.required_affinity),
            tuple(widen(t) for t in terms.required_anti_affinity),
            tuple((widen(t), w) for t, w in terms.preferred_affinity),
            tuple((widen(t), w) for t, w in terms.preferred_anti_affinity),
            terms.error,
            terms.signature,
        )
    pod.cache[_INCOMING_V136_KEY] = cached
    return cached
