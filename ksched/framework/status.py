"""Plugin result codes and statuses (``framework.Status``)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from ..util.errors import KschedError

__all__ = ["SUCCESS", "Code", "RowErrors", "Status", "StatusError", "merge_statuses"]


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Status:
    """Outcome of one plugin call: a code, human reasons, and the plugin that said it.

    ``None`` is accepted everywhere a Status is expected and means Success, so
    per-node plugins need not allocate on the happy path.
    """

    __slots__ = ("cause", "code", "error", "plugin", "reasons")

    def __init__(
        self,
        code: Code = Code.SUCCESS,
        *reasons: str,
        plugin: str = "",
        error: BaseException | None = None,
    ) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        self.error = error
        # The exception behind an Error status, kept for callers (e.g. BindError.retry)
        # without changing the status text.
        self.cause: BaseException | None = None

    # -- constructors -------------------------------------------------------------
    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, *reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)

    @classmethod
    def as_error(cls, err: BaseException | str, plugin: str = "") -> Status:
        if isinstance(err, str):
            return cls(Code.ERROR, err, plugin=plugin)
        return cls(Code.ERROR, plugin=plugin, error=err)

    # -- queries ------------------------------------------------------------------
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def all_reasons(self) -> list[str]:
        """``Status.Reasons()``: the error text first, then the reasons."""
        out: list[str] = []
        if self.error is not None:
            out.append(_error_text(self.error))
        out.extend(self.reasons)
        return out

    def message(self) -> str:
        return ", ".join(self.all_reasons())

    def with_plugin(self, plugin: str) -> Status:
        if not self.plugin:
            self.plugin = plugin
        return self

    def __repr__(self) -> str:
        p = f" plugin={self.plugin}" if self.plugin else ""
        return f"Status({self.code.label}{p}: {self.message()!r})"

    def __eq__(self, other: object) -> bool:
        if other is None:
            return self.code == Code.SUCCESS and not self.reasons
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.all_reasons() == other.all_reasons()

    __hash__ = None  # type: ignore[assignment]


def _error_text(err: BaseException) -> str:
    text = str(err)
    return text if text else type(err).__name__


SUCCESS = Status()


# framework.statusPrecedence: anything else (Wait, Skip, Pending) ranks between
# Unschedulable and Success.
_PRECEDENCE = {
    Code.ERROR: 3,
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: 2,
    Code.UNSCHEDULABLE: 1,
    Code.SUCCESS: -1,
}


def merge_statuses(statuses: Iterable[Status]) -> Status:
    """``framework.PluginToStatus.Merge``: one status for several plugins' verdicts.

    The code (and plugin) of the highest precedence wins, Error > UnschedulableAndUnresolvable
    > Unschedulable > any other > Success, the first status of that precedence breaking
    ties; every status's reasons are concatenated in order, the merged Error keeping the
    error that caused it.
    """
    final: Status | None = None
    error: BaseException | None = None
    reasons: list[str] = []
    for s in statuses:
        if final is None or _PRECEDENCE.get(s.code, 0) > _PRECEDENCE.get(final.code, 0):
            final = s
        if s.code == Code.ERROR and error is None and s.error is not None:
            error = s.error
            reasons.extend(s.reasons)
        else:
            reasons.extend(s.all_reasons())
    if final is None:
        return SUCCESS
    merged = Status(final.code, *reasons, plugin=final.plugin, error=error)
    merged.cause = final.cause
    return merged


class StatusError(KschedError):
    """Raised by a batch method (``filter_batch``) for a node whose per-node form returns
    an Error status: the cycle fails with that status, worded as the per-node run words
    it, instead of with the exception's text."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


class RowErrors(StatusError):
    """Raised by ``filter_batch`` when its per-node form errs on some nodes (``errors``, by
    snapshot row) and ``mask`` is its verdict on the rest. Upstream runs a node's Filter
    plugins in order and stops at the first that does not pass, so an error only fails the
    cycle on a node every earlier Filter plugin let through; the runtime checks that."""

    def __init__(self, errors: dict[int, Status], mask: Any) -> None:
        super().__init__(next(iter(errors.values())))
        self.errors = errors
        self.mask = mask
