"""Every KubeSchedulerConfiguration document the config tests use, in one table.

The unit tests in this directory and tests/test_cli.py take their documents from ``CASES``
by id; tests/config/test_parity_kube.py writes every one to a file and gives it both to
``ksched config validate`` and to the real kube-scheduler, which must agree on accepting or
rejecting it. A new config in a config test belongs here, so that it is checked upstream too.

A case is parsed data (``data``, written out as YAML) or, when parsing itself is under test,
a file's exact ``text``. ``expect`` is what the unit test that owns the case expects of
ksched (validation problems, default args, ...); the parity test ignores it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from ksched.config import API_VERSION, KIND, default_config, dump_yaml, kubeyaml

__all__ = ["CASES", "HEAD", "Case", "by_prefix", "doc"]

HEAD = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"


@dataclass(frozen=True)
class Case:
    id: str
    data: Any = None
    text: str | None = None
    suffix: str = ".yaml"
    expect: Any = None

    def file_text(self) -> str:
        """The case as a config file's content."""
        if self.text is not None:
            return self.text
        if self.suffix == ".json":
            return json.dumps(self.data, indent=1)
        # strings such as "y" quoted, as kube-scheduler's YAML would read them otherwise
        return yaml.dump(self.data, Dumper=kubeyaml.Dumper, sort_keys=False)


CASES: dict[str, Case] = {}


def case(
    id: str, data: Any = None, *, text: str | None = None, suffix: str = ".yaml", expect: Any = None
) -> Case:
    assert id not in CASES, id
    c = CASES[id] = Case(id, data, text, suffix, expect)
    return c


def by_prefix(prefix: str) -> list[Case]:
    return [c for i, c in CASES.items() if i.startswith(prefix)]


def doc(**fields: Any) -> dict[str, Any]:
    """A v1 KubeSchedulerConfiguration with ``fields``."""
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def _profile(**fields: Any) -> dict[str, Any]:
    return doc(profiles=[fields])


V1 = '"kubescheduler.config.k8s.io/v1"'

# --- validation (test_config_validation.py) ----------------------------------------------

# test_scalar_rules: expect = ksched's validate() problems
case(
    "validation/scalar/parallelism-0",
    doc(parallelism=0),
    expect=["parallelism: Invalid value: 0: should be an integer value greater than zero"],
)
case(
    "validation/scalar/parallelism-negative",
    doc(parallelism=-3),
    expect=["parallelism: Invalid value: -3: should be an integer value greater than zero"],
)
case(
    "validation/scalar/percentage-above-100",
    doc(percentageOfNodesToScore=101),
    expect=["percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"],
)
case(
    "validation/scalar/percentage-negative",
    doc(percentageOfNodesToScore=-1),
    expect=["percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"],
)
case(
    "validation/scalar/profile-percentage",
    doc(profiles=[{"percentageOfNodesToScore": 200}]),
    expect=["profiles[0].percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]"],
)
case(
    "validation/scalar/initial-backoff-0",
    doc(podInitialBackoffSeconds=0, podMaxBackoffSeconds=0),
    expect=["podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"],
)
case(
    "validation/scalar/max-backoff-below-initial",
    doc(podInitialBackoffSeconds=5, podMaxBackoffSeconds=4),
    expect=[
        "podMaxBackoffSeconds: Invalid value: 4: must be greater than or equal to "
        "PodInitialBackoffSeconds"
    ],
)
case(
    "validation/scalar/burst-negative",
    doc(clientConnection={"burst": -1}),
    expect=["clientConnection.burst: Invalid value: -1: must be non-negative"],
)
case(
    "validation/scalar/lease-equals-renew",
    doc(leaderElection={"leaseDuration": "10s", "renewDeadline": "10s"}),
    expect=[
        "leaderElection.leaseDuration: Invalid value: 10s: must be greater than renewDeadline (10s)"
    ],
)
case(
    "validation/scalar/negative-durations",
    doc(leaderElection={"leaseDuration": "-1s", "retryPeriod": "-500ms"}),
    expect=[
        "leaderElection.leaseDuration: Invalid value: -1s: must be greater than zero",
        "leaderElection.retryPeriod: Invalid value: -500ms: must be greater than zero",
        "leaderElection.leaseDuration: Invalid value: -1s: must be greater than renewDeadline (10s)",
    ],
)
case(
    "validation/scalar/resource-lock",
    doc(leaderElection={"resourceLock": "endpointsleases"}),
    expect=[
        'leaderElection.resourceLock: Invalid value: "endpointsleases": resourceLock value '
        'must be "leases"'
    ],
)

