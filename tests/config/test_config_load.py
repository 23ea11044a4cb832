import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.config import (
    API_VERSION,
    ConfigError,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    PluginRef,
    default_config,
    dump_yaml,
    load_config,
    load_config_data,
    to_dict,
    validate_file,
)
from tests.config.cases import CASES, FULL_YAML, Case, by_prefix


def data(case_id: str) -> Any:
    """The parsed document of the config test case ``case_id`` (cases.py)."""
    return CASES[case_id].data


def problems_of(data: Any, source: str = "config.yaml") -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config_data(data, source)
    return info.value.problems


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def case_file(tmp_path: Path, case_id: str) -> str:
    """The config test case ``case_id`` written to a file."""
    case = CASES[case_id]
    return write(tmp_path, case_id.rsplit("/", 1)[-1] + case.suffix, case.file_text())


# --- apiVersion / kind --------------------------------------------------------------------


def test_v1_loads_without_warnings() -> None:
    cfg, warnings = load_config_data(data("load/v1"), "config.yaml")
    assert warnings == []
    assert cfg.parallelism == 8
    assert cfg.api_version == API_VERSION


def test_v1beta3_is_accepted_with_deprecation_warning() -> None:
    cfg, warnings = load_config_data(data("load/v1beta3"), "config.yaml")
    assert cfg.parallelism == 3
    assert len(warnings) == 1
    assert warnings[0].startswith("config.yaml: apiVersion: kubescheduler.config.k8s.io/v1beta3")
    assert "deprecated" in warnings[0]
    assert "change apiVersion to kubescheduler.config.k8s.io/v1" in warnings[0]
    # The effective config is written as v1 and then loads without the warning.
    assert to_dict(cfg)["apiVersion"] == API_VERSION
    again, warnings = load_config_data(to_dict(cfg), "config.yaml")
    assert warnings == []
    assert again.parallelism == 3 and again.profiles == cfg.profiles


@pytest.mark.parametrize("case", by_prefix("load/removed-version/"), ids=lambda c: c.id)
def test_removed_versions_are_rejected_with_upgrade_hint(case: Case) -> None:
    version, what_changed = case.id.rsplit("/", 1)[-1], case.expect
    problems = problems_of(case.data)
    # Only the version problem: fields of another version would be noise.
    assert len(problems) == 1
    msg = problems[0]
    assert msg.startswith(
        f"config.yaml: apiVersion: kubescheduler.config.k8s.io/{version} is no longer supported"
    )
    assert "change apiVersion to kubescheduler.config.k8s.io/v1" in msg
    assert what_changed in msg


def test_policy_kind_is_rejected() -> None:
    problems = problems_of(data("load/policy-kind"))
    assert len(problems) == 1
    assert problems[0].startswith("config.yaml: kind: Policy: ")
    assert "Policy API was removed in Kubernetes 1.23" in problems[0]
    assert "KubeSchedulerConfiguration" in problems[0]
    assert "profiles and plugins" in problems[0]


def test_unknown_version_and_kind() -> None:
    assert problems_of(data("load/unknown-version-and-kind")) == [
        'config.yaml: apiVersion: Unsupported value: "v1": supported values: '
        '"kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3" (deprecated)',
        'config.yaml: kind: Unsupported value: "Pod": supported values: '
        '"KubeSchedulerConfiguration"',
    ]


def test_missing_type_meta() -> None:
    assert problems_of(data("load/empty-object")) == [
        "config.yaml: apiVersion: Required value",
        "config.yaml: kind: Required value",
    ]
    assert problems_of(None) == problems_of({})


def test_non_mapping_document() -> None:
    assert problems_of(data("load/list-document")) == ["config.yaml: must be an object, got a list"]


# --- unknown fields -------------------------------------------------------------------------


def test_unknown_fields_anywhere_name_their_path() -> None:
    problems = problems_of(data("load/unknown-fields"))
    assert problems == [
        "config.yaml: parallelizm: unknown field",
        "config.yaml: featureGates: unknown field",
        "config.yaml: leaderElection.leaseDurationn: unknown field",
        "config.yaml: clientConnection.QPS: unknown field",
        "config.yaml: profiles[0].plugins.scores: unknown field",
        "config.yaml: profiles[0].plugins.filter.enabled[1].nam: unknown field",
        "config.yaml: profiles[0].plugins.multiPoint.enable: unknown field",
        "config.yaml: profiles[0].pluginConfig[0].arg: unknown field",
        "config.yaml: extenders[0].tlsConfig.certfile: unknown field",
        "config.yaml: extenders[0].managedResources[0].ignored: unknown field",
    ]


