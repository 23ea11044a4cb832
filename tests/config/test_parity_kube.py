"""Config parity: ``ksched config validate`` and the real kube-scheduler agree on every config.

Every KubeSchedulerConfiguration the config tests use (``cases.CASES``) and every one under
examples/ and deploy/ is written to a file and given to both:

* ksched: ``ksched config validate FILE`` (in process), accepted when it exits 0;
* kube-scheduler v1.36 (``--config FILE --secure-port=0``, on the session's control plane):
  accepted once it logs "Starting Kubernetes Scheduler" (``Run`` logs it first, after every
  check ``Setup`` and ``scheduler.New`` make), rejected when it exits non-zero first. It is
  killed right after; it never schedules anything.

Both must accept, or both reject. And the default profile (plugins, weights, the args
upstream defaults only under feature gates) is kube-scheduler's, under the default gates and
under a non-default gate set. Not compared, each with its reason: configs naming plugins
that only ksched has (``NOT_COMPARED``), and those the deliberate extensions of
docs/fidelity.md decide (``EXTENSIONS``); for these the test checks instead that ksched
says what it does with each (a warning or a problem) and that kube-scheduler still judges
one of them otherwise.

The clientConnection.kubeconfig of every config is pointed at the control plane (the
kube-scheduler identity), and extender TLS files that exist only on a real control-plane
node at the control plane's own certificate, so that a valid config is not rejected for a
missing file; both sides read the same rewritten file.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import time
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main as ksched_main
from ksched.config import API_VERSION_V1BETA3, GATED_ARG_DEFAULTS, KIND, default_config, to_dict
from ksched.features import resolve_feature_gates
from ksched.testing.controlplane import ControlPlane
from ksched.testing.controlplane._process import _die_with_parent as die_with_parent
from tests.config.cases import CASES, Case
from tests.features.gatesets import NON_DEFAULT_BY_VERSION, kube_scheduler_effective, minor_of

REPO = Path(__file__).resolve().parents[2]
FIDELITY = REPO / "docs" / "fidelity.md"
STARTED = "Starting Kubernetes Scheduler"
TIMEOUT = 30.0
PARALLEL = 4


# --- what is compared ---------------------------------------------------------------------


def _entry_point_plugins(pyproject: Path) -> set[str]:
    data = tomllib.loads(pyproject.read_text())
    return set(data["project"]["entry-points"]["ksched.plugins"])


#: Plugins only ksched has: the contrib plugins and the example plugin packages'.
KSCHED_ONLY_PLUGINS = (
    _entry_point_plugins(REPO / "contrib_plugins" / "pyproject.toml")
    | _entry_point_plugins(REPO / "examples" / "plugin-package" / "pyproject.toml")
    | _entry_point_plugins(REPO / "examples" / "placement-plugin-package" / "pyproject.toml")
)

#: Configs kube-scheduler cannot judge, by id, with the reason.
NOT_COMPARED = {
    "examples/plugin-package/examples/config.yaml": (
        "NodeCost is the example plugin package's (examples/plugin-package), not kube-scheduler's"
    ),
    "examples/placement-plugin-package/examples/config.yaml": (
        "PlacementCost is the example placement plugin package's, not kube-scheduler's"
    ),
    "deploy/overlays/contrib/config.yaml": (
        "Coscheduling is a ksched contrib plugin (contrib_plugins/); kube-scheduler has none"
    ),
}


@dataclass(frozen=True)
class Extension:
    """A deliberate extension: the configs it decides, what ksched says of them (in a
    warning or a problem) and what kube-scheduler makes of them."""

    uses: Callable[[Any], bool]
    ksched_says: str
    kube_accepts: bool


def _extenders(data: Any) -> list[Any]:
    ext = data.get("extenders") if isinstance(data, dict) else None
    return [e for e in ext if isinstance(e, dict)] if isinstance(ext, list) else []


#: The deliberate extensions of docs/fidelity.md ("Deliberate extensions"), each by the
#: name that section gives it.
EXTENSIONS = {
    f"apiVersion: {API_VERSION_V1BETA3}": Extension(
        lambda d: isinstance(d, dict) and d.get("apiVersion") == API_VERSION_V1BETA3,
        f"apiVersion: {API_VERSION_V1BETA3} is deprecated",
        kube_accepts=False,
    ),
    "an extender without urlPrefix": Extension(
        lambda d: any(not e.get("urlPrefix") for e in _extenders(d)),
        "urlPrefix: Required value",
        kube_accepts=True,
    ),
    "a negative extender httpTimeout": Extension(
        lambda d: any(str(e.get("httpTimeout", "")).startswith("-") for e in _extenders(d)),
        "httpTimeout: Invalid value: -",
        kube_accepts=True,
    ),
}


def _yaml_cases() -> list[Case]:
    """KubeSchedulerConfigurations under examples/ and deploy/: whole documents, and those
    a ConfigMap carries in its data."""
    out = []
    for path in sorted([*REPO.glob("examples/**/*.yaml"), *REPO.glob("deploy/**/*.yaml")]):
        rel = path.relative_to(REPO).as_posix()
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        for d in docs:
            if d.get("kind") == KIND:
                out.append(Case(rel, d))
            elif d.get("kind") == "ConfigMap":
                for key, value in (d.get("data") or {}).items():
                    inner = yaml.safe_load(value) if isinstance(value, str) else None
                    if isinstance(inner, dict) and inner.get("kind") == KIND:
                        out.append(Case(f"{rel}#{d['metadata']['name']}/{key}", inner))
    return out


ALL_CASES = [*CASES.values(), *_yaml_cases()]


def _plugin_names(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if isinstance(value.get("name"), str):
            yield value["name"]
        for v in value.values():
            yield from _plugin_names(v)
    elif isinstance(value, list):
        for v in value:
            yield from _plugin_names(v)


def _parsed(c: Case) -> Any:
    if c.text is None:
        return c.data
    with contextlib.suppress(ValueError, yaml.YAMLError):
        return yaml.safe_load(c.text)
    return None


def _extensions(c: Case) -> list[str]:
    return [name for name, ext in EXTENSIONS.items() if ext.uses(_parsed(c))]


# --- running both ---------------------------------------------------------------------------


@dataclass
class Verdict:
    accepted: bool
    problems: list[str]  # without the file name; kube-scheduler's error is one
    warnings: list[str]

    @property
    def message(self) -> str:
        return self.problems[0] if self.problems else ""


def _point_at(data: Any, cp: ControlPlane) -> Any:
    """``data`` with its kubeconfig the control plane's and node-only TLS files its own."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        return data
    data = json.loads(json.dumps(data))
    conn = data.get("clientConnection")
    if conn is None or isinstance(conn, dict):
        data["clientConnection"] = {**(conn or {}), "kubeconfig": str(cp.scheduler_kubeconfig)}
    pki = cp.dir / "pki"
    stand_in = {"caFile": cp.ca_file, "certFile": cp.ca_file, "keyFile": pki / "apiserver.key"}
    for ext in data.get("extenders") or []:
        tls = ext.get("tlsConfig") if isinstance(ext, dict) else None
        for key, path in stand_in.items():
            if isinstance(tls, dict) and str(tls.get(key, "")).startswith("/etc/kubernetes/"):
                tls[key] = str(path)
    return data


