"""Against a real kube-apiserver with scheduling.k8s.io and GenericWorkload on: on v1.37
(v1beta1) a Workload and a PodGroup made there (and a pod's schedulingGroup) decode into
ksched's structs, and what ksched encodes back reads the same after the server's round
trip; on v1.36 (v1alpha2) they decode and convert to the v1beta1 shape."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ksched.api.objects import Pod, decode
from ksched.api.workload import (
    V1ALPHA2,
    PodGroup,
    Workload,
    WorkloadV1Alpha2,
    pod_group_from_json,
)
from ksched.cli import main
from ksched.sim.cluster_file import load_cluster
from ksched.testing.controlplane import ControlPlane
from ksched.testing.controlplane._build import kube_version

pytestmark = pytest.mark.kube

GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,DRAWorkloadResourceClaims=true"
GV = "/apis/scheduling.k8s.io/v1beta1"
GV_1_36 = "/apis/scheduling.k8s.io/v1alpha2"


def _minor() -> int:
    return int(kube_version().removeprefix("v").split(".")[1])


TEMPLATE: dict[str, Any] = {
    "name": "workers",
    "schedulingPolicy": {"gang": {"minCount": 2}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
    "resourceClaims": [{"name": "shared", "resourceClaimTemplateName": "gpus"}],
    "disruptionMode": {"all": {}},
    "priority": 1000,
    "preemptionPolicy": "Never",
}


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    if _minor() >= 37:
        version, gates = "v1beta1", f"{GATES},PodGroupPreemptionPolicy=true"
    else:
        version, gates = "v1alpha2", f"{GATES},GangScheduling=true,WorkloadAwarePreemption=true"
    args = (f"--runtime-config=scheduling.k8s.io/{version}=true", f"--feature-gates={gates}")
    with ControlPlane(apiserver_args=args) as cp:
        yield cp


def _create(cp: ControlPlane, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    status, body = cp.request("POST", path, obj)
    assert status == 201, body.get("message") if isinstance(body, dict) else body
    assert isinstance(body, dict)
    return body


def test_workload_kinds_as_the_release_serves_them(plane: ControlPlane, tmp_path: Path) -> None:
    """v1.37 serves scheduling.k8s.io/v1beta1, v1.36 v1alpha2 (converted to that shape):
    each release's kube pass checks its own, none skipped."""
    if _minor() >= 37:
        _v1beta1_decodes_and_round_trips(plane, tmp_path)
    else:
        _v1_36_objects_decode_and_convert(plane, tmp_path)


