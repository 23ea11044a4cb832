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

Feature gates (the config's ``features``) decide what upstream decides with them: the
default plugins (``applyFeatureGates``: ``GATED_PLUGINS``) and gated args defaults
(``GATED_ARG_DEFAULTS``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ksched.features import FeatureGates, default_feature_gates
from ksched.plugins import BUILTIN_PLUGINS, builtin_plugin
from ksched.plugins.names import NODE_DECLARED_FEATURES

if TYPE_CHECKING:
    from ksched.framework.args import PluginArgs

from ksched.config.types import (
    DEFAULT_SCHEDULER_NAME,
    PLUGIN_SETS,
    WORKLOAD_PLUGIN_SETS,
    KubeSchedulerConfiguration,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)

__all__ = [
    "BASE_MULTI_POINT",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_PROFILE_BY_VERSION",
    "GATED_ARG_DEFAULTS",
    "GATED_PLUGINS",
    "PLUGINS_WITH_DEFAULT_ARGS",
    "GatedPlugin",
    "default_multi_point",
    "default_plugin_args",
    "default_plugins",
    "merge_plugin_set",
    "merge_plugins",
    "set_defaults",
]

# getDefaultPlugins() of kube-scheduler v1, in order (the EBS/GCEPD/AzureDisk limit
# plugins upstream removed are omitted), before applyFeatureGates (``GATED_PLUGINS``).
BASE_MULTI_POINT: list[PluginRef] = [
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
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
]


@dataclass(frozen=True)
class GatedPlugin:
    """One rule of upstream's ``applyFeatureGates``: with ``gate`` on, ``plugin`` joins the
    default multiPoint list, before ``before`` (if given and present) or at the end."""

    gate: str
    plugin: PluginRef
    before: str | None = None


# applyFeatureGates (pkg/scheduler/apis/config/v1/default_plugins.go), in its order.
# DynamicResources goes before DefaultPreemption: deallocating an idle claim is better
# than evicting a pod; its weight 2 is what v1.36.3's --write-config-to writes.
GATED_PLUGINS: tuple[GatedPlugin, ...] = (
    GatedPlugin("NodeDeclaredFeatures", PluginRef(NODE_DECLARED_FEATURES)),
    GatedPlugin("DynamicResourceAllocation", PluginRef("DynamicResources", 2), "DefaultPreemption"),
    GatedPlugin("GangScheduling", PluginRef("GangScheduling")),
    GatedPlugin("TopologyAwareWorkloadScheduling", PluginRef("TopologyPlacementGenerator")),
    GatedPlugin("TopologyAwareWorkloadScheduling", PluginRef("PodGroupPodsCount", 1)),
)


# v1.37.2's getDefaultPlugins: NodeName now runs before NodeUnschedulable.
BASE_MULTI_POINT_1_37: list[PluginRef] = [
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeName"),
    PluginRef("NodeUnschedulable"),
    *BASE_MULTI_POINT[4:],
]
# v1.37.2's applyFeatureGates, in its order: DeferredPodScheduling (before NodeResourcesFit,
# so that it is the failing plugin its queueing hint retries) follows
# InPlacePodVerticalScalingSchedulerPreemption; GangScheduling follows GenericWorkload (the
# GangScheduling gate is gone).
GATED_PLUGINS_1_37: tuple[GatedPlugin, ...] = (
    GATED_PLUGINS[0],
    GatedPlugin(
        "InPlacePodVerticalScalingSchedulerPreemption",
        PluginRef("DeferredPodScheduling"),
        "NodeResourcesFit",
    ),
    GATED_PLUGINS[1],
    GatedPlugin("GenericWorkload", PluginRef("GangScheduling")),
    *GATED_PLUGINS[3:],
)


# Per emulated version (each implemented row of ``ksched.features.KUBE_VERSIONS``): its
# getDefaultPlugins list and applyFeatureGates rules. A version whose defaults differ gets
# its own row here; the code below stays the same.
DEFAULT_PROFILE_BY_VERSION: dict[str, tuple[list[PluginRef], tuple[GatedPlugin, ...]]] = {
    "1.36": (BASE_MULTI_POINT, GATED_PLUGINS),
    "1.37": (BASE_MULTI_POINT_1_37, GATED_PLUGINS_1_37),
}


def default_multi_point(features: FeatureGates | None = None) -> list[PluginRef]:
    """The default profile's multiPoint plugins under ``features`` (default gates if None):
    the emulated version's base list with its gated rules applied. A rule whose plugin
    ksched does not have yet is skipped (its gate's value is a documented gap,
    ``ksched.features.support``)."""
    features = features or default_feature_gates()
    base, rules = DEFAULT_PROFILE_BY_VERSION[features.emulated_version]
    out = copy.deepcopy(base)
    for rule in rules:
        if not features.enabled(rule.gate) or rule.plugin.name not in BUILTIN_PLUGINS:
            continue
        names = [p.name for p in out]
        at = names.index(rule.before) if rule.before in names else len(out)
        out.insert(at, copy.deepcopy(rule.plugin))
    return out


# The default profile under the default gates (what most callers and tests compare with).
DEFAULT_MULTI_POINT: list[PluginRef] = default_multi_point()


def default_plugins(features: FeatureGates | None = None) -> Plugins:
    """A fresh copy of the default plugin set (callers mutate what they get)."""
    return Plugins(multi_point=PluginSet(enabled=default_multi_point(features)))


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
    """Upstream ``mergePlugins``: every extension point, multiPoint and the workload plugin
    sets included."""
    if custom is None:
        return copy.deepcopy(default)
    merged = Plugins()
    for attr in [a for a, _ in PLUGIN_SETS] + [w.attr for w in WORKLOAD_PLUGIN_SETS]:
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


# SetDefaults_<Name>Args' fields that upstream defaults only while feature gates are on:
# (plugin, field) -> the gates, all of which must be on. The default itself is the plugin's
# (its Args' ``gated_defaults``); the Args field's own default is the gates-off value.
GATED_ARG_DEFAULTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("DynamicResources", "filterTimeout"): ("DRASchedulerFilterTimeout",),
    ("DynamicResources", "bindingTimeout"): (
        "DRADeviceBindingConditions",
        "DRAResourceClaimDeviceStatus",
    ),
    ("VolumeBinding", "shape"): ("StorageCapacityScoring",),
}


def default_plugin_args(
    name: str, args: dict[str, Any], features: FeatureGates | None = None
) -> dict[str, Any]:
    """Args with upstream's ``SetDefaults_<Name>Args`` applied under ``features`` (the
    default gates if None); user fields win.

    Returns a new dict for the in-tree plugins above and ``args`` itself for any other
    name, so a framework can call it for every plugin (out-of-tree ones default their
    own args when they decode them, and the effective config shows them as written).
    """
    if name not in PLUGINS_WITH_DEFAULT_ARGS:
        return args
    features = features or default_feature_gates()
    args_type: type[PluginArgs] = builtin_plugin(name).Args  # type: ignore[attr-defined]
    args = dict(args)
    for (plugin, key), gates in GATED_ARG_DEFAULTS.items():
        if plugin == name and args.get(key) is None and all(map(features.enabled, gates)):
            args[key] = copy.deepcopy(args_type.gated_defaults[key])
    return args_type.with_defaults(args)


# --- whole configuration ----------------------------------------------------------


def _enabled_names(plugins: Plugins) -> set[str]:
    return {p.name for attr, _ in PLUGIN_SETS for p in plugins.point(attr).enabled}


def _default_profile(prof: Profile, features: FeatureGates) -> None:
    merged = merge_plugins(default_plugins(features), prof.plugins)
    prof.plugins = merged

    configs: list[PluginConfig] = []
    for pc in prof.plugin_config:
        configs.append(PluginConfig(pc.name, default_plugin_args(pc.name, pc.args, features)))
    existing = {pc.name for pc in configs}
    for name in sorted((_enabled_names(merged) & PLUGINS_WITH_DEFAULT_ARGS) - existing):
        configs.append(PluginConfig(name, default_plugin_args(name, {}, features)))
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
        _default_profile(prof, cfg.features)

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
