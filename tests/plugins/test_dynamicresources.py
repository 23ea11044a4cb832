"""DynamicResources at each extension point, after upstream's dynamicresources_test.go:
claims by name and from templates, missing/deleted/foreign claims, missing classes, no
devices, CEL errors, claims allocated elsewhere, in-flight allocations, PostFilter's
deallocation, Reserve/Unreserve/PreBind with the claim writes, queueing hints, Score."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from ksched.api.objects import decode
from ksched.api.resource import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import NodeToStatus, QueueingHint
from ksched.framework.listers import RevisionedStore
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.plugins.dynamicresources import DynamicResources
from ksched.plugins.dynamicresources.plugin import CLAIMS, CLASSES, SLICES
from ksched.sim.claim_controller import SimulatedClaimController
from ksched.sim.cluster_file import ClusterFile
from ksched.testing.objects import (
    device_requests,
    make_device_class,
    make_resource_claim,
    make_resource_slice,
)
from tests.factories import make_node, make_node_info, make_pod, make_snapshot

DRIVER = "some-driver"
NODE = make_node("worker")
OTHER = make_node("worker-2")


class Cluster:
    """A ClusterClient over the simulated claim store (resourceVersion checks included)."""

    def __init__(self, ctl: SimulatedClaimController) -> None:
        self.ctl = ctl
        self.writes: list[str] = []

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        self.writes.append("get")
        return self.ctl.get(namespace, name)

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        self.writes.append("update")
        return self.ctl.update(claim)

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        self.writes.append("update-status")
        return self.ctl.update_status(claim)

    async def patch_resource_claim_status(
        self, namespace: str, name: str, patch: dict[str, Any]
    ) -> None:
        self.writes.append("patch-status")
        self.ctl.patch_status(namespace, name, patch)


def result(device: str) -> dict[str, str]:
    return {"request": "req-0", "driver": DRIVER, "pool": "worker", "device": device}


ON_WORKER = {
    "devices": {"results": [result("dev-0")]},
    "nodeSelector": {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker"]}]}
        ]
    },
}


def _claim(name: str = "claim", count: int = 1, *selectors: str, **status: Any) -> ResourceClaim:
    raw = make_resource_claim(name, device_requests("class", count, *selectors))
    raw["metadata"]["uid"] = f"uid-{name}"
    if status:
        raw["status"] = status
    return decode(raw, ResourceClaim)


class Env:
    def __init__(
        self,
        claims: list[ResourceClaim],
        *,
        devices: int = 1,
        classes: bool = True,
        node: str = "worker",
        device_fields: dict[str, Any] | None = None,
        clock: Any = None,
    ) -> None:
        cf = ClusterFile()
        cf.dra["resourceclaims"] = claims
        devs = [{"name": f"dev-{i}", **(device_fields or {})} for i in range(devices)]
        cf.dra["resourceslices"] = [decode(make_resource_slice(node, DRIVER, devs), ResourceSlice)]
        if classes:
            cf.dra["deviceclasses"] = [
                decode(make_device_class("class", f'device.driver == "{DRIVER}"'), DeviceClass)
            ]
        self.ctl = SimulatedClaimController(cf, lambda *a: None)
        self.cluster = Cluster(self.ctl)
        handle = Handle(cluster=self.cluster)  # type: ignore[arg-type]
        if clock is not None:
            handle.clock = clock
        handle.listers.update(self.ctl.listers())
        for key in (CLAIMS, SLICES, CLASSES):
            handle.listers.setdefault(key, RevisionedStore())
        self.pl = DynamicResources(None, handle)
        self.snap = make_snapshot([NODE, OTHER])

    def claim(self, name: str = "claim") -> ResourceClaim:
        c = self.ctl.get("default", name)
        assert c is not None
        return c

    def pre_filter(self, pod: PodInfo, state: CycleState) -> Status:
        _, st = self.pl.pre_filter(state, pod, self.snap)
        return st or Status(Code.SUCCESS)

    def filter(self, pod: PodInfo, state: CycleState, node: Any = NODE) -> Status:
        return self.pl.filter(state, pod, make_node_info(node)) or Status(Code.SUCCESS)

    def schedule(self, pod: PodInfo, node: str = "worker") -> tuple[CycleState, Status]:
        """PreFilter, Filter on the node, Reserve, PreBind."""
        state = CycleState()
        for st in (self.pre_filter(pod, state), self.filter(pod, state)):
            if not st.is_success():
                return state, st
        st = self.pl.reserve(state, pod, node) or Status(Code.SUCCESS)
        if not st.is_success():
            return state, st
        pb = anyio.run(self.pl.pre_bind, state, pod, node)
        return state, pb or Status(Code.SUCCESS)


def pod_with(claim_name: str = "claim", **kw: Any) -> PodInfo:
    return make_pod(
        "my-pod", resourceClaims=[{"name": "res", "resourceClaimName": claim_name}], **kw
    )


def pod_with_template(status_claim: str | None, **kw: Any) -> PodInfo:
    raw_status = (
        {"resourceClaimStatuses": [{"name": "res", "resourceClaimName": status_claim}]}
        if status_claim
        else {}
    )
    p = make_pod("my-pod", resourceClaims=[{"name": "res", "resourceClaimTemplateName": "t"}])
    status = msgspec.convert(raw_status, type(p.pod.status)) if raw_status else p.pod.status
    return p.with_pod(msgspec.structs.replace(p.pod, status=status))


def owned(claim: ResourceClaim, pod: PodInfo) -> ResourceClaim:
    from ksched.api.objects import OwnerReference

    ref = OwnerReference(kind="Pod", name=pod.name, uid=pod.uid, controller=True)
    meta = msgspec.structs.replace(claim.metadata, owner_references=[ref])
    return msgspec.structs.replace(claim, metadata=meta)


# ---- PreEnqueue / PreFilter ---------------------------------------------------------------


def emulating(env: Env, version: str) -> Env:
    """``env`` with its plugin built anew for kube-scheduler ``version`` ("1.36")."""
    from ksched.features.gates import set_feature_gates

    handle = env.pl._handle
    handle.features = set_feature_gates([], [version])
    env.pl = DynamicResources(None, handle)
    return env


@pytest.mark.parametrize(
    ("version", "reason"), [("1.36", "no new claims to deallocate"), ("1.37", "")]
)
def test_pod_without_claims_is_skipped_and_post_filter_has_nothing_to_deallocate(
    version: str, reason: str
) -> None:
    """v1.37 logs the reason instead (nothing of it in the FitError)."""
    env = emulating(Env([]), version)
    pod = make_pod("plain")
    state = CycleState()
    assert env.pl.pre_enqueue(pod) is None
    assert env.pre_filter(pod, state).code == Code.SKIP
    _, st = env.pl.post_filter(state, pod, NodeToStatus())
    assert st is not None and st.code == Code.UNSCHEDULABLE
    assert st.message() == reason


def test_post_filter_without_its_pre_filter_state_is_upstreams_not_found_error() -> None:
    """Another PreFilter rejected the pod first (a missing PVC): kube-scheduler's
    getStateData fails and the FitError ends ". not found", with no preemption."""
    env = Env([])
    _, st = env.pl.post_filter(CycleState(), make_pod("plain"), NodeToStatus())
    assert st is not None and st.code == Code.ERROR
    assert st.message() == "not found"


@pytest.mark.parametrize(
    ("pod", "claims", "message"),
    [
        (pod_with("missing"), [], 'resourceclaim.resource.k8s.io "missing" not found'),
        (pod_with_template(None), [], 'pod "default/my-pod": resource claim not found'),
        (
            pod_with_template("generated"),
            [_claim("generated")],  # not owned by the pod
            "ResourceClaim default/generated was not created for pod default/my-pod "
            "(pod is not owner)",
        ),
        (
            pod_with("claim"),
            [
                msgspec.structs.replace(
                    _claim(),
                    metadata=msgspec.structs.replace(
                        _claim().metadata, deletion_timestamp="2026-01-01T00:00:00Z"
                    ),
                )
            ],
            'resourceclaim "claim" is being deleted',
        ),
    ],
    ids=["missing-claim", "missing-template-claim", "not-owner", "deleted-claim"],
)
def test_pre_enqueue_and_pre_filter_wait_for_usable_claims(
    pod: PodInfo, claims: list[ResourceClaim], message: str
) -> None:
    env = Env(claims)
    st = env.pl.pre_enqueue(pod)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == message
    assert env.pre_filter(pod, CycleState()).message() == message


def test_claim_from_template_owned_by_the_pod_is_used() -> None:
    pod = pod_with_template("generated")
    env = Env([owned(_claim("generated"), pod)])
    _, st = env.schedule(pod)
    assert st.is_success()
    assert env.claim("generated").status.allocation is not None


def test_missing_class() -> None:
    env = Env([_claim()], classes=False)
    st = env.pre_filter(pod_with(), CycleState())
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == "request req-0: device class class does not exist"


def test_claim_in_use_by_too_many_consumers() -> None:
    reserved = [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(256)]
    env = Env([_claim(allocation=ON_WORKER, reservedFor=reserved)])
    st = env.pre_filter(pod_with(), CycleState())
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim in use")


# ---- Filter -------------------------------------------------------------------------------


def test_no_devices_cannot_allocate_all_claims() -> None:
    env = Env([_claim(count=2)])
    state = CycleState()
    assert env.pre_filter(pod_with(), state).is_success()
    st = env.filter(pod_with(), state)
    assert (st.code, st.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "cannot allocate all claims",
    )
    # the other node has no slice at all
    assert env.filter(pod_with(), state, OTHER).message() == "cannot allocate all claims"


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("1.36", "claim default/claim: selector #0: CEL runtime error: no such key: y"),
        (
            "1.37",
            "claim default/claim: selector #0 on device some-driver/worker/dev-0: CEL runtime "
            "error: no such key: y. consider using CEL optional chaining (.? followed by "
            "orValue()) or guarding the check with has() for optional fields",
        ),
    ],
)
def test_cel_runtime_error_is_an_error_status(version: str, message: str) -> None:
    env = emulating(Env([_claim("claim", 1, 'device.attributes["x"].y == 1')]), version)
    state = CycleState()
    assert env.pre_filter(pod_with(), state).is_success()
    st = env.filter(pod_with(), state)
    assert st.code == Code.ERROR
    assert st.message() == message


def _rejected(**by_node: Status) -> NodeToStatus:
    """The Filter statuses as the runtime records them: ours carry the plugin's name."""
    out = NodeToStatus()
    for name, st in by_node.items():
        out.set(name, st.with_plugin(DynamicResources.name))
    return out


