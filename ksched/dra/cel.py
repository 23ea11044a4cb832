"""Device selectors in CEL, as ``k8s.io/dynamic-resource-allocation/cel`` evaluates them.

The library is cel-python (``celpy``): pure Python, maintained, and it lets functions
take and return opaque Python values, which Kubernetes' ``quantity()`` and ``semver()``
types need (the Rust-backed bindings on PyPI cannot carry such values into an
expression). A selector sees ``device.driver``, ``device.attributes[domain][id]`` and
``device.capacity[domain][id]`` (an unqualified attribute name belongs to the driver's
domain), with Kubernetes' quantity and semver functions (``compareTo``,
``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``asInteger``, ``sign``,
``major``, ...).

Each expression is compiled once (``ExpressionCache``, least recently used first out);
evaluating it for a device is cached on that device (``DeviceEnv.results``), devices
being immutable while their ResourceSlice is unchanged, so a pod's Filter over many
nodes does not re-run the interpreter for devices it already judged. A compile or
evaluation error is a ``CELError`` with upstream's wording, never an exception escaping
to the scheduler. Unlike cel-go, celpy does not type-check at compile time: a type error
shows when the expression is evaluated, as a runtime error.
"""

from __future__ import annotations

import functools
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from fractions import Fraction
from functools import total_ordering
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from ..api.quantity import QuantityError, parse_quantity
from ..api.resource import Device, DeviceAttribute
from ..util.errors import KschedError

__all__ = [
    "CELError",
    "CompiledExpression",
    "DeviceEnv",
    "ExpressionCache",
    "Quantity",
    "Semver",
    "parse_semver",
    "qualified_name",
]

# Longer than the API server admits for a selector (10 Ki): refused before parsing.
MAX_EXPRESSION_LENGTH = 10 * 1024
# Deeply nested input makes the parser recurse; a RecursionError is caught and reported,
# but the limit must leave room for the expressions people write.
_MIN_RECURSION = 4000
if sys.getrecursionlimit() < _MIN_RECURSION:
    sys.setrecursionlimit(_MIN_RECURSION)


class CELError(KschedError):
    """A selector that failed to compile or to evaluate; ``str`` is cel-go-like text."""


@total_ordering
class Quantity:
    """A ``resource.Quantity`` value inside CEL (``quantity("40Gi")``, capacities)."""

    __slots__ = ("text", "value")

    def __init__(self, value: Fraction, text: str) -> None:
        self.value = value
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


@total_ordering
class Semver:
    """A semantic version (``semver("1.2.3")``, version attributes), ordered by precedence."""

    __slots__ = ("major", "minor", "patch", "pre", "text")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[str, ...], text: str):
        self.major, self.minor, self.patch, self.pre, self.text = major, minor, patch, pre, text

    def _key(self) -> tuple[Any, ...]:
        # A release outranks its pre-releases; numeric identifiers rank below alphanumeric.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self._key() == other._key()

    def __lt__(self, other: Semver) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


def parse_semver(text: str) -> Semver | None:
    """A strict semantic version 2.0.0, or None."""
    m = _SEMVER.match(text)
    if m is None:
        return None
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return Semver(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre, text)


def qualified_name(name: str, driver: str) -> tuple[str, str]:
    """(domain, id) of an attribute or capacity name: unqualified names are the driver's."""
    domain, sep, ident = name.rpartition("/")
    return (domain, ident) if sep else (driver, name)


# ---- the functions Kubernetes adds to CEL ------------------------------------------------


def _err(msg: str) -> CELEvalError:
    return CELEvalError(msg)


_QUANTITY_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def _quantity(arg: Any) -> Any:
    if not isinstance(arg, str):
        return _err("quantity() requires a string")
    try:
        return Quantity(parse_quantity(str(arg)), str(arg))
    except QuantityError:
        return _err(f"quantities must match the regular expression {_QUANTITY_RE!r}")


def _is_quantity(arg: Any) -> Any:
    try:
        parse_quantity(str(arg))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _semver(arg: Any, normalize: Any = None) -> Any:
    text = str(arg)
    if normalize:
        text = _normalize_semver(text)
    v = parse_semver(text)
    return _err(f"invalid semver: {arg}") if v is None else v