def test_plugin_args_are_free_form() -> None:
    cfg, _ = load_config_data(data("load/free-form-args"))
    pcs = {pc.name: pc.args for pc in cfg.profiles[0].plugin_config}
    # Out-of-tree args are untouched, type meta included.
    assert pcs["Custom"] == {"whatever": {"nested": [1, "x"]}, "kind": "CustomArgs"}
    assert pcs["DefaultPreemption"]["unknownKnob"] == 1


def test_in_tree_args_type_meta_is_checked_and_dropped() -> None:
    cfg, _ = load_config_data(data("load/in-tree-args-type-meta"))
    args = cfg.profiles[0].plugin_config[0].args
    assert "kind" not in args and "apiVersion" not in args
    assert args["scoringStrategy"]["type"] == "MostAllocated"
    assert problems_of(data("load/in-tree-args-wrong-type-meta")) == [
        'config.yaml: profiles[0].pluginConfig[0].args.kind: must be "NodeResourcesFitArgs", '
        "got 'InterPodAffinityArgs'",
        "config.yaml: profiles[0].pluginConfig[0].args.apiVersion: must be "
        "\"kubescheduler.config.k8s.io/v1\", got 'v1'",
    ]


def test_debugging_fields_are_accepted_but_removed_bind_addresses_are_not() -> None:
    cfg, warnings = load_config_data(data("load/profiling-fields"))
    assert warnings == []
    assert cfg == default_config()
    assert problems_of(data("load/profiling-not-boolean")) == [
        "config.yaml: enableProfiling: must be a boolean, got 'yes please'"
    ]
    # v1 has no healthzBindAddress/metricsBindAddress: kube-scheduler refuses them too
    gone = (
        "unknown field (removed from KubeSchedulerConfiguration before v1; kube-scheduler "
        "serves /healthz and /metrics on its secure port)"
    )
    assert problems_of(data("load/removed-bind-addresses")) == [
        f"config.yaml: healthzBindAddress: {gone}",
        f"config.yaml: metricsBindAddress: {gone}",
    ]


def test_null_values_count_as_absent() -> None:
    cfg, _ = load_config_data(data("load/null-values"))
    assert cfg == default_config()


# --- wrong types ------------------------------------------------------------------------------


def test_wrong_types_name_their_path() -> None:
    problems = problems_of(data("load/wrong-types"))
    assert problems == [
        "config.yaml: parallelism: must be an integer, got '16'",
        "config.yaml: leaderElection.leaderElect: must be a boolean, got 'yes'",
        'config.yaml: leaderElection.leaseDuration: must be a duration string like "15s" '
        'or "1m30s", got 15',
        "config.yaml: leaderElection.renewDeadline: unknown unit 'x' in duration '10x'",
        "config.yaml: clientConnection.qps: must be a number, got 'fast'",
        "config.yaml: clientConnection.burst: must be a 32-bit integer, got 1099511627776",
        "config.yaml: percentageOfNodesToScore: must be an integer, got 12.5",
        "config.yaml: podInitialBackoffSeconds: must be an integer, got true",
        "config.yaml: profiles[0].schedulerName: must be a string, got 7",
        "config.yaml: profiles[0].percentageOfNodesToScore: must be an integer, got 'abc'",
        "config.yaml: profiles[0].plugins.filter.enabled: must be a list, got an object",
        "config.yaml: profiles[0].plugins.score.enabled[0].weight: must be an integer, got 'high'",
        "config.yaml: profiles[0].pluginConfig[0].args: must be an object, got a list",
        "config.yaml: extenders[0].weight: must be an integer, got 1.5",
        "config.yaml: extenders[0].tlsConfig.caData: must be base64-encoded data",
        "config.yaml: extenders[0].httpTimeout: invalid duration 'soon'",
        "config.yaml: delayCacheUntilActive: must be a boolean, got 1",
    ]


def test_wrong_container_types() -> None:
    assert problems_of(data("load/wrong-container-types")) == [
        "config.yaml: leaderElection: must be an object, got 'on'",
        "config.yaml: profiles: must be a list, got an object",
    ]
    assert problems_of(data("load/non-object-profiles")) == [
        "config.yaml: profiles[1]: must be an object, got 3",
    ]


