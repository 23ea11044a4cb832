#!/usr/bin/env python3
"""Regenerate ``ksched/features/kube_<major>_<minor>.py``: the feature gates of one
kube-scheduler version, from the upstream Go modules.

For each row of ``ksched.features.versions.KUBE_VERSIONS`` (or ``--version vX.Y.Z``):

1. a throw-away module requiring ``k8s.io/kubernetes@vX.Y.Z`` (the control plane build's
   wrapper, so Go's build cache is shared) runs ``featuregates_dump.go.txt``, which
   imports ``k8s.io/kubernetes/cmd/kube-scheduler/app`` and prints every gate the binary
   registers (kube, apiserver, component-base, client-go) with its stage, default and
   lock at the binary's own version, and the gate dependencies;
2. the module source of ``pkg/scheduler`` and ``cmd/kube-scheduler`` is scanned for
   ``<featurespkg>.<Gate>`` references: the files that read each gate.

Adding Kubernetes 1.38: add its row to ``KUBE_VERSIONS`` and run this script.
``--check`` compares instead of writing (exit 1 on a difference). The Go dump is cached
in ``~/.cache/ksched/featuregates/<version>/`` (``cached_dump``); ``--from-cache`` uses
only that.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ksched.features.versions import KUBE_VERSIONS  # noqa: E402
from ksched.testing.controlplane._build import (  # noqa: E402
    cache_dir,
    go_env,
    write_wrapper_module,
)

DUMPER = Path(__file__).with_name("featuregates_dump.go.txt")
OUT_DIR = ROOT / "ksched" / "features"
# Where kube-scheduler's own code lives in the k8s.io/kubernetes module.
SCANNED = ("pkg/scheduler", "cmd/kube-scheduler")
_IMPORT = re.compile(r'^\s*(?:import\s+)?(\w+\s+)?"(k8s\.io/[\w./-]*features)"', re.M)


def module_dir(module: str, version: str) -> Path:
    """The module's source in Go's module cache (downloaded if missing)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=True,
        env=go_env(),
    ).stdout
    return Path(json.loads(out)["Dir"])


def cached_dump(version: str) -> Path:
    """Where the dumper's JSON for ``version`` is kept: per version and dumper source, so
    a changed dumper is run again."""
    digest = hashlib.sha256(DUMPER.read_bytes()).hexdigest()[:12]
    return cache_dir(version).parent.parent / "featuregates" / version / f"gates-{digest}.json"


def go_dump(version: str, *, from_cache: bool) -> dict[str, Any]:
    """The dumper's JSON for one version (cached, see ``cached_dump``)."""
    cached = cached_dump(version)
    work = cached.parent
    if cached.exists():
        data: dict[str, Any] = json.loads(cached.read_text())
        return data
    if from_cache:
        raise SystemExit(f"gen_feature_gates: no cached dump for {version} ({cached})")
    work.mkdir(parents=True, exist_ok=True)
    log = work / "gen.log"
    go = write_wrapper_module(version, work, log)
    (work / "main.go").write_text(DUMPER.read_text())
    env = go_env()
    for cmd in ([go, "mod", "tidy"], [go, "run", "-trimpath", "."]):
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"gen_feature_gates: {' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    data = json.loads(proc.stdout)
    cached.write_text(proc.stdout)
    return data


def _staging_module(import_path: str) -> tuple[str, str]:
    """(module, path inside it) of a k8s.io import path."""
    parts = import_path.split("/")
    return "/".join(parts[:2]), "/".join(parts[2:])


def _gate_constants(pkg_dir: Path) -> dict[str, str]:
    """Go identifier -> gate name of a features package (``X featuregate.Feature = "X"``)."""
    out: dict[str, str] = {}
    for f in pkg_dir.glob("*.go"):
        if f.name.endswith("_test.go"):
            continue
        for ident, name in re.findall(
            r'^\s*(\w+)\s+(?:featuregate\.Feature|Feature)?\s*=\s*"([\w]+)"',
            f.read_text(),
            re.M,
        ):
            out[ident] = name
    return out


