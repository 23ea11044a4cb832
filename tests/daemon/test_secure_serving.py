"""The secure port: HTTPS, authentication (client certificate, TokenReview, anonymous) and
authorization (SubjectAccessReview) delegated to the API server as kube-scheduler's, here
against the test API server's token file and policy (system:masters may do everything,
anyone else nothing). tests/e2e/test_secure_serving_kube.py runs the same requests against
the real kube-apiserver and compares with a real kube-scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from ksched import logging as klog
from ksched.cli import build_parser, main
from ksched.cluster import APIClient
from ksched.config import default_config
from ksched.daemon import DEFAULT_BIND_ADDRESS, DEFAULT_PORT, SchedulerDaemon, SecureServing
from ksched.daemon.auth import DEFAULT_ALWAYS_ALLOW_PATHS, DEFAULT_SECURE_BIND_ADDRESS, User
from ksched.daemon.main import secure_serving
from ksched.testing import TestAPIServer, TokenUser

from ._certs import CA

ADMIN = TokenUser("admin-token", "admin", "admin-uid", ("system:masters",))
ALICE = TokenUser("alice-token", "alice", "alice-uid", ("developers",))

Answer = tuple[int, Any]  # status, decoded JSON or text


def client_ssl(cert: tuple[Path, Path] | None = None, cafile: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(cafile) if cafile else None)
    if cafile is None:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


async def fetch(
    url: str,
    *,
    token: str | None = None,
    cert: tuple[Path, Path] | None = None,
    method: str = "GET",
    cafile: Path | None = None,
) -> Answer:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as s,
        s.request(method, url, headers=headers, ssl=client_ssl(cert, cafile)) as r,
    ):
        text = await r.text()
        if r.content_type == "application/json":
            return r.status, json.loads(text)
        return r.status, text


@dataclass
class Secure:
    srv: TestAPIServer
    daemon: SchedulerDaemon
    ca: CA

    async def get(self, path: str, **kw: Any) -> Answer:
        return await fetch(self.daemon.secure_url + path, **kw)

    def reviews(self, kind: str) -> int:
        return len(self.srv.find_requests(verb="create", resource=kind))


@contextlib.asynccontextmanager
async def secure_daemon(
    tmp_path: Path, port: int | None = None, **opts: Any
) -> AsyncIterator[Secure]:
    ca = CA(tmp_path / "pki")
    async with TestAPIServer(tokens=[ADMIN, ALICE]) as srv:
        client = await APIClient.from_kubeconfig(srv.write_kubeconfig(tmp_path / "kubeconfig"))
        try:
            opts.setdefault("client_ca_file", str(ca.ca_file))
            ss = SecureServing(bind_address="127.0.0.1", port=0, **opts)
            cfg = default_config()
            async with SchedulerDaemon(cfg, client=client, port=port, secure_serving=ss) as d:
                await d.wait_ready(10)
                yield Secure(srv, d, ca)
        finally:
            await client.close()


def forbidden(user: str, path: str, verb: str = "get") -> dict[str, Any]:
    """kube-scheduler's 403 body, exactly."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'forbidden: User "{user}" cannot {verb} path "{path}"',
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }


UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


