"""The secure port against the real kube-apiserver, beside a real kube-scheduler's.

Both serve the same requests — bearer tokens of three identities, none, a made-up one, one
that is not UTF-8, client certificates signed by the ``--client-ca-file`` CA (one of a
user RBAC lets get ``/metrics``), the always-allowed health paths — and must answer with
the same status codes, and for 401/403 the same ``Status`` bodies. ksched's daemon runs as
``system:kube-scheduler`` with the stock role (which may create the TokenReviews and
SubjectAccessReviews); kube-scheduler with the same kubeconfig for its delegated
authentication and authorization.

Known differences, checked as such: a certificate the CA did not sign gets 401 from
kube-scheduler and a failed TLS handshake from ksched (Python's TLS cannot request a
certificate without verifying it); ``/configz`` shows an extender's ``tlsConfig.keyData``
in full in kube-scheduler and ``REDACTED`` in ksched.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ksched.daemon import SecureServing

from ..daemon._certs import CA
from .conftest import E2E

pytestmark = [pytest.mark.e2e, pytest.mark.kube]

Answer = tuple[int, Any]


def fetch(
    url: str,
    *,
    token: str | None = None,
    cert: tuple[Path, Path] | None = None,
    method: str = "GET",
) -> Answer:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=15, context=ctx) as r:
            status, ctype, raw = r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        status, ctype, raw = e.code, e.headers.get("Content-Type", ""), e.read()
    if ctype.startswith("application/json"):
        return status, json.loads(raw)
    return status, raw.decode(errors="replace")


def extender(ca: CA) -> dict[str, Any]:
    """An extender neither scheduler will call (no pod asks for it): for ``/configz``."""
    crt, key = ca.issue("extender-client")

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    return {
        "urlPrefix": "https://127.0.0.1:1/",
        "filterVerb": "filter",
        "enableHTTPS": True,
        "ignorable": True,
        "tlsConfig": {"certData": b64(crt), "keyData": b64(key), "caData": b64(ca.ca_file)},
    }


@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_secure_port_answers_as_kube_schedulers(e2e: E2E, tmp_path: Path) -> None:
    cp = e2e.controlplane
    assert cp is not None
    ca = CA(tmp_path / "pki")
    reader = f"e2e-{e2e.run_id}-metrics-reader"
    # a user RBAC lets get /metrics (and nothing else), known by its client certificate
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": reader},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": reader},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": reader},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": reader}],
    }
    base = "/apis/rbac.authorization.k8s.io/v1"
    e2e.kube.ok("POST", f"{base}/clusterroles", role)
    e2e.cluster_objects.append(f"{base}/clusterroles/{reader}")
    e2e.kube.ok("POST", f"{base}/clusterrolebindings", binding)
    e2e.cluster_objects.append(f"{base}/clusterrolebindings/{reader}")
    certs = {
        "reader": ca.issue(reader),
        "alice": ca.issue("alice", ["developers"]),
        "masters": ca.issue("root-cert", ["system:masters"]),
    }
    stranger = CA(tmp_path / "other", "other").issue("mallory", ["system:masters"])
    ext = extender(ca)

    tokens = {
        "admin": cp.admin.token,
        "scheduler": cp.scheduler_identity.token,
        "controller-manager": cp.controller_manager_identity.token,
        "made-up": "not-a-token",
        # sent as latin-1: bytes that are not UTF-8 (ksched answered 500 UnicodeEncodeError)
        "not-ascii": "t\u00f6k\u00e9n",
        "none": None,
    }
    cases: list[tuple[str, str, dict[str, Any]]] = []
    for who, token in tokens.items():
        for path in (
            "/metrics",
            "/configz",
            "/flagz",
            "/statusz",
            "/healthz",
            "/readyz",
            "/livez",
            "/healthz/ping",
        ):
            cases.append((f"{who} GET {path}", path, {"token": token}))
    for who, cert in certs.items():
        for path in ("/metrics", "/configz", "/healthz"):
            cases.append((f"cert {who} GET {path}", path, {"cert": cert}))
    cases += [
        ("scheduler POST /metrics", "/metrics", {"token": tokens["scheduler"], "method": "POST"}),
        ("none GET /nope", "/nope", {}),
        ("none GET /debug/queue", "/debug/queue", {}),
        ("cert alice + admin token", "/metrics", {"cert": certs["alice"], "token": cp.admin.token}),
    ]

    def answers(base_url: str) -> dict[str, Answer]:
        return {name: fetch(base_url + path, **kw) for name, path, kw in cases}

    kube_name = f"kube-{e2e.run_id}"
    kube_cfg = e2e.config(profiles=[{"schedulerName": kube_name}], extenders=[ext])
    with cp.kube_scheduler(
        kube_cfg, name=f"kube-scheduler-{e2e.run_id}", args=[f"--client-ca-file={ca.ca_file}"]
    ) as ks:
        theirs = answers(ks.url)
        kube_stranger = fetch(ks.url + "/metrics", cert=stranger)
    secure = SecureServing(bind_address="127.0.0.1", port=0, client_ca_file=str(ca.ca_file))
    with e2e.daemon(e2e.config(extenders=[ext]), secure_serving=secure) as d:
        ours = answers(d.daemon.secure_url)
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            fetch(d.daemon.secure_url + "/metrics", cert=stranger)

    def code(a: Answer) -> int:
        return a[0]

    table = "\n".join(f"{n:40} kube {code(theirs[n])}  ksched {code(ours[n])}" for n, *_ in cases)
    print(table)  # pytest -s
    assert {n: code(a) for n, a in ours.items()} == {n: code(a) for n, a in theirs.items()}, table
    for name, (status, body) in theirs.items():
        if status in (401, 403):
            assert ours[name][1] == body, name  # kube's Status, word for word
    # what the table must show (kube's RBAC decides, not a list kept here)
    assert code(theirs["admin GET /metrics"]) == 200
    assert code(theirs["cert reader GET /metrics"]) == 200
    assert code(theirs["cert reader GET /configz"]) == 403
    assert code(theirs["cert masters GET /metrics"]) == 200
    assert code(theirs["none GET /metrics"]) == 403  # anonymous, denied by RBAC
    assert code(theirs["made-up GET /metrics"]) == 401
    assert code(theirs["made-up GET /healthz"]) == 401
    assert code(theirs["none GET /healthz"]) == 200
    assert code(theirs["scheduler GET /metrics"]) == 403  # system:kube-scheduler may not
    assert code(kube_stranger) == 401  # ksched: the handshake fails instead (above)

    # /configz: kube-scheduler prints the extender's private key; ksched does not
    kube_tls = theirs["admin GET /configz"][1]["componentconfig"]["extenders"][0]["tlsConfig"]
    our_tls = ours["admin GET /configz"][1]["componentconfig"]["extenders"][0]["tlsConfig"]
    assert kube_tls["keyData"] == ext["tlsConfig"]["keyData"]
    assert our_tls["keyData"] == "REDACTED"
    assert our_tls["certData"] == kube_tls["certData"] == ext["tlsConfig"]["certData"]
