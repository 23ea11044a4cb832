"""Build the upstream control plane (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager, kubectl) from Go modules, cached per version.

``k8s.io/kubernetes`` replaces its ``k8s.io/*`` staging modules with ``./staging/``
paths, which a dependent module does not inherit, so a throw-away wrapper module pins
each one to the matching published ``v0.X.Y`` and lists the five commands as ``tool``
dependencies. The build is the ordinary ``go build``; Go is only a build tool here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ...features.versions import KUBERNETES_VERSION, minor_of_release

DEFAULT_VERSION = KUBERNETES_VERSION
#: Environment variable naming a directory of ready binaries (envtest's KUBEBUILDER_ASSETS).
ASSETS_ENV = "KSCHED_KUBE_ASSETS"
#: Environment variable overriding the pinned Kubernetes version.
VERSION_ENV = "KSCHED_KUBE_VERSION"

#: Binary name -> Go package that builds it.
COMMANDS: dict[str, str] = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    "etcd": "go.etcd.io/etcd/server/v3",
}
BINARIES = tuple(COMMANDS)
_STAMP = ".ksched-build.json"
_MIN_GO = (1, 26)


class BuildError(RuntimeError):
    """The control plane could not be built; the message says which step and why."""


@dataclass(frozen=True)
class Assets:
    directory: Path
    version: str

    def path(self, name: str) -> Path:
        return self.directory / name

    @property
    def emulated_version(self) -> str:
        """The ``--emulated-version`` at which ksched behaves as this kube-scheduler does
        ("1.36" for v1.36.3): what a test runs ksched at beside these binaries."""
        return minor_of_release(self.version)


def kube_version() -> str:
    return os.environ.get(VERSION_ENV) or DEFAULT_VERSION


def cache_dir(version: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ksched" / "kube" / version


def _complete(directory: Path) -> bool:
    return all(os.access(directory / b, os.X_OK) for b in BINARIES)


def find_assets(version: str | None = None) -> Assets | None:
    """Ready binaries without building: the env var's directory, else the cache."""
    version = version or kube_version()
    env = os.environ.get(ASSETS_ENV)
    if env:
        d = Path(env)
        if not _complete(d):
            missing = [b for b in BINARIES if not os.access(d / b, os.X_OK)]
            raise BuildError(f"{ASSETS_ENV}={env}: missing executables {', '.join(missing)}")
        return Assets(d, version)
    d = cache_dir(version)
    stamp = d / _STAMP
    if _complete(d) and stamp.exists():
        try:
            if json.loads(stamp.read_text()).get("version") == version:
                return Assets(d, version)
        except ValueError:
            return None
    return None


def _run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path, step: str) -> str:
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        out = proc.stdout.decode(errors="replace")
        fh.write(out)
    if proc.returncode != 0:
        tail = "\n".join(out.splitlines()[-20:])
        raise BuildError(f"{step} failed (exit {proc.returncode}; full log {log}):\n{tail}")
    return out


def _check_go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("building the control plane needs Go >= 1.26 on PATH ('go' not found)")
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()
    m = re.match(r"go(\d+)\.(\d+)", out)
    if m and (int(m[1]), int(m[2])) < _MIN_GO:
        raise BuildError(f"building the control plane needs Go >= 1.26, found {out}")
    return go


def _staging_modules(
    go: str, version: str, workdir: Path, env: dict[str, str], log: Path
) -> list[str]:
    out = _run(
        [go, "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
        workdir,
        env,
        log,
        f"downloading k8s.io/kubernetes@{version}",
    )
    info = json.loads(out[out.index("{") :])
    gomod = Path(info["GoMod"]).read_text()
    return sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", gomod, re.M)))


# A failed build is not retried in the same process: every test of a session would
# otherwise repeat it.
_failed: dict[str, BuildError] = {}


def build(version: str | None = None, *, force: bool = False, quiet: bool = False) -> Assets:
    """Build (or reuse) the binaries; a second call is a no-op."""
    version = version or kube_version()
    if not force:
        found = find_assets(version)
        if found is not None:
            return found
        if version in _failed:
            raise _failed[version]
    try:
        return _build(version, quiet=quiet)
    except BuildError as e:
        _failed[version] = e
        raise


def go_env() -> dict[str, str]:
    """The environment every Go step runs in: modules resolved as the build resolves them,
    no cgo, the local toolchain (so compiled packages are shared through Go's cache)."""
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "")
    env["GOFLAGS"] = (env["GOFLAGS"] + " -mod=mod -buildvcs=false").strip()
    env.setdefault("CGO_ENABLED", "0")
    env["GOTOOLCHAIN"] = "local"
    return env


