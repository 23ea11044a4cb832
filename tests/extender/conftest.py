"""Helpers for the extender tests: golden payloads, a scriptable fake extender (a tiny
aiohttp server playing a Go extender), certificates, and in-loop simulations."""

from __future__ import annotations

import datetime as dt
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import msgspec
import pytest
from aiohttp import web

from ksched.api.objects import Node, Pod, decode
from ksched.config import load_config_data
from ksched.framework.types import NodeInfo, PodInfo
from ksched.metrics import SchedulerMetrics
from ksched.plugins import default_registry
from ksched.sim.cluster_file import parse_cluster
from ksched.sim.simulator import PodResult, Simulation

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiohttp needs asyncio


def golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def golden_obj(name: str) -> Any:
    return msgspec.json.decode(golden(name))


def golden_pod() -> PodInfo:
    raw = golden_obj("pod.json")
    return PodInfo(decode(raw, Pod), raw)


def golden_node(name: str) -> tuple[Node, dict[str, Any]]:
    raw = golden_obj(f"{name}.json")
    return decode(raw, Node), raw


def node_info(node: Node) -> NodeInfo:
    ni = NodeInfo()
    ni.set_node(node)
    return ni


async def wait_ready(session: aiohttp.ClientSession, url: str, timeout: float = 15.0) -> None:
    """Poll a ``ksched extender``'s ``/readyz`` at ``url`` until 200 (informers synced)."""
    with anyio.fail_after(timeout):
        while True:
            async with session.get(f"{url}/readyz") as r:
                if r.status == 200:
                    return
            await anyio.sleep(0.02)


# ---- a fake extender -------------------------------------------------------------------------

Reply = tuple[int, bytes]
Handler = Callable[[bytes], Awaitable[Reply]]


@dataclass
class FakeExtender:
    """Records every request body by verb and answers with the verb's handler."""

    handlers: dict[str, Handler] = field(default_factory=dict)
    requests: list[tuple[str, bytes]] = field(default_factory=list)
    url: str = ""
    runner: web.AppRunner | None = None

    def on(self, verb: str, body: bytes | Any, status: int = 200, delay: float = 0.0) -> None:
        data = body if isinstance(body, bytes) else msgspec.json.encode(body)

        async def reply(_: bytes) -> Reply:
            if delay:
                import anyio

                await anyio.sleep(delay)
            return status, data

        self.handlers[verb] = reply

    def bodies(self, verb: str) -> list[bytes]:
        return [b for v, b in self.requests if v == verb]

    def decoded(self, verb: str) -> list[Any]:
        return [msgspec.json.decode(b) for b in self.bodies(verb)]

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> str:
        async def handle(request: web.Request) -> web.Response:
            verb = request.match_info["verb"]
            body = await request.read()
            self.requests.append((verb, body))
            h = self.handlers.get(verb)
            if h is None:
                return web.Response(status=404)
            status, data = await h(body)
            return web.Response(status=status, body=data, content_type="application/json")

        app = web.Application()
        app.router.add_post("/ext/{verb}", handle)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        port = self.runner.addresses[0][1]
        scheme = "https" if ssl_context else "http"
        self.url = f"{scheme}://127.0.0.1:{port}/ext"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


@pytest.fixture
async def fake() -> AsyncIterator[FakeExtender]:
    f = FakeExtender()
    await f.start()
    yield f
    await f.stop()


# ---- simulations -----------------------------------------------------------------------------


def config(extenders: list[dict[str, Any]], **top: Any) -> Any:
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": extenders,
        **top,
    }
    reg = default_registry()
    cfg, _ = load_config_data(data, "<test>", set(reg.names()))
    return cfg


def cluster_yaml(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> str:
    return msgspec.json.encode({"kind": "List", "items": [*nodes, *pods]}).decode()


def node_manifest(name: str, cpu: str = "4", **alloc: str) -> dict[str, Any]:
    a = {"cpu": cpu, "memory": "16Gi", "pods": "110", **alloc}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": a, "capacity": a},
    }


def pod_manifest(
    name: str, cpu: str = "100m", scheduler: str = "ksched", **requests: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu, **requests}}}
            ],
        },
    }


async def simulate(
    cfg: Any,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    explain: bool = False,
    max_attempts: int = 3,
    metrics: SchedulerMetrics | None = None,
) -> tuple[dict[str, PodResult], Simulation]:
    """A simulation in the test's event loop, so fake extenders in the same loop answer."""
    cluster = parse_cluster(cluster_yaml(nodes, pods), "<test>")
    sim = Simulation(
        cluster,
        cfg,
        default_registry(),
        seed=0,
        explain=explain,
        max_attempts_per_pod=max_attempts,
        metrics=metrics,
    )
    results = await sim.run()
    return {r.name: r for r in results}, sim


# ---- certificates ----------------------------------------------------------------------------


@dataclass
class PKI:
    ca: bytes
    server_cert: bytes
    server_key: bytes
    client_cert: bytes
    client_key: bytes
    dir: Path

    def path(self, name: str) -> str:
        return str(self.dir / name)


def make_pki(tmp: Path) -> PKI:
    """A CA, a server certificate for 127.0.0.1 / extender.test and a client certificate,
    made with ``cryptography`` when installed, else the ``openssl`` CLI."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip("neither the cryptography package nor openssl is available")
        return _openssl_pki(tmp)
    return _cryptography_pki(tmp)


def _pki_from_files(tmp: Path) -> PKI:
    def r(n: str) -> bytes:
        return (tmp / n).read_bytes()

    return PKI(
        r("ca.pem"), r("server.pem"), r("server-key.pem"), r("client.pem"), r("client-key.pem"), tmp
    )


def _openssl_pki(tmp: Path) -> PKI:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True)

    (tmp / "server.ext").write_text(
        "subjectAltName=DNS:extender.test,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
    )
    (tmp / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    run(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=ksched-test-ca",
    )
    for who in ("server", "client"):
        run(
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            f"{who}-key.pem",
            "-out",
            f"{who}.csr",
            "-subj",
            f"/CN={who}",
        )
        run(
            "x509",
            "-req",
            "-in",
            f"{who}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-out",
            f"{who}.pem",
            "-days",
            "1",
            "-extfile",
            f"{who}.ext",
        )
    return _pki_from_files(tmp)


def _cryptography_pki(tmp: Path) -> PKI:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def pem_key(k: ec.EllipticCurvePrivateKey) -> bytes:
        return k.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    ca_key = key()
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("ksched-test-ca"))
        .issuer_name(name("ksched-test-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(cn: str, usage: Any, sans: list[x509.GeneralName]) -> tuple[bytes, bytes]:
        k = key()
        b = (
            x509.CertificateBuilder()
            .subject_name(name(cn))
            .issuer_name(ca.subject)
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
        )
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), pem_key(k)

    import ipaddress

    server_cert, server_key = leaf(
        "extender",
        ExtendedKeyUsageOID.SERVER_AUTH,
        [x509.DNSName("extender.test"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client_cert, client_key = leaf("kube-scheduler", ExtendedKeyUsageOID.CLIENT_AUTH, [])
    pki = PKI(
        ca.public_bytes(serialization.Encoding.PEM),
        server_cert,
        server_key,
        client_cert,
        client_key,
        tmp,
    )
    for fname, data in (
        ("ca.pem", pki.ca),
        ("server.pem", server_cert),
        ("server-key.pem", server_key),
        ("client.pem", client_cert),
        ("client-key.pem", client_key),
    ):
        (tmp / fname).write_bytes(data)
    return pki
