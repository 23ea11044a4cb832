from typing import Any

import pytest

from ksched.config import (
    API_VERSION,
    DEFAULT_MULTI_POINT,
    KIND,
    UNIMPLEMENTED_UPSTREAM_PLUGINS,
    KubeSchedulerConfiguration,
    decode_config,
    default_config,
    set_defaults,
    validate,
)


def defaulted(**fields: Any) -> KubeSchedulerConfiguration:
    cfg, problems, _ = decode_config({"apiVersion": API_VERSION, "kind": KIND, **fields})
    assert cfg is not None, problems
    set_defaults(cfg)
    return cfg


def check(known: list[str] | None = None, **fields: Any) -> list[str]:
    return validate(defaulted(**fields), known)


def test_default_config_is_valid() -> None:
    assert validate(default_config()) == []
    implemented = [
        p.name for p in DEFAULT_MULTI_POINT if p.name not in UNIMPLEMENTED_UPSTREAM_PLUGINS
    ]
    assert validate(default_config(), implemented) == []


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"parallelism": 0},
            ["parallelism: Invalid value: 0: should be an integer value greater than zero"],
        ),
        (
            {"parallelism": -3},
            ["parallelism: Invalid value: -3: should be an integer value greater than zero"],
        ),
        (
            {"percentageOfNodesToScore": 101},
            ["percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"],
        ),
        (
            {"percentageOfNodesToScore": -1},
            ["percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"],
        ),
        (
            {"profiles": [{"percentageOfNodesToScore": 200}]},
            [
                "profiles[0].percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]"
            ],
        ),
        (
            {"podInitialBackoffSeconds": 0, "podMaxBackoffSeconds": 0},
            ["podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"],
        ),
        (
            {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 4},
            [
                "podMaxBackoffSeconds: Invalid value: 4: must be greater than or equal to "
                "PodInitialBackoffSeconds"
            ],
        ),
        (
            {"clientConnection": {"burst": -1}},
            ["clientConnection.burst: Invalid value: -1: must be non-negative"],
        ),
        (
            {"leaderElection": {"leaseDuration": "10s", "renewDeadline": "10s"}},
            [
                "leaderElection.leaseDuration: Invalid value: 10s: must be greater than "
                "renewDeadline (10s)"
            ],
        ),
        (
            {"leaderElection": {"leaseDuration": "-1s", "retryPeriod": "-500ms"}},
            [
                "leaderElection.leaseDuration: Invalid value: -1s: must be greater than zero",
                "leaderElection.retryPeriod: Invalid value: -500ms: must be greater than zero",
                "leaderElection.leaseDuration: Invalid value: -1s: must be greater than "
                "renewDeadline (10s)",
            ],
        ),
        (
            {"leaderElection": {"resourceLock": "endpointsleases"}},
            [
                'leaderElection.resourceLock: Invalid value: "endpointsleases": resourceLock value '
                'must be "leases"'
            ],
        ),
    ],
)
def test_scalar_rules(fields: dict[str, Any], expected: list[str]) -> None:
    assert check(**fields) == expected


def test_valid_edges_pass() -> None:
    assert (
        check(
            percentageOfNodesToScore=0,
            parallelism=1,
            podInitialBackoffSeconds=3,
            podMaxBackoffSeconds=3,
            profiles=[{"percentageOfNodesToScore": 100}],
        )
        == []
    )
    # Upstream has no qps check; a negative QPS is passed on to the client.
    assert check(clientConnection={"qps": -1, "burst": 0}) == []


def test_leader_election_rules_skipped_when_not_electing() -> None:
    assert (
        check(
            leaderElection={
                "leaderElect": False,
                "leaseDuration": "-1s",
                "renewDeadline": "5s",
                "resourceLock": "endpoints",
            }
        )
        == []
    )


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
    assert check(profiles=[{}, {"schedulerName": "b"}]) == required
    assert check(profiles=[{"schedulerName": ""}]) == required


def test_duplicate_scheduler_name() -> None:
    assert check(
        profiles=[{"schedulerName": "x"}, {"schedulerName": "y"}, {"schedulerName": "x"}]
    ) == ['profiles[2].schedulerName: Duplicate value: "x"']


def test_queue_sort_must_match_across_profiles() -> None:
    qs = {"queueSort": {"enabled": [{"name": "MySort"}], "disabled": [{"name": "*"}]}}
    assert (
        check(
            profiles=[{"schedulerName": "a", "plugins": qs}, {"schedulerName": "b", "plugins": qs}]
        )
        == []
    )
    assert check(profiles=[{"schedulerName": "a", "plugins": qs}, {"schedulerName": "b"}]) == [
        'profiles[1].plugins.queueSort: Invalid value: {"enabled": [], "disabled": []}: '
        "must be the same for all profiles"
    ]


def test_only_one_queue_sort_plugin() -> None:
    assert check(
        profiles=[{"plugins": {"queueSort": {"enabled": [{"name": "A"}, {"name": "B"}]}}}]
    ) == [
        "profiles[0].plugins.queueSort.enabled: Invalid value: 2: only one queue sort plugin "
        "can be enabled"
    ]


