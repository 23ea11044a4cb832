"""Run seeds through both schedulers and summarize: counts per feature group, and for each
divergence the seed, pod, plugin, both values and a scenario file that reproduces it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...features import resolve_feature_gates
from ..controlplane import ControlPlane, build, find_assets
from ..controlplane._build import kube_version as pinned_kube_version
from .compare import Divergence, compare
from .gates import emulation_of
from .generator import Scenario, apiserver_args, generate
from .kube import KubeReplay, PodRun, gate_values
from .local import KschedReplay, scenario_file, scenario_files

__all__ = ["GroupCounts", "PodReport", "Report", "run_differential"]


@dataclass
class PodReport:
    seed: int
    pod: str
    groups: list[str]
    kube_status: str
    ksched_status: str
    divergences: list[Divergence]
    scenario: str = ""  # the file that reproduces it (only for diverging pods)
    scored: bool = False  # kube-scheduler logged scores (more than one node feasible)
    version: str = ""  # the kube-scheduler release (ksched ran at its minor)
    gates: list[str] = field(default_factory=list)  # --feature-gates both ran with
    node: str = ""  # kube-scheduler's node
    group: dict[str, Any] | None = None  # kube-scheduler's outcome of the pod's PodGroup

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "pod": self.pod,
            "groups": self.groups,
            "kube": self.kube_status,
            "ksched": self.ksched_status,
            "divergences": [d.to_dict() for d in self.divergences],
            "scenario": self.scenario,
            "scored": self.scored,
            "version": self.version,
            "gates": self.gates,
            "node": self.node,
            "group": self.group,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PodReport:
        """The inverse of ``to_dict`` (a ``--jsonl`` line)."""
        divs = [Divergence(**x) for x in d.get("divergences", [])]
        return cls(
            int(d["seed"]),
            str(d["pod"]),
            list(d.get("groups", [])),
            str(d["kube"]),
            str(d["ksched"]),
            divs,
            str(d.get("scenario", "")),
            bool(d.get("scored", False)),
            str(d.get("version", "")),
            list(d.get("gates", [])),
            str(d.get("node") or ""),
            d.get("group"),
        )


@dataclass
class GroupCounts:
    pods: int = 0
    diverging: int = 0
    unschedulable: int = 0
    scored: int = 0  # kube-scheduler logged scores (more than one feasible node)


@dataclass
class Report:
    seeds: list[int]
    features: tuple[str, ...]
    pods: list[PodReport] = field(default_factory=list)
    # pods and setup objects the API server refused (generator gaps), with its message
    rejected: list[str] = field(default_factory=list)
    # the kube-scheduler release(s) replayed (ksched ran at each one's minor)
    kube_version: str = ""

    @property
    def diverging(self) -> list[PodReport]:
        return [p for p in self.pods if p.divergences]

    def groups(self) -> dict[str, GroupCounts]:
        out: dict[str, GroupCounts] = {}
        for p in self.pods:
            for g in [*p.groups, "all"]:
                c = out.setdefault(g, GroupCounts())
                c.pods += 1
                c.diverging += bool(p.divergences)
                c.unschedulable += p.kube_status != "Scheduled"
                c.scored += p.scored
        return out

    def pod_groups(self) -> list[str]:
        """One line per PodGroup replayed: kube-scheduler's condition, whether every
        member bound, the pods preempted for it and each member's outcome."""
        members: dict[tuple[int, str], list[PodReport]] = {}
        for p in self.pods:
            if p.group is not None:
                ns = p.pod.partition("/")[0]
                members.setdefault((p.seed, f"{ns}/{p.group['podGroup']}"), []).append(p)
        out = []
        for (seed, key), pods in members.items():
            group = pods[0].group or {}
            cond = group.get("condition")
            written = f"{cond['status']} {cond['reason']}" if cond else "no condition"
            each = ", ".join(
                f"{p.pod.partition('/')[2]}:{p.kube_status}" + (f"@{p.node}" if p.node else "")
                for p in pods
            )
            bound = "all bound" if group.get("allBound") else "not all bound"
            victims = group.get("victims") or []
            preempted = f", preempted {', '.join(victims)}" if victims else ""
            out.append(f"seed {seed} {key}: {written}, {bound}{preempted} [{each}]")
        return out

    def by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.diverging:
            for d in p.divergences:
                key = f"{d.what}:{d.plugin}" if d.plugin else d.what
                out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items()))

    @classmethod
    def from_jsonl(cls, paths: Iterable[Path]) -> Report:
        """The report of one or more ``--jsonl`` files (a long run split over processes, or
        cut short: every pod is written as soon as it is compared). A pod compared again
        (its seed re-run after a fix) counts once, by its last comparison: later files and
        lines win."""
        report = cls([], ())
        latest: dict[tuple[int, str], PodReport] = {}
        for path in paths:
            text = path.read_bytes().decode(errors="replace")
            for lineno, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rep = PodReport.from_dict(json.loads(line))
                except (ValueError, KeyError, TypeError) as e:
                    raise ValueError(f"{path}:{lineno}: not a --jsonl line ({e!r})") from None
                latest.pop((rep.seed, rep.pod), None)
                latest[(rep.seed, rep.pod)] = rep
        for rep in latest.values():
            if rep.kube_status == "Rejected":
                report.rejected.append(f"seed {rep.seed} {rep.pod}")
            else:
                report.pods.append(rep)
        report.seeds = sorted({seed for seed, _ in latest})
        report.kube_version = ",".join(sorted({r.version for r in latest.values()} - {""}))
        report.features = tuple(sorted({g for p in report.pods for g in p.groups} - {"base"}))
        return report

    def to_dict(self) -> dict[str, Any]:
        return {
            "kubeScheduler": self.kube_version,
            "emulatedVersion": _emulations(self.kube_version),
            "seeds": self.seeds,
            "features": list(self.features),
            "pods": len(self.pods),
            "rejected": self.rejected,
            "diverging": len(self.diverging),
            "groups": {g: vars(c) for g, c in sorted(self.groups().items())},
            "kinds": self.by_kind(),
            "divergences": [p.to_dict() for p in self.diverging],
        }

    def text(self, limit: int = 50) -> str:
        lines = [
            f"kube-scheduler {self.kube_version or '?'} against ksched --emulated-version "
            f"{_emulations(self.kube_version) or '?'}",
            f"{len(self.pods)} pods over {len(self.seeds)} seeds "
            f"({len(self.rejected)} objects refused by the API server, not compared); "
            f"{len(self.diverging)} diverging",
        ]
        lines.append(f"{'group':<14} {'pods':>6} {'unsched':>8} {'scored':>7} {'diverging':>10}")
        for g, c in sorted(self.groups().items()):
            lines.append(
                f"{g:<14} {c.pods:>6} {c.unschedulable:>8} {c.scored:>7} {c.diverging:>10}"
            )
        if self.by_kind():
            lines.append(
                "divergences by kind: " + ", ".join(f"{k}={v}" for k, v in self.by_kind().items())
            )
        for p in self.diverging[:limit]:
            gates = f" --feature-gates {','.join(p.gates)}" if p.gates else ""
            lines.append(f"\nseed {p.seed} pod {p.pod} [{', '.join(p.groups)}]{gates}")
            for d in p.divergences:
                where = " ".join(x for x in (d.plugin, d.node) if x)
                lines.append(f"  {d.what} {where}: {d.detail}")
                lines.append(f"    kube-scheduler: {json.dumps(d.kube)}")
                lines.append(f"    ksched:         {json.dumps(d.ksched)}")
            if p.scenario:
                lines.append(f"  reproduce: {_reproduce(p)}")
        groups = self.pod_groups()
        if groups:
            lines.append("\npod groups (kube-scheduler's outcome; members: status@node):")
            lines += [f"  {g}" for g in groups]
        for r in self.rejected[:limit]:
            lines.append(f"refused: {r}")
        if len(self.diverging) > limit:
            lines.append(f"\n... and {len(self.diverging) - limit} more pods")
        return "\n".join(lines)