def test_config_error_one_line_per_problem_with_source_prefix() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_data(data("load/one-line-per-problem"), "my/sched.yaml")
    lines = str(info.value).splitlines()
    assert lines == [
        "my/sched.yaml: bogus: unknown field",
        "my/sched.yaml: parallelism: must be an integer, got 'x'",
        "my/sched.yaml: profiles[0].nope: unknown field",
    ]
    assert info.value.problems == lines


def test_validation_problems_raise_config_error_with_prefix() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_data(data("load/validation-problems"), "c.yaml")
    assert str(info.value).splitlines() == [
        "c.yaml: parallelism: Invalid value: 0: should be an integer value greater than zero",
        "c.yaml: podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
    ]


def test_known_plugins_checked_on_load() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_data(
            data("load/unknown-filter-plugin"), "c.yaml", known_plugins=["DefaultBinder"]
        )
    assert (
        'c.yaml: profiles[0].plugins.filter.enabled[0]: unknown plugin "Foo"; available: '
        "DefaultBinder" in info.value.problems
    )


# --- files ----------------------------------------------------------------------------------------


def test_full_yaml_file(tmp_path: Path) -> None:
    cfg, warnings = load_config(case_file(tmp_path, "load/full-yaml"))
    assert warnings == []
    assert cfg.parallelism == 8
    assert cfg.percentage_of_nodes_to_score == 40
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 30)
    assert cfg.delay_cache_until_active is True
    le = cfg.leader_election
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (90.0, 60.0, 0.5)
    assert le.resource_name == "my-sched"
    assert cfg.client_connection.qps == 20.5
    fast, slow = cfg.profiles
    assert fast.scheduler_name == "fast" and slow.scheduler_name == "slow"
    assert fast.percentage_of_nodes_to_score == 10
    mp = fast.plugins.multi_point.enabled
    assert mp[-1] == PluginRef("MyPlugin", 7)
    assert PluginRef("NodeAffinity", 9) in mp
    assert "ImageLocality" not in [p.name for p in mp]
    assert fast.plugins.filter.disabled == [PluginRef("NodePorts")]
    assert fast.plugins.score.enabled == [PluginRef("DynamicResources")]
    assert cfg.extenders == [
        Extender(
            url_prefix="https://ext:8443/sched",
            filter_verb="filter",
            prioritize_verb="prioritize",
            weight=3,
            bind_verb="bind",
            enable_https=True,
            tls_config=ExtenderTLSConfig(server_name="ext", ca_data=b"hello"),
            http_timeout=1.5,
            node_cache_capable=True,
            managed_resources=[ExtenderManagedResource("example.com/gpu", True)],
            ignorable=True,
        )
    ]


def test_json_file_equals_yaml_file(tmp_path: Path) -> None:
    from_json, _ = load_config(case_file(tmp_path, "load/full-json"))
    from_yaml, _ = load_config(case_file(tmp_path, "load/full-yaml"))
    assert from_json == from_yaml


def test_round_trip_dump_and_load(tmp_path: Path) -> None:
    cfg, _ = load_config(case_file(tmp_path, "load/full-yaml"))
    text = dump_yaml(cfg)
    again, warnings = load_config(write(tmp_path, "dumped.yaml", text))
    assert warnings == []
    assert again == cfg
    assert dump_yaml(again) == text
    via_json, _ = load_config(write(tmp_path, "dumped.json", json.dumps(to_dict(cfg))))
    assert via_json == cfg


def test_round_trip_default_config(tmp_path: Path) -> None:
    assert CASES["load/dumped-default"].text == dump_yaml(default_config())
    again, warnings = load_config(case_file(tmp_path, "load/dumped-default"))
    assert (again, warnings) == (default_config(), [])


def test_to_dict_shape() -> None:
    cfg, _ = load_config_data(yaml.safe_load(FULL_YAML))
    d = to_dict(cfg)
    assert list(d)[:3] == ["apiVersion", "kind", "parallelism"]
    assert d["leaderElection"]["leaseDuration"] == "1m30s"
    assert d["leaderElection"]["renewDeadline"] == "1m0s"
    assert d["leaderElection"]["retryPeriod"] == "500ms"
    assert d["extenders"][0]["httpTimeout"] == "1.5s"
    assert d["extenders"][0]["tlsConfig"]["caData"] == "aGVsbG8="
    assert d["extenders"][0]["enableHTTPS"] is True
    assert d["percentageOfNodesToScore"] == 40
    assert d["profiles"][1]["plugins"]["filter"] == {}
    assert "percentageOfNodesToScore" not in d["profiles"][1]
    assert d["profiles"][0]["plugins"]["multiPoint"]["disabled"] == [{"name": "ImageLocality"}]
    assert "percentageOfNodesToScore" not in to_dict(default_config())
    # The dict never aliases the config's args.
    d["profiles"][0]["pluginConfig"][0]["args"]["knob"].append(3)
    assert cfg.profiles[0].plugin_config[0].args["knob"] == [1, 2]