def test_who_may_read_what(tmp_path: Path) -> None:
    """The same cases as the kube comparison: status codes and bodies as kube-scheduler's."""

    async def main() -> None:
        async with secure_daemon(tmp_path) as s:
            masters = s.ca.issue("root-cert", ["system:masters"])
            bob = s.ca.issue("bob", ["developers"])
            status, body = await s.get("/metrics", token=ADMIN.token)
            assert status == 200 and "scheduler_pending_pods" in body
            assert await s.get("/metrics", token=ALICE.token) == (
                403,
                forbidden("alice", "/metrics"),
            )
            # no credentials: system:anonymous, whom the policy (like RBAC) denies
            assert await s.get("/metrics") == (403, forbidden("system:anonymous", "/metrics"))
            assert await s.get("/metrics", token="made-up") == (401, UNAUTHORIZED)
            # the always-allowed paths, exactly (their sub-paths are not)
            for path in ("/healthz", "/livez", "/readyz"):
                assert await s.get(path) == (200, "ok"), path
            status, body = await s.get("/readyz?verbose")
            assert status == 200 and "readyz check passed" in body
            assert await s.get("/healthz/ping") == (
                403,
                forbidden("system:anonymous", "/healthz/ping"),
            )
            # a bad token is refused even where anonymous may go: authentication comes first
            assert await s.get("/healthz", token="made-up") == (401, UNAUTHORIZED)
            status, body = await s.get("/configz", token=ADMIN.token)
            assert status == 200 and body["componentconfig"]["kind"] == "KubeSchedulerConfiguration"
            assert await s.get("/debug/queue", token=ALICE.token) == (
                403,
                forbidden("alice", "/debug/queue"),
            )
            # authorization comes before routing, as kube's
            assert await s.get("/nope") == (403, forbidden("system:anonymous", "/nope"))
            assert (await s.get("/nope", token=ADMIN.token))[0] == 404
            # the HTTP method in lower case is the verb
            assert await s.get("/metrics", token=ALICE.token, method="POST") == (
                403,
                forbidden("alice", "/metrics", "post"),
            )
            # client certificates: the CommonName is the user, Organizations the groups
            status, body = await s.get("/metrics", cert=masters)
            assert status == 200 and "scheduler_pending_pods" in body
            assert await s.get("/metrics", cert=bob) == (403, forbidden("bob", "/metrics"))
            assert (await s.get("/healthz", cert=bob)) == (200, "ok")
            # a certificate wins over a token, as kube's authenticator order
            assert await s.get("/metrics", cert=bob, token=ADMIN.token) == (
                403,
                forbidden("bob", "/metrics"),
            )

    anyio.run(main)


def test_reviews_are_cached_and_masters_skip_them(tmp_path: Path) -> None:
    async def main() -> None:
        async with secure_daemon(tmp_path) as s:
            s.srv.clear_requests()
            for _ in range(3):
                assert (await s.get("/metrics", token=ALICE.token))[0] == 403
                assert (await s.get("/metrics", token=ADMIN.token))[0] == 200
                assert (await s.get("/metrics"))[0] == 403
            # one TokenReview per token; one SubjectAccessReview each for alice and
            # system:anonymous; none for system:masters (kube's AlwaysAllowGroups)
            assert s.reviews("tokenreviews") == 2
            assert s.reviews("subjectaccessreviews") == 2
            sar = s.srv.find_requests(resource="subjectaccessreviews")[0].body
            assert sar["spec"] == {
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
                "user": "alice",
                "groups": ["developers", "system:authenticated"],
                "uid": "alice-uid",
            }

    anyio.run(main)


def test_without_caching_every_request_is_reviewed(tmp_path: Path) -> None:
    async def main() -> None:
        ttls = {"token_cache_ttl": 0, "authorized_ttl": 0, "unauthorized_ttl": 0}
        async with secure_daemon(tmp_path, **ttls) as s:
            s.srv.clear_requests()
            for _ in range(3):
                assert (await s.get("/metrics", token=ALICE.token))[0] == 403
            assert (s.reviews("tokenreviews"), s.reviews("subjectaccessreviews")) == (3, 3)

    anyio.run(main)


def test_concurrent_requests_share_one_review(tmp_path: Path) -> None:
    async def main() -> None:
        async with secure_daemon(tmp_path) as s:
            s.srv.clear_requests()
            s.srv.faults.add_latency(0.3, verb="create", resource="tokenreviews")
            answers: list[Answer] = []

            async def one() -> None:
                answers.append(await s.get("/metrics", token=ALICE.token))

            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(one)
            assert [a[0] for a in answers] == [403] * 5
            assert (s.reviews("tokenreviews"), s.reviews("subjectaccessreviews")) == (1, 1)

    anyio.run(main)