def test_allocated_claim_not_available_on_node_is_deallocated_by_post_filter() -> None:
    env = Env([_claim(allocation=ON_WORKER)])
    pod = pod_with()
    state = CycleState()
    assert env.pre_filter(pod, state).is_success()
    assert env.filter(pod, state).is_success()  # its own node
    st = env.filter(pod, state, OTHER)
    assert st.message() == "resourceclaim not available on the node"
    _, pf = env.pl.post_filter(state, pod, _rejected(**{OTHER.metadata.name: st}))
    assert pf is not None and pf.message() == "deallocation of ResourceClaim completed"
    assert env.claim().status.allocation is None


def test_post_filter_ignores_nodes_another_plugin_rejected() -> None:
    """Upstream's Filter never runs on a node an earlier plugin rejected, so it never
    found the claim unavailable there (ksched's filter_batch judges every node)."""
    env = Env([_claim(allocation=ON_WORKER)])
    pod = pod_with()
    state = CycleState()
    assert env.pre_filter(pod, state).is_success()
    env.filter(pod, state, OTHER)
    taint = Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "untolerated taint", plugin="TaintToleration"
    )
    _, pf = env.pl.post_filter(state, pod, _rejected(**{OTHER.metadata.name: taint}))
    assert pf is not None and pf.message() == ""
    assert env.claim().status.allocation is not None


