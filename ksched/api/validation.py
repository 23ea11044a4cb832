"""apimachinery's name and label validation, with its exact messages.

One copy for the config validator, plugin args and selector parsing, so a key that
kube-scheduler rejects is rejected here with the same words everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from .quantity import QuantityError, parse_quantity
from .selectors import decimal_integer_errors

__all__ = [
    "is_qualified_name",
    "label_value_errors",
    "object_errors",
    "qualified_name_errors",
]

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME = re.compile(_QNAME_FMT)
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + r"(\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN = re.compile(_DNS_SUBDOMAIN_FMT)
_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``: the message, examples and the regex, as Go prints them."""
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def qualified_name_errors(value: str) -> list[str]:
    """``validation.IsQualifiedName``: ``[DNS-subdomain prefix/]name`` (name ≤ 63 chars)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS_SUBDOMAIN.fullmatch(prefix):
                errs.append(
                    "prefix part "
                    + _regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com")
                )
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME.fullmatch(name):
        errs.append(
            "name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_qualified_name(value: str) -> bool:
    return not qualified_name_errors(value)


def label_value_errors(value: str) -> list[str]:
    """``validation.IsValidLabelValue``."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


# apimachinery's resource.ErrFormatWrong, which the API server answers for a bad quantity
_QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def _show(v: Any) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v)


def _quantities(rl: Mapping[str, Any], path: str, errs: list[str]) -> dict[str, Fraction]:
    """The parsed quantities of a resource list; an error per unparsable or negative one
    (``ValidateNonnegativeQuantity``), worded as the API server words it."""
    out: dict[str, Fraction] = {}
    for name, raw in rl.items():
        where = f"{path}[{name}]"
        try:
            q = parse_quantity(raw)
        except QuantityError as e:
            # not of the quantity form, or of it but out of range (an int32 exponent)
            why = _QUANTITY_FORMAT if str(e).startswith("invalid quantity") else str(e)
            errs.append(f"{where}: Invalid value: {_show(raw)}: {why.split(':')[0]}")
            continue
        if q < 0:
            errs.append(f"{where}: Invalid value: {_show(raw)}: must be greater than or equal to 0")
            continue
        out[name] = q
    return out


def _requirements(res: Any, path: str, errs: list[str]) -> None:
    """``ValidateResourceRequirements``: valid, non-negative, requests within limits."""
    limits = _quantities(res.limits, f"{path}.limits", errs)
    requests = _quantities(res.requests, f"{path}.requests", errs)
    for name, q in requests.items():
        limit = limits.get(name)
        if limit is not None and q > limit:
            errs.append(
                f"{path}.requests[{name}]: Invalid value: {_show(res.requests[name])}: must be "
                f"less than or equal to {name} limit of {res.limits[name]}"
            )


_INT64 = (-(2**63), 2**63 - 1)


def _parse_int_error(value: str) -> str | None:
    """Go's ``strconv.ParseInt(value, 10, 64)`` error text, None when it parses."""
    digits = value[1:] if value[:1] in "+-" else value
    if not digits or not all("0" <= c <= "9" for c in digits):
        return f'strconv.ParseInt: parsing "{value}": invalid syntax'
    if not _INT64[0] <= int(value) <= _INT64[1]:
        return f'strconv.ParseInt: parsing "{value}": value out of range'
    return None


def _comparison_toleration_errors(tolerations: Any, errs: list[str]) -> None:
    """``ValidateTolerations`` for Gt/Lt (TaintTolerationComparisonOperators): the value a
    canonical decimal integer within int64. (Whether the API server takes the operators
    at all is its own gate's question, not the scheduler's.)"""
    for i, t in enumerate(tolerations):
        if t.operator not in ("Gt", "Lt"):
            continue
        path = f"spec.tolerations[{i}].value"
        msgs = list(decimal_integer_errors(t.value))
        parse = _parse_int_error(t.value)
        if parse is not None:
            msgs.append(parse)
        errs.extend(f"{path}: Invalid value: {_show(t.value)}: {m}" for m in msgs)


def object_errors(kind: str, obj: Any) -> list[str]:
    """What the API server would refuse in a decoded Pod, Node, PersistentVolume or
    PersistentVolumeClaim of a cluster file: resource quantities that do not parse or are
    negative, requests above limits, containers without a name, Gt/Lt tolerations whose
    value is no int64 — ``field: message`` each.
    (A subset of its validation: what the scheduler's arithmetic relies on.)"""
    errs: list[str] = []
    if kind == "Pod":
        spec = obj.spec
        for field, containers in (
            ("initContainers", spec.init_containers),
            ("containers", spec.containers),
        ):
            for i, c in enumerate(containers):
                path = f"spec.{field}[{i}]"
                if not c.name:
                    errs.append(f"{path}.name: Required value")
                _requirements(c.resources, f"{path}.resources", errs)
        _quantities(spec.overhead, "spec.overhead", errs)
        _comparison_toleration_errors(spec.tolerations, errs)
        if spec.resources is not None:
            _requirements(spec.resources, "spec.resources", errs)
    elif kind == "Node":
        _quantities(obj.status.capacity, "status.capacity", errs)
        _quantities(obj.status.allocatable, "status.allocatable", errs)
    elif kind == "PersistentVolume":
        _quantities(obj.spec.capacity, "spec.capacity", errs)
    elif kind == "PersistentVolumeClaim":
        _requirements(obj.spec.resources, "spec.resources", errs)
    return errs
