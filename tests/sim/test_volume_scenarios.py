"""Simulated scheduling with the volume filters of the default profile.

Nodes, pods and the storage objects (PVCs, PVs, classes, CSINodes) all go through the
cluster file, as `kubectl get ... -o yaml` would give them."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import yaml

from ksched.api.objects import (
    CSINode,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    decode,
)
from ksched.config import load_config_data
from ksched.sim import parse_cluster
from ksched.sim.simulator import PodResult, Simulation
from tests.sim.test_scenarios import REG, node, pod

ZONE = "topology.kubernetes.io/zone"
EBS = "ebs.csi.aws.com"


def run(objs: list[dict[str, Any]], storage: list[Any]) -> dict[str, PodResult]:
    """Simulate ``objs`` plus the storage objects, all through the cluster file."""
    pvs = {o.metadata.name: o for o in storage if isinstance(o, PersistentVolume)}
    for i, obj in enumerate(storage):
        if isinstance(obj, PersistentVolumeClaim) and obj.spec.volume_name in pvs:
            # A bound pair, as the PV controller leaves it (VolumeBinding checks both ends).
            pv = pvs[obj.spec.volume_name]
            ref = ObjectReference(namespace=obj.metadata.namespace, name=obj.metadata.name)
            pv.spec = msgspec.structs.replace(pv.spec, claim_ref=ref)
            status = msgspec.structs.replace(obj.status, phase="Bound")
            done = {**obj.metadata.annotations, "pv.kubernetes.io/bind-completed": "yes"}
            meta = msgspec.structs.replace(obj.metadata, annotations=done)
            storage[i] = msgspec.structs.replace(obj, status=status, metadata=meta)
    docs = [
        *objs,
        *({"apiVersion": o.api_version, "kind": o.kind, **msgspec.to_builtins(o)} for o in storage),
    ]
    cf = parse_cluster(yaml.safe_dump_all(docs), "scenario.yaml")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    return {r.name: r for r in anyio.run(Simulation(cf, cfg, REG, seed=0).run)}


def claim(name: str, volume: str = "", modes: list[str] | None = None) -> PersistentVolumeClaim:
    return decode(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"volumeName": volume, "accessModes": modes or ["ReadWriteOnce"]},
        },
        PersistentVolumeClaim,
    )


def volume(name: str, labels: dict[str, str] | None = None, driver: str = "") -> PersistentVolume:
    spec: dict[str, Any] = {"csi": {"driver": driver, "volumeHandle": name}} if driver else {}
    return decode(
        {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}, PersistentVolume
    )


def with_claims(name: str, *claims: str, **kw: Any) -> dict[str, Any]:
    vols = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return pod(name, volumes=vols, **kw)


def test_volume_restrictions_keep_a_gce_disk_and_an_rwop_claim_single_user() -> None:
    disk = [{"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}]
    res = run(
        [
            node("n1"),
            node("n2"),
            pod("writer", node_name="n1", volumes=disk),
            pod("second-writer", volumes=disk, nodeSelector={"kubernetes.io/hostname": "n1"}),
            pod("other", volumes=disk),
            with_claims("rwop-user", "solo", node_name="n2"),
            with_claims("rwop-second", "solo"),
        ],
        [claim("solo", "solo-pv", modes=["ReadWriteOncePod"]), volume("solo-pv")],
    )
    assert res["other"].node == "n2"
    assert res["second-writer"].status == "Unschedulable"
    assert "node(s) had no available disk" in res["second-writer"].message
    assert res["rwop-second"].status == "Unschedulable"
    assert (
        "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod"
        in res["rwop-second"].message
    )


def test_volume_zone_places_pods_beside_their_volumes() -> None:
    res = run(
        [
            node("a1", labels={ZONE: "a"}),
            node("b1", labels={ZONE: "b"}),
            *(with_claims(f"db-{z}", f"data-{z}") for z in ("a", "b")),
            with_claims("lost", "unbound"),
        ],
        [
            claim("data-a", "pv-a"),
            claim("data-b", "pv-b"),
            volume("pv-a", {ZONE: "a"}),
            volume("pv-b", {ZONE: "b"}),
            claim("unbound"),
        ],
    )
    assert (res["db-a"].node, res["db-b"].node) == ("a1", "b1")
    assert res["lost"].status == "Unschedulable"
    # VolumeBinding's PreFilter (before VolumeZone's, as upstream orders them) stops it.
    assert "pod has unbound immediate PersistentVolumeClaims" in res["lost"].message


def test_node_volume_limits_spill_over_to_the_next_node() -> None:
    claims = [claim(f"c{i}", f"pv{i}") for i in range(3)]
    pvs = [volume(f"pv{i}", driver=EBS) for i in range(3)]
    limits = [
        decode(
            {
                "metadata": {"name": n},
                "spec": {"drivers": [{"name": EBS, "nodeID": n, "allocatable": {"count": 1}}]},
            },
            CSINode,
        )
        for n in ("n1", "n2")
    ]
    res = run(
        [node("n1"), node("n2"), *(with_claims(f"p{i}", f"c{i}") for i in range(3))],
        [*claims, *pvs, *limits],
    )
    assert sorted(res[f"p{i}"].node or "" for i in range(2)) == ["n1", "n2"]
    assert res["p2"].status == "Unschedulable"
    assert "node(s) exceed max volume count" in res["p2"].message
