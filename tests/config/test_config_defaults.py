import copy
from typing import Any

import pytest

from ksched.config import (
    API_VERSION,
    DEFAULT_MULTI_POINT,
    KIND,
    ClientConnection,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginConfig,
    PluginRef,
    PluginSet,
    Profile,
    decode_config,
    default_config,
    default_plugin_args,
    load_config_data,
    merge_plugin_set,
    set_defaults,
)
from ksched.config.defaults import DEFAULT_PROFILE_BY_VERSION, default_multi_point
from ksched.config.load import to_dict
from ksched.features import (
    BINARY_VERSION,
    KUBE_VERSIONS,
    FeatureGateError,
    FeatureGates,
    set_feature_gates,
)
from tests.config.cases import CASES, Case, by_prefix


def gates(version: str, *flags: str) -> FeatureGates:
    """The gates of ``--emulated-version=version --feature-gates=flags``."""
    return set_feature_gates(list(flags), [version])


# kube-scheduler v1.36.3's getDefaultPlugins(), minus the in-tree volume limit plugins
# upstream removed, with DynamicResources where applyFeatureGates puts it (before
# DefaultPreemption).
UPSTREAM_MULTI_POINT_1_36 = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),  # v1.36.3's --write-config-to
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    ("NodeDeclaredFeatures", None),  # appended by applyFeatureGates (gate on in v1.36)
]
# v1.37.2's: NodeName before NodeUnschedulable; the gates that add plugins under 1.37's
# defaults are those of 1.36 (DeferredPodScheduling and GangScheduling are off by default).
UPSTREAM_MULTI_POINT_1_37 = [
    UPSTREAM_MULTI_POINT_1_36[0],
    UPSTREAM_MULTI_POINT_1_36[1],
    ("NodeName", None),
    ("NodeUnschedulable", None),
    *UPSTREAM_MULTI_POINT_1_36[4:],
]
UPSTREAM_MULTI_POINT = {"1.36": UPSTREAM_MULTI_POINT_1_36, "1.37": UPSTREAM_MULTI_POINT_1_37}
DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
DEFAULT_PLUGIN_CONFIG_1_36 = [
    PluginConfig(
        "DefaultPreemption", {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}
    ),
    PluginConfig("DynamicResources", {"filterTimeout": "10s", "bindingTimeout": "10m0s"}),
    PluginConfig(
        "InterPodAffinity",
        {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    ),
    PluginConfig("NodeAffinity", {}),
    PluginConfig("NodeResourcesBalancedAllocation", {"resources": DEFAULT_RESOURCES}),
    PluginConfig(
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "LeastAllocated", "resources": DEFAULT_RESOURCES}},
    ),
    PluginConfig("PodTopologySpread", {"defaultingType": "System"}),
    PluginConfig("VolumeBinding", {"bindTimeoutSeconds": 600}),
]
# StorageCapacityScoring is on by default in 1.37: VolumeBinding's shape is defaulted.
DEFAULT_PLUGIN_CONFIG = {
    "1.36": DEFAULT_PLUGIN_CONFIG_1_36,
    "1.37": [
        *DEFAULT_PLUGIN_CONFIG_1_36[:-1],
        PluginConfig(
            "VolumeBinding",
            {
                "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
                "bindTimeoutSeconds": 600,
            },
        ),
    ],
}
VERSIONS = pytest.mark.parametrize("version", ["1.36", "1.37"])


def names(refs: list[PluginRef]) -> list[tuple[str, int | None]]:
    return [(p.name, p.weight) for p in refs]


def load(case_id: str) -> tuple[KubeSchedulerConfiguration, list[str]]:
    """The config test case ``case_id`` (cases.py), loaded."""
    return load_config_data(CASES[case_id].data, "c.yaml")


def test_default_multi_point_is_the_default_versions() -> None:
    assert names(DEFAULT_MULTI_POINT) == UPSTREAM_MULTI_POINT[BINARY_VERSION]


