"""deploy/ on the real control plane: ``kubectl apply -k`` with strict server-side field
validation, then ``ksched run`` with the shipped config and the token of the
ServiceAccount deploy/ defines. Its RBAC must be exactly sufficient: the daemon leads,
binds, reports an unschedulable pod and preempts, and the API server refuses nothing
(no 401/403 anywhere in its log)."""

from __future__ import annotations

import json
import re
import ssl
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ksched.testing.controlplane import ControlPlane
from ksched.testing.controlplane._process import free_port

from .conftest import KschedProcess, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.kube]

ROOT = Path(__file__).parents[2]


@pytest.fixture
def deployed(e2e_controlplane: ControlPlane) -> Iterator[ControlPlane]:
    cp = e2e_controlplane
    out = cp.kubectl(
        "apply", "-k", str(ROOT / "deploy"), "--server-side", "--validate=strict"
    ).stdout
    assert "serviceaccount/ksched serverside-applied" in out, out
    try:
        yield cp
    finally:
        cp.kubectl("delete", "-k", str(ROOT / "deploy"), "--wait=false", check=False)


def test_shipped_rbac_is_exactly_enough(deployed: ControlPlane, tmp_path: Path) -> None:
    cp = deployed
    token = cp.kubectl("create", "token", "ksched", "-n", "ksched").stdout.strip()
    kubeconfig = cp.token_kubeconfig("system:serviceaccount:ksched:ksched", token, tmp_path / "kc")
    cfg = yaml.safe_load((ROOT / "deploy/base/config.yaml").read_text())
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    run = uuid.uuid4().hex[:6]
    ns = f"deploy-{run}"
    cp.ok("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    nodes = [f"deploy-{run}-{i}" for i in range(2)]
    for n in nodes:
        alloc = {"cpu": "1", "memory": "4Gi", "pods": "10"}
        cp.ok(
            "POST",
            "/api/v1/nodes",
            {
                "metadata": {"name": n, "labels": {"deploy-run": run}},
                "status": {"capacity": alloc, "allocatable": alloc},
            },
        )
    cp.ok(
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {"metadata": {"name": f"deploy-{run}-high"}, "value": 1000},
    )
    secure_port = free_port()
    proc = KschedProcess(
        [
            "--config",
            str(config),
            "--kubeconfig",
            str(kubeconfig),
            "--bind-address=127.0.0.1",
            f"--secure-port={secure_port}",
            f"--emulated-version={cp.emulated_version}",
        ]
    )
    # the shipped /metrics reader role, bound as Prometheus's would be
    reader = {
        "metadata": {"name": f"deploy-{run}-metrics"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "ksched-metrics-reader",
        },
        "subjects": [
            {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "User",
                "name": cp.controller_manager_identity.user,
            }
        ],
    }
    cp.ok("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", reader)

    def pod(name: str, cpu: str, **spec: object) -> None:
        body = {
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "schedulerName": "ksched",
                "nodeSelector": {"deploy-run": run},
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
                ],
                **spec,
            },
        }
        cp.ok("POST", f"/api/v1/namespaces/{ns}/pods", body)

    def node_of(name: str) -> str | None:
        status, p = cp.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        return p["spec"].get("nodeName") if status == 200 else None

    try:
        proc.serving()
        wait_for(lambda: proc.get("/readyz")[0] == 200, 30, what="ready with the SA token")
        proc.wait_log("successfully acquired lease", 30)
        # the secure port's TokenReviews and SubjectAccessReviews, with the SA's
        # system:auth-delegator binding
        url = f"https://127.0.0.1:{secure_port}"
        assert _secure_get(url + "/healthz") == 200
        assert _secure_get(url + "/metrics") == 403  # system:anonymous
        assert _secure_get(url + "/metrics", cp.scheduler_identity.token) == 403
        wait_for(  # RBAC's cache may take a moment to see the new binding
            lambda: _secure_get(url + "/metrics", cp.controller_manager_identity.token) == 200,
            20,
            what="the metrics reader allowed",
        )
        for i in range(2):
            pod(f"low-{i}", "800m")
        for i in range(2):
            assert wait_for(lambda i=i: node_of(f"low-{i}"), 20) in nodes
        pod("too-big", "2")  # FailedScheduling, PodScheduled=False
        pod("urgent", "900m", priorityClassName=f"deploy-{run}-high")  # preempts one
        assert wait_for(lambda: node_of("urgent"), 30) in nodes
        cond = wait_for(
            lambda: next(
                (
                    c
                    for c in cp.ok("GET", f"/api/v1/namespaces/{ns}/pods/too-big")["status"].get(
                        "conditions"
                    )
                    or []
                    if c["type"] == "PodScheduled"
                ),
                None,
            ),
            20,
        )
        assert cond["reason"] == "Unschedulable"
        events = cp.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"]
        assert {"Scheduled", "FailedScheduling", "Preempted"} <= {e["reason"] for e in events}
        time.sleep(1.0)  # a lease renewal or two
    finally:
        rc = proc.stop()
        for n in nodes:
            cp.request("DELETE", f"/api/v1/nodes/{n}")
        cp.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/deploy-{run}-high")
        cp.request(
            "DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/deploy-{run}-metrics"
        )
        cp.request("DELETE", f"/api/v1/namespaces/{ns}")
    # a status, not a port number that happens to contain one ("127.0.0.1:44039")
    denied = re.compile(r"\b40[13]\b|[Ff]orbidden|Unauthorized")
    refused = [e for e in proc.log if denied.search(json.dumps(e))]
    assert refused == []
    assert rc == 0, proc.log[-20:]


def _secure_get(url: str, token: str | None = None) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # self-signed
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code