case(
    "validation/valid-edges",
    doc(
        percentageOfNodesToScore=0,
        parallelism=1,
        podInitialBackoffSeconds=3,
        podMaxBackoffSeconds=3,
        profiles=[{"percentageOfNodesToScore": 100}],
    ),
)
# Upstream has no qps check; a negative QPS is passed on to the client.
case("validation/negative-qps", doc(clientConnection={"qps": -1, "burst": 0}))
case(
    "validation/leader-election-off",
    doc(
        leaderElection={
            "leaderElect": False,
            "leaseDuration": "-1s",
            "renewDeadline": "5s",
            "resourceLock": "endpoints",
        }
    ),
)
case("validation/unnamed-of-two-profiles", doc(profiles=[{}, {"schedulerName": "b"}]))
case("validation/empty-scheduler-name", doc(profiles=[{"schedulerName": ""}]))
case(
    "validation/duplicate-scheduler-name",
    doc(profiles=[{"schedulerName": "x"}, {"schedulerName": "y"}, {"schedulerName": "x"}]),
)

_MY_SORT = {"queueSort": {"enabled": [{"name": "MySort"}], "disabled": [{"name": "*"}]}}
case(
    "validation/queue-sort-same",
    doc(
        profiles=[
            {"schedulerName": "a", "plugins": _MY_SORT},
            {"schedulerName": "b", "plugins": _MY_SORT},
        ]
    ),
)
case(
    "validation/queue-sort-differs",
    doc(profiles=[{"schedulerName": "a", "plugins": _MY_SORT}, {"schedulerName": "b"}]),
)
case(
    "validation/two-queue-sorts",
    _profile(plugins={"queueSort": {"enabled": [{"name": "A"}, {"name": "B"}]}}),
)


def _sort_profile(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "schedulerName": name,
        "plugins": {"queueSort": {"enabled": [{"name": "MySort"}]}},
        "pluginConfig": [{"name": "MySort", "args": args}],
    }


