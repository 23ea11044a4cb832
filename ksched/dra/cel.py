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
to the scheduler. Operators are cel-go's (``celops``): their semantics and error texts, so
kube-scheduler and ksched word a failing selector alike; an evaluation stops at cel-go's
cost limit (counted in celpy's tree visits) or at the caller's deadline. Unlike cel-go,
celpy does not type-check at compile time: a type error shows when the expression is
evaluated, as a runtime error.
"""

from __future__ import annotations

import contextvars
import functools
import re
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from fractions import Fraction
from functools import total_ordering
from typing import Any

import celpy
from celpy import InterpretedRunner, celtypes
from celpy.evaluation import CELEvalError, Evaluator

from ..api.quantity import QuantityError, parse_quantity
from ..api.resource import Device, DeviceAttribute
from ..util.errors import KschedError
from .celops import COST_LIMIT_EXCEEDED, OPERATORS, DomainMap, go_value, kind, no_such_overload

__all__ = [
    "CELError",
    "CELTimeout",
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
    CEL_TYPE = "kubernetes.Quantity"

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
    CEL_TYPE = "kubernetes.Semver"

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


_DIGITS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") | _DIGITS


def _go_quote(s: str) -> str:
    """Go's ``%q`` for the plain text semver errors quote."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number_error(part: str, what: str) -> str | None:
    """blang/semver's checks of a major, minor or patch number."""
    if not set(part) <= _DIGITS:
        return f"Invalid character(s) found in {what} number {_go_quote(part)}"
    if len(part) > 1 and part[0] == "0":
        return f"{what.capitalize()} number must not contain leading zeroes {_go_quote(part)}"
    if not part or int(part) >= 2**64:
        reason = "invalid syntax" if not part else "value out of range"
        return f"strconv.ParseUint: parsing {_go_quote(part)}: {reason}"
    return None


def semver_error(text: str) -> str | None:
    """Why ``semver()`` refuses ``text``, in blang/semver v4's words (``Parse``, which
    Kubernetes' CEL library calls), or None when it parses."""
    if not text:
        return "Version string empty"
    parts = text.split(".", 2)
    if len(parts) != 3:
        return "No Major.Minor.Patch elements found"
    major, minor, patch = parts
    build: list[str] = []
    pre: list[str] = []
    if "+" in patch:
        patch, _, rest = patch.partition("+")
        build = rest.split(".")
    if "-" in patch:
        patch, _, rest = patch.partition("-")
        pre = rest.split(".")
    for part, what in ((major, "major"), (minor, "minor"), (patch, "patch")):
        err = _number_error(part, what)
        if err is not None:
            return err
    for p in pre:
        if not p:
            return "Prerelease is empty"
        if set(p) <= _DIGITS:
            if len(p) > 1 and p[0] == "0":
                return f"Numeric PreRelease version must not contain leading zeroes {_go_quote(p)}"
        elif not set(p) <= _ALPHANUM:
            return f"Invalid character(s) found in prerelease {_go_quote(p)}"
    for b in build:
        if not b:
            return "Build meta data is empty"
        if not set(b) <= _ALPHANUM:
            return f"Invalid character(s) found in build meta data {_go_quote(b)}"
    return None


def _semver(arg: Any, normalize: Any = None) -> Any:
    text = str(arg)
    if normalize:
        text = _normalize_semver(text)
    error = semver_error(text)
    if error is not None:
        return _err(error)
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
    return celtypes.BoolType(semver_error(text) is None and parse_semver(text) is not None)


def _overload(fn: str, *args: Any) -> CELEvalError:
    """cel-go's text for a Kubernetes function given operands of the wrong types (selectors
    reach them with attributes of dynamic type): ``no such overload: major(string)``."""
    return no_such_overload(f"{fn}({', '.join(kind(a) for a in args)})")


def _comparable(a: Any, b: Any, fn: str) -> tuple[Any, Any] | CELEvalError:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a, b
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a, b
    return _overload(fn, a, b)


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


def _as_fraction(v: Any) -> Fraction | None:
    if isinstance(v, Quantity):
        return v.value
    if kind(v) == "int":
        return Fraction(int(v))
    return None


def _arith(a: Any, b: Any, fn: str, sign: int) -> Any:
    x, y = _as_fraction(a), _as_fraction(b)
    if not isinstance(a, Quantity) or y is None or x is None:
        return _overload(fn, a, b)
    out = x + sign * y
    return Quantity(out, str(out))


def _add(a: Any, b: Any) -> Any:
    return _arith(a, b, "add", 1)


def _sub(a: Any, b: Any) -> Any:
    return _arith(a, b, "sub", -1)


def _sign(a: Any) -> Any:
    if not isinstance(a, Quantity):
        return _overload("sign", a)
    return celtypes.IntType((a.value > 0) - (a.value < 0))


def _is_integer(a: Any) -> Any:
    if not isinstance(a, Quantity):
        return _overload("isInteger", a)
    return celtypes.BoolType(a.value.denominator == 1 and -(2**63) <= a.value < 2**63)


def _as_integer(a: Any) -> Any:
    if not isinstance(a, Quantity):
        return _overload("asInteger", a)
    if a.value.denominator != 1 or not -(2**63) <= a.value < 2**63:
        return _err("cannot convert value to integer")
    return celtypes.IntType(int(a.value))


def _as_approximate_float(a: Any) -> Any:
    if not isinstance(a, Quantity):
        return _overload("asApproximateFloat", a)
    return celtypes.DoubleType(float(a.value))


def _version_part(name: str) -> Any:
    def part(v: Any) -> Any:
        if not isinstance(v, Semver):
            return _overload(name, v)
        return celtypes.IntType(getattr(v, name))

    return part


FUNCTIONS: dict[str, Any] = {
    **OPERATORS,
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
                        s("attributes"): DomainMap(
                            {k: celtypes.MapType(v) for k, v in attrs.items()}
                        ),
                        s("capacity"): DomainMap({k: celtypes.MapType(v) for k, v in caps.items()}),
                        s("allowMultipleAllocations"): celtypes.BoolType(
                            bool(self.device.allow_multiple_allocations)
                        ),
                    }
                )
            }
        return self._activation


