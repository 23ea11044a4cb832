"""``ksched run`` as a process: startup checks, exit codes, signals."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import E2E, KschedProcess, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def procs() -> Iterator[list[KschedProcess]]:
    started: list[KschedProcess] = []
    yield started
    for p in started:
        p.kill()


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


def test_sigterm_lets_bindings_finish_and_exits_0(e2e: E2E, procs: list[KschedProcess]) -> None:
    node = e2e.create_node("n")
    cfg = e2e.write_config()
    proc = KschedProcess(
        [
            "--config",
            str(cfg),
            "--kubeconfig",
            str(e2e.kubeconfig),
            "--no-leader-elect",
            "-v",
            "2",
            *e2e.emulation_args(),  # a v1.37 ksched waits for kinds a v1.36 server lacks
        ]
    )
    procs.append(proc)
    url = proc.serving()
    wait_for(lambda: _get(url + "/readyz") == 200, 20, what="readyz")
    e2e.create_pod("first")
    assert e2e.wait_bound("first") == node
    line = proc.wait_log("Successfully bound pod to node")
    assert (line["pod"], line["node"], line["profile"]) == (
        f"{e2e.namespace}/first",
        node,
        e2e.scheduler_name,
    )
    if e2e.server is not None:
        # a slow binding is in flight when the signal arrives: it must complete
        e2e.server.faults.add_latency(1.5, verb="create", resource="pods", subresource="binding")
        e2e.create_pod("slow")
        wait_for(lambda: _inflight(url), 10, what="the binding to be in flight")
    proc.p.send_signal(signal.SIGTERM)
    assert proc.p.wait(30) == 0
    if e2e.server is not None:
        assert e2e.node_of("slow") == node


def _inflight(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return False
    return 'scheduler_goroutines{operation="binding"} 1.0' in text


@pytest.mark.fake_apiserver
def test_bad_config_exits_2_before_any_request(e2e: E2E, tmp_path: Path) -> None:
    srv = e2e.need_server()
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: x\n  plugins:\n    filter:\n      enabled:\n"
        "      - name: NoSuchPlugin\n"
    )
    srv.clear_requests()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ksched",
            "run",
            "--config",
            str(bad),
            "--kubeconfig",
            str(e2e.kubeconfig),
            "--no-leader-elect",
            "--port",
            "0",
            "--secure-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert "NoSuchPlugin" in r.stderr
    assert srv.requests == []


@pytest.mark.fake_apiserver
def test_leader_elect_flag_with_bad_timings_exits_2(e2e: E2E, tmp_path: Path) -> None:
    # leaderElect false skips the election rules when loading; the flag turns them on.
    srv = e2e.need_server()
    cfg = tmp_path / "le.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false, leaseDuration: 5s, renewDeadline: 10s}\n"
    )
    srv.clear_requests()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ksched",
            "run",
            "--config",
            str(cfg),
            "--kubeconfig",
            str(e2e.kubeconfig),
            "--leader-elect",
            "--port",
            "0",
            "--secure-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "leaderElection.leaseDuration: Invalid value: 5s" in r.stderr
    assert srv.requests == []


def test_run_under_feature_gates_shows_them_on_configz_and_flagz(
    e2e: E2E, procs: list[KschedProcess]
) -> None:
    """``ksched run --feature-gates ... --emulated-version 1.36`` schedules under those
    gates; ``/configz`` has every gate's value, ``/flagz`` the command line, ``/statusz``
    the emulated version."""
    import json

    node = e2e.create_node("n")
    cfg = e2e.write_config()
    gates = "OpportunisticBatching=false,StorageCapacityScoring=true"
    proc = KschedProcess(
        [
            "--config",
            str(cfg),
            "--kubeconfig",
            str(e2e.kubeconfig),
            "--no-leader-elect",
            f"--feature-gates={gates}",
            "--emulated-version=1.36",
        ]
    )
    procs.append(proc)
    url = proc.serving()
    wait_for(lambda: _get(url + "/readyz") == 200, 20, what="readyz")
    e2e.create_pod("p")
    assert e2e.wait_bound("p") == node
    with urllib.request.urlopen(url + "/configz", timeout=5) as r:
        configz = json.loads(r.read())
    assert configz["emulatedVersion"] == "1.36"
    assert configz["featureGates"]["OpportunisticBatching"] is False
    assert configz["featureGates"]["StorageCapacityScoring"] is True
    with urllib.request.urlopen(url + "/flagz", timeout=5) as r:
        flagz = r.read().decode()
    shown = ",".join(f":{g}" for g in gates.split(","))  # as kube-scheduler's /flagz shows it
    assert f"\nfeature-gates={shown}\n" in flagz
    assert "\nemulated-version=[1.36]\n" in flagz and "\nksched flagz\n" in flagz
    with urllib.request.urlopen(url + "/statusz", timeout=5) as r:
        assert "\nEmulation version  1.36\n" in r.read().decode()
