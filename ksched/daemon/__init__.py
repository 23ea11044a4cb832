"""The ``ksched run`` daemon: the scheduler against a real cluster, plus its HTTP endpoints.

``SchedulerDaemon`` is the embeddable form; ``ksched run`` is a thin wrapper over it.
"""

from .auth import SecureServing
from .daemon import DEFAULT_BIND_ADDRESS, DEFAULT_PORT, SchedulerDaemon
from .explain import Outcomes, explain_pending
from .http import DebugServer

__all__ = [
    "DEFAULT_BIND_ADDRESS",
    "DEFAULT_PORT",
    "DebugServer",
    "Outcomes",
    "SchedulerDaemon",
    "SecureServing",
    "explain_pending",
]
