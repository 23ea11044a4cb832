"""``python -m ksched.testing.differential --seeds 0-199 [--kube-version v1.36.3]
[--features a,b] [--output json] [--kube-only]``

Replays seeded random clusters against the real kube-scheduler (built and run by
``ksched.testing.controlplane``) and against ksched at the matching
``--emulated-version``, and reports every divergence. Exit status: 0 when none, 1 when
some, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ...features import KUBE_VERSIONS, FeatureGateError, resolve_feature_gates
from ..controlplane._build import kube_version
from .gates import emulation_of
from .generator import FEATURES, default_features, parse_features, parse_seeds
from .kube import gate_values
from .report import PodReport, Report, run_differential


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ksched.testing.differential")
    p.add_argument("--seeds", default="0-9", help="N, N-M or a comma list (default 0-9)")
    p.add_argument(
        "--features",
        default="",
        help="comma list of feature groups (default: "
        f"{','.join(default_features())}; also: "
        + ", ".join(
            f"{n} (from {f.since})" if f.since else n for n, f in FEATURES.items() if not f.default
        )
        + ")",
    )
    p.add_argument(
        "--kube-version",
        default=None,
        metavar="VERSION",
        help="the Kubernetes release whose control plane and kube-scheduler to run; ksched "
        "runs at its --emulated-version (default: $KSCHED_KUBE_VERSION or the pinned one; "
        "implemented: " + ", ".join(v.kube for v in KUBE_VERSIONS if v.implemented) + ")",
    )
    p.add_argument("--output", choices=["text", "json"], default="text")
    p.add_argument(
        "--scenarios",
        type=Path,
        default=Path("differential-scenarios"),
        help="directory for the scenario files of diverging pods",
    )
    p.add_argument(
        "--gap",
        type=float,
        default=None,
        help="seconds between pods (default 0.7: kube-scheduler reuses scores for 500 ms; "
        "0 with --no-batching)",
    )
    p.add_argument(
        "--no-batching",
        action="store_true",
        help="run kube-scheduler with --feature-gates=OpportunisticBatching=false "
        "(every pod scored afresh, no gap needed: several times faster)",
    )
    p.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="NAME=BOOL,...",
        help="run both schedulers with these feature gates (repeatable; as kube-scheduler "
        "takes them; a value ksched does not implement is refused)",
    )
    p.add_argument(
        "--jsonl",
        type=Path,
        help="append every compared pod to this file as one JSON line, as it goes",
    )
    p.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        metavar="JSONL",
        help="instead: the report of --jsonl files (e.g. a long run's parallel processes)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no per-pod progress on stderr")
    p.add_argument(
        "--kube-only",
        action="store_true",
        help="replay against kube-scheduler alone and report its outcomes, comparing "
        "nothing (for inputs ksched does not implement yet)",
    )
    p.add_argument(
        "--record",
        type=Path,
        nargs="+",
        metavar="SCENARIO",
        help="instead: record each scenario file's golden expectations from kube-scheduler "
        "(NAME.<release>.golden.json beside it; the release is $KSCHED_KUBE_VERSION's)",
    )
    return p


def _record(paths: list[Path], version: str) -> int:
    from .golden import golden_path, record

    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"python -m ksched.testing.differential: no such file: {', '.join(missing)}")
        return 2
    try:
        recorded = record(paths, kube_version=version)
    except ValueError as e:  # a scenario the API server refused, or a pod without outcome
        print(f"python -m ksched.testing.differential: {e}")
        return 2
    for path, golden in recorded.items():
        print(f"{golden_path(path, golden['kubeScheduler'])}: {len(golden['pods'])} pods")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    version = args.kube_version or kube_version()
    try:
        minor = emulation_of(version)
    except ValueError as e:
        print(f"python -m ksched.testing.differential: --kube-version: {e}", file=sys.stderr)
        return 2
    if args.record:
        return _record(args.record, version)
    if args.summarize:
        missing = [str(p) for p in args.summarize if not p.is_file()]
        if missing:
            print(f"python -m ksched.testing.differential: no such file: {', '.join(missing)}")
            return 2
        try:
            summary = Report.from_jsonl(args.summarize)
        except ValueError as e:
            print(f"python -m ksched.testing.differential: {e}", file=sys.stderr)
            return 2
        _print(summary, args.output)
        return 1 if summary.diverging else 0
    try:
        seeds = parse_seeds(args.seeds)
        features = parse_features(args.features, minor)
        if not args.kube_only:
            needed = [g for f in features for g in FEATURES[f].gates]
            values = gate_values([*args.feature_gates, *needed], not args.no_batching)
            resolve_feature_gates(values, [minor])
    except FeatureGateError as e:
        for line in e.lines():
            print(f"python -m ksched.testing.differential: {line}", file=sys.stderr)
        if not args.kube_only:
            print(
                "python -m ksched.testing.differential: --kube-only replays kube-scheduler alone",
                file=sys.stderr,
            )
        return 2
    except ValueError as e:
        print(f"python -m ksched.testing.differential: {e}", file=sys.stderr)
        return 2

    jsonl = args.jsonl.open("a") if args.jsonl else None

    def progress(rep: PodReport) -> None:
        if jsonl is not None:
            jsonl.write(json.dumps(rep.to_dict()) + "\n")
            jsonl.flush()
        if not args.quiet:
            mark = "DIVERGES" if rep.divergences else "ok"
            node = f"@{rep.node}" if rep.node else ""
            statuses = f"kube {rep.kube_status}{node}, ksched {rep.ksched_status}"
            print(f"seed {rep.seed} {rep.pod}: {statuses}: {mark}", file=sys.stderr)

    report = run_differential(
        seeds,
        features,
        outdir=args.scenarios,
        gap=args.gap,
        batching=not args.no_batching,
        progress=progress,
        feature_gates=args.feature_gates,
        kube_version=version,
        kube_only=args.kube_only,
    )
    if jsonl is not None:
        jsonl.close()
    _print(report, args.output)
    return 1 if report.diverging else 0


def _print(report: Report, output: str) -> None:
    if output == "json":
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.text())


if __name__ == "__main__":
    sys.exit(main())
