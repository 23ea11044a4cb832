import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.config import (
    API_VERSION,
    KIND,
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

HEAD = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"


def problems_of(data: Any, source: str = "config.yaml") -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config_data(data, source)
    return info.value.problems


def doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


# --- apiVersion / kind --------------------------------------------------------------------


def test_v1_loads_without_warnings() -> None:
    cfg, warnings = load_config_data(doc(parallelism=8), "config.yaml")
    assert warnings == []
    assert cfg.parallelism == 8
    assert cfg.api_version == API_VERSION


def test_v1beta3_is_accepted_with_deprecation_warning() -> None:
    cfg, warnings = load_config_data(
        {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND, "parallelism": 3},
        "config.yaml",
    )
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


@pytest.mark.parametrize(
    ("version", "what_changed"),
    [
        ("v1beta2", "default score weights changed"),
        ("v1beta1", "NodeResourcesFit scoringStrategy"),
        ("v1alpha1", "algorithmSource"),
        ("v1alpha2", "plugins.multiPoint"),
    ],
)
def test_removed_versions_are_rejected_with_upgrade_hint(version: str, what_changed: str) -> None:
    problems = problems_of(
        {
            "apiVersion": f"kubescheduler.config.k8s.io/{version}",
            "kind": KIND,
            "profiles": [
                {"plugins": {"score": {"enabled": [{"name": "NodeResourcesLeastAllocated"}]}}}
            ],
            "algorithmSource": {"provider": "DefaultProvider"},
        }
    )
    # Only the version problem: fields of another version would be noise.
    assert len(problems) == 1
    msg = problems[0]
    assert msg.startswith(
        f"config.yaml: apiVersion: kubescheduler.config.k8s.io/{version} is no longer supported"
    )
    assert "change apiVersion to kubescheduler.config.k8s.io/v1" in msg
    assert what_changed in msg


def test_policy_kind_is_rejected() -> None:
    problems = problems_of(
        {"apiVersion": "v1", "kind": "Policy", "predicates": [{"name": "PodFitsResources"}]}
    )
    assert len(problems) == 1
    assert problems[0].startswith("config.yaml: kind: Policy: ")
    assert "Policy API was removed in Kubernetes 1.23" in problems[0]
    assert "KubeSchedulerConfiguration" in problems[0]
    assert "profiles and plugins" in problems[0]


def test_unknown_version_and_kind() -> None:
    assert problems_of({"apiVersion": "v1", "kind": "Pod"}) == [
        'config.yaml: apiVersion: Unsupported value: "v1": supported values: '
        '"kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3" (deprecated)',
        'config.yaml: kind: Unsupported value: "Pod": supported values: '
        '"KubeSchedulerConfiguration"',
    ]


def test_missing_type_meta() -> None:
    assert problems_of({}) == [
        "config.yaml: apiVersion: Required value",
        "config.yaml: kind: Required value",
    ]
    assert problems_of(None) == problems_of({})


def test_non_mapping_document() -> None:
    assert problems_of(["a"]) == ["config.yaml: must be an object, got a list"]


# --- unknown fields -------------------------------------------------------------------------


def test_unknown_fields_anywhere_name_their_path() -> None:
    problems = problems_of(
        doc(
            parallelizm=3,
            leaderElection={"leaseDurationn": "1s"},
            clientConnection={"QPS": 1},
            profiles=[
                {
                    "schedulerName": "a",
                    "plugins": {
                        "filter": {"enabled": [{"name": "A"}, {"nam": "B"}]},
                        "scores": {},
                        "multiPoint": {"enable": []},
                    },
                    "pluginConfig": [{"name": "X", "arg": {}}],
                }
            ],
            extenders=[
                {
                    "urlPrefix": "http://e",
                    "tlsConfig": {"certfile": "x"},
                    "managedResources": [{"name": "example.com/r", "ignored": True}],
                }
            ],
            featureGates={"Foo": True},
        )
    )
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
    cfg, _ = load_config_data(
        doc(
            profiles=[
                {
                    "pluginConfig": [
                        {
                            "name": "Custom",
                            "args": {"whatever": {"nested": [1, "x"]}, "kind": "CustomArgs"},
                        },
                        {"name": "DefaultPreemption", "args": {"unknownKnob": 1}},
                    ]
                }
            ]
        )
    )
    pcs = {pc.name: pc.args for pc in cfg.profiles[0].plugin_config}
    # Out-of-tree args are untouched, type meta included.
    assert pcs["Custom"] == {"whatever": {"nested": [1, "x"]}, "kind": "CustomArgs"}
    assert pcs["DefaultPreemption"]["unknownKnob"] == 1


def test_in_tree_args_type_meta_is_checked_and_dropped() -> None:
    cfg, _ = load_config_data(
        doc(
            profiles=[
                {
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {
                                "apiVersion": API_VERSION,
                                "kind": "NodeResourcesFitArgs",
                                "scoringStrategy": {"type": "MostAllocated"},
                            },
                        }
                    ]
                }
            ]
        )
    )
    args = cfg.profiles[0].plugin_config[0].args
    assert "kind" not in args and "apiVersion" not in args
    assert args["scoringStrategy"]["type"] == "MostAllocated"
    assert problems_of(
        doc(
            profiles=[
                {
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"apiVersion": "v1", "kind": "InterPodAffinityArgs"},
                        }
                    ]
                }
            ]
        )
    ) == [
        'config.yaml: profiles[0].pluginConfig[0].args.kind: must be "NodeResourcesFitArgs", '
        "got 'InterPodAffinityArgs'",
        "config.yaml: profiles[0].pluginConfig[0].args.apiVersion: must be "
        "\"kubescheduler.config.k8s.io/v1\", got 'v1'",
    ]


