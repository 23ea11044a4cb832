"""Profiles: one framework per configured profile (upstream's ``pkg/scheduler/profile``).

The bridge between configuration and the framework lives in its own room so that
neither imports the other's consumers: ``config`` reads the built-in plugins' Args
(``ksched.plugins``), the framework never reads configuration, and the scheduler, the
extender server and ``ksched config validate`` build their frameworks here.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .config import ARGS_VALIDATED_IN_CONFIG, default_plugin_args
from .framework.handle import ClusterClient, Handle, RecordingEventRecorder
from .framework.runtime import Framework
from .framework.snapshot import Snapshot
from .framework.waiting_pods import WaitingPods
from .plugins.dynamicresources.claims import ClaimWriter
from .plugins.volumebinding.binder import VolumeWriter
from .util.clock import RealClock

if TYPE_CHECKING:
    from .config.types import KubeSchedulerConfiguration
    from .framework.handle import EventRecorder, Extenders, NominatedPods
    from .framework.podgroup import PodGroupManager
    from .framework.preemption import PreemptionInFlight
    from .framework.recorder import FrameworkRecorder
    from .framework.registry import Registry
    from .util.clock import Clock

__all__ = ["SchedulerCluster", "build_frameworks"]


class SchedulerCluster(ClusterClient, VolumeWriter, ClaimWriter, Protocol):
    """The cluster client a scheduler with the built-in plugins is given: the framework's
    core pod writes and the writes each built-in plugin declares. The daemon's, the
    simulator's and ``NullCluster`` implement it; mypy checks them where they are handed
    here, so a plugin may narrow ``handle.cluster`` to its own protocol."""


def build_frameworks(
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    cluster: SchedulerCluster | None = None,
    recorder: EventRecorder | None = None,
    clock: Clock | None = None,
    snapshot: Snapshot | None = None,
    waiting_pods: WaitingPods | None = None,
    metrics: FrameworkRecorder | None = None,
    rng: random.Random | None = None,
    nominator: NominatedPods | None = None,
    preempting: Mapping[str, PreemptionInFlight] | None = None,
    pod_group_manager: PodGroupManager | None = None,
    extenders: Extenders | None = None,
) -> dict[str, Framework]:
    """One framework per profile, sharing snapshot, waiting pods and cluster client (the
    scheduler's, the extender server's and ``ksched config validate``'s build check);
    ``metrics`` takes their timings (``Framework.record_to``).

    Each profile's ``Handle`` is built here with everything it carries: the scheduler's
    random source, nominator, preemptions in flight, cache and extenders, where there is a
    scheduler (none behind the extender server or for a build check).

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
            "nominator": nominator,
            "pod_group_manager": pod_group_manager,
            "extenders": extenders,
        }
        if cluster is not None:
            kw["cluster"] = cluster
        if rng is not None:
            kw["rng"] = rng
        if preempting is not None:
            kw["preempting"] = preempting
        out[prof.scheduler_name] = Framework(
            prof,
            registry,
            Handle(**kw),
            default_args=functools.partial(default_plugin_args, features=config.features),
            validate_args=ARGS_VALIDATED_IN_CONFIG,
            recorder=metrics,
        )
    return out
