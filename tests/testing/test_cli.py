"""`python -m ksched.testing apiserver`: the out-of-process entry point."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import yaml

from ._http import free_port


def test_cli_serves_writes_kubeconfig_and_exits_zero_on_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc" / "config"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ksched.testing",
            "apiserver",
            "--port",
            "0",
            "--kubeconfig-out",
            str(kubeconfig),
            "--history",
            "50",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["current-context"] == "ksched-testing"
        assert config["clusters"][0]["cluster"]["server"] == url
        with urllib.request.urlopen(url + "/version", timeout=5) as resp:
            assert json.load(resp)["gitVersion"] == "v1.31.0-ksched-testing"
        with urllib.request.urlopen(url + "/api/v1/namespaces", timeout=5) as resp:
            assert len(json.load(resp)["items"]) == 4
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_exits_zero_on_sigint_with_fixed_port(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ksched.testing", "apiserver", "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"http://127.0.0.1:{port}"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