@VERSIONS
def test_default_multi_point_matches_upstream_order_and_weights(version: str) -> None:
    assert names(default_multi_point(gates(version))) == UPSTREAM_MULTI_POINT[version]


@VERSIONS
def test_each_version_has_a_default_profile_row(version: str) -> None:
    assert version in DEFAULT_PROFILE_BY_VERSION
    assert {v.minor for v in KUBE_VERSIONS if v.implemented} == set(DEFAULT_PROFILE_BY_VERSION)


def test_default_config_scalars() -> None:
    cfg = default_config()
    assert cfg.api_version == API_VERSION
    assert cfg.kind == KIND
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score is None
    assert cfg.pod_initial_backoff_seconds == 1
    assert cfg.pod_max_backoff_seconds == 10
    assert cfg.delay_cache_until_active is False
    assert cfg.extenders == []
    assert cfg.leader_election == LeaderElection(
        leader_elect=True,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        resource_lock="leases",
        resource_name="ksched",
        resource_namespace="kube-system",
    )
    assert cfg.client_connection == ClientConnection(
        kubeconfig="",
        qps=50.0,
        burst=100,
        content_type="application/json",
        accept_content_types="",
    )


@VERSIONS
def test_default_profile_plugins_and_args(version: str) -> None:
    cfg = default_config(gates(version))
    assert len(cfg.profiles) == 1
    prof = cfg.profiles[0]
    assert prof.scheduler_name == "ksched"
    assert prof.percentage_of_nodes_to_score is None
    assert names(prof.plugins.multi_point.enabled) == UPSTREAM_MULTI_POINT[version]
    assert prof.plugins.multi_point.disabled == []
    assert prof.plugins.filter == PluginSet()
    assert prof.plugins.score == PluginSet()
    assert prof.plugin_config == DEFAULT_PLUGIN_CONFIG[version]


def test_default_list_is_not_shared_with_configs() -> None:
    cfg = default_config()
    cfg.profiles[0].plugins.multi_point.enabled[0].name = "Changed"
    cfg.profiles[0].plugin_config[4].args["resources"][0]["weight"] = 9
    fresh = default_config()
    assert fresh.profiles[0].plugins.multi_point.enabled[0].name == "SchedulingGates"
    assert fresh.profiles[0].plugin_config == DEFAULT_PLUGIN_CONFIG[BINARY_VERSION]
    assert DEFAULT_MULTI_POINT[0].name == "SchedulingGates"


# --- mergePluginSet -------------------------------------------------------------------

DEF = PluginSet(enabled=[PluginRef("A"), PluginRef("B", 2), PluginRef("C")])


def test_merge_empty_custom_keeps_defaults() -> None:
    assert merge_plugin_set(DEF, PluginSet()) == DEF


def test_merge_disable_star_drops_all_defaults_but_keeps_custom() -> None:
    got = merge_plugin_set(
        DEF, PluginSet(enabled=[PluginRef("X"), PluginRef("B", 7)], disabled=[PluginRef("*")])
    )
    assert names(got.enabled) == [("X", None), ("B", 7)]
    assert got.disabled == [PluginRef("*")]


def test_merge_reconfigured_default_keeps_its_position() -> None:
    got = merge_plugin_set(DEF, PluginSet(enabled=[PluginRef("X"), PluginRef("B", 5)]))
    assert names(got.enabled) == [("A", None), ("B", 5), ("C", None), ("X", None)]


def test_merge_reconfigured_default_replaces_weight_entirely() -> None:
    # Upstream replaces the plugin struct: a re-listed default without weight loses it.
    got = merge_plugin_set(DEF, PluginSet(enabled=[PluginRef("B")]))
    assert names(got.enabled) == [("A", None), ("B", None), ("C", None)]


def test_merge_disabled_default_then_enabled_is_appended() -> None:
    got = merge_plugin_set(DEF, PluginSet(enabled=[PluginRef("B", 3)], disabled=[PluginRef("B")]))
    assert names(got.enabled) == [("A", None), ("C", None), ("B", 3)]
    assert got.disabled == [PluginRef("B")]


