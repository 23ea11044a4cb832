from typing import Any

import pytest

from ksched.config import (
    DEFAULT_MULTI_POINT,
    KubeSchedulerConfiguration,
    decode_config,
    default_config,
    set_defaults,
    validate,
)
from tests.config.cases import CASES, Case, by_prefix


def defaulted(data: Any) -> KubeSchedulerConfiguration:
    cfg, problems, _ = decode_config(data)
    assert cfg is not None, problems
    set_defaults(cfg)
    return cfg


def check(case_id: str, known: list[str] | None = None) -> list[str]:
    """ksched's validation problems for the config test case ``case_id`` (cases.py)."""
    return validate(defaulted(CASES[case_id].data), known)


def test_default_config_is_valid() -> None:
    assert validate(default_config()) == []
    assert validate(default_config(), [p.name for p in DEFAULT_MULTI_POINT]) == []


@pytest.mark.parametrize("case", by_prefix("validation/scalar/"), ids=lambda c: c.id)
def test_scalar_rules(case: Case) -> None:
    assert check(case.id) == case.expect


def test_valid_edges_pass() -> None:
    assert check("validation/valid-edges") == []
    # Upstream has no qps check; a negative QPS is passed on to the client.
    assert check("validation/negative-qps") == []


def test_leader_election_rules_skipped_when_not_electing() -> None:
    assert check("validation/leader-election-off") == []


def test_leader_election_required_names() -> None:
    cfg = default_config()
    cfg.leader_election.resource_lock = ""
    cfg.leader_election.resource_name = ""
    cfg.leader_election.resource_namespace = ""
    assert validate(cfg) == [
        "leaderElection.resourceLock: Required value",
        "leaderElection.resourceNamespace: Required value",
        "leaderElection.resourceName: Required value",
        'leaderElection.resourceLock: Invalid value: "": resourceLock value must be "leases"',
    ]


def test_profiles_required() -> None:
    cfg = default_config()
    cfg.profiles = []
    assert validate(cfg) == ["profiles: Required value"]


def test_scheduler_name_required_with_several_profiles() -> None:
    required = ["profiles[0].schedulerName: Required value"]
    assert check("validation/unnamed-of-two-profiles") == required
    assert check("validation/empty-scheduler-name") == required


def test_duplicate_scheduler_name() -> None:
    assert check("validation/duplicate-scheduler-name") == [
        'profiles[2].schedulerName: Duplicate value: "x"'
    ]


def test_queue_sort_must_match_across_profiles() -> None:
    assert check("validation/queue-sort-same") == []
    assert check("validation/queue-sort-differs") == [
        'profiles[1].plugins.queueSort: Invalid value: {"enabled": [], "disabled": []}: '
        "must be the same for all profiles"
    ]


def test_only_one_queue_sort_plugin() -> None:
    assert check("validation/two-queue-sorts") == [
        "profiles[0].plugins.queueSort.enabled: Invalid value: 2: only one queue sort plugin "
        "can be enabled"
    ]


def test_queue_sort_args_must_match_across_profiles() -> None:
    assert check("validation/queue-sort-args-same") == []
    assert check("validation/queue-sort-args-differ") == [
        'profiles[1].pluginConfig.args: Invalid value: {"k": 2}: queueSort must be the same '
        "for all profiles"
    ]


def test_plugin_weights_are_not_range_checked_like_upstream() -> None:
    # Upstream validation has no weight rule; the framework maps 0 to 1 and refuses a
    # negative sum followed by another Score plugin (tests/test_cli.py).
    assert check("validation/unknown-plugin-weights") == []
    assert check("validation/negative-score-weight") == []


def test_duplicate_plugin_config() -> None:
    assert check("validation/duplicate-plugin-config") == [
        'profiles[0].pluginConfig[2]: Duplicate value: "Foo"'
    ]


def test_plugin_config_for_plugin_not_enabled_is_fine() -> None:
    assert check("validation/plugin-config-not-enabled") == []
    # nor for one no plugin is registered under: kube-scheduler ignores it (ksched warns)
    known = [p.name for p in DEFAULT_MULTI_POINT]
    assert check("validation/plugin-config-not-enabled", known) == []


def test_removed_plugins_rejected() -> None:
    case = CASES["validation/removed-plugins"]
    assert check(case.id) == case.expect


def test_known_plugins() -> None:
    known = ["NodeName", "PrioritySort", "DefaultBinder"]
    avail = "available: DefaultBinder, NodeName, PrioritySort"
    # pluginConfig "Ghost" is not a problem: kube-scheduler ignores args of plugins it does
    # not build (load_config_data warns about it).
    assert check("validation/known-plugins", known) == [
        f'profiles[0].plugins.filter.enabled[1]: unknown plugin "Foo"; {avail}',
        f'profiles[0].plugins.multiPoint.enabled[1]: unknown plugin "Custom"; {avail}',
    ]