@pytest.mark.parametrize(("version", "reason"), [("1.36", "still not schedulable"), ("1.37", "")])
def test_post_filter_keeps_claims_others_use(version: str, reason: str) -> None:
    other_pod = [{"resource": "pods", "name": "x", "uid": "x"}]
    env = emulating(Env([_claim(allocation=ON_WORKER, reservedFor=other_pod)]), version)
    pod = pod_with()
    state = CycleState()
    env.pre_filter(pod, state)
    st = env.filter(pod, state, OTHER)
    _, pf = env.pl.post_filter(state, pod, _rejected(**{OTHER.metadata.name: st}))
    assert pf is not None and pf.message() == reason
    assert env.claim().status.allocation is not None


# ---- Reserve / PreBind / Unreserve --------------------------------------------------------


def test_allocation_is_written_with_finalizer_and_reservation() -> None:
    env = Env([_claim()])
    pod = pod_with()
    _, st = env.schedule(pod)
    assert st.is_success()
    claim = env.claim()
    assert claim.status.allocation is not None
    assert [(r.device, r.pool, r.driver) for r in claim.status.allocation.devices.results] == [
        ("dev-0", "worker", DRIVER)
    ]
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [
        ("pods", "my-pod", pod.uid)
    ]
    assert "resource.kubernetes.io/delete-protection" in claim.metadata.finalizers
    assert env.cluster.writes == ["update", "update-status"]
    assert not env.pl.in_flight