def test_merge_disabled_weights_are_dropped_and_default_disabled_follow() -> None:
    default = PluginSet(enabled=[PluginRef("A")], disabled=[PluginRef("D")])
    got = merge_plugin_set(default, PluginSet(disabled=[PluginRef("A", 4)]))
    assert got.enabled == []
    assert got.disabled == [PluginRef("A"), PluginRef("D")]


def test_merge_duplicate_custom_last_replaces_first_is_appended() -> None:
    got = merge_plugin_set(DEF, PluginSet(enabled=[PluginRef("B", 1), PluginRef("B", 9)]))
    assert names(got.enabled) == [("A", None), ("B", 9), ("C", None), ("B", 1)]


def test_merge_does_not_alias_inputs() -> None:
    custom = PluginSet(enabled=[PluginRef("X", 1)])
    got = merge_plugin_set(DEF, custom)
    got.enabled[0].weight = 100
    got.enabled[-1].weight = 100
    assert DEF.enabled[0].weight is None
    assert custom.enabled[0].weight == 1


# --- profiles through set_defaults ------------------------------------------------------


def test_multi_point_custom_plugin_appended_and_default_reconfigured_in_place() -> None:
    cfg, warnings = load("defaults/multi-point-custom-and-reconfigured")
    assert warnings == []
    got = names(cfg.profiles[0].plugins.multi_point.enabled)
    expected = [
        (n, 5 if n == "TaintToleration" else w) for n, w in UPSTREAM_MULTI_POINT[BINARY_VERSION]
    ]
    assert got == [*expected, ("Foo", 4)]


def test_multi_point_disable_star_and_reenable_in_user_order() -> None:
    cfg, _ = load("defaults/multi-point-disable-star")
    mp = cfg.profiles[0].plugins.multi_point
    assert names(mp.enabled) == [("DefaultBinder", None), ("PrioritySort", None)]
    assert mp.disabled == [PluginRef("*")]
    # No default-args plugin is enabled any more, so no pluginConfig is added.
    assert cfg.profiles[0].plugin_config == []


def test_specific_extension_point_has_no_defaults_and_keeps_user_lists() -> None:
    cfg, _ = load("defaults/specific-extension-points")
    plugins = cfg.profiles[0].plugins
    assert names(plugins.filter.enabled) == [("Foo", None), ("Bar", None)]
    assert names(plugins.score.enabled) == [("Foo", 3)]
    assert plugins.score.disabled == [PluginRef("*")]
    assert names(plugins.multi_point.enabled) == UPSTREAM_MULTI_POINT[BINARY_VERSION]


def test_disabled_default_loses_its_default_args() -> None:
    cfg, _ = load("defaults/disabled-default-loses-args")
    assert [pc.name for pc in cfg.profiles[0].plugin_config] == [
        "DefaultPreemption",
        "DynamicResources",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "PodTopologySpread",
        "VolumeBinding",
    ]


def test_default_args_added_for_plugin_enabled_at_any_point() -> None:
    cfg, _ = load("defaults/args-for-plugin-at-any-point")
    assert cfg.profiles[0].plugin_config == [PluginConfig("NodeAffinity", {})]


def test_dynamic_resources_is_a_default_plugin_with_default_args() -> None:
    cfg, warnings = load("defaults/empty")
    assert warnings == []
    prof = cfg.profiles[0]
    assert names(prof.plugins.multi_point.enabled) == UPSTREAM_MULTI_POINT[BINARY_VERSION]
    assert (
        PluginConfig("DynamicResources", {"filterTimeout": "10s", "bindingTimeout": "10m0s"})
        in prof.plugin_config
    )


