"""``ksched run`` as a process: startup checks, exit codes, signals."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import E2E, wait_for

pytestmark = pytest.mark.e2e


class Proc:
    """A ``ksched run`` subprocess whose JSON log lines are collected by a reader thread."""

    def __init__(self, args: list[str]) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.p = subprocess.Popen(
            [sys.executable, "-m", "ksched", "run", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[dict[str, object]] = queue.Queue()
        self.log: list[dict[str, object]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                self.lines.put({"msg": line.rstrip()})

    def wait_log(self, msg: str, timeout: float = 20.0) -> dict[str, object]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                entry = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.p.poll() is not None:
                    break
                continue
            self.log.append(entry)
            if entry.get("msg") == msg:
                return entry
        err = self.p.stderr.read() if self.p.poll() is not None and self.p.stderr else ""
        raise AssertionError(f"no log line {msg!r}; saw {self.log}; stderr: {err}")

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
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


def test_sigterm_lets_bindings_finish_and_exits_0(e2e: E2E, procs: list[Proc]) -> None:
    node = e2e.create_node("n")
    cfg = e2e.write_config()
    proc = Proc(
        [
            "--config",
            str(cfg),
            "--kubeconfig",
            str(e2e.kubeconfig),
            "--no-leader-elect",
            "--port",
            "0",
            "--secure-port",
            "0",
            "--log-format",
            "json",
            "-v",
            "2",
        ]
    )
    procs.append(proc)
    url = str(proc.wait_log("serving health, metrics and debug endpoints")["url"])
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
