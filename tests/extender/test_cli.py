"""``ksched extender`` on the command line: flag checks exit 2, and a real process serves
(with TLS and client certificates) until SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ksched.cli import main

from .conftest import golden, make_pki

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
"""


@pytest.fixture
def cfg(tmp_path: Path) -> str:
    p = tmp_path / "config.yaml"
    p.write_text(CONFIG)
    return str(p)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tls-cert", "c.pem"], "--tls-cert-file and --tls-private-key-file go together"),
        (["--tls-private-key-file", "k.pem"], "--tls-cert-file and --tls-private-key-file go"),
        (["--client-ca", "ca.pem"], "--client-ca-file needs --tls-cert-file"),
        (
            [
                *("--tls-cert-file", "c.pem", "--tls-private-key-file", "k.pem"),
                *("--client-ca-file", "ca.pem", "--insecure-allow-unauthenticated"),
            ],
            "--insecure-allow-unauthenticated contradicts --client-ca-file",
        ),
        (["--profile", "nope"], "unknown profile 'nope'"),
        (["--max-request-bytes", "0"], "must be positive"),
        (["--max-request-nodes", "0"], "--max-request-nodes must be positive"),
        (["--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.pem"], "TLS:"),
    ],
)
def test_bad_flags_exit_2(
    cfg: str, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["extender", "--config", cfg, *args]) == 2
    assert message in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serves_over_tls_until_sigterm(cfg: str, tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    port, health = _free_port(), _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ksched",
            "extender",
            "--config",
            cfg,
            "--bind-address",
            "127.0.0.1",
            "--port",
            str(port),
            "--tls-cert",
            pki.path("server.pem"),
            "--tls-key",
            pki.path("server-key.pem"),
            "--client-ca",
            pki.path("ca.pem"),
            "--health-port",
            str(health),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": "."},
    )
    try:
        client = ssl.create_default_context(cafile=pki.path("ca.pem"))
        client.load_cert_chain(pki.path("client.pem"), pki.path("client-key.pem"))
        url = f"https://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", context=client, timeout=2) as r:
                    assert r.read() == b"ok"
                break
            except OSError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "extender did not start"
                time.sleep(0.05)
        req = urllib.request.Request(
            f"{url}/filter", data=golden("filter_args_nodelist.json"), method="POST"
        )
        with urllib.request.urlopen(req, context=client, timeout=5) as r:
            assert r.status == 200 and b'"FailedAndUnresolvableNodes":{"node-b"' in r.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2) as r:
            assert r.read() == b"ok"
        anonymous = ssl.create_default_context(cafile=pki.path("ca.pem"))
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{url}/healthz", context=anonymous, timeout=2).read()
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err


def test_missing_kubeconfig_is_one_line(
    cfg: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Logging set up onto pytest's captured stdout would outlive this test.
    monkeypatch.setattr("ksched.logging.configure", lambda *a, **k: None)
    rc = main(
        ["extender", "--config", cfg, "--port", "0", "--kubeconfig", str(tmp_path / "missing")]
    )
    assert rc == 1
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("ksched extender: ConfigException: "), err
    assert "Traceback" not in err and "ExceptionGroup" not in err


def test_simulate_cli_calls_a_ksched_extender(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ksched simulate`` (its own event loop) against ``ksched extender`` on a thread."""
    import json

    monkeypatch.setattr("ksched.logging.configure", lambda *a, **k: None)

    from .test_server import _ThreadServer

    srv = _ThreadServer()
    try:
        cfg = tmp_path / "sim.yaml"
        cfg.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: ksched
  plugins:
    multiPoint:
      disabled: [{{name: TaintToleration}}]
extenders:
- urlPrefix: {srv.url}
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 1
  httpTimeout: 2s
""")
        cluster = tmp_path / "cluster.yaml"
        cluster.write_text("""apiVersion: v1
kind: Node
metadata: {name: tainted}
spec:
  taints: [{key: dedicated, value: db, effect: NoSchedule}]
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: open}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  schedulerName: ksched
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]
""")
        assert (
            main(["simulate", "--config", str(cfg), "--cluster", str(cluster), "--output", "json"])
            == 0
        )
        [pod] = json.loads(capsys.readouterr().out)["pods"]
        assert (pod["status"], pod["node"]) == ("Scheduled", "open")
    finally:
        srv.close()
