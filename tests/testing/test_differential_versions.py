"""The oracle per Kubernetes version and under random gate sets, without a control plane:
which emulation a release gets, which gates the ``gates`` group draws (from SUPPORT, never a
hand list), and that a run restarts kube-scheduler once per drawn set with ksched at the
same gates and version."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ksched.features import (
    SUPPORT,
    FeatureGateError,
    FeatureGates,
    Support,
    gate_table,
    resolve_feature_gates,
    status,
)
from ksched.features.support import REFUSED
from ksched.testing.differential import APISERVER_ARGS, Outcome, generate
from ksched.testing.differential import report as report_mod
from ksched.testing.differential.__main__ import main
from ksched.testing.differential.gates import (
    draw_gates,
    emulation_of,
    gate_names,
    settable_gates,
)
from ksched.testing.differential.generator import BIND_MOUNT, Scenario, apiserver_args
from ksched.testing.differential.kube import PodRun
from ksched.testing.differential.report import PodReport, Report, run_differential


def test_each_release_runs_ksched_at_its_minor() -> None:
    assert emulation_of("v1.36.3") == "1.36"
    assert emulation_of("v1.37.2") == "1.37"
    with pytest.raises(ValueError, match=r"'v1.35.0': ksched emulates v1.36.3, v1.37.2 only"):
        emulation_of("v1.35.0")


def test_settable_gates_are_the_implemented_non_defaults_the_scheduler_reads() -> None:
    for minor in ("1.36", "1.37"):
        table = gate_table(minor)
        names = settable_gates(minor)
        assert "OpportunisticBatching" in names and "StorageCapacityScoring" in names
        for name in names:
            spec = table.gates[name]
            assert not spec.locked
            assert SUPPORT[name].off if spec.default else SUPPORT[name].on
        # read only by cmd/kube-scheduler (/flagz), no scheduling effect: never drawn
        assert "ComponentFlagz" not in names
        # refused values are never drawn
        assert "GenericWorkload" not in names and "SchedulerAsyncPreemption" not in names
    # each version draws from its own table
    for minor in ("1.36", "1.37"):
        assert set(settable_gates(minor)) <= set(gate_table(minor).gates)


def test_a_gate_ksched_comes_to_implement_is_drawn_from_then_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = gate_table("1.37")
    name = next(  # an alpha gate ksched refuses to turn on, with no dependencies
        n
        for n, spec in sorted(table.gates.items())
        if spec.stage == "ALPHA"
        and any("pkg/scheduler" in f for f in spec.read_by)
        and not spec.locked
        and not spec.default
        and not table.dependencies.get(n)
        and status(table, n, True) == REFUSED
    )
    assert name not in settable_gates("1.37")
    monkeypatch.setitem(SUPPORT, name, Support(True, True))
    assert name in settable_gates("1.37")
    assert any(f"{name}=true" in draw_gates(seed, "1.37") for seed in range(200))


def test_draws_are_per_seed_valid_varied_and_leave_the_users_gates_alone() -> None:
    for minor in ("1.36", "1.37"):
        draws = [draw_gates(seed, minor) for seed in range(120)]
        assert draws == [draw_gates(seed, minor) for seed in range(120)]
        assert any(not d for d in draws)
        assert len({tuple(d) for d in draws}) > 15
        for d in draws:
            resolve_feature_gates(d, [minor])  # kube-scheduler and ksched accept it
        # a gate the user set is never drawn; the draw still validates with it
        for fixed in (
            ["OpportunisticBatching=false", "StorageCapacityScoring=true"],
            ["kube:OpportunisticBatching=false,kube:StorageCapacityScoring=true"],
        ):
            drawn = [draw_gates(seed, minor, fixed) for seed in range(60)]
            assert sum(bool(d) for d in drawn) > 20
            for d in drawn:
                assert not gate_names(d) & {"OpportunisticBatching", "StorageCapacityScoring"}
                resolve_feature_gates([*fixed, *d], [minor])
    # dependencies follow: MatchLabelKeysInPodTopologySpread off takes the selector merge
    # (which depends on it) off too, or kube-scheduler would refuse the set
    both = [
        d
        for s in range(300)
        if "MatchLabelKeysInPodTopologySpread=false" in (d := draw_gates(s, "1.37"))
    ]
    assert both and all("MatchLabelKeysInPodTopologySpreadSelectorMerge=false" in d for d in both)


def test_the_gates_group_tags_every_pod_and_changes_nothing_else() -> None:
    groups = ("taints", "spread", "dra")
    for seed in range(12):
        plain = generate(seed, groups, emulated_version="1.36")
        gated = generate(seed, (*groups, "gates"), emulated_version="1.36")
        assert gated.gates == tuple(draw_gates(seed, "1.36"))
        assert plain.gates == ()
        assert json.dumps(gated.objects) == json.dumps(plain.objects)
        assert [p.pod for p in gated.pending] == [p.pod for p in plain.pending]
        for p in gated.pending:
            assert ("gates" in p.groups) == bool(gated.gates)


def test_nodefeatures_covers_the_v137_bind_mount_options() -> None:
    pods = [
        p.pod
        for seed in range(30)
        for p in generate(seed, ["nodefeatures"]).pending
        if "nodefeatures" in p.groups
    ]
    mounts = [
        m
        for pod in pods
        for c in pod["spec"]["containers"]
        for m in c.get("volumeMounts", [])
        if m.get("bindMountOptions")
    ]
    assert mounts and all(
        set(m["bindMountOptions"]) <= {"noexec", "nodev", "nosuid"} for m in mounts
    )
    declared = {
        f
        for seed in range(10)
        for o in generate(seed, ["nodefeatures"]).objects
        if o["kind"] == "Node"
        for f in o["status"].get("declaredFeatures", [])
    }
    assert BIND_MOUNT in declared
    # v1.36's API server knows no VolumeBindMountOptions gate (it would not start)
    assert BIND_MOUNT not in apiserver_args("v1.36.3")[0]
    assert f"{BIND_MOUNT}=true" in apiserver_args("v1.37.2")[0]


# -- a run, with kube-scheduler and ksched faked ------------------------------------------------


@dataclass
class _Assets:
    version: str


class _CP:
    def __init__(self, version: str) -> None:
        self.assets = _Assets(version)


class _FakeKube:
    """KubeReplay's shape: records each start's gates, answers Scheduled for every pod."""

    started: list[tuple[list[str], bool]] = []

    def __init__(
        self, cp: _CP, *, gap: float | None, batching: bool, feature_gates: Sequence[str]
    ) -> None:
        self.cp = cp
        self.refused: list[str] = []
        self.started.append((list(feature_gates), batching))

    def __enter__(self) -> _FakeKube:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run(self, scenario: Scenario, ksched: Any, ksched_batch: Any = None) -> Iterator[PodRun]:
        for p in scenario.pending:
            yield PodRun(p, [], p.pod, Outcome("Scheduled", node="n"), ksched(p.pod))


class _FakeKsched:
    def __init__(self, features: FeatureGates | None = None) -> None:
        self.features = features
        self.built: list[FeatureGates] = []

    def with_features(self, features: FeatureGates) -> _FakeKsched:
        self.built.append(features)
        return _Bound(features, self)

    def __call__(self, pod: Any) -> Outcome:
        raise AssertionError("the run must use the replay built for its gates")

    def batch(self, *args: Any) -> list[Outcome]:
        raise AssertionError("no PodGroups in these scenarios")


class _Bound(_FakeKsched):
    def __init__(self, features: FeatureGates, parent: _FakeKsched) -> None:
        super().__init__(features)

    def __call__(self, pod: Any) -> Outcome:
        assert self.features is not None
        out = Outcome("Scheduled", node="n")
        out.message = f"{self.features.emulated_version} {self.features.flag_value()}"
        return out


def test_a_run_starts_kube_scheduler_once_per_gate_set_with_ksched_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _FakeKube.started = []
    monkeypatch.setattr(report_mod, "KubeReplay", _FakeKube)
    ours = _FakeKsched()
    seeds = list(range(10))
    report = run_differential(
        seeds,
        ("taints", "gates"),
        cp=_CP("v1.36.3"),  # type: ignore[arg-type]
        ksched=ours,  # type: ignore[arg-type]
        feature_gates=["StorageCapacityScoring=true"],
    )
    draws = {tuple(draw_gates(s, "1.36", ["StorageCapacityScoring=true"])) for s in seeds}
    assert len(_FakeKube.started) == len(draws) < len(seeds)  # grouped by gate set
    assert {tuple(g[1:]) for g, _ in _FakeKube.started} == draws
    assert all(g[0] == "StorageCapacityScoring=true" for g, _ in _FakeKube.started)
    # ksched at the control plane's minor, under exactly kube-scheduler's gates
    for built, (gates, batching) in zip(ours.built, _FakeKube.started, strict=True):
        assert built == resolve_feature_gates(gates, ["1.36"])
        assert batching == ("OpportunisticBatching=false" not in gates)
    assert report.kube_version == "v1.36.3" and sorted({p.seed for p in report.pods}) == seeds
    for p in report.pods:
        assert p.version == "v1.36.3" and p.gates[0] == "StorageCapacityScoring=true"
        assert ("gates" in p.groups) == (len(p.gates) > 1)
    out = report.to_dict()
    assert out["kubeScheduler"] == "v1.36.3" and out["emulatedVersion"] == "1.36"
    assert report.text().startswith("kube-scheduler v1.36.3 against ksched --emulated-version 1.36")


def test_a_diverging_pod_says_how_it_ran(tmp_path: Path) -> None:
    from ksched.testing.differential.compare import Divergence

    div = Divergence("status", "status", "Scheduled", "Unschedulable")
    rep = PodReport(4, "d4-a/p1", ["gates"], "Scheduled", "Unschedulable", [div], "s.json")
    rep.version, rep.gates = "v1.36.3", ["OpportunisticBatching=false"]
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(rep.to_dict()) + "\n")
    back = Report.from_jsonl([path])
    assert back.kube_version == "v1.36.3" and back.pods[0].gates == rep.gates
    text = back.text()
    assert "seed 4 pod d4-a/p1 [gates] --feature-gates OpportunisticBatching=false" in text
    assert (
        "reproduce: ksched simulate --cluster s.json --explain --emulated-version 1.36 "
        "--feature-gates OpportunisticBatching=false"
    ) in text


def test_gates_are_checked_against_the_chosen_versions_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a gate of 1.36's table that 1.37 dropped (folded into GenericWorkload)
    assert main(["--kube-version", "v1.37.2", "--feature-gates", "GangScheduling=true"]) == 2
    assert "unrecognized feature gate: GangScheduling" in capsys.readouterr().err
    # settable at 1.36, locked at 1.37
    assert main(["--kube-version", "v1.37.2", "--feature-gates", "NodeDeclaredFeatures=false"]) == 2
    assert "locked" in capsys.readouterr().err
    assert main(["--kube-version", "v1.35.0"]) == 2
    assert "--kube-version: kube version 'v1.35.0'" in capsys.readouterr().err
    with pytest.raises(FeatureGateError):
        resolve_feature_gates(["NodeDeclaredFeatures=false"], ["1.37"])


def test_device_taint_rules_follow_the_scenarios_version_not_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1.36 serves DeviceTaintRules only as v1beta2, behind an off gate: a 1.36 scenario
    has none, whatever ``KSCHED_KUBE_VERSION`` says (``--kube-version`` alone picks it)."""
    monkeypatch.delenv("KSCHED_KUBE_VERSION", raising=False)

    def rules(minor: str) -> int:
        return sum(
            o.get("kind") == "DeviceTaintRule"
            for seed in range(40)
            for o in generate(seed, {"dradevices"}, emulated_version=minor).objects
        )

    assert rules("1.37") > 0
    assert rules("1.36") == 0


def test_a_1_36_api_server_serves_device_taint_rules_to_kube_scheduler() -> None:
    """kube-scheduler v1.36 with DRADeviceTaintRules on (a gates-group draw) lists the
    v1beta2 DeviceTaintRules: the server must serve them, and its bootstrap policy grants
    the read only under its own gate. From 1.37 the gate is on by default everywhere."""
    gates, runtime = apiserver_args("v1.36.3")
    assert gates.startswith(APISERVER_ARGS[0] + ",") and gates.endswith(",DRADeviceTaintRules=true")
    assert runtime == "--runtime-config=resource.k8s.io/v1beta2/devicetaintrules=true"
    assert not any("DRADeviceTaintRules" in a for a in apiserver_args("v1.37.2"))
