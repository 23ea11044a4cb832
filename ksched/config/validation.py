"""Validation mirroring kube-scheduler's ``ValidateKubeSchedulerConfiguration`` (v1).

Messages follow apimachinery's field errors (``path: Invalid value: 0: detail``) so
they read like kube-scheduler's. Plugin args are not checked here: each plugin
validates its own when the framework builds it, except the fields upstream accepts only
while their feature gates are on (``_gated_args``). Beyond upstream, ksched also checks
(marked below): enabled plugin names against a registry (upstream refuses them when it
builds the framework), and (deliberate extensions, docs/fidelity.md) extender ``urlPrefix``
presence and a non-negative ``httpTimeout``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from ksched.api.validation import qualified_name_errors
from ksched.config.defaults import GATED_ARG_DEFAULTS
from ksched.config.types import (
    PLUGIN_SETS,
    KubeSchedulerConfiguration,
    PluginSet,
    Profile,
    format_duration,
    workload_plugin_sets,
)
from ksched.features import FeatureGates
from ksched.framework.args import show
from ksched.plugins import BUILTIN_PLUGINS

__all__ = ["ARGS_VALIDATED_IN_CONFIG", "REMOVED_PLUGINS", "unknown_plugin_config", "validate"]

# invalidPluginsByVersion: plugins removed by v1, rejected outside multiPoint.
REMOVED_PLUGINS: frozenset[str] = frozenset(
    {"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"}
)


# validatePluginConfig: the in-tree plugins whose args upstream validates with the config,
# whether or not a profile enables them (ksched checks them when it builds the profile's
# framework). NodeResourcesFit is not among them: upstream's table names it
# "NodeResourcesFitArgs", so its args are checked only when the plugin is built.
ARGS_VALIDATED_IN_CONFIG: frozenset[str] = frozenset(
    {
        "DefaultPreemption",
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "PodTopologySpread",
        "VolumeBinding",
    }
)


# A bad value as Go's field errors print it (%v for scalars, %q for strings).
_show = show


def _invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_show(value)}: {detail}"


def _required(path: str) -> str:
    return f"{path}: Required value"


# --- names (apimachinery IsQualifiedName, v1helper.IsExtendedResourceName) --------

_qualified_name_errors = qualified_name_errors


def _is_extended_resource_name(name: str) -> bool:
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not _qualified_name_errors("requests." + name)


# --- sections --------------------------------------------------------------------


def _validate_connection_and_election(cfg: KubeSchedulerConfiguration) -> list[str]:
    errs: list[str] = []
    cc = cfg.client_connection
    if cc.burst < 0:
        errs.append(_invalid("clientConnection.burst", cc.burst, "must be non-negative"))
    le = cfg.leader_election
    if not le.leader_elect:
        return errs
    p = "leaderElection"
    for key, seconds in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if seconds <= 0:
            errs.append(
                f"{p}.{key}: Invalid value: {format_duration(seconds)}: must be greater than zero"
            )
    if le.lease_duration <= le.renew_deadline:
        # Upstream prints renewDeadline as the bad value; showing both is clearer.
        errs.append(
            f"{p}.leaseDuration: Invalid value: {format_duration(le.lease_duration)}: must be "
            f"greater than renewDeadline ({format_duration(le.renew_deadline)})"
        )
    for key, value in (
        ("resourceLock", le.resource_lock),
        ("resourceNamespace", le.resource_namespace),
        ("resourceName", le.resource_name),
    ):
        if not value:
            errs.append(_required(f"{p}.{key}"))
    if le.resource_lock != "leases":
        errs.append(
            _invalid(f"{p}.resourceLock", le.resource_lock, 'resourceLock value must be "leases"')
        )
    return errs


def _validate_percentage(path: str, value: int | None) -> list[str]:
    if value is not None and not 0 <= value <= 100:
        return [_invalid(path, value, "not in valid range [0-100]")]
    return []


def _removed(path: str, name: str, api_version: str) -> str:
    # "v1" as upstream prints it: its table is keyed by k8s.io/api/core/v1's group version.
    return _invalid(
        path,
        name,
        f'was invalid in version "v1" (KubeSchedulerConfiguration is version {_show(api_version)})',
    )


def _unknown(path: str, name: str, known: Collection[str]) -> str:
    return f"{path}: unknown plugin {_show(name)}; available: {', '.join(sorted(known))}"


# validation_pluginargs' checks of the fields upstream accepts only while their feature gates
# are on (the gates: ``GATED_ARG_DEFAULTS``): (plugin, field) -> the problem, given the value.
_GATED_ARG_PROBLEMS: dict[tuple[str, str], Callable[[Any], str]] = {
    ("DynamicResources", "filterTimeout"): lambda _v: (
        "Forbidden: DRASchedulingFilterTimeout feature gate is disabled"
    ),
    ("DynamicResources", "bindingTimeout"): lambda _v: (
        "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate "
        "is disabled"
    ),
    ("VolumeBinding", "shape"): lambda v: (
        f"Invalid value: {_go_json(v)}: unexpected field `shape`, remove it or turn on the "
        "feature gate StorageCapacityScoring"
    ),
}


def _go_json(value: Any) -> str:
    """A decoded struct list as Go's JSON of the internal type shows it (exported names)."""
    if isinstance(value, list):
        return "[" + ",".join(_go_json(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{json.dumps(k[:1].upper() + k[1:])}:{_go_json(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    return json.dumps(value)


def _gated_args(path: str, prof: Profile, features: FeatureGates) -> list[str]:
    errs = []
    for j, pc in enumerate(prof.plugin_config):
        for (plugin, key), gates in GATED_ARG_DEFAULTS.items():
            value = pc.args.get(key) if isinstance(pc.args, dict) else None
            if plugin == pc.name and value is not None and not all(map(features.enabled, gates)):
                problem = _GATED_ARG_PROBLEMS[plugin, key](value)
                errs.append(f"{path}.pluginConfig[{j}].args.{key}: {problem}")
    return errs


def _workload_plugin_sets(path: str, prof: Profile, version: str) -> list[str]:
    """Workload-aware scheduling's plugin sets, judged as upstream's framework does when it
    builds the profile: an in-tree plugin that does not extend the set (kube-scheduler's
    text), or one listed twice, is refused. Whether an out-of-tree plugin extends it is
    the framework's to tell (``extension_points_of``), when it builds the profile."""
    errs = []
    for w in workload_plugin_sets(version):
        seen: set[str] = set()
        for j, p in enumerate(prof.plugins.point(w.attr).enabled):
            where = f"{path}.plugins.{w.key}.enabled[{j}]"
            if p.name not in w.plugins and p.name in BUILTIN_PLUGINS:
                errs.append(
                    f"{where}: plugin {json.dumps(p.name)} does not extend {w.label} plugin"
                )
            elif p.name in seen:
                errs.append(
                    f"{where}: plugin {json.dumps(p.name)} already registered as "
                    f"{json.dumps(w.label)}"
                )
            seen.add(p.name)
    return errs


def _validate_profile(
    path: str, api_version: str, prof: Profile, known: Collection[str] | None
) -> list[str]:
    errs: list[str] = []
    if not prof.scheduler_name:
        errs.append(_required(f"{path}.schedulerName"))
    errs += _validate_percentage(
        f"{path}.percentageOfNodesToScore", prof.percentage_of_nodes_to_score
    )
    for attr, key in PLUGIN_SETS:
        for j, p in enumerate(prof.plugins.point(attr).enabled):
            where = f"{path}.plugins.{key}.enabled[{j}]"
            # Upstream does not check multiPoint for removed plugins; the registry does.
            if p.name in REMOVED_PLUGINS and key != "multiPoint":
                errs.append(_removed(where, p.name, api_version))
            elif known is not None and p.name not in known:
                errs.append(_unknown(where, p.name, known))  # ksched
    seen: set[str] = set()
    for j, pc in enumerate(prof.plugin_config):
        where = f"{path}.pluginConfig[{j}]"
        if pc.name in seen:
            errs.append(f"{where}: Duplicate value: {_show(pc.name)}")
        seen.add(pc.name)
        if pc.name in REMOVED_PLUGINS:
            errs.append(_removed(where, pc.name, api_version))
    return errs


def unknown_plugin_config(
    cfg: KubeSchedulerConfiguration, known_plugins: Collection[str]
) -> list[str]:
    """Warnings for pluginConfig entries naming no registered plugin: kube-scheduler ignores
    them (it builds only the plugins a profile enables), and so does ksched, but a typo in a
    plugin's name is worth a line."""
    return [
        f"profiles[{i}].pluginConfig[{j}]: plugin {pc.name!r} is not registered; ignoring its args"
        for i, prof in enumerate(cfg.profiles)
        for j, pc in enumerate(prof.plugin_config)
        if pc.name not in known_plugins and pc.name not in REMOVED_PLUGINS
    ]


def _show_plugin_set(ps: PluginSet) -> str:
    def refs(items: list[Any]) -> list[dict[str, Any]]:
        return [
            {"name": p.name} | ({} if p.weight is None else {"weight": p.weight}) for p in items
        ]

    return json.dumps({"enabled": refs(ps.enabled), "disabled": refs(ps.disabled)})


def _validate_common_queue_sort(profiles: list[Profile]) -> list[str]:
    """Upstream ``validateCommonQueueSort``: compares the explicit queueSort sets only.

    A queue sort chosen through multiPoint is not visible here (upstream neither); the
    framework must check that every profile ended up with the same one.
    """
    errs: list[str] = []
    canon = profiles[0].plugins.queue_sort
    name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errs.append(
            _invalid(
                "profiles[0].plugins.queueSort.enabled",
                len(canon.enabled),
                "only one queue sort plugin can be enabled",
            )
        )
    args: dict[str, Any] | None = None
    for pc in profiles[0].plugin_config:
        if name and pc.name == name:
            args = pc.args
    for i in range(1, len(profiles)):
        curr = profiles[i].plugins.queue_sort
        if curr != canon:
            errs.append(
                f"profiles[{i}].plugins.queueSort: Invalid value: {_show_plugin_set(curr)}: "
                "must be the same for all profiles"
            )
        for pc in profiles[i].plugin_config:
            if name and pc.name == name and pc.args != args:
                errs.append(
                    f"profiles[{i}].pluginConfig.args: Invalid value: {json.dumps(pc.args)}: "
                    "queueSort must be the same for all profiles"
                )
    return errs


def _validate_extenders(cfg: KubeSchedulerConfiguration) -> list[str]:
    errs: list[str] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(cfg.extenders):
        path = f"extenders[{i}]"
        if not ext.url_prefix:
            errs.append(_required(f"{path}.urlPrefix"))  # ksched
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(
                _invalid(f"{path}.weight", ext.weight, "must have a positive weight applied to it")
            )
        if ext.bind_verb:
            binders += 1
        if ext.http_timeout < 0:  # ksched
            errs.append(
                f"{path}.httpTimeout: Invalid value: {format_duration(ext.http_timeout)}"
                ": must be greater than or equal to 0"
            )
        for j, res in enumerate(ext.managed_resources):
            where = f"{path}.managedResources[{j}].name"
            msgs = _qualified_name_errors(res.name)
            errs += [_invalid(where, res.name, m) for m in msgs]
            if not msgs and not _is_extended_resource_name(res.name):
                errs.append(_invalid(where, res.name, "is an invalid extended resource name"))
            if res.name in managed:
                errs.append(_invalid(where, res.name, "duplicate extender managed resource name"))
            managed.add(res.name)
    if binders > 1:
        errs.append(
            _invalid(
                "extenders",
                f"found {binders} extenders implementing bind",
                "only one extender can implement bind",
            )
        )
    return errs


def validate(
    cfg: KubeSchedulerConfiguration, known_plugins: Collection[str] | None = None
) -> list[str]:
    """Every problem in a defaulted configuration, in upstream's order; empty if valid.

    With ``known_plugins`` (the registry's names), every enabled plugin must name one of
    them (pluginConfig entries need not: see ``unknown_plugin_config``). Paths index the
    defaulted (merged) plugin lists, as upstream's do.
    """
    errs = _validate_connection_and_election(cfg)
    if cfg.parallelism <= 0:
        errs.append(
            _invalid("parallelism", cfg.parallelism, "should be an integer value greater than zero")
        )
    if not cfg.profiles:
        errs.append(_required("profiles"))
    else:
        seen: dict[str, int] = {}
        for i, prof in enumerate(cfg.profiles):
            path = f"profiles[{i}]"
            errs += _validate_profile(path, cfg.api_version, prof, known_plugins)
            errs += _gated_args(path, prof, cfg.features)
            errs += _workload_plugin_sets(path, prof, cfg.features.emulated_version)
            if prof.scheduler_name in seen:
                # Upstream shows the other profile's path; the name is what users grep for.
                errs.append(f"{path}.schedulerName: Duplicate value: {_show(prof.scheduler_name)}")
            seen[prof.scheduler_name] = i
        errs += _validate_common_queue_sort(cfg.profiles)
    errs += _validate_percentage("percentageOfNodesToScore", cfg.percentage_of_nodes_to_score)
    if cfg.pod_initial_backoff_seconds <= 0:
        errs.append(
            _invalid(
                "podInitialBackoffSeconds",
                cfg.pod_initial_backoff_seconds,
                "must be greater than 0",
            )
        )
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        errs.append(
            _invalid(
                "podMaxBackoffSeconds",
                cfg.pod_max_backoff_seconds,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    errs += _validate_extenders(cfg)
    return errs
