"""Test support: an in-process API server with kube-apiserver semantics, builders, and a
harness running plugins through a real framework (``run_filter``, ``run_score``,
``schedule``; see ``ksched.testing.harness``).

The API server and the builders import nothing else from ksched, so tests against this
server exercise the daemon against an independent implementation of the API; the harness
names load the scheduler, only when first used.
"""

from typing import TYPE_CHECKING, Any

from ._auth import TokenUser
from ._store import APIStatusError
from .apiserver import VERSION_INFO, TestAPIServer, serving
from .faults import Faults, RecordedRequest
from .objects import (
    controller_ref,
    device_requests,
    make_controller,
    make_csidriver,
    make_csinode,
    make_csistoragecapacity,
    make_device_class,
    make_namespace,
    make_node,
    make_pod,
    make_pod_group,
    make_priority_class,
    make_pv,
    make_pvc,
    make_resource_claim,
    make_resource_claim_template,
    make_resource_slice,
    make_service,
    make_storage_class,
    make_volume_attachment,
    make_workload,
)

if TYPE_CHECKING:
    from ..cache import Cache
    from ..util.clock import FakeClock
    from .harness import ScheduleResult, node_info, pod_info, run_filter, run_score, schedule

_HARNESS = frozenset(
    ("ScheduleResult", "node_info", "pod_info", "run_filter", "run_score", "schedule")
)


# For tests of stateful plugins (assumed pods, Permit timeouts): the scheduler's cache, which
# builds snapshots as the scheduler does, and a clock the test moves.
_TOOLS = {"Cache": "ksched.cache", "FakeClock": "ksched.util.clock"}


def __getattr__(name: str) -> Any:
    """The harness on first use: importing it loads the scheduler, which the standalone
    API server (``python -m ksched.testing apiserver``) does not need."""
    if name in _HARNESS:
        from . import harness

        return getattr(harness, name)
    if name in _TOOLS:
        import importlib

        return getattr(importlib.import_module(_TOOLS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "VERSION_INFO",
    "APIStatusError",
    "Cache",
    "FakeClock",
    "Faults",
    "RecordedRequest",
    "ScheduleResult",
    "TestAPIServer",
    "TokenUser",
    "controller_ref",
    "device_requests",
    "make_controller",
    "make_csidriver",
    "make_csinode",
    "make_csistoragecapacity",
    "make_device_class",
    "make_namespace",
    "make_node",
    "make_pod",
    "make_pod_group",
    "make_priority_class",
    "make_pv",
    "make_pvc",
    "make_resource_claim",
    "make_resource_claim_template",
    "make_resource_slice",
    "make_service",
    "make_storage_class",
    "make_volume_attachment",
    "make_workload",
    "node_info",
    "pod_info",
    "run_filter",
    "run_score",
    "schedule",
    "serving",
]