def _point_text_at(c: Case, cp: ControlPlane) -> str:
    """A text case with its kubeconfig the control plane's: the value replaced in place, or a
    clientConnection added, so that every other byte (the point of a text case) stays."""
    text = c.file_text()
    parsed = _parsed(c)
    if not isinstance(parsed, dict) or parsed.get("kind") != KIND:
        return text
    kubeconfig = str(cp.scheduler_kubeconfig)
    value = json.dumps(kubeconfig)  # a JSON string, so a YAML scalar too
    conn = parsed.get("clientConnection")
    if isinstance(conn, dict) and "kubeconfig" in conn:
        pattern = r'("?kubeconfig"?:\s*)("[^"]*"|[^\s,}]*)'
        out = re.sub(pattern, lambda m: m.group(1) + value, text, count=1)
    elif c.suffix == ".json":
        out = text.replace("{", f'{{"clientConnection": {{"kubeconfig": {value}}},', 1)
    elif conn is not None:
        out = re.sub(r"(?m)^clientConnection:\n", lambda m: f"{m[0]}  kubeconfig: {value}\n", text)
    else:
        out = text + f"clientConnection:\n  kubeconfig: {value}\n"
    new = json.loads(out) if c.suffix == ".json" else yaml.safe_load(out)
    assert new["clientConnection"]["kubeconfig"] == kubeconfig, c.id
    return out


