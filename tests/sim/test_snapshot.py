"""``ksched snapshot`` → ``ksched simulate --cluster``: a live cluster replayed offline
places its pending pods where the daemon, run against that cluster, places them."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from ksched.cli import main
from ksched.cluster import APIClient
from ksched.config import load_config_data
from ksched.daemon import SchedulerDaemon
from ksched.sim.cluster_file import KINDS, load_cluster
from ksched.sim.snapshot import DRA_KINDS, LACKS, REQUIRED, SCHEDULING_KINDS, SNAPSHOT_KINDS
from ksched.testing import (
    TestAPIServer,
    make_controller,
    make_node,
    make_pod,
    make_priority_class,
    make_service,
)

SHADOWED = "default-scheduler"
ZONE = "topology.kubernetes.io/zone"


def _cluster(srv: TestAPIServer) -> list[str]:
    """Nodes of distinct sizes in three zones, running pods, and pending pods whose
    placement depends on one another (resources, default spreading, anti-affinity); the
    pending pods' names."""
    sizes = [("a1", "a", "8", "32Gi"), ("a2", "a", "3", "8Gi"), ("b1", "b", "6", "16Gi")]
    sizes += [("b2", "b", "2", "6Gi"), ("c1", "c", "5", "24Gi"), ("c2", "c", "4", "10Gi")]
    for name, zone, cpu, mem in sizes:
        srv.create(make_node(name, cpu=cpu, memory=mem, labels={ZONE: zone}))
    srv.create(make_pod("running-1", cpu="3", memory="4Gi", node_name="a1"))
    srv.create(make_pod("running-2", cpu="1", memory="8Gi", node_name="c1"))
    for i, value in enumerate((100, 90, 80, 70, 60, 50, 40, 30, 20)):
        srv.create(make_priority_class(f"p{i}", value))
    web = {"app": "web"}
    srv.create(make_service("web", web))
    rs = srv.create(make_controller("ReplicaSet", "web", web, replicas=3))
    pending: list[tuple[str, dict[str, Any]]] = [
        ("web-0", {"cpu": "500m", "memory": "1Gi", "labels": web, "owner": rs}),
        ("web-1", {"cpu": "500m", "memory": "1Gi", "labels": web, "owner": rs}),
        ("web-2", {"cpu": "500m", "memory": "1Gi", "labels": web, "owner": rs}),
        ("big", {"cpu": "4", "memory": "12Gi"}),
        (
            "zone-b",
            {
                "cpu": "1",
                "memory": "2Gi",
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": ZONE, "operator": "In", "values": ["b"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            },
        ),
        (
            "away-from-web",
            {
                "cpu": "1",
                "memory": "1Gi",
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": ZONE, "labelSelector": {"matchLabels": web}}
                        ]
                    }
                },
            },
        ),
        ("memory-heavy", {"cpu": "500m", "memory": "9Gi"}),
        ("too-big", {"cpu": "64"}),
    ]
    for i, (name, kw) in enumerate(pending):
        srv.create(make_pod(name, scheduler_name=SHADOWED, priority_class_name=f"p{i}", **kw))
    return [name for name, _ in pending]


async def _daemon_placements(url: str, names: list[str], srv: TestAPIServer) -> dict[str, Any]:
    cfg = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": SHADOWED}],
        }
    )[0]
    client = await APIClient.for_master(url, qps=0)
    try:
        async with SchedulerDaemon(cfg, client=client, seed=0) as d:
            await d.wait_ready(20)
            with anyio.fail_after(20):
                while True:
                    pods = {n: srv.get("pods", "default", n) for n in names}
                    if all(_settled(p) for p in pods.values()):
                        break
                    await anyio.sleep(0.05)
    finally:
        await client.close()
    return {n: p["spec"].get("nodeName") for n, p in pods.items()}


def _settled(pod: dict[str, Any]) -> bool:
    if pod["spec"].get("nodeName"):
        return True
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conds)


