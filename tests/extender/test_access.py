"""Who may call the extender: loopback by default and open there; beyond loopback every
verb needs client-certificate authentication (403 without it configured, unless
``--insecure-allow-unauthenticated``, which is logged), and only /healthz, /readyz and
/metrics answer anyone; with ``--client-ca-file`` every request needs a certificate that
CA signed (401 JSON without one, a failed handshake with a foreign one). Never a
traceback."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from ksched.cli import build_parser
from ksched.config import load_config_data
from ksched.extender.server import (
    PROTECTED_PATHS,
    Access,
    ExtenderServer,
    access_for,
    is_loopback,
    server_ssl_context,
    start,
)
from ksched.plugins import default_registry

from .conftest import PKI, golden, make_pki

ROOT = Path(__file__).resolve().parents[2]
BIND = {"PodName": "victim", "PodNamespace": "kube-system", "Node": "attacker-node"}
PREEMPT = {"Pod": json.loads(golden("pod.json")), "NodeNameToMetaVictims": {}}
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _server() -> ExtenderServer:
    reg = default_registry()
    cfg = load_config_data(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"},
        "<test>",
        set(reg.names()),
    )[0]
    return ExtenderServer(cfg, reg)


def test_loopback_and_access_rules() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "", None, "10.0.0.1", "ksched-extender.kube-system.svc"):
        assert not is_loopback(host), host
    assert access_for("127.0.0.1", client_certs=False) == Access(open_verbs=True)
    assert access_for("0.0.0.0", client_certs=False) == Access(open_verbs=False)
    assert access_for("0.0.0.0", client_certs=False, insecure=True) == Access(open_verbs=True)
    assert access_for("127.0.0.1", client_certs=True) == Access(True, open_verbs=False)
    assert {"/filter", "/prioritize", "/bind", "/preempt"} == PROTECTED_PATHS
    # the default is loopback
    args = build_parser().parse_args(["extender", "--config", "c.yaml"])
    assert args.bind_address == "127.0.0.1" and not args.insecure_allow_unauthenticated
    # the flag's earlier name still works
    old = ["extender", "--config", "c.yaml", "--insecure-allow-unauthenticated-bind"]
    assert build_parser().parse_args(old).insecure_allow_unauthenticated


@asynccontextmanager
async def _serving(
    access: Access | None = None, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, ExtenderServer]]:
    server = _server()
    runner, port = await start(server, ssl_context=ssl_context, access=access)
    try:
        yield f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}", server
    finally:
        await runner.cleanup()


async def _post(
    session: aiohttp.ClientSession, url: str, body: Any, ssl_context: Any = None
) -> tuple[int, Any]:
    async with session.post(url, data=json.dumps(body), ssl=ssl_context) as r:
        assert r.content_type == "application/json", await r.text()
        return r.status, await r.json()


def _count(server: ExtenderServer, verb: str, code: str) -> float:
    v = server.metrics.get_sample_value(
        "ksched_extender_server_requests_total", {"verb": verb, "code": code}
    )
    return v or 0.0


@pytest.mark.anyio
async def test_loopback_default_is_open() -> None:
    async with _serving() as (url, _), aiohttp.ClientSession() as s:
        status, out = await _post(s, f"{url}/bind", BIND)
        assert status == 200 and "no API server to bind through" in out["Error"]
        assert (await _post(s, f"{url}/preempt", PREEMPT))[0] == 200


@pytest.mark.anyio
async def test_beyond_loopback_without_client_certificates_every_verb_gets_403() -> None:
    """The rules of a non-loopback address (``access_for("0.0.0.0", ...)``), served on
    127.0.0.1 so the test can reach it; the CLI test below binds 0.0.0.0 for real.
    /filter and /prioritize were open to anyone (a 60 MiB NodeList from a stranger)."""
    nodelist = json.loads(golden("filter_args_nodelist.json"))
    verbs = (("filter", nodelist), ("prioritize", nodelist), ("bind", BIND), ("preempt", PREEMPT))
    async with (
        _serving(access_for("0.0.0.0", client_certs=False)) as (url, server),
        aiohttp.ClientSession() as s,
    ):
        for verb, body in verbs:
            status, out = await _post(s, f"{url}/{verb}", body)
            assert status == 403, out
            assert out == {
                "Error": f"Forbidden: /{verb} needs client-certificate authentication: this "
                "extender listens beyond loopback without --client-ca-file"
            }
            assert _count(server, verb, "403") == 1
        # the probes and the metrics still answer
        for path in ("/healthz", "/readyz", "/metrics"):
            async with s.get(f"{url}{path}") as r:
                assert r.status == 200, path
    async with (
        _serving(access_for("0.0.0.0", client_certs=False, insecure=True)) as (url, _),
        aiohttp.ClientSession() as s,
    ):
        for verb, body in verbs:
            assert (await _post(s, f"{url}/{verb}", body))[0] == 200, verb


def _client_ctx(pki: PKI, with_cert: PKI | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=pki.path("ca.pem"))
    if with_cert is not None:
        ctx.load_cert_chain(with_cert.path("client.pem"), with_cert.path("client-key.pem"))
    return ctx


@pytest.mark.anyio
async def test_client_certificates_are_required_and_verified(tmp_path: Path) -> None:
    (tmp_path / "ca").mkdir()
    (tmp_path / "foreign").mkdir()
    pki, foreign = make_pki(tmp_path / "ca"), make_pki(tmp_path / "foreign")
    ctx = server_ssl_context(pki.path("server.pem"), pki.path("server-key.pem"), pki.path("ca.pem"))
    async with _serving(ssl_context=ctx) as (url, server), aiohttp.ClientSession() as s:
        anonymous, trusted = _client_ctx(pki, None), _client_ctx(pki, pki)
        # no certificate: 401 with a JSON body, for every path of the port
        for verb, body in (("bind", BIND), ("preempt", PREEMPT), ("filter", {})):
            status, out = await _post(s, f"{url}/{verb}", body, anonymous)
            assert status == 401, out
            assert out["Error"].startswith("Unauthorized: a client certificate signed by")
        assert _count(server, "bind", "401") == 1
        async with s.get(f"{url}/healthz", ssl=anonymous) as r:
            assert r.status == 401
        # signed by the CA: served (no API server behind this one, says the Binding result)
        status, out = await _post(s, f"{url}/bind", BIND, trusted)
        assert status == 200 and "no API server" in out["Error"]
        assert (await _post(s, f"{url}/preempt", PREEMPT, trusted))[0] == 200
        # signed by another CA: the handshake fails (TLS 1.3: maybe seen only as the
        # connection closing without a response)
        with pytest.raises(aiohttp.ClientError):
            await _post(s, f"{url}/bind", BIND, _client_ctx(pki, foreign))


# ---- the command line ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _extender(tmp_path: Path, *flags: str) -> Iterator[tuple[int, list[str]]]:
    """``ksched extender --bind-address 0.0.0.0 FLAGS``; its port, and its log lines once it
    has stopped (the list fills after the block)."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    port, health = _free_port(), _free_port()
    argv = [sys.executable, "-m", "ksched", "extender", "--config", str(cfg)]
    argv += ["--bind-address", "0.0.0.0", "--port", str(port), "--health-port", str(health)]
    proc = subprocess.Popen(
        [*argv, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2):
                    break
            except OSError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the extender did not start"
                time.sleep(0.05)
        yield port, lines
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
        lines += out.splitlines()
    assert proc.returncode == 0, err
    assert "Traceback" not in out + err


def _curl(port: int, verb: str, body: Any) -> tuple[int, Any]:
    """What ``curl -XPOST :PORT/VERB -d BODY`` gets."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/{verb}", data=json.dumps(body).encode(), method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _warnings(lines: list[str]) -> list[str]:
    return [x["msg"] for x in map(json.loads, lines) if x.get("level") == "warning"]


def test_cli_on_all_interfaces_refuses_every_verb_and_says_so(tmp_path: Path) -> None:
    with _extender(tmp_path) as (port, lines):
        status, out = _curl(port, "bind", BIND)
        assert status == 403 and out["Error"].startswith("Forbidden: /bind needs"), out
        assert _curl(port, "preempt", PREEMPT)[0] == 403
        nodelist = json.loads(golden("filter_args_nodelist.json"))
        assert _curl(port, "filter", nodelist)[0] == 403
        assert _curl(port, "prioritize", nodelist)[0] == 403
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            assert r.status == 200
    (warning,) = _warnings(lines)
    assert warning.startswith("/filter, /prioritize, /preempt and /bind are refused (403)"), lines


@pytest.mark.parametrize(
    "flag", ["--insecure-allow-unauthenticated", "--insecure-allow-unauthenticated-bind"]
)
def test_cli_insecure_flag_opens_every_verb_and_warns_once(tmp_path: Path, flag: str) -> None:
    with _extender(tmp_path, flag) as (port, lines):
        status, out = _curl(port, "bind", BIND)
        assert status == 200 and "no API server" in out["Error"], out
        assert _curl(port, "filter", json.loads(golden("filter_args_nodelist.json")))[0] == 200
    (warning,) = _warnings(lines)
    assert warning.startswith(
        "INSECURE: /filter, /prioritize, /preempt and /bind answer unauthenticated requests"
    )