def _v1beta1_decodes_and_round_trips(plane: ControlPlane, tmp_path: Path) -> None:
    ns = "default"
    name = f"w-{uuid.uuid4().hex[:8]}"
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": name},
            "podGroupTemplates": [
                TEMPLATE,
                # all templates share one priority (API validation)
                {"name": "driver", "schedulingPolicy": {"basic": {}}, "priority": 1000},
            ],
        },
    }
    got = _create(plane, f"{GV}/namespaces/{ns}/workloads", workload)
    w = decode(got, Workload)
    workers, driver = w.spec.pod_group_templates
    assert workers.scheduling_policy.gang is not None
    assert workers.scheduling_policy.gang.min_count == 2
    assert workers.scheduling_constraints is not None
    assert workers.scheduling_constraints.topology[0].key == "topology.kubernetes.io/zone"
    assert workers.resource_claims[0].resource_claim_template_name == "gpus"
    assert workers.disruption_mode is not None and workers.disruption_mode.all is not None
    assert (workers.priority, workers.preemption_policy) == (1000, "Never")
    assert driver.scheduling_policy.basic is not None and driver.scheduling_policy.gang is None

    # priority admission computes a PodGroup's priority and policy from its class (none: 0)
    skip = ("name", "priority", "preemptionPolicy")
    pg_spec = {k: v for k, v in TEMPLATE.items() if k not in skip}
    pod_group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": f"{name}-workers"},
        "spec": {"workloadRef": {"workloadName": name, "templateName": "workers"}, **pg_spec},
    }
    got = _create(plane, f"{GV}/namespaces/{ns}/podgroups", pod_group)
    pg = decode(got, PodGroup)
    assert pg.spec.workload_ref is not None
    assert (pg.spec.workload_ref.workload_name, pg.spec.workload_ref.template_name) == (
        name,
        "workers",
    )
    assert pg.spec.scheduling_policy.gang is not None
    assert pg.spec.scheduling_policy.gang.min_count == 2
    assert pg.spec.priority == 0 and pg.spec.preemption_policy == "PreemptLowerPriority"
    assert pg.spec.disruption_mode is not None and pg.spec.disruption_mode.all is not None

    # the status subresource takes ksched's encoding of a condition
    cond = {
        "type": "PodGroupInitiallyScheduled",
        "status": "True",
        "reason": "Scheduled",
        "message": "all members placed",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    with_status = msgspec.json.decode(msgspec.json.encode(pg))
    with_status["status"] = {"conditions": [cond]}
    path = f"{GV}/namespaces/{ns}/podgroups/{name}-workers/status"
    status, body = plane.request("PUT", path, with_status)
    assert status == 200, body
    pg2 = decode(body, PodGroup)
    assert pg2.spec == pg.spec
    (c,) = pg2.status.conditions
    assert (c.type, c.status, c.reason, c.message) == (
        "PodGroupInitiallyScheduled",
        "True",
        "Scheduled",
        "all members placed",
    )

    # ksched's encoding, sent back whole, is what the server keeps
    for kind, cls in (("workloads", Workload), ("podgroups", PodGroup)):
        obj_name = name if kind == "workloads" else f"{name}-workers"
        status, live = plane.request("GET", f"{GV}/namespaces/{ns}/{kind}/{obj_name}")
        assert status == 200, live
        ours = decode(live, cls)
        status, back = plane.request(
            "PUT",
            f"{GV}/namespaces/{ns}/{kind}/{obj_name}",
            msgspec.json.decode(msgspec.json.encode(ours)),
        )
        assert status == 200, back
        assert decode(back, cls).spec == ours.spec  # type: ignore[attr-defined]

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-0"},
        "spec": {
            "schedulingGroup": {"podGroupName": f"{name}-workers"},
            "schedulerName": "nobody",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    got = _create(plane, f"/api/v1/namespaces/{ns}/pods", pod)
    p = decode(got, Pod)
    assert p.spec.scheduling_group is not None
    assert p.spec.scheduling_group.pod_group_name == f"{name}-workers"

    # ksched snapshot finds the served version and lists both kinds; simulate reads them
    out = tmp_path / "cluster.json"
    assert main(["snapshot", "--kubeconfig", str(plane.admin_kubeconfig), "-o", str(out)]) == 0
    kinds = {(o["apiVersion"], o["kind"]) for o in json.loads(out.read_text())["items"]}
    assert {("scheduling.k8s.io/v1beta1", k) for k in ("Workload", "PodGroup")} <= kinds
    cf = load_cluster(str(out))
    assert f"{name}-workers" in [g.metadata.name for g in cf.scheduling["PodGroup"]]
    assert name in [w.metadata.name for w in cf.scheduling["Workload"]]


def _v1_36_objects_decode_and_convert(plane: ControlPlane, tmp_path: Path) -> None:
    ns, name = "default", f"w-{uuid.uuid4().hex[:8]}"
    template = {
        "name": "workers",
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
        "disruptionMode": "PodGroup",
    }
    workload = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"podGroupTemplates": [template]},
    }
    got = _create(plane, f"{GV_1_36}/namespaces/{ns}/workloads", workload)
    (t,) = decode(got, WorkloadV1Alpha2).convert().spec.pod_group_templates
    assert t.scheduling_policy.gang is not None and t.scheduling_policy.gang.min_count == 2
    assert t.disruption_mode is not None and t.disruption_mode.all is not None
    assert t.scheduling_constraints is not None
    assert t.scheduling_constraints.topology[0].key == "topology.kubernetes.io/zone"

    ref = {"workload": {"workloadName": name, "podGroupTemplateName": "workers"}}
    spec = {k: v for k, v in template.items() if k != "name"} | {"disruptionMode": "Pod"}
    pod_group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": f"{name}-workers"},
        "spec": {"podGroupTemplateRef": ref, **spec},
    }
    _create(plane, f"{GV_1_36}/namespaces/{ns}/podgroups", pod_group)
    # as the informer reads it: the object's JSON bytes
    status, listed = plane.request("GET", f"{GV_1_36}/namespaces/{ns}/podgroups")
    assert status == 200, listed
    (item,) = [i for i in listed["items"] if i["metadata"]["name"] == f"{name}-workers"]
    pg = pod_group_from_json(json.dumps(item).encode(), V1ALPHA2)
    assert pg.spec.workload_ref is not None
    assert (pg.spec.workload_ref.workload_name, pg.spec.workload_ref.template_name) == (
        name,
        "workers",
    )
    assert pg.spec.disruption_mode is not None and pg.spec.disruption_mode.single is not None

    out = tmp_path / "cluster.json"
    assert main(["snapshot", "--kubeconfig", str(plane.admin_kubeconfig), "-o", str(out)]) == 0
    cf = load_cluster(str(out))
    assert f"{name}-workers" in [g.metadata.name for g in cf.scheduling["PodGroup"]]
    assert name in [w.metadata.name for w in cf.scheduling["Workload"]]