def test_in_flight_allocation_blocks_devices_and_sharing_pods() -> None:
    env = Env([_claim("a"), _claim("b")])
    pa = pod_with("a")
    state = CycleState()
    env.pre_filter(pa, state)
    env.filter(pa, state)
    assert env.pl.reserve(state, pa, "worker") is None
    # the only device is in flight for claim a: claim b cannot get it
    pb = make_pod("other", resourceClaims=[{"name": "res", "resourceClaimName": "b"}])
    sb = CycleState()
    env.pre_filter(pb, sb)
    assert env.filter(pb, sb).message() == "cannot allocate all claims"
    # a pod sharing claim a waits for the allocation to finish
    sharer = make_pod("sharer", resourceClaims=[{"name": "res", "resourceClaimName": "a"}])
    assert env.pre_filter(sharer, CycleState()).message() == (
        "resource claim default/a is in the process of being allocated"
    )
    # Unreserve rolls the in-flight allocation back: b can have the device now
    env.pl.unreserve(state, pa, "worker")
    sb2 = CycleState()
    env.pre_filter(pb, sb2)
    assert env.filter(pb, sb2).is_success()


def test_claim_allocated_elsewhere_in_the_meantime_is_an_error() -> None:
    env = Env([_claim()], devices=2)
    pod = pod_with()
    state = CycleState()
    env.pre_filter(pod, state)
    env.filter(pod, state)
    env.pl.reserve(state, pod, "worker")
    # meanwhile someone else allocated it (a newer resourceVersion comes back on conflict)
    other = env.claim()
    alloc = decode({"devices": {"results": [result("dev-1")]}}, AllocationResult)
    status = msgspec.structs.replace(other.status, allocation=alloc)
    env.ctl.update_status(msgspec.structs.replace(other, status=status))
    st = anyio.run(env.pl.pre_bind, state, pod, "worker")
    assert st is not None and st.code == Code.ERROR
    assert st.message() == "claim default/claim got allocated elsewhere in the meantime"
    assert env.cluster.writes[:2] == ["update", "get"]  # the conflict made it read again
    assert not env.pl.in_flight


def test_unreserve_removes_the_reservation_it_made() -> None:
    env = Env([_claim()])
    pod = pod_with()
    state, st = env.schedule(pod)
    assert st.is_success() and env.claim().status.reserved_for
    env.pl.unreserve(state, pod, "worker")
    assert env.cluster.writes[-1] == "patch-status"
    assert env.claim().status.reserved_for == []
    assert env.claim().status.allocation is not None  # kept: the pod will use it again


# ---- queueing hints and Score ---------------------------------------------------------------


def test_claim_change_hints() -> None:
    env = Env([_claim()])
    pod = pod_with()
    claim = env.claim()
    hint = env.pl.is_schedulable_after_claim_change
    assert hint(pod, None, claim) == QueueingHint.QUEUE  # created
    assert hint(pod, claim, claim) == QueueingHint.SKIP  # status unchanged
    other = _claim("other")
    assert hint(pod, None, other) == QueueingHint.SKIP  # not the pod's
    alloc = {"devices": {"results": []}}
    allocated = decode(
        {**msgspec.to_builtins(other), "status": {"allocation": alloc}}, ResourceClaim
    )
    assert hint(pod, allocated, other) == QueueingHint.QUEUE  # deallocated: devices freed
    # deleted (v1.37 registers it): only an allocated claim's deletion frees devices
    assert hint(pod, allocated, None) == QueueingHint.QUEUE
    assert hint(pod, claim, None) == QueueingHint.SKIP


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_claim_deletion_is_registered_from_1_37(version: str) -> None:
    env = emulating(Env([]), version)
    events = {(e.event.resource, e.event.action) for e in env.pl.events_to_register()}
    assert (("ResourceClaim", "Delete") in events) == (version == "1.37")


