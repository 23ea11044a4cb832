"""Profiles: one framework per configured profile (upstream's ``pkg/scheduler/profile``).

The bridge between configuration and the framework lives in its own room so that
neither imports the other's consumers: ``config`` reads the built-in plugins' Args
(``ksched.plugins``), the framework never reads configuration, and the scheduler, the
extender server and ``ksched config validate`` build their frameworks here.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .config import ARGS_VALIDATED_IN_CONFIG, default_plugin_args
from .framework.handle import Handle, RecordingEventRecorder
from .framework.runtime import Framework
from .framework.snapshot import Snapshot
from .framework.waiting_pods import WaitingPods
from .util.clock import RealClock

if TYPE_CHECKING:
    from .framework.handle import ClusterClient, EventRecorder
    from .framework.recorder import FrameworkRecorder
    from .framework.registry import Registry
    from .util.clock import Clock

__all__ = ["build_frameworks"]


def build_frameworks(
    config: Any,
    registry: Registry,
    *,
    cluster: ClusterClient | None = None,
    recorder: EventRecorder | None = None,
    clock: Clock | None = None,
    snapshot: Snapshot | None = None,
    waiting_pods: WaitingPods | None = None,
    metrics: FrameworkRecorder | None = None,
) -> dict[str, Framework]:
    """One framework per profile, sharing snapshot, waiting pods and cluster client (the
    scheduler's, the extender server's and ``ksched config validate``'s build check);
    ``metrics`` takes their timings (``Framework.record_to``).

    The built-in plugins' arg defaults and in-config validation come from
    ``ksched.config``; the framework itself never reads configuration. The config's
    feature gates reach every plugin on its ``Handle``."""

    snapshot = snapshot if snapshot is not None else Snapshot()
    waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
    out: dict[str, Framework] = {}
    for prof in config.profiles:
        kw: dict[str, Any] = {
            "snapshot": snapshot,
            "waiting_pods": waiting_pods,
            "parallelism": config.parallelism,
            "clock": clock or RealClock(),
            "recorder": recorder or RecordingEventRecorder(),
            "features": config.features,
        }
        if cluster is not None:
            kw["cluster"] = cluster
        out[prof.scheduler_name] = Framework(
            prof,
            registry,
            Handle(**kw),
            default_args=functools.partial(default_plugin_args, features=config.features),
            validate_args=ARGS_VALIDATED_IN_CONFIG,
            recorder=metrics,
        )
    return out
