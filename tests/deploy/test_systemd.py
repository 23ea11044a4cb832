"""systemd/: the unit verifies with systemd-analyze (when installed), has the hardening it
promises, starts ksched with flags ksched accepts, and its example config validates;
CPython with ksched's native extensions runs under MemoryDenyWriteExecute."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ksched.cli import build_parser, main

from ._mdwe import PR_GET_MDWE, mdwe_argv, mdwe_supported

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "ksched.service"
GUIDE = ROOT / "docs" / "install-systemd.md"
INSTALLED = "/opt/ksched/venv/bin/ksched"

Directives = dict[str, dict[str, list[str]]]


def parse_unit(text: str) -> Directives:
    """Sections → key → values in order (keys repeat; ``\\`` continues a line)."""
    out: Directives = {}
    section = ""
    lines = iter(text.splitlines())
    for raw in lines:
        line = raw.strip()
        while line.endswith("\\"):
            line = line[:-1].rstrip() + " " + next(lines).strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out.setdefault(section, {})
            continue
        key, _, value = line.partition("=")
        out[section].setdefault(key.strip(), []).append(value.strip())
    return out


@pytest.fixture(scope="module")
def unit() -> Directives:
    return parse_unit(UNIT.read_text())


def _one(unit: Directives, key: str, section: str = "Service") -> str:
    values = unit[section][key]
    assert len(values) == 1, (key, values)
    return values[0]


# ---- systemd-analyze ---------------------------------------------------------------------


def _ksched_binary() -> str:
    """The installed ``ksched`` console script (the unit names the venv path)."""
    beside = Path(sys.executable).parent / "ksched"
    found = str(beside) if beside.exists() else shutil.which("ksched")
    if found is None:
        pytest.skip("no ksched console script installed")
    return found


def _analyze() -> str:
    exe = shutil.which("systemd-analyze")
    if exe is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    return exe


def _verify(tmp_path: Path, dropin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze verify`` of the unit as installed: the same file, with ExecStart's
    binary pointing at this environment's ksched (verify checks that it is executable)."""
    exe = _analyze()
    units = tmp_path / "units"
    units.mkdir()
    text = UNIT.read_text()
    assert INSTALLED in text
    (units / "ksched.service").write_text(text.replace(INSTALLED, _ksched_binary()))
    if dropin is not None:
        (units / "ksched.service.d").mkdir()
        (units / "ksched.service.d" / "override.conf").write_text(
            dropin.replace(INSTALLED, _ksched_binary())
        )
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{units}:", "SYSTEMD_LOG_COLOR": "0"}
    return subprocess.run(
        [exe, "verify", "ksched.service"],
        cwd=units,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_systemd_analyze_verify(tmp_path: Path) -> None:
    r = _verify(tmp_path)
    # verify exits 0 on unknown keys and only warns: any output is a failure here
    assert (r.returncode, r.stdout + r.stderr) == (0, "")


def test_systemd_analyze_verify_reports_a_typo(tmp_path: Path) -> None:
    """The check above would notice a misspelt directive (systemd ignores those)."""
    r = _verify(tmp_path, "[Service]\nNoNewPrivilege=yes\n")
    assert "Unknown key 'NoNewPrivilege'" in r.stderr


def _guide_dropin() -> str:
    m = re.search(r"<!-- dropin -->\s*```ini\n(.*?)```", GUIDE.read_text(), re.S)
    assert m, "the credential drop-in in docs/install-systemd.md"
    return m.group(1)


def test_documented_credential_dropin_verifies(tmp_path: Path) -> None:
    dropin = _guide_dropin()
    r = _verify(tmp_path, dropin)
    assert (r.returncode, r.stdout + r.stderr) == (0, "")
    exec_start = [v for v in parse_unit(dropin)["Service"]["ExecStart"] if v]
    args = build_parser().parse_args(shlex.split(exec_start[0])[1:])
    assert args.kubeconfig == "%d/scheduler.conf"


def test_exposure_is_low(tmp_path: Path) -> None:
    exe = _analyze()
    path = tmp_path / "ksched.service"
    path.write_text(UNIT.read_text())
    r = subprocess.run(
        [exe, "security", "--offline=yes", "--no-pager", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    m = re.search(r"Overall exposure level for ksched.service: ([\d.]+)", r.stdout)
    if m is None:
        pytest.skip(f"systemd-analyze security --offline is not supported: {r.stderr[-200:]}")
    assert float(m.group(1)) <= 2.0, r.stdout


# ---- the unit's contents -------------------------------------------------------------------


def test_notify_watchdog_restart(unit: Directives) -> None:
    assert _one(unit, "Type") == "notify"
    assert _one(unit, "NotifyAccess") == "main"
    assert _one(unit, "WatchdogSec").endswith("s")
    assert _one(unit, "Restart") == "on-failure"
    assert _one(unit, "RestartPreventExitStatus") == "2"  # bad config: restarting cannot help
    # graceful shutdown: 30 s for bindings + 5 s status flush must fit
    assert int(_one(unit, "TimeoutStopSec").rstrip("s")) >= 35


def test_file_descriptor_limit_leaves_room_beyond_the_connection_limit(unit: Directives) -> None:
    """The HTTP server's connection cap (1000, or half the descriptor limit) and the rest of
    the process fit: no accept() runs out of descriptors first."""
    from ksched.util.httpserver import DEFAULT_MAX_CONNECTIONS

    nofile = int(_one(unit, "LimitNOFILE"))
    assert nofile >= 4 * DEFAULT_MAX_CONNECTIONS  # the default soft limit, 1024, is not


def test_exec_start_is_a_valid_ksched_run(unit: Directives) -> None:
    argv = shlex.split(_one(unit, "ExecStart"))
    assert argv[0] == INSTALLED
    args = build_parser().parse_args(argv[1:])
    assert args.command == "run"
    assert args.config == "/etc/ksched/config.yaml"
    assert args.kubeconfig == "/etc/kubernetes/scheduler.conf"
    assert args.bind_address == "127.0.0.1"
    assert args.secure_port not in (0, 10259)  # HTTPS, not kube-scheduler's port on the host
    assert args.port is None  # no plain-HTTP port
    # the kubeconfig is the only file of /etc/kubernetes the service can see
    assert _one(unit, "TemporaryFileSystem") == "/etc/kubernetes:ro"
    assert _one(unit, "BindReadOnlyPaths") == args.kubeconfig


def test_hardening(unit: Directives) -> None:
    s = unit["Service"]
    assert _one(unit, "User") == "ksched" and "DynamicUser" not in s
    expected = {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "CapabilityBoundingSet": "",
        "AmbientCapabilities": "",
        "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
        "SystemCallArchitectures": "native",
        "LockPersonality": "yes",
        "MemoryDenyWriteExecute": "yes",
        "RestrictNamespaces": "yes",
        "RestrictRealtime": "yes",
        "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes",
        "ProtectKernelLogs": "yes",
        "ProtectControlGroups": "yes",
        "ProtectClock": "yes",
        "ProtectHostname": "yes",
        "UMask": "0077",
    }
    assert {k: _one(unit, k) for k in expected} == expected
    assert s["SystemCallFilter"][0] == "@system-service"


def test_example_config_validates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "validate", str(ROOT / "systemd" / "config.yaml")]) == 0, (
        capsys.readouterr().err
    )


# ---- MemoryDenyWriteExecute ------------------------------------------------------------------


def test_ksched_runs_under_memory_deny_write_execute() -> None:
    """numpy, msgspec, aiohttp, the daemon's imports and a whole simulation with writable+
    executable memory refused, as under MemoryDenyWriteExecute=yes (the daemon itself runs
    so in test_sdnotify's ``ksched run`` test)."""
    if not mdwe_supported():
        pytest.skip("the kernel has no PR_SET_MDWE (Linux < 6.3) or prctl is filtered")
    cluster = str(ROOT / "examples" / "cluster.yaml")
    probe = (
        "import ctypes, ksched.daemon.main, ksched.cluster, aiohttp, kubernetes_asyncio, "
        "prometheus_client\n"
        "from ksched.cli import main\n"
        # the secure port's self-signed certificate (cryptography, OpenSSL)
        "from ksched.util.tls import self_signed_ssl_context\n"
        "self_signed_ssl_context('127.0.0.1')\n"
        f"print(ctypes.CDLL(None).prctl({PR_GET_MDWE}, 0, 0, 0, 0), flush=True)\n"
        f"raise SystemExit(main(['simulate', '--cluster', {cluster!r}, '--output', 'json']))\n"
    )
    r = subprocess.run(
        mdwe_argv([sys.executable, "-c", probe]),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    first, _, rest = r.stdout.partition("\n")
    assert first == "1"  # MDWE was in force in the process that scheduled
    assert '"status": "Scheduled"' in rest