# cel-go's runtime cost limit of a selector (resourceapi.CELSelectorExpressionMaxCost), and
# about how many of celpy's tree visits one unit of cel-go's cost is (4 to 5 in loops over
# lists, measured against cel-go's ActualCost): ksched stops at that many visits.
COST_LIMIT = 1_000_000
VISITS_PER_COST_UNIT = 4.5
_MAX_VISITS = int(COST_LIMIT * VISITS_PER_COST_UNIT)


class _CostLimitExceeded(Exception):
    """An evaluation past the cost budget (never a CELEvalError, which celpy would keep as a
    value and carry on)."""


class CELTimeout(CELError):
    """An evaluation still running at the caller's deadline."""


# The deadline of the evaluation running in this context (0: none).
_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("cel_deadline", default=0.0)


class _CostedEvaluator(Evaluator):
    """celpy's evaluator counting every tree node it visits, macros' sub-evaluations
    included, against one shared budget."""

    def __init__(self, ast: Any, activation: Any, budget: list[int]) -> None:
        super().__init__(ast, activation)
        self.budget = budget

    def _visit_tree(self, tree: Any) -> Any:
        left = self.budget[0] = self.budget[0] - 1
        if left < 0:
            raise _CostLimitExceeded(COST_LIMIT_EXCEEDED)
        if not left & 4095:
            deadline = _DEADLINE.get()
            if deadline and time.monotonic() > deadline:
                raise CELTimeout("operation interrupted")
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: Any) -> Evaluator:
        return _CostedEvaluator(ast, self.activation, self.budget)

    def member_dot_arg(self, tree: Any) -> Any:
        """``cel.bind(name, init, expr)`` (cel-go's Bindings extension, in Kubernetes' CEL
        since 1.31: ``cel.bind(dra, device.attributes["dra.example.com"], dra.a && dra.b)``);
        every other method call or macro is celpy's."""
        bound = _binding(tree)
        if bound is None:
            return super().member_dot_arg(tree)
        name, init_tree, expr_tree = bound
        # an error binds as a value: like cel-go's lazy binding, it fails only where used
        value = self.visit(init_tree)
        try:
            return self.sub_evaluator(expr_tree).evaluate({name: value})
        except CELEvalError as e:
            return e


