"""The fidelity oracle: seeded random clusters replayed against the real kube-scheduler
and against ksched on the same state; every disagreement is reported.

``python -m ksched.testing.differential --seeds 0-199`` runs it; ``docs/fidelity.md``
says what is compared and which reference quirks ksched matches on purpose.
"""

from .compare import DRA_PENDING, Divergence, compare, normalize_kube_message
from .generator import (
    APISERVER_ARGS,
    FEATURES,
    Feature,
    GangBatch,
    PendingPod,
    Scenario,
    default_features,
    generate,
    parse_features,
    parse_seeds,
)
from .outcome import Outcome
from .report import Report, run_differential

__all__ = [
    "APISERVER_ARGS",
    "DRA_PENDING",
    "FEATURES",
    "Divergence",
    "Feature",
    "GangBatch",
    "Outcome",
    "PendingPod",
    "Report",
    "Scenario",
    "compare",
    "default_features",
    "generate",
    "normalize_kube_message",
    "parse_features",
    "parse_seeds",
    "run_differential",
]