case(
    "validation/queue-sort-args-same",
    doc(profiles=[_sort_profile("a", {"k": 1}), _sort_profile("b", {"k": 1})]),
)
case(
    "validation/queue-sort-args-differ",
    doc(profiles=[_sort_profile("a", {"k": 1}), _sort_profile("b", {"k": 2})]),
)
case(
    "validation/unknown-plugin-weights",
    _profile(
        plugins={"score": {"enabled": [{"name": "A", "weight": -1}, {"name": "B", "weight": 0}]}}
    ),
)
case(
    "validation/duplicate-plugin-config",
    _profile(
        pluginConfig=[
            {"name": "Foo", "args": {}},
            {"name": "Bar"},
            {"name": "Foo", "args": {"x": 1}},
        ]
    ),
)
case(
    "validation/plugin-config-not-enabled",
    _profile(pluginConfig=[{"name": "NotEnabled", "args": {"a": 1}}]),
)
case(
    "validation/removed-plugins",
    _profile(
        plugins={
            "filter": {"enabled": [{"name": "NodeName"}, {"name": "EBSLimits"}]},
            "multiPoint": {"enabled": [{"name": "AzureDiskLimits"}]},
        },
        pluginConfig=[{"name": "GCEPDLimits"}],
    ),
    expect=[
        f'profiles[0].plugins.filter.enabled[1]: Invalid value: "EBSLimits": was invalid in '
        f'version "v1" (KubeSchedulerConfiguration is version {V1})',
        f'profiles[0].pluginConfig[0]: Invalid value: "GCEPDLimits": was invalid in version "v1" '
        f"(KubeSchedulerConfiguration is version {V1})",
    ],
)
case(
    "validation/known-plugins",
    _profile(
        plugins={
            "multiPoint": {
                "enabled": [{"name": "PrioritySort"}, {"name": "Custom"}],
                "disabled": [{"name": "*"}],
            },
            "filter": {
                "enabled": [{"name": "NodeName"}, {"name": "Foo"}],
                "disabled": [{"name": "NotARealPlugin"}],
            },
        },
        pluginConfig=[{"name": "NodeName"}, {"name": "Ghost"}],
    ),
)
# Negative and zero score weights: upstream's getScoreWeights sums weight x 100 in int64 and
# checks it against MaxInt64 - total, which a negative running total wraps round.
case(
    "validation/negative-score-weight",
    _profile(
        schedulerName="ksched",
        plugins={"score": {"enabled": [{"name": "NodeAffinity", "weight": -2}]}},
    ),
)
case(
    "validation/negative-score-weight-last",
    _profile(
        plugins={
            "multiPoint": {
                "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}],
                "disabled": [{"name": "*"}],
            },
            "score": {
                "enabled": [
                    {"name": "ImageLocality", "weight": 3},
                    {"name": "NodeAffinity", "weight": -2},
                ]
            },
        },
    ),
)
# Workload-aware scheduling's plugin sets (config only in ksched): expect = ksched's verdict
# per emulated version (kube-scheduler's, checked by test_parity_kube against each binary).
WORKLOAD_SETS = {
    "placement-generate": (
        {"placementGenerate": {"enabled": [{"name": "TopologyPlacementGenerator"}]}},
        {"1.36": True, "1.37": True},
    ),
    "placement-score": (
        {"placementScore": {"enabled": [{"name": "PodGroupPodsCount"}]}},
        {"1.36": True, "1.37": True},
    ),
    # NodeResourcesFit scores placements too (v1.36.3 and v1.37.2 accept it, gates off)
    "placement-score-fit": (
        {"placementScore": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}]}},
        {"1.36": True, "1.37": True},
    ),
    "placement-score-not-extending": (
        {"placementScore": {"enabled": [{"name": "NodeName"}]}},
        {"1.36": False, "1.37": False},
    ),
    # an unknown field before 1.37
    "pod-group-post-filter": (
        {
            "podGroupPostFilter": {
                "enabled": [{"name": "DynamicResources"}],
                "disabled": [{"name": "*"}],
            }
        },
        {"1.36": False, "1.37": True},
    ),
    "pod-group-post-filter-twice": (
        {
            "podGroupPostFilter": {
                "enabled": [{"name": "DefaultPreemption"}, {"name": "DefaultPreemption"}]
            }
        },
        {"1.36": False, "1.37": False},
    ),
    "pod-group-post-filter-not-extending": (
        {"podGroupPostFilter": {"enabled": [{"name": "NodeName"}]}},
        {"1.36": False, "1.37": False},
    ),
}
for _name, (_plugins, _verdicts) in WORKLOAD_SETS.items():
    case(
        f"validation/workload/{_name}",
        _profile(schedulerName="x", plugins=_plugins),
        expect=_verdicts,
    )