def _binding(tree: Any) -> tuple[str, Any, Any] | None:
    """(name, init, expr) of a ``cel.bind(...)`` call tree, else None."""
    member, method = tree.children[0], tree.children[1]
    if str(method) != "bind" or len(tree.children) != 3:
        return None
    idents = list(member.find_data("ident"))
    if len(idents) != 1 or str(idents[0].children[0]) != "cel" or member.data != "member":
        return None
    args = tree.children[2].children
    if len(args) != 3:
        return None
    names = list(args[0].find_data("ident"))
    if len(names) != 1 or list(args[0].find_data("member_dot")):
        return None
    return str(names[0].children[0]), args[1], args[2]


class _CostedRunner(InterpretedRunner):
    def evaluate(self, context: Any) -> Any:
        e = _CostedEvaluator(self.ast, self.new_activation(), [_MAX_VISITS])
        return e.evaluate(context)


_MEMBER = re.compile(r"^no such member in mapping: (['\"])(.*)\1$", re.DOTALL)


def _message(e: BaseException) -> str:
    """cel-go's text for what went wrong (the operators word theirs already, ``celops``)."""
    if isinstance(e, _CostLimitExceeded):
        return COST_LIMIT_EXCEEDED
    if isinstance(e, CELEvalError) and e.args:
        first = str(e.args[0])
        if first == "no such key" and len(e.args) > 2 and e.args[2]:
            return f"no such key: {go_value(e.args[2][0])}"
        m = _MEMBER.match(first)
        if m is not None:  # a.b on a map without b
            return f"no such key: {m.group(2)}"
        if first.endswith("does not support field selection") and e.tree is not None:
            if "ListType" in first:  # a.b on a list
                return "unsupported index type 'string' in list"
            return f"no such key: {e.tree.children[-1]}"  # a.b on a value that is no map
        if first.startswith("found no matching overload"):
            return "no such overload"
        if first.startswith("undeclared reference to "):
            # celpy appends its whole activation; cel-go's checker says this (at compile time)
            return first.split(" (in activation", 1)[0] + " (in container '')"
        if first == "return error for overflow" and e.token is not None:
            # a conversion: uint(-1), int(1e30)
            return "unsigned integer overflow" if e.token == "uint" else "integer overflow"
        return first
    if isinstance(e, RecursionError):
        return "expression nested too deeply"
    return str(e) or type(e).__name__


@functools.cache
def _environment() -> Any:
    """celpy's environment (building its parser takes a second: done on first use)."""
    return celpy.Environment(runner_class=_CostedRunner)


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

    def matches(self, device: DeviceEnv, deadline: float = 0.0) -> bool:
        """Whether ``device`` is selected; CELError on a runtime error or a non-bool,
        CELTimeout past ``deadline`` (``time.monotonic()``; 0: none), as cel-go's evaluation
        stops when the Filter's context expires."""
        cached = device.results.get(self.expression)
        if cached is not None:
            return cached
        if self.program is None:
            raise CELError(self.error)
        token = _DEADLINE.set(deadline)
        try:
            out = self.program.evaluate(device.activation())
        except CELTimeout:
            raise
        except Exception as e:
            raise CELError(_message(e)) from None
        finally:
            _DEADLINE.reset(token)
        if isinstance(out, CELEvalError):
            raise CELError(_message(out))
        if not isinstance(out, celtypes.BoolType | bool):
            raise CELError(f"CEL result of type {kind(out)} could not be converted to bool")
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