def test_a_failed_review_is_a_json_error_and_not_cached(tmp_path: Path) -> None:
    async def main() -> None:
        async with secure_daemon(tmp_path) as s:
            s.srv.faults.fail_next(1, verb="create", resource="subjectaccessreviews", code=500)
            status, body = await s.get("/metrics", token=ALICE.token)
            assert status == 500
            assert body["kind"] == "Status" and body["reason"] == "InternalError"
            assert "Traceback" not in json.dumps(body)
            assert (await s.get("/metrics", token=ALICE.token))[0] == 403  # asked again
            s.srv.faults.fail_next(1, verb="create", resource="tokenreviews", code=503)
            assert await s.get("/metrics", token="another") == (401, UNAUTHORIZED)

    anyio.run(main)


async def raw_get(url: str, authorization: bytes, path: bytes = b"/metrics") -> tuple[int, Any]:
    """GET over TLS with an Authorization header of any bytes (clients refuse to send
    what is not ASCII)."""
    host, port = url.removeprefix("https://").split("/")[0].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), ssl=client_ssl())
    writer.write(
        b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Authorization: " + authorization + b"\r\n\r\n"
    )
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


@pytest.mark.parametrize(
    "authorization",
    [b"Bearer \xff\xfe\x80", "Bearer t\u00f6k\u00e9n".encode(), b"Bearer \xc3("],
    ids=["not-utf8", "utf8-non-ascii", "truncated-utf8"],
)
def test_a_bearer_token_that_is_not_ascii_is_401(tmp_path: Path, authorization: bytes) -> None:
    """kube's tokens are ASCII (RFC 6750's b64token): 401 as for any token the API server
    does not know, without a TokenReview (a 500 UnicodeEncodeError before)."""

    async def main() -> None:
        async with secure_daemon(tmp_path) as s:
            before = s.reviews("tokenreviews")
            assert await raw_get(s.daemon.secure_url, authorization) == (401, UNAUTHORIZED)
            assert s.reviews("tokenreviews") == before
            assert (await s.get("/metrics", token=ADMIN.token))[0] == 200

    anyio.run(main)


