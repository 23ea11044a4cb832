"""CEL's operators as cel-go (v0.26, Kubernetes v1.36's) evaluates them, with its error texts.

celpy's operators differ from cel-go's where selectors see values of dynamic type (device
attributes): celpy raises on ``"a" == 1`` and ``1 < 2.5`` where cel-go answers false and
true, and its errors read ``modulus or divide by zero`` or ``found no matching overload for
...`` where kube-scheduler's say ``division by zero``, ``modulus by zero``, ``no such
overload``. These functions replace celpy's operators (``FUNCTIONS``, passed to each
program) so both the verdicts and the texts are cel-go's.

cel-go answers a type mismatch with ``no such overload: <function>`` when the left operand's
type lacks the operator's trait (a bool has no ``Adder``), and with a bare ``no such
overload`` when it has it but not for that right operand (``1 + "a"``) or when the left
operand is a string (strings receive every call). ``_PLAIN`` lists, per operator, the types
that answer bare; the table was read off cel-go with every pair of operand types.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

__all__ = [
    "COST_LIMIT_EXCEEDED",
    "OPERATORS",
    "DomainMap",
    "go_value",
    "kind",
    "no_such_overload",
]

COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"

_MIN_INT64 = -(2**63)
_NUMERIC = frozenset({"int", "uint", "double"})
_ORDERED = frozenset({"int", "uint", "double", "string", "bool", "bytes"})
# Per operator: left operand types whose mismatch cel-go words as a bare "no such overload".
_PLAIN: dict[str, frozenset[str]] = {
    "_+_": frozenset({"int", "uint", "double", "string", "list", "bytes"}),
    "_-_": frozenset({"int", "uint", "double", "string"}),
    "_*_": frozenset({"int", "uint", "double", "string"}),
    "_/_": frozenset({"int", "uint", "double", "string"}),
    "_%_": frozenset({"int", "uint", "string"}),
    "-_": frozenset({"int", "double", "string", "bool"}),
    **dict.fromkeys(("_<_", "_<=_", "_>_", "_>=_"), _ORDERED),
}
# The operand type pairs each arithmetic operator takes.
_ARITH: dict[str, frozenset[str]] = {
    "_+_": frozenset({"int", "uint", "double", "string", "list", "bytes"}),
    "_-_": _NUMERIC,
    "_*_": _NUMERIC,
    "_/_": _NUMERIC,
    "_%_": frozenset({"int", "uint"}),
}


def kind(v: Any) -> str:
    """The CEL type of a value as cel-go names it (``other``: one these operators leave to
    celpy, timestamps and durations). Kubernetes' types name theirs in ``CEL_TYPE``."""
    named = getattr(type(v), "CEL_TYPE", None)
    if named is not None:
        return str(named)
    if isinstance(v, celtypes.BoolType | bool):
        return "bool"
    if isinstance(v, celtypes.UintType):
        return "uint"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bytes):
        return "bytes"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    if v is None or isinstance(v, celtypes.NullType):
        return "null_type"
    return "other"


def go_value(v: Any) -> str:
    """``%v`` of a CEL value in cel-go's messages (``no such key: numa``)."""
    if isinstance(v, celtypes.BoolType | bool):
        return "true" if v else "false"
    return str(v)


def _plain(v: Any) -> int | float:
    """A CEL number as Python's own, which compares across int and float exactly."""
    return float(v) if isinstance(v, float) else int(v)


def no_such_overload(fn: str = "") -> CELEvalError:
    return CELEvalError(f"no such overload: {fn}" if fn else "no such overload")


def _mismatch(fn: str, left: Any) -> CELEvalError:
    return no_such_overload("" if kind(left) in _PLAIN.get(fn, ()) else fn)


def _overflow(k: str) -> CELEvalError:
    return CELEvalError("unsigned integer overflow" if k == "uint" else "integer overflow")