def test_queue_sort_args_must_match_across_profiles() -> None:
    def prof(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "schedulerName": name,
            "plugins": {"queueSort": {"enabled": [{"name": "MySort"}]}},
            "pluginConfig": [{"name": "MySort", "args": args}],
        }

    assert check(profiles=[prof("a", {"k": 1}), prof("b", {"k": 1})]) == []
    assert check(profiles=[prof("a", {"k": 1}), prof("b", {"k": 2})]) == [
        'profiles[1].pluginConfig.args: Invalid value: {"k": 2}: queueSort must be the same '
        "for all profiles"
    ]


def test_plugin_weights_are_not_range_checked_like_upstream() -> None:
    # Upstream validation has no weight rule; the framework maps 0 to 1.
    assert (
        check(
            profiles=[
                {
                    "plugins": {
                        "score": {
                            "enabled": [{"name": "A", "weight": -1}, {"name": "B", "weight": 0}]
                        }
                    }
                }
            ]
        )
        == []
    )


def test_duplicate_plugin_config() -> None:
    assert check(
        profiles=[
            {
                "pluginConfig": [
                    {"name": "Foo", "args": {}},
                    {"name": "Bar"},
                    {"name": "Foo", "args": {"x": 1}},
                ]
            }
        ]
    ) == ['profiles[0].pluginConfig[2]: Duplicate value: "Foo"']


def test_plugin_config_for_plugin_not_enabled_is_fine() -> None:
    assert check(profiles=[{"pluginConfig": [{"name": "NotEnabled", "args": {"a": 1}}]}]) == []


def test_removed_plugins_rejected() -> None:
    v = '"kubescheduler.config.k8s.io/v1"'
    assert check(
        profiles=[
            {
                "plugins": {
                    "filter": {"enabled": [{"name": "NodeName"}, {"name": "EBSLimits"}]},
                    "multiPoint": {"enabled": [{"name": "AzureDiskLimits"}]},
                },
                "pluginConfig": [{"name": "GCEPDLimits"}],
            }
        ]
    ) == [
        f'profiles[0].plugins.filter.enabled[1]: Invalid value: "EBSLimits": was invalid in '
        f"version {v} (KubeSchedulerConfiguration is version {v})",
        f'profiles[0].pluginConfig[0]: Invalid value: "GCEPDLimits": was invalid in version {v} '
        f"(KubeSchedulerConfiguration is version {v})",
    ]


def test_known_plugins() -> None:
    known = ["NodeName", "PrioritySort", "DefaultBinder"]
    avail = "available: DefaultBinder, NodeName, PrioritySort"
    problems = check(
        known,
        profiles=[
            {
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "PrioritySort"}, {"name": "Custom"}],
                        "disabled": [{"name": "*"}],
                    },
                    "filter": {
                        "enabled": [{"name": "NodeName"}, {"name": "Foo"}],
                        "disabled": [{"name": "NotARealPlugin"}],
                    },
                },
                "pluginConfig": [{"name": "NodeName"}, {"name": "Ghost"}],
            }
        ],
    )
    assert problems == [
        f'profiles[0].plugins.filter.enabled[1]: unknown plugin "Foo"; {avail}',
        f'profiles[0].plugins.multiPoint.enabled[1]: unknown plugin "Custom"; {avail}',
        f'profiles[0].pluginConfig[1]: unknown plugin "Ghost"; {avail}',
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
    assert (
        check(
            extenders=[
                {
                    "urlPrefix": "http://e",
                    "prioritizeVerb": "p",
                    "weight": 1,
                    "bindVerb": "bind",
                    "managedResources": [{"name": "example.com/gpu"}, {"name": "vendor.io/fpga"}],
                }
            ]
        )
        == []
    )


def test_extender_rules() -> None:
    problems = check(
        extenders=[
            {
                "prioritizeVerb": "prioritize",
                "bindVerb": "b",
                "httpTimeout": "-1s",
                "managedResources": [{"name": "example.com/gpu"}, {"name": "example.com/gpu"}],
            },
            {
                "urlPrefix": "http://x",
                "prioritizeVerb": "p",
                "weight": -2,
                "bindVerb": "b",
                "managedResources": [
                    {"name": "example.com/gpu"},
                    {"name": "cpu"},
                    {"name": "kubernetes.io/thing"},
                    {"name": "example.com/bad name"},
                    {"name": "a/b/c"},
                ],
            },
        ]
    )
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
    assert check(extenders=[{"urlPrefix": "http://e", "prioritizeVerb": "p"}]) == [
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"
    ]
    assert check(extenders=[{"urlPrefix": "http://e", "filterVerb": "f"}]) == []


def test_bad_managed_resource_prefix() -> None:
    assert check(
        extenders=[{"urlPrefix": "u", "managedResources": [{"name": "Bad_Domain/x"}]}]
    ) == [
        'extenders[0].managedResources[0].name: Invalid value: "Bad_Domain/x": prefix part '
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ]


def test_all_problems_collected_in_upstream_order() -> None:
    problems = check(
        parallelism=0,
        percentageOfNodesToScore=150,
        podInitialBackoffSeconds=0,
        clientConnection={"burst": -5},
        leaderElection={"retryPeriod": "-1s"},
        profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}],
        extenders=[{"urlPrefix": "u", "prioritizeVerb": "p"}],
    )
    assert problems == [
        "clientConnection.burst: Invalid value: -5: must be non-negative",
        "leaderElection.retryPeriod: Invalid value: -1s: must be greater than zero",
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
        'profiles[1].schedulerName: Duplicate value: "a"',
        "percentageOfNodesToScore: Invalid value: 150: not in valid range [0-100]",
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
    ]
