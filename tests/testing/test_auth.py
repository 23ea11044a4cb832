"""The test API server's ``--token-auth-file`` (kube-apiserver's CSV), its policy
(system:masters may do everything, anyone else nothing but health and version), and its
TokenReview and SubjectAccessReview answers, compared in shape with kube-apiserver's."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.testing import TestAPIServer
from ksched.testing._auth import parse_tokens

TOKENS = """\
admin-token,admin,admin-uid,"system:masters,ops"

alice-token, alice, alice-uid
bob-token,bob,bob-uid,"dev"
"""


def call(
    url: str, method: str = "GET", body: Any = None, token: str | None = None
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode()


@pytest.fixture
def server(tmp_path: Path) -> Any:
    (tmp_path / "tokens.csv").write_text(TOKENS)
    with TestAPIServer(token_auth_file=tmp_path / "tokens.csv").run_in_thread() as srv:
        yield srv


def test_token_file_format() -> None:
    users = parse_tokens(TOKENS)
    assert [(u.token, u.name, u.uid, u.groups) for u in users] == [
        ("admin-token", "admin", "admin-uid", ("system:masters", "ops")),
        ("alice-token", "alice", "alice-uid", ()),
        ("bob-token", "bob", "bob-uid", ("dev",)),
    ]
    with pytest.raises(ValueError, match="record 1 must have at least 3 columns"):
        parse_tokens("t,user\n")


def test_policy_masters_everything_others_nothing(server: TestAPIServer) -> None:
    url = server.url
    assert call(url + "/api/v1/namespaces", token="admin-token")[0] == 200
    status, body = call(url + "/api/v1/namespaces/default/pods", token="alice-token")
    assert status == 403
    assert body["message"] == (
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the '
        'namespace "default"'
    )
    status, body = call(url + "/api/v1/namespaces")
    assert status == 403
    assert body["message"].startswith('namespaces is forbidden: User "system:anonymous"')
    status, body = call(url + "/api/v1/namespaces", token="made-up")
    assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    status, body = call(url + "/apis", token="bob-token")
    assert (status, body["message"]) == (403, 'forbidden: User "bob" cannot get path "/apis"')
    for path in ("/healthz", "/livez", "/readyz", "/version"):  # public info
        assert call(url + path)[0] == 200, path
    # the store helpers are the test's own: no authentication
    assert server.get("namespaces", None, "default")["metadata"]["name"] == "default"


def test_token_review(server: TestAPIServer) -> None:
    path = server.url + "/apis/authentication.k8s.io/v1/tokenreviews"
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    status, body = call(path, "POST", {**review, "spec": {"token": "bob-token"}}, "admin-token")
    assert status == 201
    assert body["kind"] == "TokenReview" and body["spec"] == {"token": "bob-token"}
    assert body["status"] == {
        "authenticated": True,
        "user": {"username": "bob", "uid": "bob-uid", "groups": ["dev", "system:authenticated"]},
    }
    status, body = call(path, "POST", {**review, "spec": {"token": "nope"}}, "admin-token")
    assert (status, body["status"]) == (201, {"user": {}, "error": "invalid bearer token"})
    # only system:masters may create reviews here; and only create
    assert call(path, "POST", {**review, "spec": {"token": "x"}}, "bob-token")[0] == 403
    assert call(path, token="admin-token")[0] == 405
    status, body = call(path, "POST", {**review, "spec": {}}, "admin-token")
    assert status == 422 and "spec.token" in body["message"]


def test_subject_access_review(server: TestAPIServer) -> None:
    path = server.url + "/apis/authorization.k8s.io/v1/subjectaccessreviews"

    def allowed(spec: dict[str, Any]) -> bool:
        status, body = call(
            path,
            "POST",
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
            "admin-token",
        )
        assert status == 201, body
        assert body["spec"] == spec
        return bool(body["status"]["allowed"])

    metrics = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    assert allowed({**metrics, "user": "root", "groups": ["system:masters"]})
    assert not allowed({**metrics, "user": "alice", "groups": ["system:authenticated"]})
    assert allowed({"nonResourceAttributes": {"path": "/healthz", "verb": "get"}, "user": "x"})
    pods = {"resourceAttributes": {"verb": "list", "resource": "pods"}}
    assert allowed({**pods, "groups": ["system:masters"]})
    assert not allowed({**pods, "user": "alice"})
    status, body = call(path, "POST", {"spec": {**metrics}}, "admin-token")
    assert status == 422 and "at least one of user or group" in body["message"]


def test_discovery_lists_the_reviews(server: TestAPIServer) -> None:
    for gv, plural in (
        ("authentication.k8s.io/v1", "tokenreviews"),
        ("authorization.k8s.io/v1", "subjectaccessreviews"),
    ):
        status, body = call(f"{server.url}/apis/{gv}", token="admin-token")
        assert status == 200
        [res] = [r for r in body["resources"] if r["name"] == plural]
        assert (res["namespaced"], res["verbs"]) == (False, ["create"])


def test_kubeconfig_carries_the_first_token(server: TestAPIServer, tmp_path: Path) -> None:
    kc = yaml.safe_load(server.write_kubeconfig(tmp_path / "kc").read_text())
    assert kc["users"][0]["user"] == {"token": "admin-token"}
    with TestAPIServer().run_in_thread() as plain:  # no token file: no credentials
        assert (
            yaml.safe_load(plain.write_kubeconfig(tmp_path / "kc2").read_text())["users"][0]["user"]
            == {}
        )
        assert call(plain.url + "/api/v1/namespaces")[0] == 200


def test_cli_token_auth_file(tmp_path: Path) -> None:
    (tmp_path / "tokens.csv").write_text(TOKENS)
    kc = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ksched.testing",
            "apiserver",
            "--port=0",
            f"--token-auth-file={tmp_path / 'tokens.csv'}",
            f"--kubeconfig-out={kc}",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert yaml.safe_load(kc.read_text())["users"][0]["user"] == {"token": "admin-token"}
        assert call(url + "/api/v1/namespaces")[0] == 403
        assert call(url + "/api/v1/namespaces", token="admin-token")[0] == 200
    finally:
        proc.terminate()
        proc.wait(10)
    (tmp_path / "bad.csv").write_text("only,two\n")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ksched.testing",
            "apiserver",
            f"--token-auth-file={tmp_path / 'bad.csv'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "must have at least 3 columns" in r.stderr and "Traceback" not in r.stderr