def _write(c: Case, cp: ControlPlane, directory: Path) -> Path:
    text = (
        _point_text_at(c, cp)
        if c.text is not None
        else Case(c.id, _point_at(c.data, cp), suffix=c.suffix).file_text()
    )
    path = directory / (re.sub(r"[^A-Za-z0-9._-]+", "_", c.id) + c.suffix)
    path.write_text(text)
    return path


def ksched_verdict(path: Path, minor: str) -> Verdict:
    """``ksched config validate`` at ``--emulated-version minor`` (the binary's beside it)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = ksched_main(["config", "validate", str(path), f"--emulated-version={minor}"])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    lines = err.getvalue().splitlines()
    warnings = [ln for ln in lines if ln.startswith("warning: ")]
    problems = [ln.removeprefix(f"{path}: ") for ln in lines if ln not in warnings]
    return Verdict(code == 0, [] if code == 0 else problems or ["?"], warnings)


_FAILED = re.compile(r'"command failed" err=(".*")\s*$')


def kube_scheduler_verdict(binary: Path, path: Path) -> Verdict:
    proc = subprocess.Popen(
        [str(binary), f"--config={path}", "--secure-port=0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=die_with_parent,  # its own process group, killed if pytest dies
    )
    lines: list[str] = []
    started = False
    deadline = time.monotonic() + TIMEOUT
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if STARTED in line:
                started = True
                break
            if time.monotonic() > deadline:
                break
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait(10)
    if started:
        return Verdict(True, [], [])
    if code in (0, -signal.SIGKILL):
        raise AssertionError(
            f"kube-scheduler neither started nor failed within {TIMEOUT:.0f}s on {path}:\n"
            + "\n".join(lines[-10:])
        )
    message = "\n".join(lines[-3:])
    for line in reversed(lines):
        m = _FAILED.search(line)
        if m:
            message = json.loads(m.group(1))
            break
    return Verdict(False, [message], [])


@dataclass
class Compared:
    case: Case
    ksched: Verdict
    kube: Verdict


def compare_all(cp: ControlPlane, cases: list[Case], directory: Path) -> list[Compared]:
    binary = cp.assets.path("kube-scheduler")
    paths = [_write(c, cp, directory) for c in cases]
    with ThreadPoolExecutor(PARALLEL) as pool:
        kube = list(pool.map(lambda p: kube_scheduler_verdict(binary, p), paths))
    minor = kube_minor_of(cp)
    return [
        Compared(c, ksched_verdict(p, minor), k) for c, p, k in zip(cases, paths, kube, strict=True)
    ]


def kube_minor_of(cp: ControlPlane) -> str:
    """The control plane's release as an emulated version ("1.37")."""
    return minor_of(cp.assets.version)


def _table(rows: list[Compared]) -> str:
    def show(v: Verdict) -> str:
        return "accept" if v.accepted else f"reject: {v.message}"

    return "\n".join(
        f"{r.case.id}\n    ksched:         {show(r.ksched)}\n    kube-scheduler: {show(r.kube)}"
        for r in rows
    )


# --- tests -----------------------------------------------------------------------------------


def test_every_config_file_under_examples_and_deploy_is_collected() -> None:
    ids = {c.id for c in _yaml_cases()}
    assert {
        "examples/plugin-package/examples/config.yaml",
        "deploy/base/config.yaml",
        "deploy/overlays/contrib/config.yaml",
        "deploy/extender/kube-scheduler-config.yaml",
        "deploy/extender/ksched-extender.yaml#ksched-extender/config.yaml",
    } <= ids