def _emulations(kube_versions: str) -> str:
    """The ``--emulated-version`` of each release in a comma list ("" for none)."""
    return ",".join(emulation_of(v) for v in kube_versions.split(",") if v)


def _reproduce(p: PodReport) -> str:
    """The command that replays a diverging pod's scenario file in ksched, as it ran."""
    cmd = f"ksched simulate --cluster {p.scenario} --explain"
    if p.version:
        cmd += f" --emulated-version {emulation_of(p.version)}"
    return cmd + "".join(f" --feature-gates {g}" for g in p.gates)


def _report(
    run: PodRun, seed: int, outdir: Path | None, version: str, gates: list[str]
) -> PodReport:
    pending = run.pending
    ours = run.ksched
    key = f"{pending.namespace}/{pending.name}"
    groups = sorted(pending.groups)
    if run.kube.status == "Rejected" or ours is None:
        rep = PodReport(seed, key, groups, run.kube.status, "-", [], version=version, gates=gates)
        rep.node, rep.group = run.kube.node or "", run.kube.group
        rep.scored = bool(run.kube.scores)
        return rep
    divs = compare(run.kube, ours, run.state)
    rep = PodReport(seed, key, groups, run.kube.status, ours.status, divs)
    rep.version, rep.gates = version, gates
    rep.node, rep.group = run.kube.node or "", run.kube.group
    rep.scored = bool(run.kube.scores)
    if divs and outdir is not None and run.pod is not None:
        outdir.mkdir(parents=True, exist_ok=True)
        path = outdir / f"seed{seed}-{pending.namespace}-{pending.name}.json"
        if run.batch:  # a PodGroup's member: the group and every member, pending
            pod_groups = [o for o in run.batch if o.get("kind") != "Pod"]
            members = [o for o in run.batch if o.get("kind") == "Pod"]
            path.write_text(scenario_files([*run.state, *pod_groups], members))
        else:
            # a gated pod: as its gates' removal left it (what the scheduler then tried)
            path.write_text(scenario_file(run.state, run.update or run.pod))
        rep.scenario = str(path)
    return rep


