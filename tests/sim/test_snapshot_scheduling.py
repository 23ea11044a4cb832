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
from ksched.sim.snapshot import Listed, _discover, snapshot_rows
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


V1BETA1, V1ALPHA2 = "/apis/scheduling.k8s.io/v1beta1", "/apis/scheduling.k8s.io/v1alpha2"
NOT_FOUND = (404, {"kind": "Status", "code": 404})
BOTH = {"resources": [{"name": "workloads"}, {"name": "podgroups"}]}


class _Client:
    def __init__(self, answers: dict[str, tuple[int, Any]]) -> None:
        self.answers = answers

    async def request(self, method: str, path: str, check: bool = True) -> tuple[int, bytes]:
        status, body = self.answers.get(path, NOT_FOUND)
        return status, json.dumps(body).encode()


def _kinds(answers: dict[str, tuple[int, Any]]) -> list[tuple[str, str]]:
    async def run() -> list[Listed]:
        group = "scheduling.k8s.io"
        rows = [r for r in snapshot_rows() if r.discover and r.group == group]
        return await _discover(_Client(answers), group, rows)  # type: ignore[arg-type]

    return [(k.kind, k.path) for k in anyio.run(run)]


def test_listed_in_the_first_served_version() -> None:
    assert _kinds({}) == []
    only = {"resources": [{"name": "podgroups"}, {"name": "podgroups/status"}]}
    assert _kinds({V1BETA1: (200, only)}) == [("PodGroup", f"{V1BETA1}/podgroups")]
    # kube-apiserver v1.36: v1alpha2 only
    assert _kinds({V1ALPHA2: (200, BOTH)}) == [
        ("Workload", f"{V1ALPHA2}/workloads"),
        ("PodGroup", f"{V1ALPHA2}/podgroups"),
    ]
    assert _kinds({V1BETA1: (200, BOTH), V1ALPHA2: (200, BOTH)})[0][1].startswith(V1BETA1)
    with pytest.raises(APIError):
        _kinds({V1BETA1: (500, {"kind": "Status", "code": 500, "message": "boom"})})