def test_pod_change_hint_queues_once_the_generated_claim_is_named() -> None:
    pod = pod_with_template(None)
    env = Env([owned(_claim("gen"), pod)])
    named = pod_with_template("gen")
    named = named.with_pod(msgspec.structs.replace(named.pod, metadata=pod.pod.metadata))
    hint = env.pl.is_schedulable_after_pod_change
    assert hint(pod, pod, pod) == QueueingHint.SKIP
    assert hint(pod, pod, named) == QueueingHint.QUEUE


def test_score_prefers_earlier_subrequests() -> None:
    raw = make_resource_claim(
        "claim",
        {
            "requests": [
                {
                    "name": "req-0",
                    "firstAvailable": [
                        {"name": "two", "deviceClassName": "class", "count": 2},
                        {"name": "one", "deviceClassName": "class", "count": 1},
                    ],
                }
            ]
        },
    )
    raw["metadata"]["uid"] = "uid-claim"
    env = Env([decode(raw, ResourceClaim)], devices=1)
    pod = pod_with()
    state = CycleState()
    env.pre_filter(pod, state)
    assert env.filter(pod, state).is_success()
    assert env.pl.score(state, pod, make_node_info(NODE)) == 8 - 1  # the second choice


# ---- the batch Filter ---------------------------------------------------------------------


def _batch(env: Env, pod: PodInfo, state: CycleState) -> dict[str, bool]:
    mask = env.pl.filter_batch(state, pod, env.snap)
    return {ni.name: bool(mask[r]) for r, ni in enumerate(env.snap.node_infos)}


def _per_node(env: Env, pod: PodInfo, state: CycleState) -> dict[str, bool]:
    return {ni.name: env.filter(pod, state, ni.node).is_success() for ni in env.snap.node_infos}


@pytest.mark.parametrize("devices", [0, 1, 2])
@pytest.mark.parametrize("count", [1, 2])
def test_filter_batch_counts_what_filter_allocates(devices: int, count: int) -> None:
    env = Env([_claim(count=count)], devices=devices)
    pod = pod_with()
    state = CycleState()
    assert env.pre_filter(pod, state).is_success()
    assert _batch(env, pod, state) == _per_node(env, pod, state)
    assert _batch(env, pod, state)["worker"] is (devices >= count)


def test_filter_batch_sees_devices_taken_since_the_last_pod() -> None:
    env = Env([_claim("a"), _claim("b")], devices=1)
    pa, pb = pod_with("a"), make_pod("b", resourceClaims=[{"name": "r", "resourceClaimName": "b"}])
    sa = CycleState()
    env.pre_filter(pa, sa)
    assert _batch(env, pa, sa)["worker"]
    # Reserve allocates on the node the batch counted on (no per-node Filter ran)
    assert env.pl.reserve(sa, pa, "worker") is None
    assert anyio.run(env.pl.pre_bind, sa, pa, "worker") is None
    sb = CycleState()
    env.pre_filter(pb, sb)
    assert _batch(env, pb, sb) == {"worker": False, "worker-2": False}
    assert env.filter(pb, sb).message() == "cannot allocate all claims"


def test_filter_batch_runs_filter_for_claims_counting_cannot_decide() -> None:
    claim = decode(
        {
            **make_resource_claim("claim", device_requests("class", 2)),
            "spec": {
                "devices": {
                    **device_requests("class", 2),
                    "constraints": [{"matchAttribute": f"{DRIVER}/root"}],
                }
            },
        },
        ResourceClaim,
    )
    env = Env([claim], devices=3)
    pod = pod_with()
    state = CycleState()
    env.pre_filter(pod, state)
    # no device has the attribute: the search (not a count) says no
    assert _batch(env, pod, state) == {"worker": False, "worker-2": False}


def test_filter_batch_error_fails_the_cycle_with_filters_words() -> None:
    from ksched.framework.runtime import _from_exception
    from ksched.framework.status import StatusError

    env = Env([_claim("claim", 1, 'device.attributes["x"].y == 1')])
    pod = pod_with()
    state = CycleState()
    env.pre_filter(pod, state)
    with pytest.raises(StatusError) as e:
        env.pl.filter_batch(state, pod, env.snap)
    st = _from_exception(e.value, "DynamicResources", "Filter")
    assert (st.code, st.message()) == (
        Code.ERROR,
        'running "DynamicResources" filter plugin: claim default/claim: selector #0 on device '
        "some-driver/worker/dev-0: CEL runtime error: no such key: y. consider using CEL "
        "optional chaining (.? followed by orValue()) or guarding the check with has() for "
        "optional fields",
    )


