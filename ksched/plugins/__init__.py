"""Built-in plugins, registered under kube-scheduler's names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..framework.handle import ClusterClient, EventRecorder
    from ..framework.registry import Registry
    from ..framework.runtime import Framework
    from ..framework.snapshot import Snapshot
    from ..framework.waiting_pods import WaitingPods
    from ..util.clock import Clock

__all__ = [
    "BUILTIN_PLUGINS",
    "build_frameworks",
    "builtin_plugin",
    "default_registry",
    "register_builtins",
]

# name -> "module:Class" (imported lazily so `ksched plugins` stays fast)
BUILTIN_PLUGINS: dict[str, str] = {
    "PrioritySort": "queuesort:PrioritySort",
    "SchedulingGates": "schedulinggates:SchedulingGates",
    "DefaultBinder": "defaultbinder:DefaultBinder",
    "NodeAffinity": "nodeaffinity:NodeAffinity",
    "TaintToleration": "tainttoleration:TaintToleration",
    "NodePorts": "nodeports:NodePorts",
    "NodeName": "nodename:NodeName",
    "NodeUnschedulable": "nodeunschedulable:NodeUnschedulable",
    "NodeResourcesFit": "noderesources:Fit",
    "NodeResourcesBalancedAllocation": "noderesources:BalancedAllocation",
    "ImageLocality": "imagelocality:ImageLocality",
    "DefaultPreemption": "defaultpreemption:DefaultPreemption",
    "InterPodAffinity": "interpodaffinity:InterPodAffinity",
    "PodTopologySpread": "podtopologyspread:PodTopologySpread",
    "VolumeRestrictions": "volumerestrictions:VolumeRestrictions",
    "VolumeZone": "volumezone:VolumeZone",
    "NodeVolumeLimits": "nodevolumelimits:NodeVolumeLimits",
    "VolumeBinding": "volumebinding:VolumeBinding",
    "DynamicResources": "dynamicresources:DynamicResources",
}


def builtin_plugin(name: str) -> type:
    """The class of the built-in plugin ``name`` (imported now); KeyError if none."""
    import importlib

    mod, cls = BUILTIN_PLUGINS[name].split(":")
    plugin: type = getattr(importlib.import_module(f"{__name__}.{mod}"), cls)
    return plugin


def register_builtins(reg: Registry) -> None:
    for name in BUILTIN_PLUGINS:
        reg.register(name, builtin_plugin(name), "ksched")


def default_registry(*, entry_points: bool = True) -> Registry:
    """Built-in plugins, then everything installed under ``ksched.plugins``.

    It lives here, not in ``framework.registry``: the framework knows how to register
    plugins, the plugins package knows which ones are built in (so the framework never
    imports the plugins that import it)."""
    from ..framework.registry import Registry

    reg = Registry()
    register_builtins(reg)
    if entry_points:
        reg.load_entry_points()
    return reg


def build_frameworks(
    config: Any,
    registry: Registry,
    *,
    cluster: ClusterClient | None = None,
    recorder: EventRecorder | None = None,
    clock: Clock | None = None,
    snapshot: Snapshot | None = None,
    waiting_pods: WaitingPods | None = None,
) -> dict[str, Framework]:
    """One framework per profile, sharing snapshot, waiting pods and cluster client (the
    scheduler's, the extender server's and ``ksched config validate``'s build check).

    Here, beside ``default_registry``, because it applies the built-in plugins' arg defaults
    from ``ksched.config``: the framework itself never reads configuration."""
    from ..config import ARGS_VALIDATED_IN_CONFIG, default_plugin_args
    from ..framework.handle import Handle, RecordingEventRecorder
    from ..framework.runtime import Framework
    from ..framework.snapshot import Snapshot
    from ..framework.waiting_pods import WaitingPods
    from ..util.clock import RealClock

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
        }
        if cluster is not None:
            kw["cluster"] = cluster
        out[prof.scheduler_name] = Framework(
            prof,
            registry,
            Handle(**kw),
            default_args=default_plugin_args,
            validate_args=ARGS_VALIDATED_IN_CONFIG,
        )
    return out
