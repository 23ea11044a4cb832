"""APIClient: kubeconfig/exec/token-file auth, --master, the qps/burst limiter, errors."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import yaml
from aiohttp import web

from ksched.api.objects import Pod, decode_json
from ksched.cluster import APIClient, APIConnectionError, APIError, RateLimiter
from ksched.testing import TestAPIServer, make_pod
from ksched.util.clock import FakeClock

from .conftest import eventually

pytestmark = pytest.mark.anyio


# -- an HTTP server that records Authorization headers (the test API server does not) --------


class HeaderServer:
    def __init__(self) -> None:
        self.auth: list[str | None] = []
        self.unauthorized_first = 0
        self.runner: web.AppRunner | None = None
        self.url = ""
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.auth.append(request.headers.get("Authorization"))
        if self.unauthorized_first > 0:
            self.unauthorized_first -= 1
            body = {"kind": "Status", "code": 401, "reason": "Unauthorized", "message": "no"}
            return web.json_response(body, status=401)
        return web.json_response({"major": "1", "minor": "31"})

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> HeaderServer:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        self.port = int(self.runner.addresses[0][1])
        scheme = "https" if ssl_context else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        return self

    async def __aenter__(self) -> HeaderServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


@pytest.fixture
async def header_server() -> AsyncIterator[HeaderServer]:
    async with HeaderServer() as srv:
        yield srv


def write_kubeconfig(path: Path, server: str, user: dict[str, Any]) -> Path:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


# -- kubeconfig & transport ------------------------------------------------------------------


async def test_kubeconfig_fixture_get_list_create(
    apiserver: TestAPIServer, apiserver_kubeconfig: Path
) -> None:
    async with await APIClient.from_kubeconfig(apiserver_kubeconfig) as c:
        assert c.host == apiserver.url
        version = await c.get_json("/version")
        assert version["major"] == "1"
        status, raw = await c.request(
            "POST", "/api/v1/namespaces/default/pods", body=make_pod("web")
        )
        assert status == 201
        created = decode_json(raw, Pod)
        assert created.metadata.uid
        items, rv = await c.list("/api/v1/namespaces/default/pods")
        assert [decode_json(i, Pod).metadata.name for i in items] == ["web"]
        assert int(rv) >= int(created.metadata.resource_version)


async def test_api_error_carries_status_fields(client: APIClient) -> None:
    with pytest.raises(APIError) as err:
        await client.get("/api/v1/namespaces/default/pods/missing")
    assert err.value.status == 404
    assert err.value.reason == "NotFound"
    assert err.value.message == 'pods "missing" not found'
    status, raw = await client.request(
        "GET", "/api/v1/namespaces/default/pods/missing", check=False
    )
    assert status == 404 and b"NotFound" in raw


async def test_connection_refused_is_api_connection_error() -> None:
    async with await APIClient.for_master("http://127.0.0.1:1", qps=0) as c:
        with pytest.raises(APIConnectionError) as err:
            await c.get("/version")
    assert err.value.status == 0


async def test_list_pages_with_continue(apiserver: TestAPIServer, client: APIClient) -> None:
    for i in range(5):
        apiserver.create(make_pod(f"p{i}"))
    items, rv = await client.list("/api/v1/pods", page_size=2)
    assert len(items) == 5 and rv
    lists = apiserver.find_requests(verb="list", resource="pods")
    assert len(lists) == 3
    assert [r.query.get("limit") for r in lists] == ["2", "2", "2"]
    assert "continue" in lists[1].query


async def test_list_converts_each_page_as_it_arrives(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """The informers' list decodes a page before fetching the next, so a big cluster's
    list bodies are never all in memory at once."""
    for i in range(5):
        apiserver.create(make_pod(f"p{i}"))
    fetched: list[int] = []

    def convert(raw: msgspec.Raw) -> str:
        fetched.append(apiserver.count_requests(verb="list", resource="pods"))
        return str(msgspec.json.decode(raw)["metadata"]["name"])

    names, _ = await client.list_as("/api/v1/pods", convert, page_size=2)
    assert sorted(names) == [f"p{i}" for i in range(5)]
    assert fetched == [1, 1, 2, 2, 3]


async def test_retry_after_is_honoured(apiserver: TestAPIServer, client: APIClient) -> None:
    apiserver.faults.fail_next(1, verb="get", resource="nodes", code=429, retry_after=0)
    apiserver.faults.fail_next(1, verb="list", resource="nodes", code=500)  # no Retry-After
    with pytest.raises(APIError):
        await client.get("/api/v1/nodes/n1")  # 429 retried, then a real 404
    assert apiserver.count_requests(verb="get", resource="nodes") == 2
    with pytest.raises(APIError) as err:
        await client.get("/api/v1/nodes")
    assert err.value.status == 500
    assert apiserver.count_requests(verb="list", resource="nodes") == 1


async def test_master_overrides_kubeconfig_server(apiserver: TestAPIServer, tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:1", {})
    async with await APIClient.from_kubeconfig(kc, master=apiserver.url + "/") as c:
        assert c.host == apiserver.url
        assert (await c.get_json("/version"))["major"] == "1"


async def test_auto_prefers_flag_then_env(apiserver: TestAPIServer, tmp_path: Path) -> None:
    good = apiserver.write_kubeconfig(tmp_path / "good")
    bad = write_kubeconfig(tmp_path / "bad", "http://127.0.0.1:1", {})
    async with await APIClient.auto(good, environ={"KUBECONFIG": str(bad)}) as c:
        assert c.host == apiserver.url
    async with await APIClient.auto(None, environ={"KUBECONFIG": str(good)}) as c:
        assert c.host == apiserver.url
    async with await APIClient.auto(None, apiserver.url, environ={"KUBECONFIG": str(bad)}) as c:
        assert c.host == apiserver.url


# -- credentials -----------------------------------------------------------------------------


async def test_token_file_auth_and_rotation(header_server: HeaderServer, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n")
    # relative to the kubeconfig's directory, as kubectl resolves it
    kc = write_kubeconfig(tmp_path / "kc", header_server.url, {"tokenFile": "token"})
    clock = FakeClock()
    async with await APIClient.from_kubeconfig(kc, qps=0, clock=clock) as c:
        await c.get("/version")
        token.write_text("second-token")
        await c.get("/version")  # cached for a minute, like client-go
        clock.advance(61)
        await c.get("/version")
    assert header_server.auth == [
        "Bearer first-token",
        "Bearer first-token",
        "Bearer second-token",
    ]


EXEC_PLUGIN = """
import json, pathlib, sys
counter = pathlib.Path(sys.argv[1])
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1",
    "kind": "ExecCredential",
    "status": {"token": f"exec-token-{n}", "expirationTimestamp": "2999-01-01T00:00:00Z"},
}))
"""


async def test_exec_plugin_auth_and_refresh_on_401(
    header_server: HeaderServer, tmp_path: Path
) -> None:
    script = tmp_path / "plugin.py"
    script.write_text(EXEC_PLUGIN)
    counter = tmp_path / "count"
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script), str(counter)],
            "interactiveMode": "Never",
        }
    }
    kc = write_kubeconfig(tmp_path / "kc", header_server.url, user)
    async with await APIClient.from_kubeconfig(kc, qps=0) as c:
        await c.get("/version")
        await c.get("/version")  # still valid: the plugin is not run again
        header_server.unauthorized_first = 1
        with pytest.raises(APIError) as err:
            await c.get("/version")
        assert err.value.status == 401
        await c.get("/version")  # the 401 made the next request run the plugin again
    assert header_server.auth == [
        "Bearer exec-token-1",
        "Bearer exec-token-1",
        "Bearer exec-token-1",
        "Bearer exec-token-2",
    ]
    assert counter.read_text() == "2"


# -- rate limiting ---------------------------------------------------------------------------


async def test_rate_limiter_burst_then_qps() -> None:
    clock = FakeClock()
    lim = RateLimiter(qps=2, burst=3, clock=clock)
    assert [lim.try_acquire() for _ in range(4)] == [True, True, True, False]
    done: list[int] = []

    async def take(i: int) -> None:
        await lim.acquire()
        done.append(i)

    async with anyio.create_task_group() as tg:
        tg.start_soon(take, 1)
        tg.start_soon(take, 2)
        await eventually(lambda: clock.sleeping == 2)
        assert done == []
        clock.advance(0.5)  # one token per 0.5 s at 2 qps
        await eventually(lambda: done == [1])
        clock.advance(0.5)
        await eventually(lambda: done == [1, 2])


async def test_client_requests_are_limited_and_watch_counts_once(
    apiserver: TestAPIServer, apiserver_kubeconfig: Path
) -> None:
    clock = FakeClock()
    async with await APIClient.from_kubeconfig(
        apiserver_kubeconfig, qps=1, burst=2, clock=clock
    ) as c:
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(c.get, "/api/v1/nodes")
            await eventually(lambda: apiserver.count_requests(verb="list") == 2)
            await eventually(lambda: clock.sleeping == 1)
            await anyio.sleep(0.05)
            assert apiserver.count_requests(verb="list") == 2  # the third waits for a token
            clock.advance(1.0)
        assert apiserver.count_requests(verb="list") == 3

        clock.advance(10)  # refill the bucket (burst 2)
        seen: list[str] = []

        async def watch() -> None:
            async for _type, raw in c.watch("/api/v1/pods", "", timeout_seconds=30):
                seen.append(msgspec.json.decode(raw)["metadata"]["name"])
                if len(seen) == 3:
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await eventually(lambda: apiserver.watcher_count("pods") == 1)
            for i in range(3):
                apiserver.create(make_pod(f"w{i}"))
        assert seen == ["w0", "w1", "w2"]
        assert c.limiter.tokens == pytest.approx(1.0)  # one token for the whole watch


async def test_watch_yields_error_events(apiserver: TestAPIServer, client: APIClient) -> None:
    apiserver.create(make_pod("a"))
    apiserver.compact("pods")
    events = [e async for e in client.watch("/api/v1/pods", "1", timeout_seconds=5)]
    assert len(events) == 1
    type_, raw = events[0]
    assert type_ == "ERROR"
    assert json.loads(bytes(raw))["code"] == 410


def self_signed_cert(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (what a cluster CA would sign for the service IP)."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "ca.crt", tmp_path / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_in_cluster_service_account_over_tls(tmp_path: Path) -> None:
    cert, key = self_signed_cert(tmp_path)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    token = tmp_path / "token"
    token.write_text("sa-token")
    srv = HeaderServer()
    await srv.start(ctx)
    try:
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(srv.port)}
        loader = {"token_filename": str(token), "cert_filename": str(cert), "environ": env}
        async with await APIClient.auto(None, environ=env, loader_kwargs=loader) as c:
            assert c.host == srv.url
            assert (await c.get_json("/version"))["major"] == "1"
    finally:
        await srv.__aexit__()
    assert srv.auth == ["Bearer sa-token"]
