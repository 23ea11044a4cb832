"""Built-in plugins, registered under kube-scheduler's names."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..framework.registry import Registry

__all__ = ["BUILTIN_PLUGINS", "NOT_YET_IMPLEMENTED", "register_builtins"]

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


def register_builtins(reg: Registry) -> None:
    import importlib

    for name, target in BUILTIN_PLUGINS.items():
        mod, cls = target.split(":")
        module = importlib.import_module(f"{__name__}.{mod}")
        reg.register(name, getattr(module, cls), "ksched")
