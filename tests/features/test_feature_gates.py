"""Feature gates and the emulated version: kube-scheduler's tables, flags and texts, what
ksched implements, and how the gates reach defaulting, validation and the plugins."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ksched.cli import main as ksched_main
from ksched.config import (
    BASE_MULTI_POINT,
    DEFAULT_MULTI_POINT,
    GATED_PLUGINS,
    ConfigError,
    default_config,
    default_multi_point,
    load_config_data,
    to_dict,
)
from ksched.features import (
    BINARY_VERSION,
    KUBE_VERSIONS,
    SUPPORT,
    FeatureGateError,
    FeatureGates,
    default_feature_gates,
    gate_table,
    gate_table_markdown,
    resolve_feature_gates,
    set_feature_gates,
    status,
)
from ksched.plugins import default_registry
from ksched.profile import build_frameworks
from tests.features.gatesets import (
    NON_DEFAULT,
    NON_DEFAULT_BY_VERSION,
    kube_minor,
    kube_scheduler_effective,
)

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
gen = importlib.import_module("gen_feature_gates")

# Every refusal kube-scheduler v1.37.2 words: (--feature-gates values, --emulated-version
# values, the flag it is about, the text). The kube test below runs the real binary on each.
KUBE_REFUSALS = [
    (["Foo=true"], [], "--feature-gates", "unrecognized feature gate: Foo"),
    (
        ["DynamicResourceAllocation=false"],
        [],
        "--feature-gates",
        "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
    ),
    (
        ["OpportunisticBatching"],
        [],
        "--feature-gates",
        "missing bool value for OpportunisticBatching",
    ),
    (
        ["OpportunisticBatching=maybe"],
        [],
        "--feature-gates",
        'invalid value of OpportunisticBatching=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
    ),
    (["x:Foo=true"], [], "--feature-gates", "component not registered: x"),
    (
        ["NodeDeclaredFeatures=false"],
        [],
        "--feature-gates",
        "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true",
    ),
    (
        ["kube:OpportunisticBatching=false", "SchedulerQueueingHints=true"],
        [],
        "--feature-gates",
        "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use",
    ),
    # 1.37 dropped the GangScheduling gate (GenericWorkload adds the plugin)
    (
        ["DRAConsumableCapacity=true,GangScheduling=true"],
        [],
        "--feature-gates",
        "unrecognized feature gate: GangScheduling",
    ),
    ([], ["1.38"], "--emulated-version", "emulation version 1.38 is not between [1.34, 1.37.0]"),
    ([], ["1.35.1"], "--emulated-version", "patch version not allowed, got: kube=1.35.1"),
    ([], ["foo=1.36"], "--emulated-version", "component not registered: foo"),
    ([], ["abc"], "--emulated-version", 'could not parse "abc" as version'),
    ([], ["1"], "--emulated-version", 'illegal version string "1"'),
    ([], ["1.36,"], "--emulated-version", 'could not parse "" as version'),
    (
        [],
        ["01.36"],
        "--emulated-version",
        'illegal zero-prefixed version component "01" in "01.36"',
    ),
    (
        [],
        ["1.36", "kube=1.35"],
        "--emulated-version",
        "duplicate version flag, kube=1.36 and kube=1.35",
    ),
    (
        [],
        ["1.30"],
        "--emulated-version",
        "[emulation version 1.30 is not between [1.34, 1.37.0], minCompatibilityVersion version 1.34 is not between [1.34, 1.30]]",
    ),
]
# Several errors at once: Go visits its map in random order, ksched in name order; the kube
# test compares these as sets of errors.
KUBE_REFUSALS_UNORDERED = [
    (
        ["DynamicResourceAllocation=false,SidecarContainers=false"],
        [],
        "--feature-gates",
        "[cannot set feature gate DynamicResourceAllocation to false, feature is locked to true, "
        "unrecognized feature gate: SidecarContainers]",
    ),
]
# The gate refusals of kube-scheduler v1.36.3, which ksched words alike at --emulated-version
# 1.36 (its 1.36 gate table); the kube test runs them on a v1.36.3 binary.
KUBE_REFUSALS_1_36 = [
    (
        ["DRAConsumableCapacity=true,GangScheduling=true"],
        "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
    ),
    (
        ["DynamicResourceAllocation=false,SidecarContainers=false"],
        "[cannot set feature gate DynamicResourceAllocation to false, feature is locked to true, "
        "cannot set feature gate SidecarContainers to false, feature is locked to true]",
    ),
    (
        ["NodeDeclaredFeatures=false"],
        "[ExtendWebSocketsToKubelet is enabled, but depends on features that are disabled: [NodeDeclaredFeatures], "
        "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: [NodeDeclaredFeatures], "
        "InPlacePodVerticalScalingInitContainers is enabled, but depends on features that are disabled: [NodeDeclaredFeatures], "
        "RestartAllContainersOnContainerExits is enabled, but depends on features that are disabled: [NodeDeclaredFeatures]]",
    ),
]


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = ksched_main(list(argv))
    return code, out.getvalue(), err.getvalue()


# --- the flags ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gates", "versions", "flag", "text"), KUBE_REFUSALS + KUBE_REFUSALS_UNORDERED
)
def test_kube_schedulers_refusals_and_texts(
    gates: list[str], versions: list[str], flag: str, text: str
) -> None:
    with pytest.raises(FeatureGateError) as e:
        set_feature_gates(gates, versions)
    assert str(e.value) == text
    assert e.value.context == flag
    assert e.value.lines() == [f"{flag}: {text}"]


@pytest.mark.parametrize(("gates", "text"), KUBE_REFUSALS_1_36)
def test_kube_scheduler_1_36_gate_refusals_at_emulated_1_36(gates: list[str], text: str) -> None:
    with pytest.raises(FeatureGateError) as e:
        set_feature_gates(gates, ["1.36"])
    assert str(e.value) == text


def test_hostile_values_get_a_short_one_line_error() -> None:
    """A huge or odd flag value is quoted cut short (kube-scheduler's text otherwise), on
    one line, and never crashes."""
    huge = "X" * 100_000
    for gates, versions in (
        ([f"{huge}=true"], []),
        ([f"OpportunisticBatching={huge}"], []),
        ([huge], []),
        ([f"{huge}:A=true"], []),
        ([], [huge]),
        ([], [f"{huge}=1.36"]),
        (['Op"p\n=true'], []),
        ([], ["\udcff"]),
    ):
        with pytest.raises(FeatureGateError) as e:
            set_feature_gates(gates, versions)
        (line,) = e.value.lines()
        assert len(line) < 400, line[:500]
    with pytest.raises(FeatureGateError) as e:
        set_feature_gates([], ["a\tb"])
    assert str(e.value) == 'could not parse "a\\tb" as version'  # Go's %q, as the binary says


def test_accepted_values_parse_as_kube_scheduler_does() -> None:
    g = set_feature_gates(
        ["kube:OpportunisticBatching=False", "kube: SchedulerAsyncPreemption = t,"],
        ["kube=1.36.0"],
    )
    assert g.emulated_version == "1.36"
    assert dict(g.explicit) == {"OpportunisticBatching": False, "SchedulerAsyncPreemption": True}
    assert not g.enabled("OpportunisticBatching") and g.enabled("SchedulerQueueingHints")
    # a later pair wins, repeated flags add up; setting a locked gate to its default is fine
    g = set_feature_gates(["OpportunisticBatching=false", "OpportunisticBatching=true"])
    assert g.enabled("OpportunisticBatching")
    assert set_feature_gates(["DynamicResourceAllocation=true"]).enabled(
        "DynamicResourceAllocation"
    )
    assert set_feature_gates([], []) == default_feature_gates()
    # an empty --emulated-version is no version; a suffix after MAJOR.MINOR.0 is ignored
    assert set_feature_gates([], [""]) == default_feature_gates()
    assert set_feature_gates([], ["1.36.0-beta"]).emulated_version == "1.36"


@pytest.mark.parametrize(
    ("version", "extra", "alpha_gate"),
    [
        ("1.36", "", "GenericWorkload"),
        # GenericWorkload is beta (off) in 1.37, and its alpha dependants need it
        ("1.37", "GenericWorkload=true,", "TopologyAwareWorkloadScheduling"),
    ],
)
def test_all_alpha_sets_every_unset_alpha_gate_and_explicit_ones_win(
    version: str, extra: str, alpha_gate: str
) -> None:
    g = set_feature_gates(
        [f"AllAlpha=true,{extra}TaintTolerationComparisonOperators=false"], [version]
    )
    table = gate_table(version)
    alpha = [n for n, s in table.gates.items() if s.stage == "ALPHA" and not n.startswith("All")]
    assert alpha and g.enabled(alpha_gate)
    assert not g.enabled("TaintTolerationComparisonOperators")
    on = {n for n in alpha if g.enabled(n)}
    assert on == set(alpha) - {"TaintTolerationComparisonOperators"}
    # and dependencies are checked after: an alpha gate that needs a disabled one
    with pytest.raises(FeatureGateError, match="depends on features that are disabled"):
        set_feature_gates(["AllAlpha=true,GenericWorkload=false"], [version])


def test_the_default_emulated_version_is_the_newest_implemented_one() -> None:
    implemented = [v.minor for v in KUBE_VERSIONS if v.implemented]
    assert BINARY_VERSION == implemented[-1] == "1.37"
    assert default_feature_gates().emulated_version == BINARY_VERSION
    assert set_feature_gates([], ["1.36"]).emulated_version == "1.36"


def test_an_emulated_version_kube_accepts_but_ksched_does_not_implement_is_refused() -> None:
    with pytest.raises(FeatureGateError) as e:
        set_feature_gates([], ["1.35"])
    assert e.value.lines() == [
        "--emulated-version: emulation version 1.35 is not implemented by ksched: it emulates "
        "kube-scheduler v1.36.3 (--emulated-version 1.36), kube-scheduler v1.37.2 "
        "(--emulated-version 1.37)"
    ]


def test_gate_values_ksched_does_not_implement_are_refused_naming_the_gate() -> None:
    with pytest.raises(FeatureGateError) as e:
        resolve_feature_gates(["GenericWorkload=true,SchedulerAsyncPreemption=false"], ["1.36"])
    assert e.value.lines() == [
        "--feature-gates: feature gate GenericWorkload=true is not implemented by ksched: "
        "only v1.37's pod-group cycle is implemented (scheduler.schedule_one_podgroup, with "
        "workload-aware preemption at PodGroupPostFilter); refused",
        "--feature-gates: feature gate SchedulerAsyncPreemption=false is not implemented by "
        "ksched: victims evicted asynchronously; refused",
    ]
    # through AllAlpha too: never silently ignored
    # (1.37's alpha workload gates need the beta GenericWorkload, off by default)
    for gates, version in (
        ("AllAlpha=true", "1.36"),
        ("AllAlpha=true,GenericWorkload=true", "1.37"),
    ):
        with pytest.raises(FeatureGateError, match="=true is not implemented by ksched"):
            resolve_feature_gates([gates], [version])
    # gates kube-scheduler's code never reads are accepted either way, as it does
    g = resolve_feature_gates(["KubeletInUserNamespace=true,APIResponseCompression=false"])
    assert g.enabled("KubeletInUserNamespace")
    assert resolve_feature_gates(NON_DEFAULT).explicit


def test_feature_gates_are_frozen_and_survive_copies() -> None:
    import copy
    import pickle

    g = resolve_feature_gates(NON_DEFAULT)
    with pytest.raises(AttributeError):
        g.emulated_version = "1.37"  # type: ignore[misc]
    with pytest.raises(TypeError):
        g.explicit["X"] = True  # type: ignore[index]
    assert copy.deepcopy(g) is g and pickle.loads(pickle.dumps(g)) == g
    assert hash(g) == hash(resolve_feature_gates(NON_DEFAULT)) and {g: 1}[g] == 1
    assert g.flag_value().startswith("ComponentFlagz=false,DRASchedulerFilterTimeout=false,")


# --- the tables -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBE_VERSIONS, ids=lambda v: v.minor)
def test_each_version_has_a_generated_table(version: object) -> None:
    minor = version.minor  # type: ignore[attr-defined]
    mod = importlib.import_module(f"ksched.features.kube_{minor.replace('.', '_')}")
    assert version.kube == mod.KUBE_VERSION  # type: ignore[attr-defined]
    assert minor == mod.BINARY_VERSION
    assert "Generated by scripts/gen_feature_gates.py" in (mod.__doc__ or "")
    table = gate_table(minor)
    assert len(table.gates) > 200
    assert {"AllAlpha", "AllBeta", "OpportunisticBatching", "GenericWorkload"} <= set(table.gates)
    for name, spec in table.gates.items():
        assert spec.stage in ("ALPHA", "BETA", "GA", "DEPRECATED", "PreAlpha"), name
        if spec.stage == "ALPHA":
            assert not spec.locked, name
        assert all(f.startswith(("pkg/scheduler/", "cmd/kube-scheduler/")) for f in spec.read_by)
    for name, deps in table.dependencies.items():
        assert name in table.gates and deps and set(deps) <= set(table.gates)
    # the Features struct upstream hands its plugins reads each of these
    feature_go = "pkg/scheduler/framework/plugins/feature/feature.go"
    assert feature_go in table.gates["DRADeviceTaints"].read_by
    assert table.gates["DynamicResourceAllocation"].locked


def test_v1_36_gates_are_kube_scheduler_v1_36_3s() -> None:
    t = gate_table("1.36")
    spec = t.gates["NodeDeclaredFeatures"]
    assert (spec.stage, spec.default, spec.locked) == ("BETA", True, False)
    assert (t.gates["StorageCapacityScoring"].stage, t.gates["StorageCapacityScoring"].default) == (
        "ALPHA",
        False,
    )
    assert t.emulation_floor == "1.33"
    assert t.dependencies["GangScheduling"] == ("GenericWorkload",)


def _module_dir(module: str, version: str) -> Path | None:
    """The module's source if Go's module cache has it (no download); None without Go."""
    go = shutil.which("go")
    if go is None:
        return None
    out = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    d = Path(out) / f"{module}@{version}" if out else None
    return d if d is not None and d.is_dir() else None


@pytest.mark.parametrize("version", KUBE_VERSIONS, ids=lambda v: v.minor)
def test_read_by_matches_a_fresh_scan_of_the_module_source(version: object) -> None:
    """The scan half of the generator, re-run on the module cache (skips without it)."""
    kube = version.kube  # type: ignore[attr-defined]
    if _module_dir("k8s.io/kubernetes", kube) is None:
        pytest.skip(f"k8s.io/kubernetes@{kube} is not in Go's module cache")
    minor = version.minor  # type: ignore[attr-defined]
    staging = "v0." + kube.split(".", 1)[1]
    reads = gen.scheduler_reads(kube, staging)
    table = gate_table(minor)
    assert {n: list(s.read_by) for n, s in table.gates.items() if s.read_by} == reads


def test_the_generated_modules_match_a_regeneration_from_the_cached_dumps() -> None:
    """``gen_feature_gates --check --from-cache``: byte-equal modules (skips without the Go
    dump cache that a real run of the script leaves)."""
    cached = [v.kube for v in KUBE_VERSIONS if gen.cached_dump(v.kube).exists()]
    if not cached or any(_module_dir("k8s.io/kubernetes", v) is None for v in cached):
        pytest.skip("no cached Go dump of the gate tables")
    if gen.ruff() is None:
        pytest.skip("ruff (which formats the generated modules) is not installed")
    args = ["--check", "--from-cache"] + [a for v in cached for a in ("--version", v)]
    assert gen.main(args) == 0


@pytest.mark.kube
def test_the_table_lists_what_the_real_binary_lists() -> None:
    """``kube-scheduler --help`` lists every gate that is neither GA nor deprecated with its
    stage and default: the same set, stages and defaults as the table."""
    from ksched.testing.controlplane import build

    binary = build().path("kube-scheduler")
    minor = ".".join(build().version.lstrip("v").split(".")[:2])
    helptext = subprocess.run(
        [str(binary), "--help"], capture_output=True, text=True, check=True
    ).stdout
    import re

    listed = {
        m[1]: (m[2], m[3] == "true")
        for m in re.finditer(r"kube:(\w+)=true\|false \((\w+) - default=(\w+)\)", helptext)
    }
    table = gate_table(minor)
    mine = {
        n: (s.stage, s.default)
        for n, s in table.gates.items()
        if s.stage not in ("GA", "DEPRECATED", "PreAlpha")
    }
    assert listed == mine


# --- what ksched implements -----------------------------------------------------------------


def test_every_gate_the_scheduler_reads_has_a_support_row_and_no_row_is_stale() -> None:
    read = {
        n
        for v in KUBE_VERSIONS
        if v.implemented
        for n, s in gate_table(v.minor).gates.items()
        if s.read_by
    }
    assert read == set(SUPPORT)


def test_status_per_value() -> None:
    t = gate_table("1.36")
    assert status(t, "GenericWorkload", True) == "refused"
    assert status(t, "GenericWorkload", False) == "implemented"
    # only 1.37's pod-group cycle is there
    t37 = gate_table("1.37")
    assert status(t37, "GenericWorkload", True) == "implemented"
    assert status(t37, "TopologyAwareWorkloadScheduling", True) == "implemented"
    assert status(t37, "CompositePodGroup", True) == "refused"
    # "gap" until the NodeDeclaredFeatures plugin lands (then its SUPPORT row flips)
    nodedeclared = "implemented" if SUPPORT["NodeDeclaredFeatures"].on else "gap"
    assert status(t, "NodeDeclaredFeatures", True) == nodedeclared
    assert status(t, "NodeDeclaredFeatures", False) == "implemented"
    assert status(t, "DynamicResourceAllocation", False) == "locked"
    assert status(t, "OpportunisticBatching", False) == "implemented"
    assert status(t, "KubeletInUserNamespace", True) == "no effect"


def test_the_fidelity_doc_has_the_generated_gate_table() -> None:
    text = (REPO / "docs" / "fidelity.md").read_text()
    assert gate_table_markdown() in text


# --- gates drive defaulting, validation and the plugins -------------------------------------


def _multi_point(cfg: object) -> list[tuple[str, int | None]]:
    d = to_dict(cfg)  # type: ignore[arg-type]
    return [
        (p["name"], p.get("weight")) for p in d["profiles"][0]["plugins"]["multiPoint"]["enabled"]
    ]


def _args(cfg: object, name: str) -> dict[str, object]:
    d = to_dict(cfg)  # type: ignore[arg-type]
    return next(pc["args"] for pc in d["profiles"][0]["pluginConfig"] if pc["name"] == name)


def test_apply_feature_gates_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 1.36 (the version whose NodeDeclaredFeatures gate can be turned off)."""
    import ksched.config.defaults as defaults

    v136 = resolve_feature_gates([], ["1.36"])

    base = [p.name for p in BASE_MULTI_POINT]
    # DynamicResources (its gate locked on) goes before DefaultPreemption
    with_dra = [*base[:14], "DynamicResources", *base[14:]]
    assert base[14] == "DefaultPreemption"
    assert [r.gate for r in GATED_PLUGINS][:2] == [
        "NodeDeclaredFeatures",
        "DynamicResourceAllocation",
    ]
    # NodeDeclaredFeatures' rule waits for its plugin; once built in, it is appended
    monkeypatch.delitem(defaults.BUILTIN_PLUGINS, "NodeDeclaredFeatures", raising=False)
    assert [p.name for p in default_multi_point(v136)] == with_dra
    monkeypatch.setitem(defaults.BUILTIN_PLUGINS, "NodeDeclaredFeatures", "x:Y")
    assert [p.name for p in default_multi_point(v136)] == [*with_dra, "NodeDeclaredFeatures"]
    off = resolve_feature_gates(NON_DEFAULT_BY_VERSION["1.36"][:1], ["1.36"])
    assert [p.name for p in default_multi_point(off)] == with_dra
    # what the package computed at import, with the plugins it has: the default version's
    assert default_multi_point(resolve_feature_gates([], [BINARY_VERSION])) == DEFAULT_MULTI_POINT


def test_a_gate_that_adds_a_plugin_is_implemented_exactly_when_the_plugin_is_built_in() -> None:
    """Keeps the support table honest when a plugin lands (NodeDeclaredFeatures): its
    gate's enabled value is implemented once the plugin is there, a gap before."""
    from ksched.config.defaults import DEFAULT_PROFILE_BY_VERSION
    from ksched.features.versions import minor_key
    from ksched.plugins import BUILTIN_PLUGINS

    def on_at(gate: str, version: str) -> bool:
        s = SUPPORT[gate]
        return s.on and (not s.on_since or minor_key(version) >= minor_key(s.on_since))

    for version, (_, rules) in DEFAULT_PROFILE_BY_VERSION.items():
        table = resolve_feature_gates([], [version]).table
        for rule in rules:
            built_in = rule.plugin.name in BUILTIN_PLUGINS
            if on_at(rule.gate, version):
                assert built_in, (version, rule)
            elif built_in:
                # a plugin built in for a later release (GangScheduling at 1.37): its gate
                # here depends on a gate ksched implements only from that release on
                deps = table.dependencies.get(rule.gate, ())
                assert any(SUPPORT[d].on_since and not on_at(d, version) for d in deps), (
                    version,
                    rule,
                )


def test_every_implemented_version_has_its_default_profile() -> None:
    from ksched.config.defaults import DEFAULT_PROFILE_BY_VERSION

    assert set(DEFAULT_PROFILE_BY_VERSION) == {v.minor for v in KUBE_VERSIONS if v.implemented}


SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_gated_arg_defaults(version: str) -> None:
    """StorageCapacityScoring is off by default in 1.36 (NON_DEFAULT turns it on), on in
    1.37 (NON_DEFAULT turns it off): the shape follows."""
    default = default_config(resolve_feature_gates([], [version]))
    assert _args(default, "DynamicResources") == {
        "filterTimeout": "10s",
        "bindingTimeout": "10m0s",
    }
    shaped = version != "1.36"
    assert _args(default, "VolumeBinding").get("shape") == (SHAPE if shaped else None)
    cfg = default_config(resolve_feature_gates(NON_DEFAULT_BY_VERSION[version], [version]))
    assert _args(cfg, "DynamicResources") == {"bindingTimeout": "10m0s"}
    assert _args(cfg, "VolumeBinding").get("shape") == (None if shaped else SHAPE)
    # bindingTimeout needs both DRADeviceBindingConditions and DRAResourceClaimDeviceStatus
    # (the first and DRAResourceClaimGranularStatusAuthorization need the second; GA and
    # locked in 1.37)
    for gates in (
        "DRADeviceBindingConditions=false",
        "DRADeviceBindingConditions=false,DRAResourceClaimDeviceStatus=false,"
        "DRAResourceClaimGranularStatusAuthorization=false",
    )[: 2 if version == "1.36" else 1]:
        cfg = default_config(resolve_feature_gates([gates], [version]))
        assert _args(cfg, "DynamicResources") == {"filterTimeout": "10s"}
    # the user's value wins over a gated default
    data = one_profile(
        [{"name": "VolumeBinding", "args": {"shape": [{"utilization": 50, "score": 5}]}}]
    )
    shaped_gates = resolve_feature_gates(["StorageCapacityScoring=true"], [version])
    cfg, _ = load_config_data(data, "c.yaml", None, shaped_gates)
    assert _args(cfg, "VolumeBinding")["shape"] == [{"utilization": 50, "score": 5}]


def one_profile(plugin_config: list[dict[str, object]]) -> dict[str, object]:
    """A config of one profile with these pluginConfig entries."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "x", "pluginConfig": plugin_config}],
    }


#: Every gated args field set, and the gates that leave all of them off: what
#: validation_pluginargs refuses (the kube test below has the real binary judge it too).
GATED_ARGS = one_profile(
    [
        {"name": "VolumeBinding", "args": {"shape": [{"utilization": 0, "score": 10}]}},
        {"name": "DynamicResources", "args": {"filterTimeout": "5s", "bindingTimeout": "5m"}},
    ]
)
GATES_OFF = {
    "1.36": ["DRASchedulerFilterTimeout=false,DRADeviceBindingConditions=false"],
    "1.37": [
        "DRASchedulerFilterTimeout=false,DRADeviceBindingConditions=false,"
        "StorageCapacityScoring=false"
    ],
}
GATED_ARGS_PROBLEMS = [
    'profiles[0].pluginConfig[0].args.shape: Invalid value: [{"Utilization":0,"Score":10}]: '
    "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
    "profiles[0].pluginConfig[1].args.filterTimeout: Forbidden: "
    "DRASchedulingFilterTimeout feature gate is disabled",
    "profiles[0].pluginConfig[1].args.bindingTimeout: Forbidden: "
    "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
]


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_gated_args_are_refused_with_their_gates_off(version: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_config_data(
            GATED_ARGS, "c.yaml", None, set_feature_gates(GATES_OFF[version], [version])
        )
    assert e.value.problems == [f"c.yaml: {p}" for p in GATED_ARGS_PROBLEMS]
    gates = set_feature_gates(["StorageCapacityScoring=true"], [version])
    load_config_data(GATED_ARGS, "c.yaml", None, gates)  # all gates on: accepted


def test_the_gates_reach_every_plugins_handle() -> None:
    reg = default_registry(entry_points=False)
    gates = resolve_feature_gates(NON_DEFAULT)
    cfg = default_config(gates)
    for fw in build_frameworks(cfg, reg).values():
        assert fw.handle.features is gates
        dra = fw.plugins["DynamicResources"]
        assert dra.filter_timeout == 0.0  # no bound with DRASchedulerFilterTimeout off
    fw = build_frameworks(default_config(), reg)["ksched"]
    assert fw.handle.features is default_feature_gates()
    assert fw.plugins["DynamicResources"].filter_timeout == 10.0


def test_match_label_keys_follow_their_gate() -> None:
    """PodTopologySpread's filterTopologySpreadConstraints merges matchLabelKeys into the
    selector only with MatchLabelKeysInPodTopologySpread on."""
    from ksched.framework.handle import Handle
    from ksched.plugins.podtopologyspread import PodTopologySpread
    from tests.plugins.test_podtopologyspread_common import FOO, mk_pod, spread

    pod = mk_pod(
        labels={"foo": "", "bar": "a"},
        constraints=[spread(1, "zone", selector=FOO, match_label_keys=["bar"])],
    )
    gates = "MatchLabelKeysInPodTopologySpread=false,MatchLabelKeysInPodTopologySpreadSelectorMerge=false"
    off = Handle(features=resolve_feature_gates([gates]))
    # both alive at once: a plugin's per-pod cache is keyed by its id()
    plugins = PodTopologySpread(None, Handle()), PodTopologySpread(None, off)
    (on_c,), (off_c,) = (p.constraints(pod, "DoNotSchedule") for p in plugins)
    assert on_c.selector.matches({"foo": "", "bar": "a"})
    assert not on_c.selector.matches({"foo": ""})
    assert off_c.selector.matches({"foo": ""})  # bar is not part of it


def test_opportunistic_batching_off_turns_the_cycle_cache_off() -> None:
    from ksched.framework.handle import NullCluster
    from ksched.scheduler.scheduler import Scheduler

    reg = default_registry(entry_points=False)
    on = Scheduler(default_config(), reg, cluster=NullCluster())
    gates = set_feature_gates(["OpportunisticBatching=false"])
    off = Scheduler(default_config(gates), reg, cluster=NullCluster())
    assert all(fw.cycle_cache is not None for fw in on.frameworks.values())
    assert all(fw.cycle_cache is None for fw in off.frameworks.values())


# --- the command line -----------------------------------------------------------------------


def test_config_validate_refuses_bad_gates_before_reading_the_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    code, out, err = cli("config", "validate", missing, "--feature-gates", "Foo=true")
    assert (code, out, err) == (2, "", "--feature-gates: unrecognized feature gate: Foo\n")
    code, _, err = cli("config", "validate", missing, "--emulated-version", "1.38")
    assert (code, err) == (
        2,
        "--emulated-version: emulation version 1.38 is not between [1.34, 1.37.0]\n",
    )


def test_config_validate_shows_the_config_under_the_gates(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    )
    for version, shape in (("1.36", True), ("1.37", False)):
        flags = [a for v in NON_DEFAULT_BY_VERSION[version] for a in ("--feature-gates", v)]
        code, out, err = cli(
            "config", "validate", str(path), *flags, f"--emulated-version={version}"
        )
        assert (code, err) == (0, "")
        assert ("shape:" in out) == shape and "filterTimeout" not in out


@pytest.mark.parametrize(
    "verb",
    [
        ["simulate", "--cluster", "x.yaml"],
        ["run"],
        ["extender", "--config", "x.yaml"],
        ["bench"],
        ["bench", "--apiserver", "real"],
        ["config", "validate", "x.yaml"],
    ],
)
def test_every_verb_that_schedules_takes_the_flags(verb: list[str]) -> None:
    code, out, err = cli(*verb, "--feature-gates", "CoordinatedLeaderElection=true")
    assert code == 2 and out == ""
    assert err.startswith(
        "--feature-gates: feature gate CoordinatedLeaderElection=true is not implemented"
    )


def test_simulate_runs_under_the_gates(tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {"name": "n1"},
                        "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"}},
                    },
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "p", "namespace": "default"},
                        "spec": {"schedulerName": "ksched", "containers": [{"name": "c"}]},
                    },
                ],
            }
        )
    )
    flags = [a for v in NON_DEFAULT for a in ("--feature-gates", v)]
    code, out, _ = cli("simulate", "--cluster", str(cluster), "--output", "json", *flags)
    assert code == 0
    assert json.loads(out)["pods"][0]["node"] == "n1"


def test_feature_gates_is_a_value_object() -> None:
    assert FeatureGates() == default_feature_gates()
    assert FeatureGates().effective()["OpportunisticBatching"] is True


# --- against the real binary ----------------------------------------------------------------


def _as_set(text: str) -> set[str]:
    """An aggregate's errors (``[a, b]``) as a set: Go orders them by map iteration."""
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    import re

    return set(re.split(r", (?=[A-Z]|cannot |unrecognized )", inner))


@pytest.mark.kube
def test_every_refusal_text_is_the_real_binarys() -> None:
    """Against the binary the session builds: v1.37.2's texts are ksched's own; a v1.36.3
    binary's gate refusals are ksched's at --emulated-version 1.36 (its version-range texts
    are a 1.36 binary's, which ksched is not)."""
    if kube_minor() == "1.36":
        cases = [(gates, [], "", text) for gates, text in KUBE_REFUSALS_1_36]
        ordered = []
    else:
        cases, ordered = KUBE_REFUSALS + KUBE_REFUSALS_UNORDERED, KUBE_REFUSALS
    for gates, versions, _, text in cases:
        flags = [f"--feature-gates={g}" for g in gates]
        flags += [f"--emulated-version={v}" for v in versions]
        effective, err = kube_scheduler_effective(flags)
        assert effective is None, flags
        if (gates, versions, _, text) in ordered:
            assert err == text, flags
        else:
            # Go's map order: the gates before the unknown one are judged first, and
            # unsafeSetFromMap returns at the unknown one, so the binary's errors are some of
            # ksched's (name order), always with the unknown gate's
            got, want = _as_set(err), _as_set(text)
            unknown = {e for e in want if e.startswith("unrecognized feature gate: ")}
            if unknown:
                assert unknown <= got <= want, flags
            else:
                assert got == want, flags


@pytest.mark.kube
def test_gated_args_are_refused_as_the_real_binary_refuses_them(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(GATED_ARGS))
    flags = [f"--feature-gates={g}" for g in GATES_OFF[kube_minor()]]
    effective, err = kube_scheduler_effective(flags, path)
    assert effective is None
    assert err == "[" + ", ".join(GATED_ARGS_PROBLEMS) + "]"
    effective, err = kube_scheduler_effective(["--feature-gates=StorageCapacityScoring=true"], path)
    assert effective is not None, err


def test_at_least_compares_the_emulated_minor_numerically() -> None:
    from ksched.features.gates import FeatureGates

    old = FeatureGates("1.36")
    assert old.at_least("1.36") and not old.at_least("1.37")
    assert FeatureGates("1.37").at_least("1.36")
    assert not FeatureGates("1.36").at_least("1.100")
