"""Built-in plugins, registered under kube-scheduler's names."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..framework.registry import Registry

__all__ = [
    "BUILTIN_PLUGINS",
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
    "NodeDeclaredFeatures": "nodedeclaredfeatures:NodeDeclaredFeatures",
    "GangScheduling": "gangscheduling:GangScheduling",
    "TopologyPlacementGenerator": "topologyaware:TopologyPlacement",
    "PodGroupPodsCount": "podgrouppodscount:PodGroupPodsCount",
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
