"""Defaulting identical to kube-scheduler's v1 ``SetDefaults_*`` and ``mergePlugins``.

Following upstream keeps a kube-scheduler config file meaning the same thing under
ksched. Divergences, all deliberate:

* With no profiles, the single default profile is named ``ksched``, not
  ``default-scheduler`` (the loader also uses ``ksched`` for a lone profile that omits
  ``schedulerName``), so ksched can run beside kube-scheduler.
* ``clientConnection.contentType`` defaults to ``application/json`` (ksched's client
  has no protobuf) and the leader-election lock is named ``ksched``.
* An extender ``httpTimeout`` of 0 is shown as upstream's effective 5s.
* ``percentageOfNodesToScore`` stays None (upstream writes 0); both mean adaptive.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from ksched.plugins import builtin_plugin

if TYPE_CHECKING:
    from ksched.framework.args import PluginArgs

from ksched.config.types import (
    DEFAULT_SCHEDULER_NAME,
    PLUGIN_SETS,
    KubeSchedulerConfiguration,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)

__all__ = [
    "DEFAULT_MULTI_POINT",
    "PLUGINS_WITH_DEFAULT_ARGS",
    "default_plugin_args",
    "default_plugins",
    "merge_plugin_set",
    "merge_plugins",
    "set_defaults",
]

# getDefaultPlugins() of kube-scheduler v1, in order (the EBS/GCEPD/AzureDisk limit
# plugins upstream removed are omitted), with DynamicResources (always on since v1.35)
# before DefaultPreemption as applyFeatureGates puts it: deallocating an idle claim is
# better than evicting a pod. Its weight is 2 (what v1.36.3's
# ``kube-scheduler --write-config-to`` writes; found by the differential oracle).
# NodeDeclaredFeatures (gate beta and on in 1.36) comes last: applyFeatureGates appends it
# before it inserts DynamicResources.
DEFAULT_MULTI_POINT: list[PluginRef] = [
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    PluginRef("DynamicResources", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
    PluginRef("NodeDeclaredFeatures"),
]


def default_plugins() -> Plugins:
    """A fresh copy of the default plugin set (callers mutate what they get)."""
    return Plugins(multi_point=PluginSet(enabled=copy.deepcopy(DEFAULT_MULTI_POINT)))


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream ``mergePluginSet``.

    A re-configured default keeps the default's position; "*" in disabled drops all
    defaults of the point; other custom plugins follow in the user's order. Duplicate
    custom names are kept (the framework rejects them), as upstream does.
    """
    disabled = [PluginRef(p.name) for p in custom.disabled]
    disabled += [PluginRef(p.name) for p in default.disabled]
    disabled_names = {p.name for p in disabled}
    # Later duplicates win the in-place replacement, as with upstream's map.
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_names:
        for p in default.enabled:
            if p.name in disabled_names:
                continue
            if p.name in custom_by_name:
                index, p = custom_by_name[p.name]
                replaced.add(index)
            enabled.append(copy.deepcopy(p))
    enabled += [copy.deepcopy(p) for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """Upstream ``mergePlugins``: every extension point, multiPoint included."""
    if custom is None:
        return copy.deepcopy(default)
    merged = Plugins()
    for attr, _ in PLUGIN_SETS:
        setattr(merged, attr, merge_plugin_set(default.point(attr), custom.point(attr)))
    return merged


# --- plugin args ----------------------------------------------------------------

# In-tree plugins with a registered ``<Name>Args`` kind: upstream adds a defaulted
# pluginConfig entry for each one that is enabled. The defaults themselves are declared
# on each plugin's ``Args`` fields (``ksched.framework.args``).
PLUGINS_WITH_DEFAULT_ARGS: frozenset[str] = frozenset(
    {
        "DefaultPreemption",
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "PodTopologySpread",
        "VolumeBinding",
    }
)


def default_plugin_args(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Args with upstream's ``SetDefaults_<Name>Args`` applied; user fields win.

    Returns a new dict for the in-tree plugins above and ``args`` itself for any other
    name, so a framework can call it for every plugin (out-of-tree ones default their
    own args when they decode them, and the effective config shows them as written).
    """
    if name not in PLUGINS_WITH_DEFAULT_ARGS:
        return args
    args_type: type[PluginArgs] = builtin_plugin(name).Args  # type: ignore[attr-defined]
    return args_type.with_defaults(args)


# --- whole configuration ----------------------------------------------------------


def _enabled_names(plugins: Plugins) -> set[str]:
    return {p.name for attr, _ in PLUGIN_SETS for p in plugins.point(attr).enabled}


def _default_profile(prof: Profile) -> None:
    merged = merge_plugins(default_plugins(), prof.plugins)
    prof.plugins = merged

    configs: list[PluginConfig] = []
    for pc in prof.plugin_config:
        configs.append(PluginConfig(pc.name, default_plugin_args(pc.name, pc.args)))
    existing = {pc.name for pc in configs}
    for name in sorted((_enabled_names(merged) & PLUGINS_WITH_DEFAULT_ARGS) - existing):
        configs.append(PluginConfig(name, default_plugin_args(name, {})))
    prof.plugin_config = configs


def set_defaults(cfg: KubeSchedulerConfiguration) -> list[str]:
    """Default ``cfg`` in place like upstream ``SetDefaults_KubeSchedulerConfiguration``.

    Returns warnings (path-prefixed, no source). Idempotent, so a dumped effective
    config loads back unchanged. Fields upstream defaults from nil pointers are the
    dataclass defaults; only Go zero-value defaults are applied here.
    """
    if not cfg.profiles:
        cfg.profiles.append(Profile(scheduler_name=DEFAULT_SCHEDULER_NAME))
    warnings: list[str] = []
    for prof in cfg.profiles:
        _default_profile(prof)

    le = cfg.leader_election
    le.resource_lock = le.resource_lock or "leases"
    le.resource_namespace = le.resource_namespace or "kube-system"
    le.resource_name = le.resource_name or DEFAULT_SCHEDULER_NAME
    le.lease_duration = le.lease_duration or 15.0
    le.renew_deadline = le.renew_deadline or 10.0
    le.retry_period = le.retry_period or 2.0

    cc = cfg.client_connection
    cc.content_type = cc.content_type or "application/json"
    cc.qps = cc.qps or 50.0
    cc.burst = cc.burst or 100

    for ext in cfg.extenders:
        ext.http_timeout = ext.http_timeout or 5.0
    return warnings