def run_differential(
    seeds: Iterable[int],
    features: tuple[str, ...],
    *,
    cp: ControlPlane | None = None,
    outdir: Path | None = None,
    gap: float | None = None,
    batching: bool = True,
    progress: Callable[[PodReport], None] | None = None,
    ksched: KschedReplay | None = None,
    feature_gates: Sequence[str] = (),
    kube_version: str | None = None,
    kube_only: bool = False,
) -> Report:
    """Replay every seed's scenario against kube-scheduler and ksched; ``cp`` is a running
    ControlPlane with the controller manager (one of ``kube_version``, default
    ``$KSCHED_KUBE_VERSION`` or the pinned one, is started when None); ksched runs at the
    ``--emulated-version`` of the control plane's release, with ``ksched``'s profile when
    given (its gates are replaced by the run's); ``batching=False`` runs both with
    OpportunisticBatching off, so pods need no gap; ``feature_gates``: more
    ``--feature-gates`` values both run with. Seeds are replayed grouped by the ``gates``
    group's draw (and the gates the groups need), one kube-scheduler per gate set.
    ``kube_only``: kube-scheduler's outcomes alone, nothing compared (to check the
    harness on inputs ksched does not implement yet)."""
    seed_list = list(seeds)
    if cp is None:
        version = kube_version or pinned_kube_version()
        assets = find_assets(version) or build(version)
        args = apiserver_args(version, features)
        with ControlPlane(assets=assets, with_controller_manager=True, apiserver_args=args) as own:
            return run_differential(
                seed_list,
                features,
                cp=own,
                outdir=outdir,
                gap=gap,
                batching=batching,
                progress=progress,
                ksched=ksched,
                feature_gates=feature_gates,
                kube_only=kube_only,
            )
    version = cp.assets.version
    minor = emulation_of(version)
    report = Report(seed_list, features, kube_version=version)
    base = ksched or KschedReplay()
    fixed = gate_values(feature_gates, batching)
    by_gates: dict[tuple[str, ...], list[Scenario]] = {}
    for seed in seed_list:
        sc = generate(seed, features, emulated_version=minor, fixed_gates=fixed)
        by_gates.setdefault(sc.gates, []).append(sc)
    for drawn, scenarios in by_gates.items():
        gates = [*feature_gates, *drawn]
        ours = None
        if not kube_only:
            values = gate_values(gates, batching)
            ours = base.with_features(resolve_feature_gates(values, [minor]))
        on = batching and "OpportunisticBatching=false" not in drawn
        with KubeReplay(cp, gap=gap, batching=on, feature_gates=gates) as kube:
            _run(kube, scenarios, ours, report, outdir, progress, [*fixed, *drawn])
    return report


def _run(
    kube: KubeReplay,
    scenarios: list[Scenario],
    ours: KschedReplay | None,
    report: Report,
    outdir: Path | None,
    progress: Callable[[PodReport], None] | None,
    gates: list[str],
) -> None:
    version = kube.cp.assets.version
    for scenario in scenarios:
        seed = scenario.seed
        runs = kube.run(scenario, ours, ours.batch) if ours else kube.run(scenario)
        for run in runs:
            rep = _report(run, seed, outdir, version, gates)
            if run.kube.status == "Rejected":
                report.rejected.append(f"seed {seed} {rep.pod}: {run.kube.message}")
            else:
                report.pods.append(rep)
            if progress is not None:
                progress(rep)
        report.rejected.extend(f"seed {seed} {r}" for r in kube.refused)
        kube.refused.clear()