def scheduler_reads(version: str, staging: str) -> dict[str, list[str]]:
    """Gate name -> the files of ``SCANNED`` that reference it."""
    kube = module_dir("k8s.io/kubernetes", version)
    constants: dict[str, dict[str, str]] = {}
    reads: dict[str, set[str]] = {}
    for top in SCANNED:
        for f in sorted((kube / top).rglob("*.go")):
            if f.name.endswith("_test.go") or "/testing/" in str(f):
                continue
            text = f.read_text()
            for alias, path in _IMPORT.findall(text):
                alias = alias.strip() or path.rsplit("/", 1)[1]
                if path not in constants:
                    module, sub = _staging_module(path)
                    base = kube if module == "k8s.io/kubernetes" else module_dir(module, staging)
                    constants[path] = _gate_constants(base / sub)
                for ident in set(re.findall(rf"\b{alias}\.([A-Z]\w*)", text)):
                    name = constants[path].get(ident)
                    if name is not None:
                        reads.setdefault(name, set()).add(str(f.relative_to(kube)))
    return {k: sorted(v) for k, v in reads.items()}


def _tuple(items: list[str]) -> str:
    """A tuple of strings as Python source."""
    return "(" + ", ".join(f'"{i}"' for i in items) + ("," if len(items) == 1 else "") + ")"


def render(version: str, dump: dict[str, Any], reads: dict[str, list[str]]) -> str:
    floor = dump["emulationRange"].split("..")[0]
    minor = dump["binaryVersion"]
    lines = [
        f'"""kube-scheduler {version}: every feature gate it accepts on ``--feature-gates``, at',
        f"emulated version {minor}. Generated by scripts/gen_feature_gates.py from the Go",
        '"""',
        "",
        "# Generated: do not edit. Rows: name -> (stage, default, lockToDefault, files of",
        "# pkg/scheduler and cmd/kube-scheduler that read the gate).",
        "",
        f'KUBE_VERSION = "{version}"',
        f'BINARY_VERSION = "{minor}"',
        f'EMULATION_FLOOR = "{floor}"',
        "",
        "GATES: dict[str, tuple[str, bool, bool, tuple[str, ...]]] = {",
    ]
    for g in dump["gates"]:
        ftxt = _tuple(reads.get(g["name"], []))
        stage = g["preRelease"] or "GA"
        lines.append(
            f'    "{g["name"]}": ("{stage}", {g["default"]}, {g["lockToDefault"]}, {ftxt}),'
        )
    lines.append("}")
    lines.append("")
    lines.append("# gate -> the gates it needs enabled, in upstream's order")
    lines.append("DEPENDENCIES: dict[str, tuple[str, ...]] = {")
    for name in sorted(n for n, d in dump["dependencies"].items() if d):
        lines.append(f'    "{name}": {_tuple(dump["dependencies"][name])},')
    lines.append("}")
    lines.append("")
    text = "\n".join(lines)
    # the docstring's second line names the modules
    return text.replace(
        'from the Go\n"""',
        f"from the Go\nmodules k8s.io/kubernetes@{version} and its staging modules.\n" + '"""',
    )


def ruff() -> str | None:
    """The ruff beside this Python (a venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.exists() else shutil.which("ruff")


def formatted(text: str, path: Path) -> str:
    """``text`` as ``ruff format`` leaves it (the repository's style applies to it too)."""
    exe = ruff()
    if exe is None:
        raise SystemExit(
            "gen_feature_gates: ruff is needed to format the tables (pip install ruff)"
        )
    proc = subprocess.run(
        [exe, "format", "--stdin-filename", str(path), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return proc.stdout


def out_path(minor: str) -> Path:
    return OUT_DIR / f"kube_{minor.replace('.', '_')}.py"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Regenerate ksched/features/kube_<major>_<minor>.py from the upstream modules."
    )
    ap.add_argument("--version", action="append", help="vX.Y.Z (default: every KUBE_VERSIONS row)")
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    ap.add_argument("--from-cache", action="store_true", help="only use cached Go dumps")
    args = ap.parse_args(argv)
    versions = args.version or [v.kube for v in KUBE_VERSIONS]
    stale = []
    for version in versions:
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", version)
        if m is None:
            raise SystemExit(f"gen_feature_gates: {version!r}: expected vX.Y.Z")
        staging = f"v0.{m[2]}.{m[3]}"
        dump = go_dump(version, from_cache=args.from_cache)
        text = render(version, dump, scheduler_reads(version, staging))
        path = out_path(f"{m[1]}.{m[2]}")
        text = formatted(text, path)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
            print(f"gen_feature_gates: wrote {path.relative_to(ROOT)}", file=sys.stderr)
    if stale:
        print(f"gen_feature_gates: out of date: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
