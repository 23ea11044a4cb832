"""Label and field selectors with the grammar and error texts of kube-apiserver.

Selectors are compiled once per request (or watch) into predicates, so matching an object on
every watch event costs a few dict lookups.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

JSONObj = dict[str, Any]


class SelectorError(ValueError):
    """A selector string the server rejects with 400 BadRequest."""


@dataclass(frozen=True)
class _LabelReq:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        want = int(self.values[0])
        return have > want if self.op == "gt" else have < want


_KEY_RE = re.compile(
    r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside an `in (...)` value set."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _check_key(key: str, whole: str) -> str:
    if not key or len(key) > 316 or not _KEY_RE.match(key):
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r} in {whole!r}")
    return key


_SET_RE = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")
_OP_RE = re.compile(r"^([^!=<>\s]+)\s*(==|=|!=|>|<)\s*(.*)$")


def _parse_label_requirement(part: str, whole: str) -> _LabelReq:
    part = part.strip()
    m = _SET_RE.match(part)
    if m:
        values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
        return _LabelReq(_check_key(m.group(1), whole), m.group(2), values)
    if part.startswith("!"):
        return _LabelReq(_check_key(part[1:].strip(), whole), "!", ())
    m = _OP_RE.match(part)
    if m:
        key, op, value = m.group(1), m.group(2), m.group(3).strip()
        if op in (">", "<"):
            try:
                int(value)
            except ValueError:
                raise SelectorError(
                    f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be "
                    f"an integer: {value!r}"
                ) from None
            return _LabelReq(_check_key(key, whole), "gt" if op == ">" else "lt", (value,))
        return _LabelReq(_check_key(key, whole), "!=" if op == "!=" else "=", (value,))
    return _LabelReq(_check_key(part, whole), "exists", ())


@dataclass(frozen=True)
class LabelSelector:
    """A compiled `labelSelector`; an empty selector matches everything."""

    requirements: tuple[_LabelReq, ...]

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        if text is None or not text.strip():
            return cls(())
        reqs = tuple(_parse_label_requirement(p, text) for p in _split_top_level(text))
        return cls(reqs)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if not self.requirements:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)


def _unescape_field_value(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            out.append(value[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _dotted(path: str) -> Callable[[Mapping[str, Any]], str]:
    keys = tuple(path.split("."))

    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for k in keys:
            # API objects are plain dicts: skip the (slow) ABC check for them
            if cur.__class__ is not dict and not isinstance(cur, Mapping):
                return ""
            cur = cur.get(k)
            if cur is None:
                return ""
        if cur.__class__ is str:
            return cur
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


FieldGetter = Callable[[Mapping[str, Any]], str]


def field_getters(paths: Mapping[str, str]) -> dict[str, FieldGetter]:
    """Build getters for a resource's field labels (label -> dotted object path)."""
    return {label: _dotted(path) for label, path in paths.items()}


@dataclass(frozen=True)
class FieldSelector:
    """A compiled `fieldSelector` over the field labels the resource supports."""

    requirements: tuple[tuple[FieldGetter, bool, str], ...]

    @classmethod
    def parse(cls, text: str | None, getters: Mapping[str, FieldGetter]) -> FieldSelector:
        if text is None or not text.strip():
            return cls(())
        reqs: list[tuple[FieldGetter, bool, str]] = []
        for part in _split_unescaped(text, ","):
            part = part.strip()
            if not part:
                continue
            for op in ("!=", "==", "="):
                idx = _find_unescaped(part, op)
                if idx >= 0:
                    label = part[:idx].strip()
                    value = _unescape_field_value(part[idx + len(op) :].strip())
                    break
            else:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
            getter = getters.get(label)
            if getter is None:
                raise SelectorError(f"field label not supported: {label}")
            reqs.append((getter, op != "!=", value))
        return cls(tuple(reqs))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for get, eq, value in self.requirements:  # noqa: SIM110 - a loop is faster than all()
            if (get(obj) == value) is not eq:
                return False
        return True


def _find_unescaped(text: str, needle: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(needle, i):
            return i
        i += 1
    return -1
