"""``PodTopologySpreadArgs``: v1 defaulting and ``ValidatePodTopologySpreadArgs``.

Messages and field paths follow apimachinery's field errors so a config that
kube-scheduler rejects is rejected here with the same words.
"""

from __future__ import annotations

from typing import Annotated

from ...api.objects import TopologySpreadConstraint
from ...api.validation import qualified_name_errors as _qualified_name_errors
from ...framework.args import EMPTY_IS_DEFAULT, ArgsErrors, KubeArgs
from ...framework.args import show as _show

__all__ = [
    "DO_NOT_SCHEDULE",
    "LIST_DEFAULTING",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULTING",
    "DefaultConstraint",
    "PodTopologySpreadArgs",
]

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"


class DefaultConstraint(TopologySpreadConstraint):
    """A ``defaultConstraints`` item: a TopologySpreadConstraint whose required fields
    start at Go's zero values, so that validation, not decoding, reports them missing."""

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""


class PodTopologySpreadArgs(KubeArgs):
    """``PodTopologySpreadArgs`` (``SetDefaults_PodTopologySpreadArgs``: System when
    the defaulting type is empty)."""

    default_constraints: tuple[DefaultConstraint, ...] = ()
    defaulting_type: Annotated[str, EMPTY_IS_DEFAULT] = SYSTEM_DEFAULTING

    def validate(self, errs: ArgsErrors) -> None:
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