def test_dynamic_resources_named_by_user_is_kept_with_its_args() -> None:
    cfg, warnings = load("defaults/dra-named-by-user")
    assert warnings == []
    prof = cfg.profiles[0]
    assert names(prof.plugins.filter.enabled) == [("Foo", None), ("DynamicResources", None)]
    # mergePluginSet: the user's entry replaces the default one in place, weight and all
    assert names(prof.plugins.multi_point.enabled) == [
        (n, None if n == "DynamicResources" else w) for n, w in UPSTREAM_MULTI_POINT[BINARY_VERSION]
    ]
    (pc,) = [pc for pc in prof.plugin_config if pc.name == "DynamicResources"]
    assert pc.args == {"filterTimeout": "5s", "bindingTimeout": "10m0s"}


def test_disabling_dynamic_resources() -> None:
    cfg, warnings = load("defaults/disable-dra")
    assert warnings == []
    assert cfg.profiles[0].plugins.multi_point.disabled == [PluginRef("DynamicResources")]
    assert names(cfg.profiles[0].plugins.multi_point.enabled) == [
        (n, w) for n, w in UPSTREAM_MULTI_POINT[BINARY_VERSION] if n != "DynamicResources"
    ]


def test_user_plugin_config_first_then_defaults_sorted() -> None:
    cfg, _ = load("defaults/user-plugin-config-first")
    pcs = cfg.profiles[0].plugin_config
    assert [pc.name for pc in pcs] == [
        "PodTopologySpread",
        "Custom",
        "DefaultPreemption",
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "VolumeBinding",
    ]
    assert pcs[0].args["defaultingType"] == "List"
    assert len(pcs[0].args["defaultConstraints"]) == 1
    assert pcs[1].args == {"x": 1}
    assert pcs[2].args == {"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 100}


def test_single_profile_without_name_is_ksched_but_explicit_empty_is_kept() -> None:
    cfg, _ = load("defaults/single-profile-without-name")
    assert cfg.profiles[0].scheduler_name == "ksched"
    cfg2, _, _ = decode_config(CASES["defaults/explicit-empty-name"].data)
    assert cfg2 is not None
    assert cfg2.profiles[0].scheduler_name == ""


def test_several_profiles_get_no_default_name() -> None:
    cfg, _, _ = decode_config(CASES["defaults/several-profiles"].data)
    assert cfg is not None
    assert [p.scheduler_name for p in cfg.profiles] == ["", "b"]


def test_zero_values_defaulted_like_upstream() -> None:
    cfg, _ = load("defaults/zero-values")
    assert cfg.leader_election == LeaderElection()
    assert cfg.client_connection == ClientConnection()
    assert cfg.extenders[0].http_timeout == 5.0


def test_explicit_values_are_not_overridden() -> None:
    cfg, _ = load("defaults/explicit-values")
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (4, 30)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 20)
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.resource_name, le.resource_namespace) == (
        False,
        30.0,
        "mine",
        "ns",
    )
    cc = cfg.client_connection
    assert (cc.qps, cc.burst, cc.content_type, cc.kubeconfig) == (10.5, 7, "application/yaml", "/k")


def test_set_defaults_is_idempotent() -> None:
    cfg, _ = load("defaults/idempotent")
    again = copy.deepcopy(cfg)
    assert set_defaults(again) == []
    assert again == cfg


def test_set_defaults_adds_profile_when_none() -> None:
    cfg = KubeSchedulerConfiguration(profiles=[])
    set_defaults(cfg)
    assert [p.scheduler_name for p in cfg.profiles] == ["ksched"]
    cfg2 = KubeSchedulerConfiguration(profiles=[Profile("a"), Profile("b")])
    set_defaults(cfg2)
    assert [p.scheduler_name for p in cfg2.profiles] == ["a", "b"]


# --- plugin args -------------------------------------------------------------------------


@pytest.mark.parametrize("case", by_prefix("args/"), ids=lambda c: c.id)
def test_default_plugin_args(case: Case) -> None:
    (pc,) = case.data["profiles"][0]["pluginConfig"]
    name, args, expected = pc["name"], pc["args"], case.expect
    before = copy.deepcopy(args)
    assert default_plugin_args(name, args) == expected
    assert args == before  # the caller's dict is not mutated


