"""What the framework records about its own runs, and to whom: the ``FrameworkRecorder``.

As upstream's ``frameworkImpl`` observes ``framework_extension_point_duration_seconds``
around each ``Run*Plugins`` and, in the cycles ``CycleState.record_plugin_metrics`` marks
(a sampled 10 %), ``plugin_execution_duration_seconds`` around each plugin call, the
runtime times its own work and tells a recorder. The framework owns this protocol; the
Prometheus implementation (``ksched.metrics.SchedulerMetrics``) is handed to it, so the
framework imports nothing of the core and nothing replaces the framework's or the
plugins' methods. Without one (``NO_RECORDER``) the runtime does not even read the clock.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

__all__ = ["NO_RECORDER", "FrameworkRecorder", "NoRecorder"]


class FrameworkRecorder(Protocol):
    """Receives the framework's observations; every call must be cheap (hot path)."""

    def plugins_listed(self, profile: str, point: str, plugins: Sequence[str]) -> None:
        """A framework was built (or given this recorder): ``plugins`` run at ``point``
        (PreFilter, Filter, PreScore, Score), for their evaluation counts."""

    def extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        """One run of ``point``'s plugins (upstream ``FrameworkExtensionPointDuration``)."""

    def plugin(self, point: str, plugin: str, status: str, seconds: float) -> None:
        """One call of ``plugin`` at ``point`` in a sampled cycle
        (upstream ``ObservePluginDurationAsync``)."""

    def evaluated(
        self, profile: str, point: str, n: int, skipped: Collection[str], stopped_at: str
    ) -> None:
        """``point``'s plugins evaluated ``n`` times (nodes, or once for PreFilter/PreScore),
        except those ``skipped`` and those after ``stopped_at``."""

    def sample_plugins(self) -> bool:
        """Whether to time the plugins of one cycle (the scheduler flags it in the
        CycleState) or of a call that has none (PreEnqueue)."""
        return False

    def permit_waited(self, status: str, seconds: float) -> None:
        """A pod Permit parked waited ``seconds``, then got ``status``."""

    def preemption_attempted(self) -> None:
        """A preemption PostFilter ran (``scheduler_preemption_attempts_total``)."""

    def workload_preemption_attempted(self, result: str) -> None:
        """A pod group's preemption (PodGroupPostFilter) ended with ``result``, a status code
        (``scheduler_workload_preemption_attempts_total``)."""

    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None:
        """Choosing the victims for a ``preemptor`` (``pod``, ``podgroup``) took ``seconds``
        and ended with ``result`` (``scheduler_preemption_evaluation_duration_seconds``)."""

    def preemption_victims_chosen(
        self, preemptor: str, victims: int, disruptions: int, pdb_violations: int
    ) -> None:
        """A preemption's victims are about to be evicted (upstream ``observeVictims``):
        ``victims`` pods, ``disruptions`` of them units of pod groups, ``pdb_violations``."""


class NoRecorder:
    """Records nothing: the default, and the runtime's cue to skip timing altogether."""

    def plugins_listed(self, profile: str, point: str, plugins: Sequence[str]) -> None:
        return None

    def extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        return None

    def plugin(self, point: str, plugin: str, status: str, seconds: float) -> None:
        return None

    def evaluated(
        self, profile: str, point: str, n: int, skipped: Collection[str], stopped_at: str
    ) -> None:
        return None

    def sample_plugins(self) -> bool:
        return False

    def permit_waited(self, status: str, seconds: float) -> None:
        return None

    def preemption_attempted(self) -> None:
        return None

    def workload_preemption_attempted(self, result: str) -> None:
        return None

    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None:
        return None

    def preemption_victims_chosen(
        self, preemptor: str, victims: int, disruptions: int, pdb_violations: int
    ) -> None:
        return None


NO_RECORDER: FrameworkRecorder = NoRecorder()
