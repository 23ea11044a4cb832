"""DynamicResources with extended resources backed by DRA (KEP-5004), after upstream's
dynamicresources_test.go extended-resource cases: the special claim made in memory at
PreFilter, per node at Filter (none where device plugins advertise the resource, "cannot
fit resource" where a request is neither advertised nor backed), created in PreBind with
the annotation and the pod as owner, allocated and reserved, the pod's
extendedResourceClaimStatus written; Unreserve deletes a created claim; a claim left
from an earlier cycle makes Filter fail and PostFilter delete it; in-flight devices are
never handed out twice."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from ksched.api.objects import Node, decode
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from ksched.dra.extended import EXTENDED_CLAIM_ANNOTATION, IN_MEMORY_NAME
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import NodeToStatus
from ksched.framework.listers import RevisionedStore
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.plugins.dynamicresources import DynamicResources
from ksched.plugins.dynamicresources.plugin import CLAIMS, CLASSES, SLICES
from ksched.sim.claim_controller import SimulatedClaimController
from ksched.sim.cluster_file import ClusterFile
from ksched.testing.objects import make_resource_slice
from tests.factories import make_node, make_node_info, make_pod, make_snapshot

from .test_dynamicresources import Cluster as ClaimCluster

DRIVER = "gpu.example.com"
GPU = "example.com/gpu"
DRA_NODE = make_node("worker")
PLUGIN_NODE = make_node("plugin", allocatable={GPU: "2"})


class Cluster(ClaimCluster):
    """The claim writes plus claim creation/deletion and the pod status write."""

    def __init__(self, ctl: SimulatedClaimController) -> None:
        super().__init__(ctl)
        self.pod_status: dict[str, dict[str, Any]] = {}

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        self.writes.append("create")
        return self.ctl.create(claim)

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        self.writes.append("delete")
        self.ctl.delete(namespace, name)

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        self.writes.append("pod-status")
        self.pod_status[pod.key] = status


class Env:
    def __init__(self, devices: int = 2, claims: list[ResourceClaim] = ()) -> None:  # type: ignore[assignment]
        cf = ClusterFile()
        cf.dra["deviceclasses"] = [
            decode(
                {
                    "metadata": {"name": "gpu-class"},
                    "spec": {
                        "extendedResourceName": GPU,
                        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                    },
                },
                DeviceClass,
            )
        ]
        cf.dra["resourceslices"] = [
            decode(
                make_resource_slice(
                    "worker", DRIVER, [{"name": f"gpu-{i}"} for i in range(devices)]
                ),
                ResourceSlice,
            )
        ]
        cf.dra["resourceclaims"] = list(claims)
        self.ctl = SimulatedClaimController(cf, lambda *a: None)
        self.cluster = Cluster(self.ctl)
        handle = Handle(cluster=self.cluster)  # type: ignore[arg-type]
        handle.listers.update(self.ctl.listers())
        for key in (CLAIMS, SLICES, CLASSES):
            handle.listers.setdefault(key, RevisionedStore())
        self.pl = DynamicResources(None, handle)
        self.snap = make_snapshot([DRA_NODE, PLUGIN_NODE])

    def pre_filter(self, pod: PodInfo, state: CycleState) -> Status:
        _, st = self.pl.pre_filter(state, pod, self.snap)
        return st or Status(Code.SUCCESS)

    def filter(self, pod: PodInfo, state: CycleState, node: Node = DRA_NODE) -> Status:
        return self.pl.filter(state, pod, make_node_info(node)) or Status(Code.SUCCESS)

    def schedule(self, pod: PodInfo, node: Node = DRA_NODE) -> tuple[CycleState, Status]:
        state = CycleState()
        for st in (self.pre_filter(pod, state), self.filter(pod, state, node)):
            if not st.is_success():
                return state, st
        name = node.metadata.name
        st = self.pl.reserve(state, pod, name) or Status(Code.SUCCESS)
        if not st.is_success():
            return state, st
        return state, anyio.run(self.pl.pre_bind, state, pod, name) or Status(Code.SUCCESS)

    def claims(self) -> list[ResourceClaim]:
        return list(self.ctl.claims.values())


def gpu_pod(name: str = "my-pod", n: str = "1", **extra: str) -> PodInfo:
    res = {GPU: n, **extra}
    return make_pod(name, requests={"cpu": "100m", **res}, limits=res, uid=f"uid-{name}")


def test_pod_without_backed_resources_is_skipped() -> None:
    env = Env()
    state = CycleState()
    assert env.pre_filter(make_pod("plain", requests={"cpu": "1"}), state).code == Code.SKIP
    other = make_pod("fpga", requests={"example.com/fpga": "1"}, limits={"example.com/fpga": "1"})
    assert env.pre_filter(other, CycleState()).code == Code.SKIP


def test_pre_filter_makes_the_claim_in_memory_and_filter_per_node() -> None:
    env = Env()
    pod = gpu_pod(n="2")
    state = CycleState()
    assert env.pre_filter(pod, state).is_success()
    assert env.filter(pod, state).is_success()
    # the device plugin's node: nothing for DRA to do (Fit checks the advertised amount)
    assert env.filter(pod, state, PLUGIN_NODE).is_success()
    assert env.claims() == []  # nothing written before PreBind
    st = env.filter(gpu_pod(n="3"), _pre(env, gpu_pod(n="3")))
    assert (st.code, st.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "cannot allocate all claims",
    )


def _pre(env: Env, pod: PodInfo) -> CycleState:
    state = CycleState()
    assert env.pre_filter(pod, state).is_success()
    return state


def test_unbacked_request_the_node_lacks_cannot_fit() -> None:
    env = Env()
    pod = gpu_pod(**{"example.com/fpga": "1"})
    st = env.filter(pod, _pre(env, pod))
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot fit resource")
    fpga_node = make_node("fpga", allocatable={"example.com/fpga": "1"})
    assert env.filter(pod, _pre(env, pod), fpga_node).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert env.filter(pod, _pre(env, pod), fpga_node).message() == "cannot allocate all claims"


def test_pre_bind_creates_allocates_reserves_and_writes_the_pod_status() -> None:
    env = Env()
    pod = gpu_pod()
    _, st = env.schedule(pod)
    assert st.is_success(), st
    assert env.cluster.writes == ["create", "update", "update-status", "pod-status"]
    (claim,) = env.claims()
    meta = claim.metadata
    assert meta.name.startswith("my-pod-extended-resources-") and meta.name != IN_MEMORY_NAME
    assert meta.annotations == {EXTENDED_CLAIM_ANNOTATION: "true"}
    assert [(o.kind, o.name, o.uid, o.controller) for o in meta.owner_references] == [
        ("Pod", "my-pod", "uid-my-pod", True)
    ]
    assert "resource.kubernetes.io/delete-protection" in meta.finalizers
    # cpu, example.com/gpu: the resource is the container's request 1
    req = claim.spec.devices.requests[0]
    assert (req.name, req.exactly and req.exactly.device_class_name) == (
        "container-0-request-1",
        "gpu-class",
    )
    assert claim.status.allocation is not None
    results = claim.status.allocation.devices.results
    assert [(r.request, r.driver, r.pool, r.device) for r in results] == [
        ("container-0-request-1", DRIVER, "worker", "gpu-0")
    ]
    assert [r.uid for r in claim.status.reserved_for] == ["uid-my-pod"]
    assert env.cluster.pod_status["default/my-pod"] == {
        "requestMappings": [
            {"containerName": "c", "resourceName": GPU, "requestName": "container-0-request-1"}
        ],
        "resourceClaimName": meta.name,
    }
    assert not env.pl.in_flight


def test_device_plugin_node_needs_no_claim() -> None:
    env = Env()
    _, st = env.schedule(gpu_pod(), PLUGIN_NODE)
    assert st.is_success()
    assert env.cluster.writes == [] and env.claims() == []


def test_in_flight_devices_go_to_no_other_pod() -> None:
    env = Env(devices=1)
    first, second = gpu_pod("first"), gpu_pod("second")
    s1 = _pre(env, first)
    assert env.filter(first, s1).is_success()
    assert env.pl.reserve(s1, first, "worker") is None
    s2 = _pre(env, second)
    assert env.filter(second, s2).message() == "cannot allocate all claims"
    env.pl.unreserve(s1, first, "worker")  # in memory: nothing to delete
    assert env.cluster.writes == []
    assert env.filter(second, _pre(env, second)).is_success()


def test_unreserve_deletes_the_claim_pre_bind_created() -> None:
    env = Env(devices=1)
    pod = gpu_pod()
    state, st = env.schedule(pod)
    assert st.is_success()
    env.pl.unreserve(state, pod, "worker")
    assert env.cluster.writes[-2:] == ["update", "delete"]  # the finalizer first
    assert env.claims() == []
    assert env.filter(gpu_pod("next"), _pre(env, gpu_pod("next"))).is_success()


def test_claim_of_an_earlier_cycle_fails_filter_and_post_filter_deletes_it() -> None:
    pod = gpu_pod()
    left = decode(
        {
            "metadata": {
                "name": "my-pod-extended-resources-x1y2z",
                "namespace": "default",
                "uid": "claim-uid",
                "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
                "finalizers": ["resource.kubernetes.io/delete-protection"],
                "ownerReferences": [
                    {"kind": "Pod", "name": "my-pod", "uid": "uid-my-pod", "controller": True}
                ],
            },
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "container-0-request-1",
                            "exactly": {"deviceClassName": "gpu-class"},
                        }
                    ]
                }
            },
        },
        ResourceClaim,
    )
    env = Env(claims=[left])
    state = _pre(env, pod)
    st = env.filter(pod, state)
    assert (st.code, st.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "cannot schedule extended resource claim",
    )
    _, pst = env.pl.post_filter(state, pod, NodeToStatus())
    assert pst is not None and pst.message() == "deletion of ResourceClaim completed"
    assert env.cluster.writes == ["update", "delete"] and env.claims() == []
    # another pod's claim is not this pod's
    other = msgspec.structs.replace(
        left, metadata=msgspec.structs.replace(left.metadata, owner_references=[])
    )
    env2 = Env(claims=[other])
    assert env2.filter(pod, _pre(env2, pod)).is_success()


def test_user_claims_and_extended_resources_together() -> None:
    env = Env(devices=3)
    claim = decode(
        {
            "metadata": {"name": "mine", "namespace": "default", "uid": "uid-mine"},
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "r", "exactly": {"deviceClassName": "gpu-class", "count": 2}}
                    ]
                }
            },
        },
        ResourceClaim,
    )
    env.ctl.claims["default/mine"] = claim
    env.ctl.claims.bump(claim)
    pod = make_pod(
        "both",
        requests={GPU: "1"},
        limits={GPU: "1"},
        uid="uid-both",
        resourceClaims=[{"name": "res", "resourceClaimName": "mine"}],
    )
    _, st = env.schedule(pod)
    assert st.is_success(), st
    devices = sorted(
        r.device
        for c in env.claims()
        for r in (c.status.allocation.devices.results if c.status.allocation else [])
    )
    assert devices == ["gpu-0", "gpu-1", "gpu-2"]  # each device once
    # on the device plugin's node only the user claim is allocated
    env2 = Env(devices=3)
    env2.ctl.claims["default/mine"] = claim
    env2.ctl.claims.bump(claim)
    node = make_node("worker", allocatable={GPU: "1"})
    _, st = env2.schedule(pod, node)
    assert st.is_success(), st
    assert [c.metadata.name for c in env2.claims()] == ["mine"]
    assert "create" not in env2.cluster.writes


def test_pods_with_backed_resources_are_not_signable() -> None:
    """Their Filter verdicts depend on devices other pods take, so no cycle may reuse
    another pod's (the equivalence cache)."""
    from ksched.framework.interface import NOT_SIGNABLE

    env = Env()
    assert env.pl.sign_pod(gpu_pod()) is NOT_SIGNABLE
    other = make_pod("fpga", requests={"example.com/fpga": "1"}, limits={"example.com/fpga": "1"})
    assert env.pl.sign_pod(other) is None
    assert env.pl.sign_pod(make_pod("plain", requests={"cpu": "1"})) is None