def test_ignored_upstream_fields_are_accepted() -> None:
    cfg, warnings = load_config_data(
        doc(
            healthzBindAddress="0.0.0.0:10251",
            metricsBindAddress="0.0.0.0:10251",
            enableProfiling=True,
            enableContentionProfiling=False,
        )
    )
    assert warnings == []
    assert cfg == default_config()
    assert problems_of(doc(enableProfiling="yes please")) == [
        "config.yaml: enableProfiling: must be a boolean, got 'yes please'"
    ]


def test_null_values_count_as_absent() -> None:
    cfg, _ = load_config_data(
        doc(parallelism=None, leaderElection=None, profiles=None, extenders=None)
    )
    assert cfg == default_config()


# --- wrong types ------------------------------------------------------------------------------


def test_wrong_types_name_their_path() -> None:
    problems = problems_of(
        doc(
            parallelism="16",
            percentageOfNodesToScore=12.5,
            podInitialBackoffSeconds=True,
            profiles=[
                {
                    "schedulerName": 7,
                    "percentageOfNodesToScore": "abc",
                    "plugins": {
                        "score": {"enabled": [{"name": "A", "weight": "high"}]},
                        "filter": {"enabled": {"name": "A"}},
                    },
                    "pluginConfig": [{"name": "A", "args": ["x"]}],
                }
            ],
            leaderElection={"leaderElect": "yes", "leaseDuration": 15, "renewDeadline": "10x"},
            clientConnection={"qps": "fast", "burst": 2**40},
            extenders=[
                {
                    "urlPrefix": "http://e",
                    "weight": 1.5,
                    "httpTimeout": "soon",
                    "tlsConfig": {"caData": "not base64!"},
                }
            ],
            delayCacheUntilActive=1,
        )
    )
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
    assert problems_of(doc(profiles={"schedulerName": "a"}, leaderElection="on")) == [
        "config.yaml: leaderElection: must be an object, got 'on'",
        "config.yaml: profiles: must be a list, got an object",
    ]
    assert problems_of(doc(profiles=[None, 3])) == [
        "config.yaml: profiles[1]: must be an object, got 3",
    ]


def test_config_error_one_line_per_problem_with_source_prefix() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_data(doc(parallelism="x", bogus=1, profiles=[{"nope": 1}]), "my/sched.yaml")
    lines = str(info.value).splitlines()
    assert lines == [
        "my/sched.yaml: bogus: unknown field",
        "my/sched.yaml: parallelism: must be an integer, got 'x'",
        "my/sched.yaml: profiles[0].nope: unknown field",
    ]
    assert info.value.problems == lines


def test_validation_problems_raise_config_error_with_prefix() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_data(doc(parallelism=0, podInitialBackoffSeconds=0), "c.yaml")
    assert str(info.value).splitlines() == [
        "c.yaml: parallelism: Invalid value: 0: should be an integer value greater than zero",
        "c.yaml: podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
    ]


def test_known_plugins_checked_on_load() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_data(
            doc(profiles=[{"plugins": {"filter": {"enabled": [{"name": "Foo"}]}}}]),
            "c.yaml",
            known_plugins=["DefaultBinder"],
        )
    assert (
        'c.yaml: profiles[0].plugins.filter.enabled[0]: unknown plugin "Foo"; available: '
        "DefaultBinder" in info.value.problems
    )


# --- files ----------------------------------------------------------------------------------------

