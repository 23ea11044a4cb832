"""DRA extended resources (KEP-5004) end to end: a pod asking for ``<ext>: 1`` in its
container resources, on a node that does not advertise the resource but whose driver
publishes devices of a class with that ``extendedResourceName``, is bound with a claim
the scheduler created (annotated, owned by the pod, one request per container) and named
in the pod's ``status.extendedResourceClaimStatus``; one asking for more than there is
gets kube-scheduler's message. Against the real control plane both schedulers are
compared; the test API server runs the same flow for ksched alone. Also: the default
``filterTimeout`` of DynamicResources as the real kube-scheduler's ``/configz`` shows it."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from ksched.testing.objects import make_resource_slice

from .conftest import E2E, JSON, wait_for

DRIVER = "gpu.ext.e2e.example.com"
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def _setup(e2e: E2E, devices: int) -> tuple[str, str, str]:
    """A node without the resource, a class backing it, a slice: (node, class, resource)."""
    node = e2e.create_node("ext")
    cls = e2e.node_name("gpu-class")
    resource = f"{e2e.run_id}.example.com/gpu"
    e2e.create_object(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": cls},
            "spec": {
                "extendedResourceName": resource,
                "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
            },
        }
    )
    slice_ = make_resource_slice(
        node, DRIVER, [{"name": f"gpu-{i}"} for i in range(devices)], name=e2e.node_name("s")
    )
    e2e.create_object(slice_)
    return node, cls, resource


def _extended_claim(e2e: E2E, pod: str) -> JSON:
    """The claim the pod's status names, once it does."""

    def named() -> str | None:
        st = e2e.pod(pod).get("status", {}).get("extendedResourceClaimStatus") or {}
        return st.get("resourceClaimName") or None

    name = wait_for(named, 30, what=f"{pod}'s extendedResourceClaimStatus")
    data: JSON = e2e.kube.ok("GET", e2e.object_path("ResourceClaim", name))
    return data


def _shape(e2e: E2E, pod: str, node: str, cls: str) -> dict[str, Any]:
    """What must agree between the schedulers (names generated apart)."""
    claim = _extended_claim(e2e, pod)
    meta = claim["metadata"]
    p = e2e.pod(pod)
    status = p["status"]["extendedResourceClaimStatus"]
    results = claim["status"]["allocation"]["devices"]["results"]
    owner = meta["ownerReferences"]
    return {
        "generateName": meta.get("generateName", "").replace(pod, "<pod>"),
        "name starts with generateName": meta["name"].startswith(meta.get("generateName", "-")),
        "annotations": meta.get("annotations"),
        "owner": [(o["kind"], o["name"] == pod, o["uid"] == p["metadata"]["uid"]) for o in owner],
        "controller": [o.get("controller") for o in owner],
        "finalizers": meta.get("finalizers"),
        "requests": claim["spec"]["devices"]["requests"],
        "results": [(r["request"], r["driver"], r["pool"]) for r in results],
        "node": p["spec"]["nodeName"] == node,
        "reservedFor": [(r["resource"], r["name"] == pod) for r in claim["status"]["reservedFor"]],
        "requestMappings": status["requestMappings"],
        "class": cls,
    }


@pytest.mark.e2e
def test_extended_resource_pod_gets_a_claim_made_for_it(e2e: E2E) -> None:
    node, cls, resource = _setup(e2e, devices=2)
    with e2e.daemon():
        e2e.create_pod("ours", extended={resource: "1"})
        assert e2e.wait_bound("ours", timeout=30) == node
    shape = _shape(e2e, "ours", node, cls)
    # named by container index and the resource's place among its sorted requests
    request = f"container-0-request-{sorted(['cpu', 'memory', resource]).index(resource)}"
    assert shape["annotations"] == {ANNOTATION: "true"}
    assert shape["generateName"] == "<pod>-extended-resources-"
    assert shape["requests"] == [
        {
            "name": request,
            "exactly": {
                "deviceClassName": cls,
                "allocationMode": "ExactCount",
                "count": 1,
            },
        }
    ]
    assert shape["requestMappings"] == [
        {"containerName": "main", "resourceName": resource, "requestName": request}
    ]
    assert shape["results"] == [(request, DRIVER, node)]
    assert shape["reservedFor"] == [("pods", True)]


@pytest.mark.kube
@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_extended_resources_agree_with_kube_scheduler(e2e: E2E, kube_name: str) -> None:
    """kube-scheduler first, then ksched, on the same node: the same claim (but
    its generated name), the same pod status; then a pod asking for more GPUs than the
    node has left gets the same message from each."""
    node, cls, resource = _setup(e2e, devices=2)
    e2e.create_pod("theirs", extended={resource: "1"}, scheduler_name=kube_name)
    assert e2e.wait_bound("theirs", timeout=60) == node
    theirs = _shape(e2e, "theirs", node, cls)
    with e2e.daemon():
        e2e.create_pod("ours", extended={resource: "1"})
        assert e2e.wait_bound("ours", timeout=30) == node
        ours = _shape(e2e, "ours", node, cls)
        assert ours == theirs
        # both devices are taken now: neither scheduler finds one
        e2e.create_pod("ours-big", extended={resource: "1"})
        e2e.create_pod("theirs-big", extended={resource: "1"}, scheduler_name=kube_name)
        ours_cond = e2e.wait_unschedulable("ours-big")
        theirs_cond = wait_for(lambda: e2e.condition("theirs-big"), 60, what="kube's verdict")
    assert ours_cond["message"] == theirs_cond["message"]
    assert "1 cannot allocate all claims" in ours_cond["message"]


def _configz(url: str, token: str) -> JSON:
    req = urllib.request.Request(url + "/configz", headers={"Authorization": f"Bearer {token}"})
    import ssl

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
        data: JSON = json.loads(resp.read())
    return data


def _dra_args(configz: JSON) -> JSON:
    profile = configz["componentconfig"]["profiles"][0]
    found = [pc["args"] for pc in profile["pluginConfig"] if pc["name"] == "DynamicResources"]
    assert len(found) == 1, profile["pluginConfig"]
    args: JSON = found[0]
    return args


@pytest.mark.kube
@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_default_filter_timeout_is_kube_schedulers(e2e: E2E) -> None:
    """DynamicResources' defaulted args, as the real kube-scheduler reports them."""
    from ksched.config import default_plugin_args

    cp = e2e.controlplane
    assert cp is not None
    cfg = e2e.config(profiles=[{"schedulerName": f"kube-{e2e.run_id}"}])
    with cp.kube_scheduler(cfg, name=f"kube-scheduler-{e2e.run_id}") as ks:
        theirs = _dra_args(_configz(ks.url, cp.admin.token))
    print("kube-scheduler DynamicResources args:", theirs)  # pytest -s
    assert theirs["filterTimeout"] == "10s"
    ours = default_plugin_args("DynamicResources", {})
    assert ours == {k: v for k, v in theirs.items() if k not in ("kind", "apiVersion")}
