"""Label selectors, node selector terms and taint/toleration matching.

Selectors are compiled once (per pod, per cycle at most) into tuples of requirements
so matching a node is a few dict lookups; invalid operators or values raise
``SelectorError`` at compile time, which callers turn into an Unschedulable status
naming the pod and field.
"""

from __future__ import annotations

import json
import re
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
    "decimal_integer_errors",
    "find_untolerated_taint",
    "parse_int64",
    "selector_from_set",
    "tolerates_taint",
    "tolerations_tolerate_taint",
]


class SelectorError(InvalidObjectError):
    """A selector with an unknown operator or values that do not fit it."""


IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"

_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def parse_int64(s: str) -> int | None:
    """Go's ``strconv.ParseInt(s, 10, 64)``: ASCII digits, optional sign, int64 range.

    Python's ``int()`` also accepts spaces, underscores and non-ASCII digits, which
    would make Gt/Lt match labels kube-scheduler treats as non-numeric.
    """
    if not _INT_RE.fullmatch(s):
        return None
    n = int(s)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def _q(v: object) -> str:
    """A bad value as Go's field errors print it (``%q`` for strings, ``%#v`` for lists)."""
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[]string{" + ", ".join(_q(x) for x in v) + "}"
    return str(v)


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
        n = parse_int64(v)
        if n is None:
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


_LABEL_OPS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
_NODE_OPS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)


