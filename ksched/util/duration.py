"""Go's ``time.Duration`` text: ``ParseDuration`` and ``Duration.String``, exactly.

Config files and plugin args carry durations as Go writes them ("1m30s", "500ms"); ksched
holds them as float seconds. One parser and one formatter, so every message and every
written config prints a duration the way kube-scheduler would.
"""

from __future__ import annotations

import re

__all__ = ["format_duration", "parse_duration", "parse_duration_ns"]

_NS = 1
_US = 1000 * _NS
_MS = 1000 * _US
_S = 1000 * _MS
_UNITS = {
    "ns": _NS,
    "us": _US,
    "µs": _US,  # U+00B5 micro sign
    "μs": _US,  # U+03BC Greek mu
    "ms": _MS,
    "s": _S,
    "m": 60 * _S,
    "h": 3600 * _S,
}
_MAX_NS = 2**63 - 1
_COMPONENT = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def parse_duration_ns(text: str) -> int:
    """Go's ``time.ParseDuration`` in integer nanoseconds (exact, no float drift)."""
    s = text
    neg = False
    if s[:1] in ("+", "-"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(s):
        m = _COMPONENT.match(s, pos)
        assert m is not None  # the pattern matches the empty string
        whole, frac, unit = m.group(1), m.group(2), m.group(3)
        if not whole and not frac:
            raise ValueError(f"invalid duration {text!r}")
        if not unit:
            raise ValueError(f"missing unit in duration {text!r}")
        if unit not in _UNITS:
            raise ValueError(f"unknown unit {unit!r} in duration {text!r}")
        scale = _UNITS[unit]
        value = int(whole or "0") * scale
        if frac:
            # Go truncates the fractional part towards zero at nanosecond precision.
            value += int(frac) * scale // 10 ** len(frac)
        total += value
        if total > _MAX_NS:
            raise ValueError(f"invalid duration {text!r}")
        pos = m.end()
    return -total if neg else total


def parse_duration(text: str) -> float:
    """A Go duration string ("1m30s", "500ms", "2h", "1.5s") in seconds."""
    return parse_duration_ns(text) / _S


def _frac(v: int, prec: int) -> tuple[str, int]:
    """Go's fmtFrac: the fractional digits of v/10**prec without trailing zeros."""
    digits = ""
    printed = False
    for _ in range(prec):
        d = v % 10
        printed = printed or d != 0
        if printed:
            digits = str(d) + digits
        v //= 10
    return ("." + digits if printed else ""), v


def format_duration(seconds: float) -> str:
    """Seconds as Go's ``Duration.String`` would print them ("1m30s", "500ms", "2h0m0s")."""
    ns = round(seconds * _S)
    neg = ns < 0
    u = -ns if neg else ns
    if u == 0:
        return "0s"
    if u < _S:
        if u < _US:
            prec, unit = 0, "ns"
        elif u < _MS:
            prec, unit = 3, "µs"
        else:
            prec, unit = 6, "ms"
        frac, whole = _frac(u, prec)
        out = f"{whole}{frac}{unit}"
    else:
        frac, whole = _frac(u, 9)
        out = f"{whole % 60}{frac}s"
        whole //= 60
        if whole:
            out = f"{whole % 60}m{out}"
            whole //= 60
            if whole:
                out = f"{whole}h{out}"
    return "-" + out if neg else out
