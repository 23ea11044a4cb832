"""Built-in plugins, registered under kube-scheduler's names."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..framework.registry import Registry

__all__ = ["BUILTIN_PLUGINS", "NOT_YET_IMPLEMENTED", "builtin_plugin", "register_builtins"]

# Default kube-scheduler plugins ksched has not implemented yet; dropped from the
# effective plugin set with a warning rather than failing every default config.
NOT_YET_IMPLEMENTED: frozenset[str] = frozenset()

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
