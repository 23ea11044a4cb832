"""Simulate scenarios with PersistentVolumeClaims: VolumeBinding against the simulated
PV controller and provisioner."""

from __future__ import annotations

from typing import Any

import anyio
import yaml

from ksched.config import load_config_data
from ksched.plugins import default_registry
from ksched.sim import parse_cluster
from ksched.sim.simulator import Simulation
from ksched.testing import make_csidriver, make_csistoragecapacity
from tests.sim.test_scenarios import node, pod

REG = default_registry(entry_points=False)
ZONE = "topology.kubernetes.io/zone"


def storage_class(name: str, provisioner: str = "ebs.csi.aws.com", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
        **extra,
    }


def pvc(name: str, sc: str, size: str = "10Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": sc,
            "resources": {"requests": {"storage": size}},
        },
    }


def local_pv(name: str, node_name: str, size: str = "100Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node_name],
                                }
                            ]
                        }
                    ]
                }
            },
        },
        "status": {"phase": "Available"},
    }


def with_claim(p: dict[str, Any], claim: str) -> dict[str, Any]:
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return p


def simulate(objs: list[dict[str, Any]]) -> tuple[dict[str, Any], Simulation]:
    cf = parse_cluster(yaml.safe_dump_all(objs), "scenario.yaml")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    sim = Simulation(cf, cfg, REG, seed=0)
    results = anyio.run(sim.run)
    return {r.name: r for r in results}, sim


def test_statefulset_pod_claim_is_provisioned_in_the_chosen_nodes_zone() -> None:
    """A WaitForFirstConsumer claim restricted to zone b by the class's allowedTopologies:
    the pod lands in zone b and the provisioned PV follows it there."""
    allowed = [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-b"]}]}]
    res, sim = simulate(
        [
            node("a-1", labels={ZONE: "zone-a"}),
            node("b-1", labels={ZONE: "zone-b"}),
            storage_class("zonal", allowedTopologies=allowed),
            pvc("data-web-0", "zonal"),
            with_claim(pod("web-0"), "data-web-0"),
        ]
    )
    assert res["web-0"].status == "Scheduled", res["web-0"].message
    assert res["web-0"].node == "b-1"
    claim = sim.cluster.storage["persistentvolumeclaims"]["default/data-web-0"]
    assert claim.metadata.annotations["volume.kubernetes.io/selected-node"] == "b-1"
    assert "pv.kubernetes.io/bind-completed" in claim.metadata.annotations
    pv = sim.cluster.storage["persistentvolumes"][claim.spec.volume_name]
    assert pv.spec.claim_ref is not None and pv.spec.claim_ref.name == "data-web-0"
    (term,) = pv.spec.node_affinity.required.node_selector_terms
    assert [(r.key, r.values) for r in term.match_expressions] == [(ZONE, ["zone-b"])]


def test_local_pvs_bind_statically_and_are_not_given_twice() -> None:
    """Two pods, two claims, one local PV per node: each pod goes where its PV is, and the
    second cannot take the first one's PV (the assume cache); a third has none left."""
    res, sim = simulate(
        [
            node("n-1"),
            node("n-2"),
            storage_class("local", provisioner="kubernetes.io/no-provisioner"),
            local_pv("pv-1", "n-1"),
            local_pv("pv-2", "n-2"),
            pvc("c-1", "local"),
            pvc("c-2", "local"),
            pvc("c-3", "local"),
            with_claim(pod("p-1"), "c-1"),
            with_claim(pod("p-2"), "c-2"),
            with_claim(pod("p-3"), "c-3"),
        ]
    )
    placed = {res[p].node for p in ("p-1", "p-2")}
    assert placed == {"n-1", "n-2"}
    claims = sim.cluster.storage["persistentvolumeclaims"]
    assert {claims["default/c-1"].spec.volume_name, claims["default/c-2"].spec.volume_name} == {
        "pv-1",
        "pv-2",
    }
    assert res["p-3"].status == "Unschedulable"
    assert "didn't find available persistent volumes to bind" in res["p-3"].message


def test_unbound_immediate_claim_keeps_the_pod_pending() -> None:
    immediate = storage_class("fast")
    immediate["volumeBindingMode"] = "Immediate"
    res, _ = simulate([node("n-1"), immediate, pvc("c", "fast"), with_claim(pod("p"), "c")])
    assert res["p"].status == "Unschedulable"
    assert "pod has unbound immediate PersistentVolumeClaims" in res["p"].message


def test_pods_without_claims_are_unaffected() -> None:
    res, _ = simulate([node("n-1"), pod("plain")])
    assert res["plain"].node == "n-1"


def test_a_driver_reporting_storage_capacity_provisions_where_there_is_room() -> None:
    """The CSI driver reports CSIStorageCapacity per node: node a has none, so a claim
    cannot be provisioned there; of b and c, v1.37's capacity scoring (on by default)
    prefers the emptier b; a claim bigger than any capacity stays pending."""
    host = "kubernetes.io/hostname"
    res, _ = simulate(
        [
            node("a-1"),
            node("b-1"),
            node("c-1"),
            storage_class("fast"),
            make_csidriver("ebs.csi.aws.com", storageCapacity=True),
            make_csistoragecapacity("b", "fast", "50Gi", {host: "b-1"}, namespace="kube-system"),
            make_csistoragecapacity("c", "fast", "20Gi", {host: "c-1"}, namespace="kube-system"),
            pvc("small", "fast", "10Gi"),
            pvc("huge", "fast", "100Gi"),
            with_claim(pod("p-small"), "small"),
            with_claim(pod("p-huge"), "huge"),
        ]
    )
    assert res["p-small"].status == "Scheduled", res["p-small"].message
    assert res["p-small"].node == "b-1"
    assert res["p-huge"].status == "Unschedulable"
    assert "3 node(s) did not have enough free storage" in res["p-huge"].message
