"""The volume plugins through the daemon: VolumeBinding's static binding and dynamic
provisioning with WaitForFirstConsumer (against a CSI driver's reported storage capacity),
its rejection of unbound Immediate claims, and VolumeZone.

Every test has a big node in zone "a" and a small one in zone "b": the resource scores
alone put a pod on the big one (a control pod without volumes shows it), so a pod landing
on the small one got there because of its volume.

The test API server has no PV controller and no provisioner: ``pv_controller`` plays them
(in a thread) where a test needs them. On a real cluster its own PV controller binds, and
no provisioner serves the run-unique provisioner name of the dynamic provisioning test.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from ksched.testing import (
    make_csidriver,
    make_csistoragecapacity,
    make_pv,
    make_pvc,
    make_storage_class,
)

from .conftest import E2E, Kube, wait_for

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
CLAIM = "data"
CLAIM_VOLUME = [{"name": "data", "persistentVolumeClaim": {"claimName": CLAIM}}]


def _zoned_nodes(e2e: E2E) -> tuple[str, str]:
    """(the big zone-a node, the small zone-b node)."""
    big = e2e.create_node("a", cpu="32", memory="128Gi", labels={ZONE: "a"})
    small = e2e.create_node("b", cpu="2", memory="4Gi", labels={ZONE: "b"})
    return big, small


def _annotations(obj: JSON) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def _phase(obj: JSON) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def _wait_phase(e2e: E2E, kind: str, name: str, phase: str) -> JSON:
    """On a real cluster the PV controller sets phases; the test server keeps the created
    ones."""

    def got() -> JSON | None:
        obj = e2e.get_object(kind, name)
        return obj if _phase(obj) == phase else None

    return wait_for(got, 30, 0.1, f"{kind} {name} to be {phase}")


class FakePVController:
    """The PV controller's part the scheduler waits for, on the test API server.

    A claim whose PV names it (claimRef with its uid: the scheduler's PreBind wrote it) gets
    bound as upstream's ``bind`` does: PV phase Bound, then the claim's volumeName and
    bind-completed annotation, then its phase Bound. With ``provision_class``, a claim of
    that class the scheduler selected a node for first gets a new PV with node affinity for
    that node, bound to it (what an external provisioner does).
    """

    def __init__(self, e2e: E2E, provision_class: str | None = None) -> None:
        self.e2e = e2e
        self.provision_class = provision_class
        self.kube = Kube(e2e.kubeconfig)  # a client of its own: it runs in another thread
        self.bound: list[str] = []  # claims bound, in order
        # claim -> the nodeName of each pod using it when it got bound (the scheduler
        # waits in PreBind until then: None)
        self.users_at_bind: dict[str, list[str | None]] = {}
        self.provisioned: list[str] = []  # PVs created
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fake-pv-controller", daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.05):
                self.sync()
        except BaseException as e:  # reported by stop()
            self._error = e

    def sync(self) -> None:
        e2e, kube = self.e2e, self.kube
        claims = kube.ok("GET", e2e.object_path("PersistentVolumeClaim"))["items"]
        volumes = kube.ok("GET", e2e.object_path("PersistentVolume"))["items"]
        for pvc in claims:
            ann = _annotations(pvc)
            if BIND_COMPLETED in ann:
                continue
            pv = next((pv for pv in volumes if self._claims(pv, pvc)), None)
            if pv is None and SELECTED_NODE in ann and self._provisions(pvc):
                pv = self._provision(pvc, ann[SELECTED_NODE])
            if pv is not None:
                self._bind(pv, pvc)

    @staticmethod
    def _claims(pv: JSON, pvc: JSON) -> bool:
        ref = pv["spec"].get("claimRef") or {}
        meta = pvc["metadata"]
        return bool(ref.get("uid")) and (ref.get("namespace"), ref.get("name"), ref["uid"]) == (
            meta["namespace"],
            meta["name"],
            meta["uid"],
        )

    def _provisions(self, pvc: JSON) -> bool:
        return self.provision_class is not None and (
            pvc["spec"].get("storageClassName") == self.provision_class
        )

    def _provision(self, pvc: JSON, node: str) -> JSON:
        meta = pvc["metadata"]
        pv = make_pv(
            self.e2e.node_name(f"pvc-{meta['uid']}"),
            storage=pvc["spec"]["resources"]["requests"]["storage"],
            storage_class=str(self.provision_class),
            claim=(meta["namespace"], meta["name"]),
            node_affinity={HOSTNAME: [node]},
            phase="Bound",
        )
        pv["spec"]["claimRef"]["uid"] = meta["uid"]
        created: JSON = self.kube.ok("POST", self.e2e.object_path("PersistentVolume"), pv)
        self.provisioned.append(pv["metadata"]["name"])
        return created

    def _bind(self, pv: JSON, pvc: JSON) -> None:
        e2e, kube = self.e2e, self.kube
        merge = "application/merge-patch+json"
        pv_name, claim = pv["metadata"]["name"], pvc["metadata"]["name"]
        pods = kube.ok("GET", f"/api/v1/namespaces/{e2e.namespace}/pods")["items"]
        self.users_at_bind[claim] = [
            p["spec"].get("nodeName")
            for p in pods
            if any(
                (v.get("persistentVolumeClaim") or {}).get("claimName") == claim
                for v in p["spec"].get("volumes") or []
            )
        ]
        if _phase(pv) != "Bound":
            kube.ok(
                "PATCH",
                e2e.object_path("PersistentVolume", pv_name) + "/status",
                {"status": {"phase": "Bound"}},
                content_type=merge,
            )
        patch = {
            "metadata": {"annotations": {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}},
            "spec": {"volumeName": pv_name},
        }
        path = e2e.object_path("PersistentVolumeClaim", claim)
        kube.ok("PATCH", path, patch, content_type=merge)
        status = {
            "phase": "Bound",
            "accessModes": pv["spec"]["accessModes"],
            "capacity": pv["spec"]["capacity"],
        }
        kube.ok("PATCH", path + "/status", {"status": status}, content_type=merge)
        self.bound.append(claim)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.kube.close()
        if self._error is not None:
            raise AssertionError(f"the fake PV controller failed: {self._error!r}")


@contextlib.contextmanager
def pv_controller(
    e2e: E2E, provision_class: str | None = None
) -> Iterator[FakePVController | None]:
    """A running ``FakePVController`` on the test API server; None on a real cluster, whose
    own PV controller acts."""
    if e2e.server is None:
        yield None
        return
    ctl = FakePVController(e2e, provision_class)
    ctl.start()
    try:
        yield ctl
    finally:
        ctl.stop()


def _control_pod_lands_on(e2e: E2E, node: str) -> None:
    """A pod without volumes, as a check that the scores alone favour ``node``."""
    e2e.create_pod("control")
    assert e2e.wait_bound("control") == node


def test_wait_for_first_consumer_binds_the_local_pv_of_the_pods_node(e2e: E2E) -> None:
    big, small = _zoned_nodes(e2e)
    sc = e2e.node_name("local")
    e2e.create_object(make_storage_class(sc, NO_PROVISIONER, binding_mode="WaitForFirstConsumer"))
    pv = e2e.node_name("local-pv")
    e2e.create_object(
        make_pv(
            pv,
            storage="5Gi",
            storage_class=sc,
            node_affinity={HOSTNAME: [small]},
            phase="Available",
        )
    )
    pvc = e2e.create_object(make_pvc(CLAIM, storage="1Gi", storage_class=sc))
    _wait_phase(e2e, "PersistentVolume", pv, "Available")
    e2e.create_pod("user", volumes=CLAIM_VOLUME)
    with pv_controller(e2e) as ctl, e2e.daemon():
        _control_pod_lands_on(e2e, big)
        assert e2e.wait_bound("user", timeout=30) == small
        ref = e2e.get_object("PersistentVolume", pv)["spec"]["claimRef"]
        assert (ref["namespace"], ref["name"], ref["uid"]) == (
            e2e.namespace,
            CLAIM,
            pvc["metadata"]["uid"],
        )
        claim = _wait_phase(e2e, "PersistentVolumeClaim", CLAIM, "Bound")
    assert claim["spec"]["volumeName"] == pv
    # no node was ever selected for provisioning: the claim was bound to the existing PV
    assert SELECTED_NODE not in _annotations(claim)
    if ctl is not None:
        assert ctl.bound == [CLAIM]
        assert ctl.users_at_bind == {CLAIM: [None]}
        assert ctl.provisioned == []


def test_wait_for_first_consumer_provisions_on_the_selected_node(e2e: E2E) -> None:
    big, small = _zoned_nodes(e2e)
    sc = e2e.node_name("dynamic")
    # a provisioner name no real provisioner serves
    provisioner = f"e2e.ksched.example/{e2e.run_id}"
    e2e.create_object(make_storage_class(sc, provisioner, binding_mode="WaitForFirstConsumer"))
    e2e.create_object(make_pvc(CLAIM, storage="1Gi", storage_class=sc))
    e2e.create_pod("user", volumes=CLAIM_VOLUME)
    with pv_controller(e2e, provision_class=sc) as ctl, e2e.daemon():

        def selected() -> str | None:
            return _annotations(e2e.get_object("PersistentVolumeClaim", CLAIM)).get(SELECTED_NODE)

        node = wait_for(selected, 30, 0.1, "the selected-node annotation")
        # nothing but the scores decides (any node can provision): the big one wins
        assert node == big
        if ctl is None:
            # no provisioner acts: the pod waits in PreBind, unbound, until the daemon stops
            assert e2e.node_of("user") is None
            return
        assert e2e.wait_bound("user", timeout=30) == node
    assert ctl.bound == [CLAIM]
    assert ctl.users_at_bind == {CLAIM: [None]}
    claim = e2e.get_object("PersistentVolumeClaim", CLAIM)
    assert ctl.provisioned == [claim["spec"]["volumeName"]]
    assert claim["metadata"]["annotations"][SELECTED_NODE] == node != small


def test_provisioning_goes_where_the_csi_driver_reports_room(e2e: E2E) -> None:
    """The driver reports storage capacity (CSIStorageCapacity) on the small node only:
    the claim can be provisioned there alone, against the resource scores."""
    big, small = _zoned_nodes(e2e)
    sc = e2e.node_name("capacity")
    driver = f"{e2e.node_name('driver')}.ksched.example"
    e2e.create_object(make_csidriver(driver, storageCapacity=True))
    e2e.create_object(make_storage_class(sc, driver, binding_mode="WaitForFirstConsumer"))
    e2e.create_object(make_csistoragecapacity("room", sc, "10Gi", {HOSTNAME: small}))
    e2e.create_object(make_csistoragecapacity("full", sc, "500Mi", {HOSTNAME: big}))
    e2e.create_object(make_pvc(CLAIM, storage="1Gi", storage_class=sc))
    e2e.create_pod("user", volumes=CLAIM_VOLUME)
    with e2e.daemon():

        def selected() -> str | None:
            return _annotations(e2e.get_object("PersistentVolumeClaim", CLAIM)).get(SELECTED_NODE)

        assert wait_for(selected, 30, 0.1, "the selected-node annotation") == small


def test_unbound_immediate_claim_keeps_the_pod_pending(e2e: E2E) -> None:
    _zoned_nodes(e2e)
    sc = e2e.node_name("immediate")
    e2e.create_object(make_storage_class(sc, NO_PROVISIONER, binding_mode="Immediate"))
    e2e.create_object(make_pvc(CLAIM, storage="1Gi", storage_class=sc))
    e2e.create_pod("user", volumes=CLAIM_VOLUME)
    with e2e.daemon():
        cond = e2e.wait_unschedulable("user")
        assert "pod has unbound immediate PersistentVolumeClaims" in cond["message"]
        assert e2e.node_of("user") is None
    claim = e2e.get_object("PersistentVolumeClaim", CLAIM)
    assert not claim["spec"].get("volumeName")
    assert SELECTED_NODE not in _annotations(claim)


def test_volume_zone_keeps_the_pod_in_its_bound_volumes_zone(e2e: E2E) -> None:
    big, small = _zoned_nodes(e2e)
    pv = e2e.node_name("zone-b-pv")
    claim = make_pvc(CLAIM, storage="1Gi", storage_class="", volume_name=pv)
    if e2e.server is not None:  # bound, as the PV controller leaves a claim
        claim["metadata"]["annotations"] = {BIND_COMPLETED: "yes"}
        claim["status"] = {"phase": "Bound"}
    # (on a real cluster a pre-bound pair, which its PV controller binds: a claim created
    # bind-completed, for a PV whose claimRef lacks its uid, would be marked Lost)
    uid = e2e.create_object(claim)["metadata"]["uid"]
    # no node affinity: only the PV's zone label ties it to zone "b"
    volume = make_pv(
        pv,
        storage="1Gi",
        claim=(e2e.namespace, CLAIM),
        phase="Bound" if e2e.server is not None else None,
    )
    volume["metadata"]["labels"] = {ZONE: "b"}
    if e2e.server is not None:
        volume["spec"]["claimRef"]["uid"] = uid
    e2e.create_object(volume)
    assert BIND_COMPLETED in _annotations(_wait_phase(e2e, "PersistentVolumeClaim", CLAIM, "Bound"))
    assert e2e.get_object("PersistentVolume", pv)["spec"]["claimRef"]["uid"] == uid
    e2e.create_pod("user", volumes=CLAIM_VOLUME)
    with e2e.daemon():
        _control_pod_lands_on(e2e, big)
        assert e2e.wait_bound("user") == small