def test_configs_naming_ksched_only_plugins_are_exactly_the_not_compared_ones() -> None:
    naming = {c.id for c in ALL_CASES if KSCHED_ONLY_PLUGINS & set(_plugin_names(_parsed(c)))}
    assert naming == set(NOT_COMPARED)


def test_deliberate_extensions_are_the_documented_ones() -> None:
    text = FIDELITY.read_text()
    section = text.split("## Deliberate extensions", 1)[1].split("\n## ", 1)[0]
    for name in EXTENSIONS:
        assert name in section, f"{name!r} is left out of the parity test but not documented"


@pytest.mark.kube
def test_ksched_and_kube_scheduler_agree_on_every_config(
    controlplane: ControlPlane, tmp_path: Path
) -> None:
    compared = [c for c in ALL_CASES if c.id not in NOT_COMPARED and not _extensions(c)]
    rows = compare_all(controlplane, compared, tmp_path)
    print(_table(rows))  # both sides' words, for pytest -s
    differ = [r for r in rows if r.ksched.accepted != r.kube.accepted]
    assert len(rows) >= 100
    assert not differ, f"{len(differ)} of {len(rows)} configs judged differently:\n" + _table(
        differ
    )


@pytest.mark.kube
def test_deliberate_extensions_are_still_extensions(
    controlplane: ControlPlane, tmp_path: Path
) -> None:
    extended = [c for c in ALL_CASES if _extensions(c)]
    rows = compare_all(controlplane, extended, tmp_path)
    print(_table(rows))
    for name, ext in EXTENSIONS.items():
        mine = [r for r in rows if name in _extensions(r.case)]
        # ksched says what it does with every config the extension decides ...
        for r in mine:
            said = r.ksched.warnings + r.ksched.problems
            assert any(ext.ksched_says in line for line in said), (r.case.id, r.ksched)
        # ... and kube-scheduler still judges one of them otherwise (else drop the extension)
        assert any(
            r.kube.accepted == ext.kube_accepts and r.ksched.accepted != ext.kube_accepts
            for r in mine
        ), f"{name}: kube-scheduler and ksched now agree on\n" + _table(mine)


# --- the default profile under feature gates ---------------------------------------------------


def _default_profile_of(effective: Any) -> tuple[list[tuple[str, int]], dict[tuple[str, str], Any]]:
    """(multiPoint (name, weight) in order, weight 0 for none; the gated args' values, None
    when unset) of the first profile of an effective configuration."""
    prof = effective["profiles"][0]
    plugins = [(p["name"], p.get("weight") or 0) for p in prof["plugins"]["multiPoint"]["enabled"]]
    args = {pc["name"]: pc.get("args") or {} for pc in prof["pluginConfig"]}
    gated = {(name, key): args.get(name, {}).get(key) for name, key in GATED_ARG_DEFAULTS}
    return plugins, gated


@pytest.mark.kube
@pytest.mark.parametrize("non_default", [False, True], ids=["default-gates", "non-default-gates"])
def test_the_default_profile_is_kube_schedulers_under_each_gate_set(
    controlplane: ControlPlane, non_default: bool
) -> None:
    """The default profile's plugins (order, weights) and the args upstream defaults only
    under feature gates: ksched's at the control plane's minor, against a real
    kube-scheduler's ``/configz`` with the same ``--feature-gates`` (and its
    ``--write-config-to``, which must say the same)."""
    minor = kube_minor_of(controlplane)
    gates = NON_DEFAULT_BY_VERSION[minor] if non_default else []
    flags = [f"--feature-gates={g}" for g in gates]
    with controlplane.kube_scheduler(None, name=f"configz-{len(gates)}", args=flags) as ks:
        theirs = json.loads(ks.get("/configz"))["componentconfig"]
    written, err = kube_scheduler_effective(flags)
    assert written is not None, err
    assert _default_profile_of(written) == _default_profile_of(theirs)
    ours = to_dict(default_config(resolve_feature_gates(gates, [minor])))
    assert _default_profile_of(ours) == _default_profile_of(theirs)