def test_known_plugins_flags_defaults_missing_from_registry() -> None:
    known = [p.name for p in DEFAULT_MULTI_POINT if p.name != "ImageLocality"]
    problems = validate(default_config(), known)
    index = [p.name for p in default_config().profiles[0].plugins.multi_point.enabled].index(
        "ImageLocality"
    )
    assert len(problems) == 1
    assert problems[0].startswith(
        f'profiles[0].plugins.multiPoint.enabled[{index}]: unknown plugin "ImageLocality"; '
        "available: DefaultBinder, DefaultPreemption,"
    )


# --- extenders -----------------------------------------------------------------------------


def test_valid_extender() -> None:
    assert check("validation/extender-valid") == []


def test_extender_rules() -> None:
    problems = check("validation/extender-rules")
    assert problems[:6] == [
        "extenders[0].urlPrefix: Required value",
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
        "extenders[0].httpTimeout: Invalid value: -1s: must be greater than or equal to 0",
        'extenders[0].managedResources[1].name: Invalid value: "example.com/gpu": duplicate '
        "extender managed resource name",
        "extenders[1].weight: Invalid value: -2: must have a positive weight applied to it",
        'extenders[1].managedResources[0].name: Invalid value: "example.com/gpu": duplicate '
        "extender managed resource name",
    ]
    assert problems[6:9] == [
        'extenders[1].managedResources[1].name: Invalid value: "cpu": is an invalid extended '
        "resource name",
        'extenders[1].managedResources[2].name: Invalid value: "kubernetes.io/thing": is an '
        "invalid extended resource name",
        'extenders[1].managedResources[3].name: Invalid value: "example.com/bad name": name part '
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]
    assert problems[9].startswith(
        'extenders[1].managedResources[4].name: Invalid value: "a/b/c": a qualified name must '
        "consist of"
    )
    assert problems[10:] == [
        'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can '
        "implement bind"
    ]


def test_extender_weight_zero_with_prioritize_verb() -> None:
    # Upstream v1 has no weight default: a prioritizing extender must set one.
    assert check("validation/extender-prioritize-without-weight") == [
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"
    ]
    assert check("validation/extender-filter-only") == []


def test_extender_checks_beyond_upstream() -> None:
    # deliberate extensions (docs/fidelity.md): kube-scheduler accepts both configs
    assert check("validation/extender-without-url") == ["extenders[0].urlPrefix: Required value"]
    assert check("validation/extender-negative-timeout") == [
        "extenders[0].httpTimeout: Invalid value: -1s: must be greater than or equal to 0"
    ]


def test_bad_managed_resource_prefix() -> None:
    assert check("validation/extender-bad-resource-prefix") == [
        'extenders[0].managedResources[0].name: Invalid value: "Bad_Domain/x": prefix part '
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ]


def test_all_problems_collected_in_upstream_order() -> None:
    problems = check("validation/all-problems")
    assert problems == [
        "clientConnection.burst: Invalid value: -5: must be non-negative",
        "leaderElection.retryPeriod: Invalid value: -1s: must be greater than zero",
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
        'profiles[1].schedulerName: Duplicate value: "a"',
        "percentageOfNodesToScore: Invalid value: 150: not in valid range [0-100]",
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
    ]


@pytest.mark.parametrize("version", ["1.36", "1.37"])
@pytest.mark.parametrize("case", by_prefix("validation/workload/"), ids=lambda c: c.id)
def test_workload_plugin_sets_per_version(case: Case, version: str) -> None:
    """placementGenerate/placementScore (both versions) and podGroupPostFilter (1.37; an
    unknown field in 1.36) hold only the plugins that extend them upstream, once each."""
    from ksched.config import ConfigError, load_config_data, to_dict
    from ksched.features import set_feature_gates

    gates = set_feature_gates([], [version])
    try:
        cfg, _ = load_config_data(case.data, "c.yaml", None, gates)
    except ConfigError as e:
        assert not case.expect[version], e.problems
        (problem,) = e.problems
        assert problem.startswith("c.yaml: profiles[0].plugins.")
        return
    assert case.expect[version]
    (key,) = case.data["profiles"][0]["plugins"]
    # written back out as given (--write-config-to), merged with no defaults
    assert to_dict(cfg)["profiles"][0]["plugins"][key] == case.data["profiles"][0]["plugins"][key]


def test_the_effective_config_has_each_versions_plugin_sets() -> None:
    from ksched.config import default_config, to_dict
    from ksched.features import set_feature_gates

    keys = {
        v: list(to_dict(default_config(set_feature_gates([], [v])))["profiles"][0]["plugins"])
        for v in ("1.36", "1.37")
    }
    assert keys["1.36"][-3:] == ["multiPoint", "placementGenerate", "placementScore"]
    assert keys["1.37"] == [*keys["1.36"], "podGroupPostFilter"]
