"""Run seeds through both schedulers and summarize: counts per feature group, and for each
divergence the seed, pod, plugin, both values and a scenario file that reproduces it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...features import resolve_feature_gates
from ..controlplane import ControlPlane
from .compare import Divergence, compare
from .generator import generate
from .kube import KubeReplay, PodRun, gate_values
from .local import KschedReplay, scenario_file

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
        report.features = tuple(sorted({g for p in report.pods for g in p.groups} - {"base"}))
        return report

    def to_dict(self) -> dict[str, Any]:
        return {
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
            f"{len(self.pods)} pods over {len(self.seeds)} seeds "
            f"({len(self.rejected)} objects refused by the API server, not compared); "
            f"{len(self.diverging)} diverging"
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
            lines.append(f"\nseed {p.seed} pod {p.pod} [{', '.join(p.groups)}]")
            for d in p.divergences:
                where = " ".join(x for x in (d.plugin, d.node) if x)
                lines.append(f"  {d.what} {where}: {d.detail}")
                lines.append(f"    kube-scheduler: {json.dumps(d.kube)}")
                lines.append(f"    ksched:         {json.dumps(d.ksched)}")
            if p.scenario:
                lines.append(f"  reproduce: ksched simulate --cluster {p.scenario} --explain")
        for r in self.rejected[:limit]:
            lines.append(f"refused: {r}")
        if len(self.diverging) > limit:
            lines.append(f"\n... and {len(self.diverging) - limit} more pods")
        return "\n".join(lines)


def _report(run: PodRun, seed: int, outdir: Path | None) -> PodReport:
    pending = run.pending
    ours = run.ksched
    key = f"{pending.namespace}/{pending.name}"
    if run.kube.status == "Rejected" or ours is None:
        return PodReport(seed, key, sorted(pending.groups), run.kube.status, "-", [])
    divs = compare(run.kube, ours, run.state)
    rep = PodReport(seed, key, sorted(pending.groups), run.kube.status, ours.status, divs)
    rep.scored = bool(run.kube.scores)
    if divs and outdir is not None and run.pod is not None:
        outdir.mkdir(parents=True, exist_ok=True)
        path = outdir / f"seed{seed}-{pending.namespace}-{pending.name}.json"
        path.write_text(scenario_file(run.state, run.pod))
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
) -> Report:
    """Replay every seed's scenario against kube-scheduler and ksched; ``cp`` is a running
    ControlPlane with the controller manager (one is started when None); ``ksched`` a
    replay with another config than ksched's default one; ``batching=False`` runs both
    with OpportunisticBatching off, so pods need no gap; ``feature_gates``: more
    ``--feature-gates`` values both run with (a ``ksched`` replay given brings its own)."""
    seed_list = list(seeds)
    report = Report(seed_list, features)
    gates = gate_values(feature_gates, batching)
    ours = ksched or KschedReplay(features=resolve_feature_gates(gates))
    if cp is None:
        with ControlPlane(with_controller_manager=True) as own:
            return run_differential(
                seed_list,
                features,
                cp=own,
                outdir=outdir,
                gap=gap,
                batching=batching,
                progress=progress,
                ksched=ours,
                feature_gates=feature_gates,
            )
    with KubeReplay(cp, gap=gap, batching=batching, feature_gates=feature_gates) as kube:
        return _run(kube, seed_list, features, ours, report, outdir, progress)


def _run(
    kube: KubeReplay,
    seeds: list[int],
    features: tuple[str, ...],
    ours: KschedReplay,
    report: Report,
    outdir: Path | None,
    progress: Callable[[PodReport], None] | None,
) -> Report:
    for seed in seeds:
        scenario = generate(seed, features)
        for run in kube.run(scenario, ours):
            rep = _report(run, seed, outdir)
            if run.kube.status == "Rejected":
                report.rejected.append(f"seed {seed} {rep.pod}: {run.kube.message}")
            else:
                report.pods.append(rep)
            if progress is not None:
                progress(rep)
        report.rejected.extend(f"seed {seed} {r}" for r in kube.refused)
        kube.refused.clear()
    return report