def test_default_plugin_args_leaves_other_plugins_untouched() -> None:
    args: dict[str, Any] = {"anything": [1, 2]}
    assert default_plugin_args("MyOutOfTreePlugin", args) is args
    assert default_plugin_args("MyOutOfTreePlugin", {}) == {}


@pytest.mark.parametrize(
    ("version", "gate", "plugin", "after"),
    [
        # v1.37.2's applyDeferredPodScheduling: just before NodeResourcesFit
        (
            "1.37",
            "InPlacePodVerticalScalingSchedulerPreemption",
            "DeferredPodScheduling",
            "NodePorts",
        ),
        # v1.37.2's applyGangScheduling follows GenericWorkload; v1.36.3's GangScheduling
        ("1.37", "GenericWorkload", "GangScheduling", "NodeDeclaredFeatures"),
        ("1.36", "GenericWorkload,GangScheduling", "GangScheduling", "NodeDeclaredFeatures"),
    ],
)
def test_gated_plugins_join_where_each_versions_apply_feature_gates_puts_them(
    monkeypatch: pytest.MonkeyPatch, version: str, gate: str, plugin: str, after: str
) -> None:
    """Were ksched to have the plugin, its gate puts it where upstream's does (until then
    the gate is refused, ``ksched.features.support``)."""
    import ksched.config.defaults as defaults

    monkeypatch.setattr(defaults, "BUILTIN_PLUGINS", {*defaults.BUILTIN_PLUGINS, plugin})
    flags = ",".join(f"{g}=true" for g in gate.split(","))
    got = [p.name for p in default_multi_point(gates(version, flags))]
    assert got[got.index(plugin) - 1] == after
    off = [p.name for p in default_multi_point(gates(version))]
    assert plugin not in off


def test_gang_scheduling_gate_adds_nothing_in_1_37() -> None:
    """1.37 dropped the GangScheduling gate: GenericWorkload alone adds the plugin."""
    with pytest.raises(FeatureGateError, match="GangScheduling"):
        gates("1.37", "GangScheduling=true")


# v1.37.2's `kube-scheduler --write-config-to` with
# `--feature-gates GenericWorkload=true,TopologyAwareWorkloadScheduling=true`: the workload
# plugins join multiPoint last (GangScheduling, then TopologyPlacementGenerator, then
# PodGroupPodsCount with weight 1), no pluginConfig of their own, and the placement sets stay
# empty: NodeResourcesFit scores placements through multiPoint, not through placementScore.
def test_workload_gates_give_kube_schedulers_1_37_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    import ksched.config.defaults as defaults

    # GangScheduling is another engineer's plugin; until it is registered, pretend it is.
    monkeypatch.setattr(defaults, "BUILTIN_PLUGINS", {*defaults.BUILTIN_PLUGINS, "GangScheduling"})
    g = gates("1.37", "GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
    got = [(p.name, p.weight) for p in default_multi_point(g)]
    assert got == [
        *UPSTREAM_MULTI_POINT_1_37,
        ("GangScheduling", None),
        ("TopologyPlacementGenerator", None),
        ("PodGroupPodsCount", 1),
    ]
    profile = to_dict(default_config(g))["profiles"][0]
    for point in ("placementGenerate", "placementScore", "podGroupPostFilter"):
        assert profile["plugins"][point] == {}
    assert [c["name"] for c in profile["pluginConfig"]] == [
        c.name for c in DEFAULT_PLUGIN_CONFIG["1.37"]
    ]


def test_topology_aware_plugins_need_their_gate() -> None:
    names = [p.name for p in default_multi_point(gates("1.37", "GenericWorkload=true"))]
    assert "TopologyPlacementGenerator" not in names and "PodGroupPodsCount" not in names