def _normalize_semver(text: str) -> str:
    """``semver(s, true)``: no "v" prefix, missing minor/patch as 0, no leading zeros."""
    text = text.removeprefix("v")
    m = re.match(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$", text, re.DOTALL)
    if m is None:
        return text
    parts = [str(int(p)) if p else "0" for p in m.group(1, 2, 3)]
    return ".".join(parts) + m.group(4)


def _is_semver(arg: Any, normalize: Any = None) -> Any:
    text = _normalize_semver(str(arg)) if normalize else str(arg)
    return celtypes.BoolType(parse_semver(text) is not None)


def _comparable(a: Any, b: Any, fn: str) -> tuple[Any, Any] | CELEvalError:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a, b
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a, b
    return _err(f"found no matching overload for '{fn}' applied to '({_tn(a)}, {_tn(b)})'")


def _tn(v: Any) -> str:
    if isinstance(v, Quantity):
        return "kubernetes.Quantity"
    if isinstance(v, Semver):
        return "kubernetes.Semver"
    return type(v).__name__.removesuffix("Type").lower()


def _compare_to(a: Any, b: Any) -> Any:
    ab = _comparable(a, b, "compareTo")
    if isinstance(ab, CELEvalError):
        return ab
    x, y = ab
    return celtypes.IntType(-1 if x < y else 1 if y < x else 0)


def _is_less_than(a: Any, b: Any) -> Any:
    ab = _comparable(a, b, "isLessThan")
    return ab if isinstance(ab, CELEvalError) else celtypes.BoolType(ab[0] < ab[1])


def _is_greater_than(a: Any, b: Any) -> Any:
    ab = _comparable(a, b, "isGreaterThan")
    return ab if isinstance(ab, CELEvalError) else celtypes.BoolType(ab[1] < ab[0])


def _as_fraction(v: Any, fn: str) -> Fraction | CELEvalError:
    if isinstance(v, Quantity):
        return v.value
    if isinstance(v, int) and not isinstance(v, bool):
        return Fraction(int(v))
    return _err(f"found no matching overload for '{fn}' applied to '{_tn(v)}'")


def _arith(a: Any, b: Any, fn: str, sign: int) -> Any:
    x, y = _as_fraction(a, fn), _as_fraction(b, fn)
    if isinstance(x, CELEvalError):
        return x
    if isinstance(y, CELEvalError):
        return y
    out = x + sign * y
    return Quantity(out, str(out))


def _add(a: Any, b: Any) -> Any:
    return _arith(a, b, "add", 1)


def _sub(a: Any, b: Any) -> Any:
    return _arith(a, b, "sub", -1)


def _sign(a: Any) -> Any:
    if not isinstance(a, Quantity):
        return _err(f"found no matching overload for 'sign' applied to '{_tn(a)}'")
    return celtypes.IntType((a.value > 0) - (a.value < 0))


def _is_integer(a: Any) -> Any:
    if not isinstance(a, Quantity):
        return _err(f"found no matching overload for 'isInteger' applied to '{_tn(a)}'")
    return celtypes.BoolType(a.value.denominator == 1 and -(2**63) <= a.value < 2**63)


def _as_integer(a: Any) -> Any:
    if not isinstance(a, Quantity):
        return _err(f"found no matching overload for 'asInteger' applied to '{_tn(a)}'")
    if a.value.denominator != 1 or not -(2**63) <= a.value < 2**63:
        return _err("cannot convert value to integer")
    return celtypes.IntType(int(a.value))


def _as_approximate_float(a: Any) -> Any:
    if not isinstance(a, Quantity):
        return _err(f"found no matching overload for 'asApproximateFloat' applied to '{_tn(a)}'")
    return celtypes.DoubleType(float(a.value))


def _version_part(name: str) -> Any:
    def part(v: Any) -> Any:
        if not isinstance(v, Semver):
            return _err(f"found no matching overload for '{name}' applied to '{_tn(v)}'")
        return celtypes.IntType(getattr(v, name))

    return part


FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": _compare_to,
    "isLessThan": _is_less_than,
    "isGreaterThan": _is_greater_than,
    "add": _add,
    "sub": _sub,
    "sign": _sign,
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": _as_approximate_float,
    "major": _version_part("major"),
    "minor": _version_part("minor"),
    "patch": _version_part("patch"),
}