def test_taken_devices_follow_claim_changes_incrementally() -> None:
    from ksched.dra.allocator import allocated_devices

    env = Env([_claim(f"c{i}") for i in range(4)], devices=4)
    for i in range(3):
        pod = make_pod(f"p{i}", resourceClaims=[{"name": "r", "resourceClaimName": f"c{i}"}])
        assert env.schedule(pod)[1].is_success()
        everything = allocated_devices(env.ctl.claims.values())
        assert env.pl.allocated() == everything and len(everything) == i + 1
    # a deallocation (PostFilter, or the claim controller) frees the device again
    c0 = env.claim("c0")
    env.ctl.update_status(msgspec.structs.replace(c0, status=type(c0.status)()))
    assert env.pl.allocated() == allocated_devices(env.ctl.claims.values())
    assert len(env.pl.allocated()) == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    devices=hst.integers(0, 4),
    counts=hst.lists(hst.integers(1, 3), min_size=1, max_size=3),
    done=hst.integers(0, 3),
)
def test_filter_batch_agrees_with_filter_as_claims_get_allocated(
    devices: int, counts: list[int], done: int
) -> None:
    """However many devices earlier pods took, the counting batch Filter and the
    allocating per-node Filter agree on every node."""
    claims = [_claim(f"c{i}", n) for i, n in enumerate(counts)]
    env = Env([*claims, *(_claim(f"e{i}") for i in range(done))], devices=devices)
    for i in range(done):  # earlier pods, each taking a device when one is left
        env.schedule(
            make_pod(f"e{i}", resourceClaims=[{"name": "r", "resourceClaimName": f"e{i}"}])
        )
    pod = make_pod(
        "p",
        resourceClaims=[
            {"name": f"r{i}", "resourceClaimName": f"c{i}"} for i in range(len(counts))
        ],
    )
    state = CycleState()
    assert env.pre_filter(pod, state).is_success()
    batch = _batch(env, pod, state)
    assert batch == _per_node(env, pod, state)
    # and both agree with the search itself (allocate, not a count)
    s = state.read("DynamicResources")
    assert batch == {
        ni.name: bool(s.allocator.allocate(ni.node, s.pending)) for ni in env.snap.node_infos
    }


@pytest.mark.parametrize("cpu", ["1", "8"], ids=["earlier-filter-rejects", "node-fits"])
def test_a_failing_selector_is_an_error_only_on_nodes_the_earlier_filters_pass(cpu: str) -> None:
    """Upstream runs DynamicResources' Filter on a node only once the Filter plugins before
    it pass there: a selector failing on the devices of a node NodeResourcesFit rejected is
    no error (the counting path used to raise it for the whole cycle; oracle seed 4016)."""
    from ksched.testing import make_node as node_manifest
    from ksched.testing import make_pod as pod_manifest
    from ksched.testing.harness import schedule

    overflow = f'device.attributes["{DRIVER}"].index + 9223372036854775807 > 0'
    devices = [{"name": f"dev-{i}", "attributes": {"index": {"int": i}}} for i in range(2)]
    objects = [
        make_device_class("class", f'device.driver == "{DRIVER}"'),
        make_resource_slice("worker", DRIVER, devices),
        make_resource_claim("claim", device_requests("class", 2, overflow)),
    ]
    pod = pod_manifest("p", cpu="2", resourceClaims=[{"name": "c", "resourceClaimName": "claim"}])
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    got = schedule(config, pod, [node_manifest("worker", cpu=cpu)], objects=objects)
    if cpu == "1":
        assert got.node is None and got.message.startswith(
            "0/1 nodes are available: 1 Insufficient cpu."
        ), got.message
    else:
        assert got == (
            None,
            'running "DynamicResources" filter plugin: claim default/claim: selector #0 on '
            "device some-driver/worker/dev-1: CEL runtime error: integer overflow",
        )


def _wants_capacity(name: str, amount: str) -> ResourceClaim:
    raw = make_resource_claim(name, device_requests("class", 1))
    raw["metadata"]["uid"] = f"uid-{name}"
    raw["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": {"mem": amount}}
    return decode(raw, ResourceClaim)