def test_snapshot_replays_the_daemons_placements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestAPIServer().run_in_thread() as srv:
        names = _cluster(srv)
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        dump = tmp_path / "cluster.json"
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(dump)]) == 0
        assert "objects written to" in capsys.readouterr().err
        live = anyio.run(_daemon_placements, srv.url, names, srv)
    doc = json.loads(dump.read_text())
    assert doc["kind"] == "List"
    kinds = {o["kind"] for o in doc["items"]}
    assert {"Node", "Pod", "Service", "ReplicaSet", "PriorityClass", "Namespace"} <= kinds
    assert all("managedFields" not in o["metadata"] for o in doc["items"])
    assert all(o["apiVersion"] for o in doc["items"])
    capsys.readouterr()  # the daemon's log lines
    rc = main(
        ["simulate", "--cluster", str(dump), "--scheduler-name", SHADOWED, "--output", "json"]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    offline = {p["name"]: p["node"] for p in out["pods"]}
    assert offline == live
    # too big for any node; anti-affine to web, whose replicas went to every zone first
    assert [n for n, node in live.items() if node is None] == ["away-from-web", "too-big"]
    # the web replicas spread over the zones (default PodTopologySpread constraints)
    zone = {n: n[0] for n in ("a1", "a2", "b1", "b2", "c1", "c2")}
    assert len({zone[live[f"web-{i}"]] for i in range(3)}) == 3


def test_snapshot_lists_every_kind_simulate_reads() -> None:
    """Every kind cluster_file decodes (the resource.k8s.io ones listed when served)."""
    assert {k.kind for k in SNAPSHOT_KINDS} == set(KINDS) - set(DRA_KINDS.values())


def test_snapshot_yaml_and_managed_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestAPIServer().run_in_thread() as srv:
        node = make_node("n1")
        node["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Apply"}]
        srv.create(node)
        srv.create({**make_pod("done", node_name="n1"), "status": {"phase": "Succeeded"}})
        srv.create(make_pod("running", node_name="n1"))
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        out = tmp_path / "cluster.yaml"
        rc = main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out), "--format", "yaml"])
        assert rc == 0
    doc = yaml.safe_load(out.read_text())
    nodes = [o for o in doc["items"] if o["kind"] == "Node"]
    assert [n["metadata"]["name"] for n in nodes] == ["n1"]
    assert "managedFields" not in nodes[0]["metadata"]
    pods = [o["metadata"]["name"] for o in doc["items"] if o["kind"] == "Pod"]
    assert pods == ["running"]  # terminal pods left out
    assert [n.metadata.name for n, _ in load_cluster(str(out)).nodes] == ["n1"]


def test_snapshot_without_a_cluster_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["snapshot", "--kubeconfig", str(tmp_path / "missing")])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("ksched snapshot: cannot load cluster configuration")
    assert len(err.splitlines()) == 1


def _forbid(srv: TestAPIServer, resource: str, group: str) -> None:
    """The next list of ``resource`` answers 403 as kube-apiserver words it."""
    qualified = f"{resource}.{group}" if group else resource
    srv.faults.fail_next(
        verb="list",
        resource=resource,
        code=403,
        reason="Forbidden",
        message=f'{qualified} is forbidden: User "system:kube-scheduler" cannot list '
        f'resource "{resource}" in API group "{group}" at the cluster scope',
    )


