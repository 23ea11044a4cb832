"""Label selectors, node selector terms and taint/toleration matching.

Selectors are compiled once (per pod, per cycle at most) into tuples of requirements
so matching a node is a few dict lookups; invalid operators or values raise
``SelectorError`` at compile time, which callers turn into an Unschedulable status
naming the pod and field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .objects import (
    InvalidObjectError,
    LabelSelector,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "CompiledNodeSelector",
    "CompiledTerm",
    "LabelRequirement",
    "Selector",
    "SelectorError",
    "compile_label_selector",
    "compile_node_selector",
    "compile_node_selector_term",
    "find_untolerated_taint",
    "selector_from_set",
    "tolerates_taint",
    "tolerations_tolerate_taint",
]


class SelectorError(InvalidObjectError):
    """A selector with an unknown operator or values that do not fit it."""


IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    op: str
    values: frozenset[str]
    number: int = 0  # the bound for Gt/Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == IN:
            v = labels.get(self.key)
            return v is not None and v in self.values
        if op == NOT_IN:
            v = labels.get(self.key)
            return v is None or v not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        v = labels.get(self.key)
        if v is None:
            return False
        try:
            n = int(v)
        except ValueError:
            return False
        return n > self.number if op == GT else n < self.number


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; ``nothing`` selects no object at all."""

    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.nothing and not self.requirements


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def _requirement(key: str, op: str, values: Sequence[str], where: str, *, node: bool) -> LabelRequirement:
    allowed = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT) if node else (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
    if op not in allowed:
        raise SelectorError(f"{where}.operator: Unsupported value: {op!r}: supported values: "
                            + ", ".join(f'"{a}"' for a in allowed))
    if op in (IN, NOT_IN) and not values:
        raise SelectorError(f"{where}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
    if op in (EXISTS, DOES_NOT_EXIST) and values:
        raise SelectorError(f"{where}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    number = 0
    if op in (GT, LT):
        if len(values) != 1:
            raise SelectorError(f"{where}.values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'")
        try:
            number = int(values[0])
        except ValueError:
            raise SelectorError(f"{where}.values[0]: Invalid value: {values[0]!r}: must be an integer") from None
    return LabelRequirement(key, op, frozenset(values), number)


def compile_label_selector(sel: LabelSelector | None, where: str = "labelSelector") -> Selector:
    """``metav1.LabelSelectorAsSelector``: nil selects nothing, empty selects everything."""
    if sel is None:
        return NOTHING
    reqs = [LabelRequirement(k, IN, frozenset((v,))) for k, v in sorted(sel.match_labels.items())]
    for i, e in enumerate(sel.match_expressions):
        reqs.append(_requirement(e.key, e.operator, e.values, f"{where}.matchExpressions[{i}]", node=False))
    return Selector(tuple(reqs))


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: every key=value must match (empty set selects everything)."""
    return Selector(tuple(LabelRequirement(k, IN, frozenset((v,))) for k, v in sorted(labels.items())))


@dataclass(frozen=True, slots=True)
class CompiledTerm:
    """One NodeSelectorTerm: label requirements AND metadata.name field requirements."""

    labels: tuple[LabelRequirement, ...]
    fields: tuple[LabelRequirement, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self.labels and not self.fields:
            return False  # an empty term selects no node
        for r in self.labels:
            if not r.matches(labels):
                return False
        if self.fields:
            fields = {"metadata.name": node_name}
            for r in self.fields:
                if not r.matches(fields):
                    return False
        return True


def _node_reqs(reqs: Iterable[NodeSelectorRequirement], where: str) -> tuple[LabelRequirement, ...]:
    return tuple(_requirement(r.key, r.operator, r.values, f"{where}[{i}]", node=True) for i, r in enumerate(reqs))


def compile_node_selector_term(term: NodeSelectorTerm, where: str) -> CompiledTerm:
    fields = _node_reqs(term.match_fields, f"{where}.matchFields")
    for i, f in enumerate(fields):
        if f.key != "metadata.name":
            raise SelectorError(f"{where}.matchFields[{i}].key: Invalid value: {f.key!r}: not a valid field selector key")
        if f.op not in (IN, NOT_IN):
            raise SelectorError(f"{where}.matchFields[{i}].operator: Invalid value: {f.op!r}: not a valid selector operator")
        if len(f.values) != 1:
            raise SelectorError(f"{where}.matchFields[{i}].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector")
    return CompiledTerm(_node_reqs(term.match_expressions, f"{where}.matchExpressions"), fields)


@dataclass(frozen=True, slots=True)
class CompiledNodeSelector:
    """Terms are ORed (``nodeaffinity.NodeSelector``)."""

    terms: tuple[CompiledTerm, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)


def compile_node_selector(sel: NodeSelector, where: str) -> CompiledNodeSelector:
    return CompiledNodeSelector(tuple(
        compile_node_selector_term(t, f"{where}.nodeSelectorTerms[{i}]") for i, t in enumerate(sel.node_selector_terms)
    ))


def tolerates_taint(t: Toleration, taint: Taint) -> bool:
    """``v1.Toleration.ToleratesTaint``."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    if t.operator in ("", "Equal"):
        return t.value == taint.value
    return t.operator == "Exists"


def tolerations_tolerate_taint(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(tolerates_taint(t, taint) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    include: Callable[[Taint], bool] | None = None,
) -> Taint | None:
    """``v1helper.FindMatchingUntoleratedTaint``: the first included taint no toleration covers."""
    for taint in taints:
        if include is not None and not include(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None