def test_shares_of_a_device_count_allocated_and_in_flight_capacity() -> None:
    """Claims share a device that allows multiple allocations until its capacity is
    used up: by allocated claims (the store) and by allocations in flight alike."""
    env = Env(
        [_wants_capacity(c, "2") for c in ("a", "b", "c")],
        device_fields={"allowMultipleAllocations": True, "capacity": {"mem": {"value": "4"}}},
    )
    pa = make_pod("pa", resourceClaims=[{"name": "r", "resourceClaimName": "a"}])
    assert env.schedule(pa)[1].is_success()
    (got,) = env.claim("a").status.allocation.devices.results  # type: ignore[union-attr]
    assert (got.device, got.consumed_capacity, bool(got.share_id)) == ("dev-0", {"mem": "2"}, True)
    # b's share is in flight (Reserve, no PreBind yet): c finds no capacity left
    pb = make_pod("pb", resourceClaims=[{"name": "r", "resourceClaimName": "b"}])
    sb = CycleState()
    env.pre_filter(pb, sb)
    assert env.filter(pb, sb).is_success()
    assert env.pl.reserve(sb, pb, "worker") is None
    pc = make_pod("pc", resourceClaims=[{"name": "r", "resourceClaimName": "c"}])
    sc = CycleState()
    env.pre_filter(pc, sc)
    assert env.filter(pc, sc).message() == "cannot allocate all claims"
    # b rolled back: c gets the rest of the device
    env.pl.unreserve(sb, pb, "worker")
    assert env.schedule(pc)[1].is_success()
    assert env.pl.allocated() == set()  # shares take no device from others


ATTACH = {"bindingConditions": ["Attached"], "bindingFailureConditions": ["Failed"]}


def _set_device_condition(env: Env, name: str, kind: str, **fields: str) -> None:
    c = env.claim(name)
    st = {"driver": DRIVER, "pool": "worker", "device": "dev-0"}
    cond = {"type": kind, "status": "True", "reason": "R", "message": "M", **fields}
    status = msgspec.structs.replace(c.status, devices=[{**st, "conditions": [cond]}])
    env.ctl.update_status(msgspec.structs.replace(c, status=status))


async def _pre_bind_while(
    env: Env, clock: Any, pod: PodInfo, state: CycleState, then: Any
) -> Status:
    """PreBind, with ``then()`` run once it waits (on the fake clock)."""
    import anyio

    out: list[Status] = []

    async def bind() -> None:
        out.append(await env.pl.pre_bind(state, pod, "worker") or Status(Code.SUCCESS))

    async with anyio.create_task_group() as tg:
        tg.start_soon(bind)
        while clock.sleeping == 0 and not out:
            await anyio.sleep(0)
        await then()
    return out[0]


def _reserved(env: Env, claim: str) -> tuple[PodInfo, CycleState]:
    pod = make_pod("p", resourceClaims=[{"name": "r", "resourceClaimName": claim}])
    state = CycleState()
    assert env.pre_filter(pod, state).is_success()
    assert env.filter(pod, state).is_success()
    assert env.pl.reserve(state, pod, "worker") is None
    return pod, state


def test_pre_bind_waits_for_binding_conditions() -> None:
    from ksched.util.clock import FakeClock

    clock = FakeClock()
    env = Env([_claim("a")], device_fields=ATTACH, clock=clock)
    pod, state = _reserved(env, "a")

    async def attach() -> None:
        _set_device_condition(env, "a", "Attached")
        clock.advance(5)

    st = anyio.run(_pre_bind_while, env, clock, pod, state, attach)
    assert st.is_success(), st.message()
    alloc = env.claim("a").status.allocation
    assert alloc is not None and alloc.allocation_timestamp  # written with the allocation
    (r,) = alloc.devices.results
    assert (r.binding_conditions, r.binding_failure_conditions) == (["Attached"], ["Failed"])
    (ev,) = [e for e in env.pl._handle.recorder.events if e.reason == "BindingConditionsPending"]  # type: ignore[attr-defined]
    assert ev.note == "waiting for binding conditions for device on node worker"


def test_binding_failure_condition_fails_the_attempt() -> None:
    from ksched.util.clock import FakeClock

    clock = FakeClock()
    env = Env([_claim("a")], device_fields=ATTACH, clock=clock)
    pod, state = _reserved(env, "a")

    async def fail() -> None:
        _set_device_condition(env, "a", "Failed", reason="NoPort", message='port "x" busy')
        clock.advance(5)

    st = anyio.run(_pre_bind_while, env, clock, pod, state, fail)
    assert st.code == Code.ERROR
    assert (
        st.message() == 'device binding failed: claim=a, reason=NoPort, message="port \\"x\\" busy"'
    )
    # the next attempt: the claim is not available anywhere, PostFilter deallocates it
    env.pl.unreserve(state, pod, "worker")
    again = CycleState()
    assert env.pre_filter(pod, again).is_success()
    st = env.filter(pod, again)
    assert st.message() == "resourceclaim not available on the node"
    _, pf = env.pl.post_filter(again, pod, _rejected(worker=st))
    assert pf is not None and pf.message() == "deallocation of ResourceClaim completed"
    assert env.claim("a").status.allocation is None