def write_wrapper_module(version: str, work: Path, log: Path) -> str:
    """A throw-away module in ``work`` requiring ``k8s.io/kubernetes@version`` with its
    staging modules pinned to the published ``v0.X.Y``; returns the ``go`` executable.
    Shared by the build and ``scripts/gen_feature_gates.py`` (same module graph, so the
    second one compiles from Go's cache)."""
    m = re.fullmatch(r"v1\.(\d+)\.(\d+)", version)
    if m is None:
        raise BuildError(f"kube version {version!r}: expected v1.MINOR.PATCH")
    go = _check_go()
    work.mkdir(parents=True, exist_ok=True)
    staging = _staging_modules(go, version, work, go_env(), log)
    mod_version = f"v0.{m[1]}.{m[2]}"
    lines = ["module ksched.local/kubebuild", "", "go 1.26.0", "", "godebug default=go1.26", ""]
    lines.append("require k8s.io/kubernetes " + version)
    lines.append("")
    lines.append("replace (")
    lines += [f"\t{mod} => {mod} {mod_version}" for mod in staging]
    lines.append(")")
    lines.append("")
    (work / "go.mod").write_text("\n".join(lines))
    (work / "go.sum").unlink(missing_ok=True)
    return go


def _build(version: str, *, quiet: bool) -> Assets:
    m = re.fullmatch(r"v1\.(\d+)\.(\d+)", version)
    if m is None:
        raise BuildError(f"kube version {version!r}: expected v1.MINOR.PATCH")
    minor = m[1]
    dest = cache_dir(version)
    work = dest / ".build"
    work.mkdir(parents=True, exist_ok=True)
    log = dest / "build.log"
    log.write_text("")
    env = go_env()
    t0 = time.monotonic()

    def say(msg: str) -> None:
        if not quiet:
            print(
                f"[kube-binaries {time.monotonic() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True
            )

    say(f"building Kubernetes {version} into {dest} (cold: about 6 min on 2 cores)")
    go = write_wrapper_module(version, work, log)
    (work / "tools.go").write_text(
        "//go:build tools\n\npackage tools\n\nimport (\n"
        + "".join(f'\t_ "{p}"\n' for p in COMMANDS.values())
        + ")\n"
    )
    say("resolving modules")
    _run([go, "mod", "tidy"], work, env, log, "go mod tidy")
    stamp_vars = {
        "gitVersion": version,
        "gitMajor": "1",
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    xs = " ".join(
        f"-X '{pkg}.{k}={v}'"
        for k, v in stamp_vars.items()
        for pkg in ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version")
    )
    # One go build for all five: packages are compiled once and in parallel; the -X
    # flags name version variables etcd does not link, which the linker ignores.
    say(f"go build {', '.join(BINARIES)}")
    for name in BINARIES:
        (dest / name).unlink(missing_ok=True)
    _run(
        [
            go,
            "build",
            "-trimpath",
            "-ldflags",
            "-s -w " + xs,
            "-o",
            str(dest) + os.sep,
            *COMMANDS.values(),
        ],
        work,
        env,
        log,
        "go build",
    )
    # go build -o DIR names etcd's binary after its package path: "server" (the /v3 suffix
    # is dropped)
    for built in ("server", "v3"):
        if (dest / built).exists():
            (dest / built).replace(dest / "etcd")
    (dest / _STAMP).write_text(json.dumps({"version": version, "binaries": list(BINARIES)}))
    say("done")
    return Assets(dest, version)
