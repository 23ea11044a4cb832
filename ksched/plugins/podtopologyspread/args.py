"""``PodTopologySpreadArgs``: decoding, v1 defaulting and ``ValidatePodTopologySpreadArgs``.

Messages and field paths follow apimachinery's field errors so a config that
kube-scheduler rejects is rejected here with the same words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from ...api.objects import TopologySpreadConstraint
from ...api.validation import qualified_name_errors as _qualified_name_errors
from ...framework.registry import PluginArgsError

__all__ = [
    "DO_NOT_SCHEDULE",
    "LIST_DEFAULTING",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULTING",
    "PodTopologySpreadArgs",
]

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"

_ARGS_FIELDS = ("defaultConstraints", "defaultingType")
_CONSTRAINT_FIELDS = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
)


def _show(value: Any) -> str:
    """A bad value as field errors print it: strings quoted, numbers bare."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


class _Errors:
    """Collects problems: one keeps its path on the error, several aggregate as ``[a, b]``."""

    def __init__(self, plugin: str) -> None:
        self.plugin = plugin
        self.items: list[tuple[str, str]] = []

    def fail(self, path: str, msg: str) -> None:
        self.items.append((path, msg))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        if len(self.items) == 1:
            raise PluginArgsError(self.plugin, *self.items[0])
        joined = ", ".join(f"{p}: {m}" for p, m in self.items)
        raise PluginArgsError(self.plugin, "", f"[{joined}]")


def _decode_constraint(errs: _Errors, raw: Any, path: str) -> TopologySpreadConstraint | None:
    if not isinstance(raw, dict):
        errs.fail(path, f"must be an object, got {type(raw).__name__}")
        return None
    bad = [k for k in raw if k not in _CONSTRAINT_FIELDS]
    for k in bad:
        errs.fail(f"{path}.{k}", "unknown field")
    if bad:
        return None
    # Go's zero values for the fields the struct requires, so validation reports them.
    data = {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "", **raw}
    data = {k: v for k, v in data.items() if v is not None}
    try:
        return msgspec.convert(data, TopologySpreadConstraint, strict=True)
    except msgspec.ValidationError as e:
        msg, _, at = str(e).partition(" - at `$")
        errs.fail(path + at.rstrip("`"), msg)
        return None


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs:
    """``PodTopologySpreadArgs`` after ``SetDefaults_PodTopologySpreadArgs`` (System by default)."""

    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    @classmethod
    def parse(cls, plugin_name: str, data: dict[str, Any]) -> PodTopologySpreadArgs:
        errs = _Errors(plugin_name)
        for key in data:
            if key not in _ARGS_FIELDS:
                errs.fail(key, "unknown field")
        defaulting = data.get("defaultingType")
        if defaulting is None or defaulting == "":
            defaulting = SYSTEM_DEFAULTING
        elif not isinstance(defaulting, str):
            errs.fail("defaultingType", f"must be a string, got {defaulting!r}")
            defaulting = SYSTEM_DEFAULTING
        raw = data.get("defaultConstraints")
        constraints: list[TopologySpreadConstraint] = []
        if raw is not None and not isinstance(raw, list):
            errs.fail("defaultConstraints", f"must be a list, got {type(raw).__name__}")
        else:
            for i, item in enumerate(raw or []):
                c = _decode_constraint(errs, item, f"defaultConstraints[{i}]")
                if c is not None:
                    constraints.append(c)
        errs.raise_if_any()
        args = cls(tuple(constraints), defaulting)
        args.validate(errs)
        errs.raise_if_any()
        return args

    def validate(self, errs: _Errors) -> None:
        """Upstream ``ValidatePodTopologySpreadArgs``: same checks, order and messages."""
        dt = self.defaulting_type
        if dt not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            errs.fail(
                "defaultingType",
                f"Unsupported value: {_show(dt)}: supported values: "
                f'"{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"',
            )
        elif dt == SYSTEM_DEFAULTING and self.default_constraints:
            errs.fail(
                "defaultingType",
                f"Invalid value: {_show(dt)}: when .defaultConstraints are not empty",
            )
        for i, c in enumerate(self.default_constraints):
            p = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                errs.fail(
                    f"{p}.maxSkew", f"Invalid value: {c.max_skew}: not in valid range (0, inf)"
                )
            if not c.topology_key:
                errs.fail(f"{p}.topologyKey", "Required value: can not be empty")
            else:
                for msg in _qualified_name_errors(c.topology_key):
                    errs.fail(f"{p}.topologyKey", f"Invalid value: {_show(c.topology_key)}: {msg}")
            if not c.when_unsatisfiable:
                errs.fail(f"{p}.whenUnsatisfiable", "Required value: can not be empty")
            elif c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                errs.fail(
                    f"{p}.whenUnsatisfiable",
                    f"Unsupported value: {_show(c.when_unsatisfiable)}: supported values: "
                    f'"{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"',
                )
            if c.label_selector is not None:
                errs.fail(
                    f"{p}.labelSelector",
                    "Forbidden: constraint must not define a selector, as they deduced "
                    "for each pod",
                )
            for other in self.default_constraints[:i]:
                if (
                    c.topology_key == other.topology_key
                    and c.when_unsatisfiable == other.when_unsatisfiable
                ):
                    errs.fail(
                        p,
                        "Duplicate value: "
                        + _show(f"{{{c.topology_key}, {c.when_unsatisfiable}}}"),
                    )
                    break