def test_binding_conditions_time_out() -> None:
    from ksched.util.clock import FakeClock

    clock = FakeClock()
    env = Env([_claim("a")], device_fields=ATTACH, clock=clock)
    pod, state = _reserved(env, "a")

    async def never() -> None:
        while clock.sleeping:  # each poll, 5 s apart, until PreBind gives up
            clock.advance_to_next()
            await anyio.sleep(0)

    st = anyio.run(_pre_bind_while, env, clock, pod, state, never)
    assert st.code == Code.ERROR
    assert st.message() == "device binding timeout: context deadline exceeded"
    assert clock.now() == env.pl.binding_timeout == 600.0
    # past the timeout (allocationTimestamp + 10m), the claim is not available either
    env.pl.unreserve(state, pod, "worker")
    again = CycleState()
    env.pre_filter(pod, again)
    assert env.filter(pod, again).message() == "resourceclaim not available on the node"


def test_a_claim_whose_binding_failed_is_available_on_no_node() -> None:
    """Node-independent: the batch path that counts devices for the other claims sees it
    too (the allocation has no node selector to rule nodes out)."""
    failed = _claim(
        "a",
        allocation={"devices": {"results": [{**result("dev-0"), **ATTACH}]}},
        devices=[
            {
                "driver": DRIVER,
                "pool": "worker",
                "device": "dev-0",
                "conditions": [{"type": "Failed", "status": "True", "reason": "R"}],
            }
        ],
    )
    env = Env([failed, _claim("b")], devices=2)
    pod = make_pod(
        "p",
        resourceClaims=[
            {"name": "r0", "resourceClaimName": "a"},
            {"name": "r1", "resourceClaimName": "b"},
        ],
    )
    state = CycleState()
    assert env.pre_filter(pod, state).is_success()
    assert not env.pl.filter_batch(state, pod, env.snap).any()
    assert env.filter(pod, state).message() == "resourceclaim not available on the node"


def test_switching_consumable_capacity_off_counts_shares_as_taken_devices() -> None:
    """With DRAConsumableCapacity off (a feature gate), a device shared by an allocated
    claim is taken, as upstream's GatherAllocatedState falls back to."""
    from ksched.dra.features import Features

    env = Env(
        [_wants_capacity("a", "2"), _claim("b")],
        device_fields={"allowMultipleAllocations": True, "capacity": {"mem": {"value": "4"}}},
    )
    pa = make_pod("pa", resourceClaims=[{"name": "r", "resourceClaimName": "a"}])
    assert env.schedule(pa)[1].is_success()
    assert env.pl.allocated() == set()
    env.pl.features = Features(consumable_capacity=False)
    assert env.pl.allocated() == {(DRIVER, "worker", "dev-0")}
    pb = make_pod("pb", resourceClaims=[{"name": "r", "resourceClaimName": "b"}])
    sb = CycleState()
    env.pre_filter(pb, sb)
    assert env.filter(pb, sb).message() == "cannot allocate all claims"


def test_feature_gates_switch_the_dra_behaviours() -> None:
    """DynamicResources reads its allocation features from the effective gates, as
    upstream's ``structured.Features``."""
    from ksched.dra.features import Features
    from ksched.features.gates import set_feature_gates

    def features(*flags: str) -> Features:
        return DynamicResources(None, Handle(features=set_feature_gates(list(flags)))).features

    assert features() == Features()
    off = "DRAConsumableCapacity=false,DRADeviceTaints=false,DRADeviceTaintRules=false"
    assert features(off) == Features(consumable_capacity=False, device_taints=False)
    assert features("DRADeviceBindingConditions=false") == Features(binding_conditions=False)
    assert features("DRAFractionalCapacityRange=true") == Features(fractional_capacity_range=True)
    v1_36 = DynamicResources(None, Handle(features=set_feature_gates([], ["1.36"]))).features
    assert v1_36 == Features(kube_1_37=False)  # 1.36 has no DRAFractionalCapacityRange
