"""What a scheduling cycle concluded: the one type the cycles, the scheduler's observers
and the explanations share, in a module below all of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..framework.diagnosis import Diagnosis, FitError
from ..framework.interface import PostFilterResult
from ..framework.status import Status
from ..framework.types import PodInfo

__all__ = ["CycleResult"]


@dataclass(slots=True)
class CycleResult:
    """Outcome of a scheduling cycle."""

    status: Status
    node: str = ""
    assumed: PodInfo | None = None
    fit_error: FitError | None = None
    post_filter: PostFilterResult | None = None
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    explain: dict[str, Any] | None = None
    diagnosis: Diagnosis = field(default_factory=Diagnosis)

    @property
    def message(self) -> str:
        if self.fit_error is not None:
            return str(self.fit_error)
        return self.status.message()