# validatePluginConfig checks some in-tree plugins' args whether or not they are enabled;
# NodeResourcesFit's not (its table entry is misnamed "NodeResourcesFitArgs").
case(
    "validation/args-of-disabled-plugin",
    _profile(
        plugins={"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}},
        pluginConfig=[{"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 200}}],
    ),
)
case(
    "validation/fit-args-of-disabled-plugin",
    _profile(
        plugins={"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}},
        pluginConfig=[
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Sideways"}}}
        ],
    ),
)
case(
    "validation/zero-score-weight",
    _profile(plugins={"score": {"enabled": [{"name": "NodeAffinity", "weight": 0}]}}),
)

# extenders
case(
    "validation/extender-valid",
    doc(
        extenders=[
            {
                "urlPrefix": "http://e",
                "prioritizeVerb": "p",
                "weight": 1,
                "bindVerb": "bind",
                "managedResources": [{"name": "example.com/gpu"}, {"name": "vendor.io/fpga"}],
            }
        ]
    ),
)
case(
    "validation/extender-rules",
    doc(
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
    ),
)
case(
    "validation/extender-prioritize-without-weight",
    doc(extenders=[{"urlPrefix": "http://e", "prioritizeVerb": "p"}]),
)
case(
    "validation/extender-filter-only", doc(extenders=[{"urlPrefix": "http://e", "filterVerb": "f"}])
)
case(
    "validation/extender-ca-not-pem",
    doc(
        extenders=[
            {
                "urlPrefix": "https://e",
                "filterVerb": "f",
                "enableHTTPS": True,
                "tlsConfig": {"caData": "aGVsbG8="},
            }
        ]
    ),
)
# ksched's own checks (docs/fidelity.md, "Deliberate extensions"): kube-scheduler takes both
case("validation/extender-without-url", doc(extenders=[{"filterVerb": "filter"}]))
case(
    "validation/extender-negative-timeout",
    doc(extenders=[{"urlPrefix": "http://e", "filterVerb": "filter", "httpTimeout": "-1s"}]),
)
case(
    "validation/extender-bad-resource-prefix",
    doc(extenders=[{"urlPrefix": "u", "managedResources": [{"name": "Bad_Domain/x"}]}]),
)
case(
    "validation/all-problems",
    doc(
        parallelism=0,
        percentageOfNodesToScore=150,
        podInitialBackoffSeconds=0,
        clientConnection={"burst": -5},
        leaderElection={"retryPeriod": "-1s"},
        profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}],
        extenders=[{"urlPrefix": "u", "prioritizeVerb": "p"}],
    ),
)

case(
    "validation/requested-to-capacity-ratio-without-shape",
    _profile(
        pluginConfig=[
            {
                "name": "NodeResourcesFit",
                "args": {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            }
        ]
    ),
)

# --- loading (test_config_load.py) ------------------------------------------------------------

case("load/v1", doc(parallelism=8))
case(
    "load/v1beta3",
    {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND, "parallelism": 3},
)
for _version, _changed in (
    ("v1beta2", "default score weights changed"),
    ("v1beta1", "NodeResourcesFit scoringStrategy"),
    ("v1alpha1", "algorithmSource"),
    ("v1alpha2", "plugins.multiPoint"),
):
    case(
        f"load/removed-version/{_version}",
        {
            "apiVersion": f"kubescheduler.config.k8s.io/{_version}",
            "kind": KIND,
            "profiles": [
                {"plugins": {"score": {"enabled": [{"name": "NodeResourcesLeastAllocated"}]}}}
            ],
            "algorithmSource": {"provider": "DefaultProvider"},
        },
        expect=_changed,
    )
case(
    "load/policy-kind",
    {"apiVersion": "v1", "kind": "Policy", "predicates": [{"name": "PodFitsResources"}]},
)
case("load/unknown-version-and-kind", {"apiVersion": "v1", "kind": "Pod"})
case("load/empty-object", {})
case("load/list-document", ["a"])
case(
    "load/unknown-fields",
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
    ),
)
case(
    "load/free-form-args",
    _profile(
        pluginConfig=[
            {"name": "Custom", "args": {"whatever": {"nested": [1, "x"]}, "kind": "CustomArgs"}},
            {"name": "DefaultPreemption", "args": {"unknownKnob": 1}},
        ]
    ),
)
case(
    "load/in-tree-args-type-meta",
    _profile(
        pluginConfig=[
            {
                "name": "NodeResourcesFit",
                "args": {
                    "apiVersion": API_VERSION,
                    "kind": "NodeResourcesFitArgs",
                    "scoringStrategy": {"type": "MostAllocated"},
                },
            }
        ]
    ),
)
case(
    "load/in-tree-args-wrong-type-meta",
    _profile(
        pluginConfig=[
            {
                "name": "NodeResourcesFit",
                "args": {"apiVersion": "v1", "kind": "InterPodAffinityArgs"},
            }
        ]
    ),
)
case("load/profiling-fields", doc(enableProfiling=True, enableContentionProfiling=False))
case(
    "load/removed-bind-addresses",
    doc(healthzBindAddress="0.0.0.0:10251", metricsBindAddress="0.0.0.0:10251"),
)
case("load/profiling-not-boolean", doc(enableProfiling="yes please"))
case(
    "load/null-values",
    doc(parallelism=None, leaderElection=None, profiles=None, extenders=None),
)
case(
    "load/wrong-types",
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
    ),
)
case("load/wrong-container-types", doc(profiles={"schedulerName": "a"}, leaderElection="on"))
case("load/non-object-profiles", doc(profiles=[None, 3]))
case("load/one-line-per-problem", doc(parallelism="x", bogus=1, profiles=[{"nope": 1}]))
case("load/validation-problems", doc(parallelism=0, podInitialBackoffSeconds=0))
case("load/unknown-filter-plugin", _profile(plugins={"filter": {"enabled": [{"name": "Foo"}]}}))

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
case("load/full-yaml", text=FULL_YAML)
case("load/full-json", text=json.dumps(yaml.safe_load(FULL_YAML), indent=1), suffix=".json")
case("load/dumped-default", text=dump_yaml(default_config()))
case("load/empty-file", text="")
case("load/yaml-syntax-error", text=HEAD + "profiles: [\n  - a\n")
case("load/duplicate-yaml-key", text=HEAD + "parallelism: 1\nparallelism: 2\n")
case("load/duplicate-json-key", text='{"apiVersion": "x", "apiVersion": "y"}', suffix=".json")
case(
    "load/yaml-merge-key",
    text=HEAD + "leaderElection:\n  <<: {leaderElect: false, resourceName: a}\n  resourceName: b\n",
)
case(
    "load/yaml-merge-key-no-override",
    text=HEAD + "leaderElection:\n  <<: {leaderElect: false}\n  resourceName: b\n",
)
# YAML as go-yaml v2 types it (ksched.config.kubeyaml): one-letter booleans, dates and
# base-60 numbers
case("load/yaml-one-letter-boolean", text=HEAD + "profiles:\n- schedulerName: n\n")
case("load/yaml-date-is-a-string", text=HEAD + "profiles:\n- schedulerName: 2001-12-14\n")
case("load/yaml-base-60-is-a-string", text=HEAD + "parallelism: 1:20\n")
case("load/invalid-json", text='{"apiVersion": }', suffix=".json")
case("load/validate-file-ok", text=HEAD + "parallelism: 4\n")
case(
    "load/validate-file-problems",
    text="apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n"
    "parallelism: -1\nprofiles:\n- plugins:\n    filter:\n      enabled:\n"
    "      - name: DynamicResources\n      - name: Nope\n",
)

# --- defaulting (test_config_defaults.py) -------------------------------------------------------

case(
    "defaults/multi-point-custom-and-reconfigured",
    _profile(
        plugins={
            "multiPoint": {
                "enabled": [{"name": "Foo", "weight": 4}, {"name": "TaintToleration", "weight": 5}]
            }
        }
    ),
)
case(
    "defaults/multi-point-disable-star",
    _profile(
        plugins={
            "multiPoint": {
                "enabled": [{"name": "DefaultBinder"}, {"name": "PrioritySort"}],
                "disabled": [{"name": "*"}],
            }
        }
    ),
)
case(
    "defaults/specific-extension-points",
    _profile(
        plugins={
            "filter": {"enabled": [{"name": "Foo"}, {"name": "Bar"}]},
            "score": {"enabled": [{"name": "Foo", "weight": 3}], "disabled": [{"name": "*"}]},
        }
    ),
)
case(
    "defaults/disabled-default-loses-args",
    _profile(
        plugins={
            "multiPoint": {"disabled": [{"name": "InterPodAffinity"}, {"name": "NodeResourcesFit"}]}
        }
    ),
)
case(
    "defaults/args-for-plugin-at-any-point",
    _profile(
        plugins={
            "multiPoint": {"disabled": [{"name": "*"}]},
            "filter": {"enabled": [{"name": "NodeAffinity"}]},
        }
    ),
)
case("defaults/empty", doc())
case(
    "defaults/dra-named-by-user",
    _profile(
        plugins={
            "filter": {"enabled": [{"name": "Foo"}, {"name": "DynamicResources"}]},
            "multiPoint": {"enabled": [{"name": "DynamicResources"}]},
        },
        pluginConfig=[{"name": "DynamicResources", "args": {"filterTimeout": "5s"}}],
    ),
)
case(
    "defaults/disable-dra",
    _profile(plugins={"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}),
)
case(
    "defaults/user-plugin-config-first",
    _profile(
        pluginConfig=[
            {
                "name": "PodTopologySpread",
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
                    ],
                },
            },
            {"name": "Custom", "args": {"x": 1}},
            {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 50}},
        ]
    ),
)
case("defaults/single-profile-without-name", _profile(plugins={}))
case("defaults/explicit-empty-name", _profile(schedulerName=""))
case("defaults/several-profiles", doc(profiles=[{}, {"schedulerName": "b"}]))
case(
    "defaults/zero-values",
    doc(
        leaderElection={
            "leaseDuration": "0s",
            "renewDeadline": "0s",
            "retryPeriod": "0s",
            "resourceLock": "",
            "resourceName": "",
            "resourceNamespace": "",
        },
        clientConnection={"qps": 0, "burst": 0, "contentType": ""},
        extenders=[{"urlPrefix": "http://e", "httpTimeout": "0s"}],
    ),
)
case(
    "defaults/explicit-values",
    doc(
        parallelism=4,
        percentageOfNodesToScore=30,
        podInitialBackoffSeconds=2,
        podMaxBackoffSeconds=20,
        leaderElection={
            "leaderElect": False,
            "leaseDuration": "30s",
            "resourceName": "mine",
            "resourceNamespace": "ns",
        },
        clientConnection={
            "qps": 10.5,
            "burst": 7,
            "contentType": "application/yaml",
            "kubeconfig": "/k",
        },
    ),
)
case(
    "defaults/idempotent",
    _profile(
        schedulerName="a",
        plugins={
            "multiPoint": {"enabled": [{"name": "Foo"}], "disabled": [{"name": "ImageLocality"}]},
            "filter": {"enabled": [{"name": "DynamicResources"}]},
        },
    ),
)