# ---- devices as CEL sees them -------------------------------------------------------------


def _attribute_value(a: DeviceAttribute) -> Any:
    if a.int_ is not None:
        return celtypes.IntType(a.int_)
    if a.bool_ is not None:
        return celtypes.BoolType(a.bool_)
    if a.string is not None:
        return celtypes.StringType(a.string)
    if a.version is not None:
        v = parse_semver(a.version)
        return v if v is not None else celtypes.StringType(a.version)
    return None


@dataclass(slots=True)
class DeviceEnv:
    """One device's CEL activation, built on first use, and the selectors' verdicts on it."""

    driver: str
    device: Device
    results: dict[str, bool] = field(default_factory=dict)
    _activation: dict[str, Any] | None = None

    def activation(self) -> dict[str, Any]:
        if self._activation is None:
            attrs: dict[Any, Any] = {}
            for name, attr in self.device.attributes.items():
                domain, ident = qualified_name(name, self.driver)
                value = _attribute_value(attr)
                if value is not None:
                    key = celtypes.StringType(domain)
                    attrs.setdefault(key, {})[celtypes.StringType(ident)] = value
            caps: dict[Any, Any] = {}
            for name, cap in self.device.capacity.items():
                domain, ident = qualified_name(name, self.driver)
                try:
                    q = Quantity(parse_quantity(cap.value), str(cap.value))
                except QuantityError:
                    continue  # the API server admits no such capacity
                caps.setdefault(celtypes.StringType(domain), {})[celtypes.StringType(ident)] = q
            s = celtypes.StringType
            self._activation = {
                "device": celtypes.MapType(
                    {
                        s("driver"): s(self.driver),
                        s("attributes"): celtypes.MapType(
                            {k: celtypes.MapType(v) for k, v in attrs.items()}
                        ),
                        s("capacity"): celtypes.MapType(
                            {k: celtypes.MapType(v) for k, v in caps.items()}
                        ),
                        s("allowMultipleAllocations"): celtypes.BoolType(
                            bool(self.device.allow_multiple_allocations)
                        ),
                    }
                )
            }
        return self._activation


def _message(e: BaseException) -> str:
    if isinstance(e, CELEvalError) and e.args:
        first = e.args[0]
        if first == "no such key" and len(e.args) > 2 and e.args[2]:
            return f"no such key: {e.args[2][0]}"
        return str(first)
    if isinstance(e, RecursionError):
        return "expression nested too deeply"
    return str(e) or type(e).__name__


@functools.cache
def _environment() -> Any:
    """celpy's environment (building its parser takes a second: done on first use)."""
    return celpy.Environment()


class CompiledExpression:
    """One selector, compiled; ``error`` is set instead when it did not compile."""

    __slots__ = ("error", "expression", "program")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.program: Any = None
        self.error = ""
        if len(expression) > MAX_EXPRESSION_LENGTH:
            self.error = f"expression too long ({len(expression)} > {MAX_EXPRESSION_LENGTH})"
            return
        try:
            env = _environment()
            self.program = env.program(env.compile(expression), functions=FUNCTIONS)
        except Exception as e:  # celpy raises parse errors of several types
            self.error = _message(e).strip().splitlines()[0] if str(e).strip() else "syntax error"

    def matches(self, device: DeviceEnv) -> bool:
        """Whether ``device`` is selected; CELError on a runtime error or a non-bool."""
        cached = device.results.get(self.expression)
        if cached is not None:
            return cached
        if self.program is None:
            raise CELError(self.error)
        try:
            out = self.program.evaluate(device.activation())
        except Exception as e:
            raise CELError(_message(e)) from None
        if isinstance(out, CELEvalError):
            raise CELError(_message(out))
        if not isinstance(out, celtypes.BoolType | bool):
            raise CELError(f"CEL result of type {_tn(out)} could not be converted to bool")
        verdict = bool(out)
        device.results[self.expression] = verdict
        return verdict


class ExpressionCache:
    """Compiled expressions by text, the least recently used dropped past ``size``."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._items: OrderedDict[str, CompiledExpression] = OrderedDict()

    def get(self, expression: str) -> CompiledExpression:
        c = self._items.get(expression)
        if c is None:
            c = self._items[expression] = CompiledExpression(expression)
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(expression)
        return c