def _arith(fn: str, op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        for v in (a, b):
            if isinstance(v, CELEvalError):
                return v
        ka, kb = kind(a), kind(b)
        if "other" in (ka, kb):
            return op(a, b)  # timestamps and durations: celpy's own
        if ka != kb or ka not in _ARITH[fn]:
            return _mismatch(fn, a)
        if fn in ("_/_", "_%_") and ka == "int" and b == -1 and a == _MIN_INT64:
            return _overflow(ka)  # Go's checked division; celpy's % answers 0
        try:
            return op(a, b)
        except ZeroDivisionError:
            return CELEvalError("modulus by zero" if fn == "_%_" else "division by zero")
        except (ValueError, OverflowError):
            return _overflow(ka)

    return apply


def _neg(a: Any) -> Any:
    if isinstance(a, CELEvalError):
        return a
    k = kind(a)
    if k == "other":
        return -a
    if k not in ("int", "double"):
        return _mismatch("-_", a)
    try:
        return -a
    except (ValueError, OverflowError):
        return _overflow(k)


def _not(a: Any) -> Any:
    if isinstance(a, CELEvalError):
        return a
    if kind(a) != "bool":
        return no_such_overload()
    return celtypes.BoolType(not a)


def equal(a: Any, b: Any) -> Any:
    """cel-go's heterogeneous equality: numbers by value whatever their type, lists and maps
    element by element, other types never equal; a Kubernetes quantity or semver on the left
    compared with another non-null type has no such overload."""
    ka, kb = kind(a), kind(b)
    if ka in _NUMERIC and kb in _NUMERIC:
        return _plain(a) == _plain(b)  # celpy's own numbers refuse other numeric types
    if ka != kb:
        if ka in ("kubernetes.Quantity", "kubernetes.Semver") and kb != "null_type":
            return no_such_overload()
        return False
    if ka == "list":
        return len(a) == len(b) and all(equal(x, y) is True for x, y in zip(a, b, strict=True))
    if ka == "map":
        return a.keys() == b.keys() and all(equal(a[k], b[k]) is True for k in a)
    return bool(a == b)


def _eq(a: Any, b: Any) -> Any:
    for v in (a, b):
        if isinstance(v, CELEvalError):
            return v
    r = equal(a, b)
    return r if isinstance(r, CELEvalError) else celtypes.BoolType(r)


def _ne(a: Any, b: Any) -> Any:
    for v in (a, b):
        if isinstance(v, CELEvalError):
            return v
    return celtypes.BoolType(equal(a, b) is not True)  # cel-go: no error here


def _order(fn: str, op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        for v in (a, b):
            if isinstance(v, CELEvalError):
                return v
        ka, kb = kind(a), kind(b)
        if "other" in (ka, kb):
            return celtypes.BoolType(op(a, b))
        if ka in _NUMERIC and kb in _NUMERIC:
            return celtypes.BoolType(op(_plain(a), _plain(b)))
        if ka == kb and ka in _ORDERED:
            return celtypes.BoolType(op(a, b))
        return _mismatch(fn, a)

    return apply


def _in(a: Any, b: Any) -> Any:
    for v in (a, b):
        if isinstance(v, CELEvalError):
            return v
    kb = kind(b)
    if kb == "list":
        return celtypes.BoolType(any(equal(a, x) is True for x in b))
    if kb == "map":
        ka = kind(a)
        if ka in _NUMERIC:  # int and uint keys find each other; doubles only doubles
            ints = ("int", "uint")
            return celtypes.BoolType(
                any(
                    (kind(k) == ka or (ka in ints and kind(k) in ints)) and _plain(k) == _plain(a)
                    for k in b
                )
            )
        try:
            return celtypes.BoolType(a in b)
        except TypeError:  # an unhashable key
            return celtypes.BoolType(False)
    return no_such_overload()


def _logic(is_and: bool) -> Callable[[Any, Any], Any]:
    """``&&``/``||``: either side decides when it can (false for and, true for or), errors
    commute; otherwise the first side that is not a bool is the error."""
    decisive = not is_and

    def apply(a: Any, b: Any) -> Any:
        for v in (a, b):
            if kind(v) == "bool" and bool(v) is decisive:
                return celtypes.BoolType(decisive)
        for v in (a, b):
            if isinstance(v, CELEvalError):
                return v
            if kind(v) != "bool":
                return no_such_overload()
        return celtypes.BoolType(not decisive)

    return apply


def _size(a: Any) -> Any:
    if isinstance(a, CELEvalError):
        return a
    if kind(a) not in ("string", "bytes", "list", "map"):
        return no_such_overload("size")
    return celtypes.IntType(len(a))


def _index(container: Any, key: Any) -> Any:
    """``a[b]``: cel-go's texts for a missing key, an index out of range, a wrong index type."""
    for v in (container, key):
        if isinstance(v, CELEvalError):
            return v
    kc, kk = kind(container), kind(key)
    if kc == "list":
        if kk not in ("int", "uint"):
            return CELEvalError(f"unsupported index type '{kk}' in list")
        if not 0 <= key < len(container):
            return CELEvalError(f"index out of bounds: {go_value(key)}")
        return container[key]
    if kc == "map":
        try:
            return container[key]
        except (KeyError, TypeError):
            pass
    return CELEvalError(f"no such key: {go_value(key)}")


class DomainMap(celtypes.MapType):
    """``device.attributes`` and ``device.capacity``: upstream's ``mapper`` answers a domain
    no attribute has with an empty map, so ``device.attributes["other.com"].model`` says
    ``no such key: model`` and ``"x" in device.attributes["other.com"]`` is false."""

    def __missing__(self, key: Any) -> Any:
        return _EMPTY


_EMPTY = celtypes.MapType({})

OPERATORS: dict[str, Any] = {
    "_+_": _arith("_+_", operator.add),
    "_-_": _arith("_-_", operator.sub),
    "_*_": _arith("_*_", operator.mul),
    "_/_": _arith("_/_", operator.truediv),
    "_%_": _arith("_%_", operator.mod),
    "-_": _neg,
    "!_": _not,
    "_==_": _eq,
    "_!=_": _ne,
    "_<_": _order("_<_", operator.lt),
    "_<=_": _order("_<=_", operator.le),
    "_>_": _order("_>_", operator.gt),
    "_>=_": _order("_>=_", operator.ge),
    "_in_": _in,
    "_&&_": _logic(True),
    "_||_": _logic(False),
    "size": _size,
    "_[_]": _index,
}