# test_default_plugin_args: one plugin's args (as pluginConfig); expect = the defaulted args
_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
for _i, (_name, _args, _defaulted) in enumerate(
    [
        (
            "DefaultPreemption",
            {},
            {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
        ),
        (
            "DefaultPreemption",
            {"minCandidateNodesAbsolute": 0},
            {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 0},
        ),
        (
            "InterPodAffinity",
            {"ignorePreferredTermsOfExistingPods": True},
            {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": True},
        ),
        (
            "InterPodAffinity",
            {"hardPodAffinityWeight": 0},
            {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": False},
        ),
        ("NodeAffinity", {}, {}),
        ("NodeAffinity", {"addedAffinity": {"x": 1}}, {"addedAffinity": {"x": 1}}),
        ("NodeResourcesBalancedAllocation", {}, {"resources": _RESOURCES}),
        ("NodeResourcesBalancedAllocation", {"resources": []}, {"resources": _RESOURCES}),
        (
            "NodeResourcesBalancedAllocation",
            {
                "resources": [
                    {"name": "cpu"},
                    {"name": "example.com/gpu", "weight": 0},
                    {"name": "memory", "weight": 3},
                ]
            },
            {
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "example.com/gpu", "weight": 1},
                    {"name": "memory", "weight": 3},
                ]
            },
        ),
        (
            "NodeResourcesFit",
            {"ignoredResources": ["a"]},
            {
                "ignoredResources": ["a"],
                "scoringStrategy": {"type": "LeastAllocated", "resources": _RESOURCES},
            },
        ),
        (
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated"}},
            {"scoringStrategy": {"type": "MostAllocated", "resources": _RESOURCES}},
        ),
        (
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": _SHAPE},
                }
            },
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": _SHAPE},
                    "resources": _RESOURCES,
                }
            },
        ),
        (
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 0}],
                }
            },
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 1}],
                }
            },
        ),
        # Upstream does not default the type of an explicit strategy.
        (
            "NodeResourcesFit",
            {"scoringStrategy": {}},
            {"scoringStrategy": {"resources": _RESOURCES}},
        ),
        ("PodTopologySpread", {}, {"defaultingType": "System"}),
        ("PodTopologySpread", {"defaultingType": "List"}, {"defaultingType": "List"}),
    ]
):
    case(
        f"args/{_i:02d}-{_name}",
        _profile(pluginConfig=[{"name": _name, "args": _args}]),
        expect=_defaulted,
    )

# --- the CLI (tests/test_cli.py) ------------------------------------------------------------------

case(
    "cli/effective-config",
    text=HEAD
    + "profiles:\n- schedulerName: bin-packing\n  pluginConfig:\n  - name: NodeResourcesFit\n"
    "    args: {scoringStrategy: {type: MostAllocated}}\n",
)
case(
    "cli/each-problem-on-a-line",
    text=HEAD + "percentageOfNodesToScore: 150\n"
    "profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled: [{name: NoSuchPlugin}]\n"
    "- schedulerName: a\n",
)
case(
    "cli/bad-plugin-args",
    text=HEAD + "profiles:\n- schedulerName: ksched\n  pluginConfig:\n  - name: NodeResourcesFit\n"
    "    args: {scoringStrategy: {type: Sideways}}\n",
)