def test_over_long_urls_get_a_json_400_and_one_log_line(tmp_path: Path) -> None:
    """200 unauthenticated requests with 10 kB URLs: each a JSON 400 that does not echo the
    URL (aiohttp's own answer quoted it as text/plain), and one log line, no traceback
    (aiohttp logged a traceback per request)."""
    import io

    buf = io.StringIO()
    took: list[float] = []

    async def main() -> None:
        async with secure_daemon(tmp_path) as s:
            klog.configure("json", 0, stream=buf)
            start = time.monotonic()
            for _ in range(200):
                status, body = await raw_get(s.daemon.secure_url, b"Bearer x", b"/" + b"z" * 10_000)
                assert (status, body) == (400, {"error": "request line or header too long"})
            took.append(time.monotonic() - start)
            assert (await s.get("/metrics", token=ADMIN.token))[0] == 200

    try:
        anyio.run(main)
    finally:
        klog.reset()
    out = buf.getvalue()
    assert "Traceback" not in out and "zzzz" not in out
    failures = [x for x in out.splitlines() if "LineTooLong" in x]
    # one line per 10 s (a loaded machine may take longer than that for 200 handshakes)
    assert 1 <= len(failures) <= 1 + int(took[0] // 10), out[-3000:]


def test_a_certificate_the_ca_did_not_sign_fails_the_handshake(tmp_path: Path) -> None:
    """kube-scheduler completes the handshake and answers 401; Python's TLS cannot ask for
    a certificate without verifying it, so the handshake fails: refused either way."""

    async def main() -> None:
        async with secure_daemon(tmp_path) as s:
            stranger = CA(tmp_path / "other", "other").issue("mallory", ["system:masters"])
            with pytest.raises(aiohttp.ClientError):
                await s.get("/metrics", cert=stranger)
            assert (await s.get("/healthz"))[0] == 200

    anyio.run(main)


def test_without_client_ca_certificates_are_not_asked_for(tmp_path: Path) -> None:
    async def main() -> None:
        async with secure_daemon(tmp_path, client_ca_file=None) as s:
            masters = s.ca.issue("root-cert", ["system:masters"])
            # the certificate is not requested, so the request is anonymous
            assert await s.get("/metrics", cert=masters) == (
                403,
                forbidden("system:anonymous", "/metrics"),
            )

    anyio.run(main)


def test_plain_port_beside_the_secure_one(tmp_path: Path) -> None:
    async def main() -> None:
        async with secure_daemon(tmp_path, port=0) as s:
            assert s.daemon.url.startswith("http://127.0.0.1:")
            assert s.daemon.secure_url.startswith("https://127.0.0.1:")
            async with aiohttp.ClientSession() as c, c.get(s.daemon.url + "/metrics") as r:
                assert r.status == 200  # no authentication on the plain port
            assert (await s.get("/metrics"))[0] == 403

    anyio.run(main)


def test_always_allow_paths_and_prefixes(tmp_path: Path) -> None:
    async def main() -> None:
        async with secure_daemon(tmp_path, always_allow_paths=("metrics", "/debug/*")) as s:
            assert (await s.get("/metrics"))[0] == 200
            assert (await s.get("/debug/queue"))[0] == 200
            assert (await s.get("/configz"))[0] == 403
            assert (await s.get("/debugger"))[0] == 403
            # not always allowed any more, /healthz is up to the API server, whose policy
            # (as RBAC's system:public-info-viewer) lets anyone read it
            assert (await s.get("/healthz"))[0] == 200
            assert s.reviews("subjectaccessreviews") == 3

    anyio.run(main)


def test_serving_certificate_from_files_and_self_signed(tmp_path: Path) -> None:
    async def main() -> None:
        ca = CA(tmp_path / "serving", "serving-ca")
        crt, key = ca.issue("ksched-serving", server=True)
        files = {"tls_cert_file": str(crt), "tls_private_key_file": str(key)}
        async with secure_daemon(tmp_path / "a", **files) as s:
            assert await fetch(s.daemon.secure_url + "/healthz", cafile=ca.ca_file) == (200, "ok")
        async with secure_daemon(tmp_path / "b") as s:
            # self-signed, for 127.0.0.1 and localhost: verifiable by itself
            host, port = "127.0.0.1", int(s.daemon.secure_url.rsplit(":", 1)[1])
            pem = await anyio.to_thread.run_sync(ssl.get_server_certificate, (host, port))
            (tmp_path / "self.pem").write_text(pem)
            for h in ("127.0.0.1", "localhost"):
                url = f"https://{h}:{port}/healthz"
                assert await fetch(url, cafile=tmp_path / "self.pem") == (200, "ok")

    anyio.run(main)


# ---- ksched run ---------------------------------------------------------------------------


def test_run_flags_mirror_kube_scheduler() -> None:
    args = build_parser().parse_args(["run"])
    assert (args.secure_port, args.bind_address) == (DEFAULT_PORT, DEFAULT_SECURE_BIND_ADDRESS)
    assert (args.port, args.address) == (None, DEFAULT_BIND_ADDRESS)
    assert secure_serving(args) == SecureServing()
    assert SecureServing().always_allow_paths == DEFAULT_ALWAYS_ALLOW_PATHS
    args = build_parser().parse_args(
        [
            "run",
            "--secure-port=1234",
            "--bind-address=::",
            "--tls-cert-file=c",
            "--tls-private-key-file=k",
            "--client-ca-file=ca",
            "--authorization-always-allow-paths=/healthz, /metrics,",
            "--authentication-token-webhook-cache-ttl=1m",
            "--authorization-webhook-cache-authorized-ttl=2s",
            "--authorization-webhook-cache-unauthorized-ttl=500ms",
        ]
    )
    assert secure_serving(args) == SecureServing(
        bind_address="::",
        port=1234,
        tls_cert_file="c",
        tls_private_key_file="k",
        client_ca_file="ca",
        always_allow_paths=("/healthz", "/metrics"),
        token_cache_ttl=60.0,
        authorized_ttl=2.0,
        unauthorized_ttl=0.5,
    )
    assert secure_serving(build_parser().parse_args(["run", "--secure-port=0"])) is None


def _run(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    args = ["run", "--no-leader-elect", "--master", "http://127.0.0.1:1", *flags]
    try:
        rc = main(args)
    finally:
        klog.reset()
    return rc, capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tls-cert-file=c.pem"], "--tls-cert-file and --tls-private-key-file must be given"),
        (["--secure-port=70000"], "--secure-port 70000 must be between 0 and 65535"),
        (["--authorization-always-allow-paths=/a*b"], "only a trailing * in '/a*b'"),
    ],
)
def test_bad_serving_flags_exit_2(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    rc, err = _run(capsys, *flags)
    assert rc == 2 and message in err, err


def test_unreadable_certificate_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.pem").write_text("not a certificate\n")
    missing = tmp_path / "missing.key"
    rc, err = _run(
        capsys,
        "--secure-port",
        str(_free_port()),
        "--bind-address=127.0.0.1",
        f"--tls-cert-file={tmp_path / 'bad.pem'}",
        f"--tls-private-key-file={missing}",
    )
    assert rc == 2
    assert err.startswith(
        f"ksched run: cannot load the serving certificate (--tls-cert-file {tmp_path / 'bad.pem'}, "
        f"--tls-private-key-file {missing}): "
    ), err
    assert "Traceback" not in err


def test_secure_port_in_use_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        rc, err = _run(capsys, "--bind-address=127.0.0.1", f"--secure-port={port}")
    assert rc == 2
    assert err.startswith(f"ksched run: cannot listen on 127.0.0.1:{port}: "), err
    assert "address already in use" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_user_groups_gain_system_authenticated_once() -> None:
    u = User("a", groups=("x", "system:authenticated")).with_authenticated_group()
    assert u.groups == ("x", "system:authenticated")
    assert User("a").with_authenticated_group().groups == ("system:authenticated",)


def test_ksched_run_process_serves_the_secure_port(tmp_path: Path) -> None:
    """``ksched run`` end to end against the test API server's token file: the flags, the
    self-signed certificate, the reviews through the kubeconfig's (first, admin) token."""
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request

    ca = CA(tmp_path / "pki")
    masters = ca.issue("root-cert", ["system:masters"])
    port = _free_port()
    with TestAPIServer(tokens=[ADMIN, ALICE]).run_in_thread() as srv:
        kc = srv.write_kubeconfig(tmp_path / "kubeconfig")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ksched",
                "run",
                f"--kubeconfig={kc}",
                "--no-leader-elect",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--client-ca-file={ca.ca_file}",
                "--log-format=json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            url = f"https://127.0.0.1:{port}"

            def get(path: str, token: str | None = None, cert: Any = None) -> int:
                req = urllib.request.Request(url + path)
                if token:
                    req.add_header("Authorization", f"Bearer {token}")
                try:
                    with urllib.request.urlopen(req, timeout=5, context=client_ssl(cert)) as r:
                        return int(r.status)
                except urllib.error.HTTPError as e:
                    return e.code

            deadline = time.monotonic() + 30
            while True:
                try:
                    if get("/readyz") == 200:
                        break
                except (urllib.error.URLError, OSError):
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, "not ready"
                time.sleep(0.1)
            assert get("/metrics", ADMIN.token) == 200
            assert get("/metrics", ALICE.token) == 403
            assert get("/metrics") == 403
            assert get("/metrics", "made-up") == 401
            assert get("/configz", cert=masters) == 200
            assert srv.count_requests(verb="create", resource="tokenreviews") == 3
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    started = [json.loads(line) for line in out.splitlines() if '"ksched started"' in line]
    assert started and started[0]["url"] == url
