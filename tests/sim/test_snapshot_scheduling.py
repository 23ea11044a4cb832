"""``ksched snapshot`` lists scheduling.k8s.io/v1beta1 Workloads and PodGroups when the server
serves them (kube-apiserver only with that version enabled), and simulate reads them back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from ksched.api.workload import PodGroup, Workload
from ksched.cli import main
from ksched.cluster import APIError
from ksched.sim.cluster_file import load_cluster
from ksched.sim.snapshot import Listed, _scheduling_kinds
from ksched.testing import TestAPIServer, make_node, make_pod, make_pod_group, make_workload


def test_snapshot_includes_workloads_and_pod_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestAPIServer().run_in_thread() as srv:
        srv.create(make_node("n1"))
        srv.create(make_pod("p"))
        srv.create(make_workload("w", {"workers": 2}))
        srv.create(make_pod_group("w-workers", 2, workload=("w", "workers")))
        srv.create(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "crd", "namespace": "default"},
                "spec": {"minMember": 1},
            }
        )
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        out = tmp_path / "cluster.json"
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out)]) == 0
    items = json.loads(out.read_text())["items"]
    got = [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in items[-2:]]
    assert got == [
        ("scheduling.k8s.io/v1beta1", "Workload", "w"),
        ("scheduling.k8s.io/v1beta1", "PodGroup", "w-workers"),
    ]
    assert not [o for o in items if o["metadata"]["name"] == "crd"]  # CRDs are not listed
    cf = load_cluster(str(out))
    (w,) = cf.scheduling["Workload"]
    (pg,) = cf.scheduling["PodGroup"]
    assert isinstance(w, Workload) and isinstance(pg, PodGroup)
    assert pg.spec.workload_ref is not None and pg.spec.workload_ref.template_name == "workers"


class _Client:
    def __init__(self, status: int, body: Any) -> None:
        self.status, self.body = status, json.dumps(body).encode()

    async def request(self, method: str, path: str, check: bool = True) -> tuple[int, bytes]:
        assert (method, path) == ("GET", "/apis/scheduling.k8s.io/v1beta1")
        return self.status, self.body


def _kinds(status: int, body: Any) -> list[Listed]:
    async def run() -> list[Listed]:
        return await _scheduling_kinds(_Client(status, body))  # type: ignore[arg-type]

    return anyio.run(run)


def test_not_served_lists_none_and_only_served_resources_are_listed() -> None:
    assert _kinds(404, {"kind": "Status", "code": 404}) == []
    only = {"resources": [{"name": "podgroups"}, {"name": "podgroups/status"}]}
    assert [k.kind for k in _kinds(200, only)] == ["PodGroup"]
    assert _kinds(200, only)[0].path == "/apis/scheduling.k8s.io/v1beta1/podgroups"
    with pytest.raises(APIError):
        _kinds(500, {"kind": "Status", "code": 500, "message": "boom"})