FULL_YAML = (
    HEAD
    + """\
parallelism: 8
percentageOfNodesToScore: 40
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 30
delayCacheUntilActive: true
leaderElection:
  leaderElect: true
  leaseDuration: 1m30s
  renewDeadline: 1m
  retryPeriod: 500ms
  resourceName: my-sched
clientConnection:
  kubeconfig: /etc/k.conf
  qps: 20.5
  burst: 40
profiles:
- schedulerName: fast
  percentageOfNodesToScore: 10
  plugins:
    multiPoint:
      enabled:
      - name: MyPlugin
        weight: 7
      - name: NodeAffinity
        weight: 9
      disabled:
      - name: ImageLocality
    filter:
      disabled:
      - name: NodePorts
    score:
      enabled:
      - name: DynamicResources
  pluginConfig:
  - name: MyPlugin
    args:
      knob: [1, 2]
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
- schedulerName: slow
extenders:
- urlPrefix: https://ext:8443/sched
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 3
  bindVerb: bind
  enableHTTPS: true
  tlsConfig:
    insecure: false
    serverName: ext
    caData: aGVsbG8=
  httpTimeout: 1.5s
  nodeCacheCapable: true
  managedResources:
  - name: example.com/gpu
    ignoredByScheduler: true
  ignorable: true
"""
)


def test_full_yaml_file(tmp_path: Path) -> None:
    cfg, warnings = load_config(write(tmp_path, "config.yaml", FULL_YAML))
    assert warnings == [
        f"{tmp_path}/config.yaml: profiles[0].plugins.score.enabled[0]: plugin 'DynamicResources' "
        "is not implemented by ksched; ignoring it"
    ]
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
    assert fast.plugins.score.enabled == []
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
    data = yaml.safe_load(FULL_YAML)
    from_json, _ = load_config(write(tmp_path, "c.json", json.dumps(data, indent=1)))
    from_yaml, _ = load_config(write(tmp_path, "c.yaml", FULL_YAML))
    assert from_json == from_yaml


def test_round_trip_dump_and_load(tmp_path: Path) -> None:
    cfg, _ = load_config(write(tmp_path, "c.yaml", FULL_YAML))
    text = dump_yaml(cfg)
    again, warnings = load_config(write(tmp_path, "dumped.yaml", text))
    assert warnings == []
    assert again == cfg
    assert dump_yaml(again) == text
    via_json, _ = load_config(write(tmp_path, "dumped.json", json.dumps(to_dict(cfg))))
    assert via_json == cfg


def test_round_trip_default_config(tmp_path: Path) -> None:
    cfg = default_config()
    again, warnings = load_config(write(tmp_path, "d.yaml", dump_yaml(cfg)))
    assert (again, warnings) == (cfg, [])


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
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, "empty.yaml", ""))
    assert info.value.problems == [
        f"{tmp_path}/empty.yaml: apiVersion: Required value",
        f"{tmp_path}/empty.yaml: kind: Required value",
    ]


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: cannot read: No such file or directory"]


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", HEAD + "profiles: [\n  - a\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert len(info.value.problems) == 1
    assert info.value.problems[0].startswith(f"{path}: line ")


def test_duplicate_keys_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", HEAD + "parallelism: 1\nparallelism: 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: line 4, column 1: duplicate key 'parallelism'"]
    jpath = write(tmp_path, "dup.json", '{"apiVersion": "x", "apiVersion": "y"}')
    with pytest.raises(ConfigError) as info:
        load_config(jpath)
    assert info.value.problems == [f"{jpath}: duplicate key 'apiVersion'"]


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    text = HEAD + (
        "leaderElection:\n  <<: {leaderElect: false, resourceName: a}\n  resourceName: b\n"
    )
    cfg, _ = load_config(write(tmp_path, "merge.yaml", text))
    assert cfg.leader_election.leader_elect is False
    assert cfg.leader_election.resource_name == "b"


def test_invalid_json(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '{"apiVersion": }')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: line 1, column 16: Expecting value"]


# --- validate_file -------------------------------------------------------------------------------


def test_validate_file_ok(tmp_path: Path) -> None:
    path = write(tmp_path, "ok.yaml", HEAD + "parallelism: 4\n")
    text, problems, warnings = validate_file(path)
    assert problems == [] and warnings == []
    assert text is not None
    assert yaml.safe_load(text)["parallelism"] == 4
    assert yaml.safe_load(text) == to_dict(load_config(path)[0])


def test_validate_file_problems_and_warnings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad.yaml",
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n"
        "parallelism: -1\nprofiles:\n- plugins:\n    filter:\n      enabled:\n"
        "      - name: DynamicResources\n      - name: Nope\n",
    )
    text, problems, warnings = validate_file(path, known_plugins=["NodeName", "PrioritySort"])
    assert text is None
    assert warnings[0].startswith(
        f"{path}: apiVersion: kubescheduler.config.k8s.io/v1beta3 is deprecated"
    )
    assert warnings[1] == (
        f"{path}: profiles[0].plugins.filter.enabled[0]: plugin 'DynamicResources' "
        "is not implemented by ksched; ignoring it"
    )
    assert (
        f"{path}: parallelism: Invalid value: -1: should be an integer value greater than zero"
    ) in problems
    assert (
        f'{path}: profiles[0].plugins.filter.enabled[0]: unknown plugin "Nope"; available: '
        "NodeName, PrioritySort"
    ) in problems