def test_load_none_is_default_config() -> None:
    assert load_config(None) == (default_config(), [])


def test_empty_file_reports_missing_type_meta(tmp_path: Path) -> None:
    path = case_file(tmp_path, "load/empty-file")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [
        f"{path}: apiVersion: Required value",
        f"{path}: kind: Required value",
    ]


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: cannot read: No such file or directory"]


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = case_file(tmp_path, "load/yaml-syntax-error")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert len(info.value.problems) == 1
    assert info.value.problems[0].startswith(f"{path}: line ")


def test_duplicate_keys_rejected(tmp_path: Path) -> None:
    path = case_file(tmp_path, "load/duplicate-yaml-key")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: line 4, column 1: duplicate key 'parallelism'"]
    jpath = case_file(tmp_path, "load/duplicate-json-key")
    with pytest.raises(ConfigError) as info:
        load_config(jpath)
    assert info.value.problems == [f"{jpath}: duplicate key 'apiVersion'"]


def test_yaml_merge_keys_may_not_set_a_key_twice(tmp_path: Path) -> None:
    cfg, _ = load_config(case_file(tmp_path, "load/yaml-merge-key-no-override"))
    assert cfg.leader_election.leader_elect is False
    assert cfg.leader_election.resource_name == "b"
    # kube's strict YAML decoding: a key merged in and written out is set twice
    path = case_file(tmp_path, "load/yaml-merge-key")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: line 5, column 3: duplicate key 'resourceName'"]


def test_yaml_scalars_are_typed_as_kubernetes_types_them(tmp_path: Path) -> None:
    # go-yaml v2: y/n are booleans; dates and base-60 numbers are strings
    path = case_file(tmp_path, "load/yaml-one-letter-boolean")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [
        f"{path}: profiles[0].schedulerName: must be a string, got false"
    ]
    cfg, _ = load_config(case_file(tmp_path, "load/yaml-date-is-a-string"))
    assert cfg.profiles[0].scheduler_name == "2001-12-14"
    path = case_file(tmp_path, "load/yaml-base-60-is-a-string")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: parallelism: must be an integer, got '1:20'"]


def test_dump_quotes_strings_kubernetes_would_read_otherwise(tmp_path: Path) -> None:
    cfg = default_config()
    cfg.profiles[0].scheduler_name = "y"
    text = dump_yaml(cfg)
    assert "schedulerName: 'y'" in text
    again, _ = load_config(write(tmp_path, "y.yaml", text))
    assert again.profiles[0].scheduler_name == "y"


def test_invalid_json(tmp_path: Path) -> None:
    path = case_file(tmp_path, "load/invalid-json")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: line 1, column 16: Expecting value"]


# --- validate_file -------------------------------------------------------------------------------


def test_validate_file_ok(tmp_path: Path) -> None:
    path = case_file(tmp_path, "load/validate-file-ok")
    text, problems, warnings = validate_file(path)
    assert problems == [] and warnings == []
    assert text is not None
    assert yaml.safe_load(text)["parallelism"] == 4
    assert yaml.safe_load(text) == to_dict(load_config(path)[0])


def test_validate_file_problems_and_warnings(tmp_path: Path) -> None:
    path = case_file(tmp_path, "load/validate-file-problems")
    text, problems, warnings = validate_file(path, known_plugins=["NodeName", "PrioritySort"])
    assert text is None
    assert warnings[0].startswith(
        f"{path}: apiVersion: kubescheduler.config.k8s.io/v1beta3 is deprecated"
    )
    assert not any("DynamicResources" in w and "not implemented" in w for w in warnings)
    assert (
        f"{path}: parallelism: Invalid value: -1: should be an integer value greater than zero"
    ) in problems
    assert (
        f'{path}: profiles[0].plugins.filter.enabled[1]: unknown plugin "Nope"; available: '
        "NodeName, PrioritySort"
    ) in problems