def _requirement(
    key: str, op: str, values: Sequence[str], where: str, *, node: bool
) -> LabelRequirement:
    allowed = _NODE_OPS if node else _LABEL_OPS
    if op not in allowed:
        raise SelectorError(
            f"{where}.operator: Unsupported value: {_q(op)}: supported values: "
            + ", ".join(f'"{a}"' for a in allowed)
        )
    if op in (IN, NOT_IN) and not values:
        raise SelectorError(
            f"{where}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        )
    if op in (EXISTS, DOES_NOT_EXIST) and values:
        raise SelectorError(
            f"{where}.values: Forbidden: may not be specified when "
            "`operator` is 'Exists' or 'DoesNotExist'"
        )
    number = 0
    if op in (GT, LT):
        if len(values) != 1:
            raise SelectorError(
                f"{where}.values: Required value: must be specified single value "
                "when `operator` is 'Lt' or 'Gt'"
            )
        # A non-integer bound is not an API validation error: node selectors report it
        # lazily (see _value_problem), as labels.NewRequirement does upstream.
        number = parse_int64(values[0]) or 0
    return LabelRequirement(key, op, frozenset(values), number)


_LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_RE = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")


def _key_problem(key: str) -> str:
    """``validation.IsQualifiedName`` in short: an optional DNS-subdomain prefix and a name."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return "a qualified name must consist of a name part and an optional DNS subdomain prefix"
    if key.endswith("/") or (prefix == "" and "/" in key):
        return "prefix part and name part must be non-empty"
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix)):
        return "prefix part must be a valid DNS-1123 subdomain"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME_RE.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character"
        )
    return ""


def _value_problem(req: NodeSelectorRequirement, where: str) -> str:
    """What ``labels.NewRequirement`` rejects but API validation lets through, or "".

    kube-scheduler treats a node selector term with such a requirement as matching no
    node (``LazyErrorNodeSelector``) instead of failing the pod, so these are reported
    on the term rather than raised.
    """
    key_msg = _key_problem(req.key)
    if key_msg:
        return f"{where}.key: Invalid value: {_q(req.key)}: {key_msg}"
    if req.operator in (GT, LT):
        for i, v in enumerate(req.values):
            if parse_int64(v) is None:
                return (
                    f"{where}.values[{i}]: Invalid value: {_q(v)}: "
                    "for 'Gt', 'Lt' operators, the value must be an integer"
                )
    for i, v in enumerate(req.values):
        msgs = []
        if len(v) > 63:
            msgs.append("must be no more than 63 characters")
        if not _LABEL_VALUE_RE.fullmatch(v):
            msgs.append(_LABEL_VALUE_MSG)
        if msgs:
            return f"{where}.values[{i}]: Invalid value: {_q(v)}: " + "; ".join(msgs)
    return ""


def compile_label_selector(sel: LabelSelector | None, where: str = "labelSelector") -> Selector:
    """``metav1.LabelSelectorAsSelector``: nil selects nothing, empty selects everything."""
    if sel is None:
        return NOTHING
    reqs = [LabelRequirement(k, IN, frozenset((v,))) for k, v in sorted(sel.match_labels.items())]
    for i, e in enumerate(sel.match_expressions):
        w = f"{where}.matchExpressions[{i}]"
        reqs.append(_requirement(e.key, e.operator, e.values, w, node=False))
    return Selector(tuple(reqs))


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: every key=value must match (empty set selects everything)."""
    return Selector(
        tuple(LabelRequirement(k, IN, frozenset((v,))) for k, v in sorted(labels.items()))
    )


@dataclass(frozen=True, slots=True)
class CompiledTerm:
    """One NodeSelectorTerm: label requirements AND metadata.name field requirements.

    ``error`` is set for a term whose values kube-scheduler cannot parse (e.g. an
    invalid label value); such a term matches no node, as upstream.
    """

    labels: tuple[LabelRequirement, ...]
    fields: tuple[LabelRequirement, ...]
    error: str = ""

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.error or (not self.labels and not self.fields):
            return False  # an empty or unparsable term selects no node
        for r in self.labels:
            if not r.matches(labels):
                return False
        # Upstream matches fields only when the node has a name (extractNodeFields).
        if self.fields and node_name:
            fields = {"metadata.name": node_name}
            for r in self.fields:
                if not r.matches(fields):
                    return False
        return True


def _node_reqs(
    reqs: Iterable[NodeSelectorRequirement], where: str
) -> tuple[tuple[LabelRequirement, ...], str]:
    """Compiled label requirements and the first lazily reported problem ("" if none)."""
    out: list[LabelRequirement] = []
    error = ""
    for i, r in enumerate(reqs):
        w = f"{where}[{i}]"
        out.append(_requirement(r.key, r.operator, r.values, w, node=True))
        if not error:
            error = _value_problem(r, w)
    return tuple(out), error


def _field_reqs(
    reqs: Iterable[NodeSelectorRequirement], where: str
) -> tuple[LabelRequirement, ...]:
    """``ValidateNodeFieldSelectorRequirement``: only metadata.name In/NotIn with one value."""
    out: list[LabelRequirement] = []
    for i, r in enumerate(reqs):
        w = f"{where}[{i}]"
        if r.operator not in (IN, NOT_IN):
            raise SelectorError(
                f"{w}.operator: Invalid value: {_q(r.operator)}: not a valid selector operator"
            )
        if len(r.values) != 1:
            raise SelectorError(
                f"{w}.values: Required value: must be only one value when "
                "`operator` is 'In' or 'NotIn' for node field selector"
            )
        if r.key != "metadata.name":
            raise SelectorError(
                f"{w}.key: Invalid value: {_q(r.key)}: not a valid field selector key"
            )
        out.append(LabelRequirement(r.key, r.operator, frozenset(r.values)))
    return tuple(out)


def compile_node_selector_term(term: NodeSelectorTerm, where: str) -> CompiledTerm:
    labels, error = _node_reqs(term.match_expressions, f"{where}.matchExpressions")
    fields = _field_reqs(term.match_fields, f"{where}.matchFields")
    return CompiledTerm(labels, fields, error)


@dataclass(frozen=True, slots=True)
class CompiledNodeSelector:
    """Terms are ORed (``nodeaffinity.NodeSelector``)."""

    terms: tuple[CompiledTerm, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)

    @property
    def error(self) -> str:
        """The first unparsable term's problem ("" if every term parsed)."""
        return next((t.error for t in self.terms if t.error), "")


def compile_node_selector(sel: NodeSelector, where: str) -> CompiledNodeSelector:
    return CompiledNodeSelector(
        tuple(
            compile_node_selector_term(t, f"{where}.nodeSelectorTerms[{i}]")
            for i, t in enumerate(sel.node_selector_terms)
        )
    )


DECIMAL_INTEGER_MSG = "must be a valid decimal integer in canonical form"


def decimal_integer_errors(value: str) -> list[str]:
    """apimachinery's ``content.IsDecimalInteger``: "0" or an optional "-" then a digit
    1-9 then digits (no "+", no leading zeros, no "-0")."""
    if not value:
        return ["must be non-empty"]
    digits = value[1:] if value[0] == "-" else value
    if value == "0" or (digits[:1] in tuple("123456789") and all("0" <= c <= "9" for c in digits)):
        return []
    return [DECIMAL_INTEGER_MSG]


def _compare(toleration_value: str, taint_value: str, op: str) -> bool:
    """``compareNumericValues``: both values int64; an unparsable one never matches."""
    if decimal_integer_errors(toleration_value) or decimal_integer_errors(taint_value):
        return False
    tol = parse_int64(toleration_value)
    tnt = parse_int64(taint_value)
    if tol is None or tnt is None:
        return False
    return tnt < tol if op == "Lt" else tnt > tol


def tolerates_taint(t: Toleration, taint: Taint, comparison: bool = False) -> bool:
    """``v1.Toleration.ToleratesTaint``; ``comparison``: the TaintTolerationComparisonOperators
    gate (``Lt``/``Gt`` compare the values as int64; off, they match nothing)."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    op = t.operator
    if op in ("", "Equal"):
        return t.value == taint.value
    if op == "Exists":
        return True
    if op in ("Lt", "Gt"):
        return comparison and _compare(t.value, taint.value, op)
    return False


def tolerations_tolerate_taint(
    tolerations: Sequence[Toleration], taint: Taint, comparison: bool = False
) -> bool:
    return any(tolerates_taint(t, taint, comparison) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    include: Callable[[Taint], bool] | None = None,
    comparison: bool = False,
) -> Taint | None:
    """``v1helper.FindMatchingUntoleratedTaint``: the first included taint no toleration covers."""
    for taint in taints:
        if include is not None and not include(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint, comparison):
            return taint
    return None
