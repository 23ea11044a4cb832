"""Kubernetes resource quantities with exact arithmetic.

Quantities are parsed into ``fractions.Fraction`` so that ``0.1`` CPU is exactly 100
millicores and ``1e3`` is exactly 1000; rounding happens only where Kubernetes rounds:
parsing rounds up to a whole nanounit (and caps binary-suffixed amounts at the largest
int64), ``MilliValue()`` and ``Value()`` round up, all away from zero, and saturate at
the int64 bounds as upstream's ``ScaledValue`` does (``1e18`` cpu is ``2**63 - 1``
millicores, ``-1e18`` is ``-2**63``).

Past that point kube-scheduler computes in Go's int64, which wraps round: ``wrap_int64``
reproduces it for the sums and products built from these values.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from ..util.errors import KschedError

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "QuantityError",
    "format_quantity",
    "milli_value",
    "parse_quantity",
    "saturate_int64",
    "value",
    "wrap_int64",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def saturate_int64(x: int) -> int:
    """``x`` clamped to int64, as ``ScaledValue`` saturates a quantity outside it."""
    return INT64_MAX if x > INT64_MAX else INT64_MIN if x < INT64_MIN else x


def wrap_int64(x: int) -> int:
    """``x`` as a Go int64 holds it: sums and products wrap round modulo 2**64."""
    if INT64_MIN <= x <= INT64_MAX:
        return x
    return (x + 2**63) % 2**64 - 2**63


class QuantityError(KschedError, ValueError):
    """A string that is not a Kubernetes quantity."""


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# <sign><digits>[.<digits>] then a suffix: binary SI, decimal SI, or a decimal exponent.
_RE = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))$"
)


_NANO = Fraction(1, 10**9)
# ParseQuantity caps BinarySI amounts at the largest int64 (``maxAllowed``).
_MAX_BINARY = Fraction(2**63 - 1)
# Decimal amounts are not capped, but one of 10**_HUGE or more saturates every int64
# conversion (and any sum of a few such), so a larger exponent need not be expanded.
_HUGE = 64


def _to_nano(q: Fraction) -> Fraction:
    """Round away from zero to a whole number of nanounits, as ParseQuantity does."""
    if q.denominator == 1 or (10**9) % q.denominator == 0:
        return q
    return _round_away(q * 10**9) * _NANO


@lru_cache(maxsize=4096)
def _parse_str(text: str) -> Fraction:
    m = _RE.match(text)
    if m is None:
        raise QuantityError(f"invalid quantity {text!r}")
    num = Fraction(m.group("num"))
    if m.group("bin"):
        q = num * _BINARY[m.group("bin")]
        if abs(q) > _MAX_BINARY:
            q = _MAX_BINARY if q > 0 else -_MAX_BINARY
        return _to_nano(q)
    if m.group("exp"):
        exp = int(m.group("exp")[1:])
        if not -(2**31) <= exp < 2**31:  # the exponent is an int32 upstream
            raise QuantityError(f"quantity exponent out of range: {text!r}")
        if num == 0:
            return Fraction(0)
        sign = 1 if num > 0 else -1
        whole, _, frac = m.group("num").lstrip("+-").partition(".")
        # 10**-len(frac) <= |num| < 10**len(whole digits)
        if exp + len(whole.lstrip("0")) < -9:
            return sign * _NANO  # below a nanounit: rounds up to 1n
        if exp - len(frac) > _HUGE:
            return sign * Fraction(10**_HUGE)  # saturates every int64 conversion
        return _to_nano(num * Fraction(10) ** exp)
    return _to_nano(num * _DECIMAL[m.group("dec") or ""])


def parse_quantity(raw: object) -> Fraction:
    """Parse a quantity from a manifest value (string, or a YAML int/float)."""
    if isinstance(raw, bool):
        raise QuantityError(f"quantity must be a string or number, not {raw!r}")
    if isinstance(raw, int):
        return Fraction(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise QuantityError(f"quantity must be finite: {raw!r}")
        # YAML floats are decimal text; go through repr to keep 0.1 == 1/10.
        return _parse_str(repr(raw))
    if isinstance(raw, str):
        return _parse_str(raw.strip()) if raw != raw.strip() else _parse_str(raw)
    raise QuantityError(f"quantity must be a string or number, not {type(raw).__name__}")


def _round_away(q: Fraction) -> int:
    return math.ceil(q) if q >= 0 else math.floor(q)


def milli_value(raw: object) -> int:
    """``resource.Quantity.MilliValue()``: thousandths, rounded up, saturated to int64."""
    return saturate_int64(_round_away(parse_quantity(raw) * 1000))


def value(raw: object) -> int:
    """``resource.Quantity.Value()``: whole units, rounded up, saturated to int64."""
    return saturate_int64(_round_away(parse_quantity(raw)))


_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def format_quantity(q: Fraction) -> str:
    """A quantity string for a parsed value (a multiple of a nanounit): whole numbers with
    the largest binary suffix that divides them, as ``NewQuantity(v, BinarySI)`` prints,
    fractions in m, u or n. The API server stores its own canonical form of either."""
    if q.denominator == 1:
        n, i = int(q), 0
        while n and abs(n) >= 1024 and n % 1024 == 0 and i < len(_BINARY_SUFFIXES) - 1:
            n, i = n // 1024, i + 1
        return f"{n}{_BINARY_SUFFIXES[i]}"
    for suffix, scale in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        scaled = q * scale
        if scaled.denominator == 1 or suffix == "n":
            return f"{_round_away(scaled)}{suffix}"
    raise AssertionError("unreachable")