def test_snapshot_skips_each_forbidden_kind_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kind the identity may not list is left out, one warning line each saying what a
    simulation then lacks; the rest is written and replays."""
    with TestAPIServer().run_in_thread() as srv:
        srv.create(make_node("n1"))
        srv.create(make_pod("running", node_name="n1"))
        srv.create(make_pod("pending"))
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        _forbid(srv, "priorityclasses", "scheduling.k8s.io")
        _forbid(srv, "poddisruptionbudgets", "policy")
        out = tmp_path / "cluster.json"
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    warnings = [line for line in err if "warning" in line]
    assert len(warnings) == 2, err
    assert warnings[0].startswith("ksched snapshot: warning: skipped PriorityClass (403 Forbidden")
    assert LACKS["PriorityClass"] in warnings[0]
    assert warnings[1].startswith("ksched snapshot: warning: skipped PodDisruptionBudget (403")
    assert LACKS["PodDisruptionBudget"] in warnings[1]
    assert err[-1].startswith("ksched snapshot: ") and "objects written to" in err[-1]
    kinds = [o["kind"] for o in json.loads(out.read_text())["items"]]
    assert "PriorityClass" not in kinds and "PodDisruptionBudget" not in kinds
    assert kinds.count("Node") == 1 and kinds.count("Pod") == 2 and "Namespace" in kinds
    rc = main(["simulate", "--cluster", str(out), "--all-pending", "--output", "json"])
    assert rc == 0
    pods = json.loads(capsys.readouterr().out)["pods"]
    assert [(p["name"], p["node"]) for p in pods] == [("pending", "n1")]


@pytest.mark.parametrize("resource", ["nodes", "pods"])
def test_snapshot_without_nodes_or_pods_fails_and_writes_nothing(
    resource: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestAPIServer().run_in_thread() as srv:
        srv.create(make_node("n1"))
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        _forbid(srv, resource, "")
        out = tmp_path / "cluster.json"
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ksched snapshot: 403 Forbidden: ")
    assert f'cannot list resource "{resource}"' in err[0]


def test_every_snapshot_kind_says_what_a_simulation_lacks_without_it() -> None:
    kinds = {k.kind for k in SNAPSHOT_KINDS} | set(DRA_KINDS.values())
    kinds |= set(SCHEDULING_KINDS.values())
    assert set(LACKS) == kinds - REQUIRED
    assert kinds >= REQUIRED


@pytest.mark.kube
def test_snapshot_of_a_real_api_server_includes_dra_kinds_it_serves(
    controlplane: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kube-apiserver serves resource.k8s.io: a DeviceClass made there is in the
    snapshot (the test API server serves no such group: none is listed there)."""
    name = f"snapshot-{uuid.uuid4().hex[:8]}"
    dc = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}}
    status, body = controlplane.request("POST", "/apis/resource.k8s.io/v1/deviceclasses", dc)
    assert status == 201, body
    try:
        out = tmp_path / "cluster.json"
        kc = str(controlplane.admin_kubeconfig)
        assert main(["snapshot", "--kubeconfig", kc, "-o", str(out), "--verbose"]) == 0
        err = capsys.readouterr().err
        assert "DeviceClass" in err and "ResourceSlice" in err
        items = json.loads(out.read_text())["items"]
        got = [o for o in items if o["kind"] == "DeviceClass" and o["metadata"]["name"] == name]
        assert got and got[0]["apiVersion"] == "resource.k8s.io/v1"
        assert "managedFields" not in got[0]["metadata"]
        load_cluster(str(out))  # and simulate can read it back
    finally:
        controlplane.request("DELETE", f"/apis/resource.k8s.io/v1/deviceclasses/{name}")


@pytest.mark.kube
def test_snapshot_with_kube_schedulers_own_identity(
    controlplane: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``system:kube-scheduler`` (the stock bootstrap RBAC) may list everything the
    scheduler reads, but not PriorityClasses or ResourceClaimTemplates: the snapshot
    leaves those two out with one warning each, and the rest replays."""
    name = f"snapshot-{uuid.uuid4().hex[:8]}"
    status, body = controlplane.request("POST", "/api/v1/nodes", make_node(name, cpu="4"))
    assert status == 201, body
    pod = make_pod(name, cpu="1", scheduler_name="default-scheduler")
    status, body = controlplane.request("POST", "/api/v1/namespaces/default/pods", pod)
    assert status == 201, body
    try:
        out = tmp_path / "cluster.json"
        kc = str(controlplane.scheduler_kubeconfig)
        assert main(["snapshot", "--kubeconfig", kc, "-o", str(out)]) == 0
        err = capsys.readouterr().err.splitlines()
        warnings = [line for line in err if "warning" in line]
        skipped = sorted(line.split()[4] for line in warnings)
        assert skipped == ["PriorityClass", "ResourceClaimTemplate"], err
        for line in warnings:
            assert "(403 Forbidden: " in line
            assert 'User "system:kube-scheduler" cannot list' in line
        items = json.loads(out.read_text())["items"]
        kinds = {o["kind"] for o in items}
        assert not kinds & {"PriorityClass", "ResourceClaimTemplate"}
        assert {"Node", "Pod", "Namespace"} <= kinds
        assert any(o["kind"] == "Node" and o["metadata"]["name"] == name for o in items)
        rc = main(
            [
                "simulate",
                "--cluster",
                str(out),
                "--scheduler-name",
                "default-scheduler",
                "--emulated-version",
                controlplane.emulated_version,
                "--output",
                "json",
            ]
        )
        assert rc == 0
        pods = {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
        assert pods[name]["status"] == "Scheduled"
    finally:
        controlplane.request("DELETE", f"/api/v1/namespaces/default/pods/{name}")
        controlplane.request("DELETE", f"/api/v1/nodes/{name}")
