"""PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers,
CSIStorageCapacities and VolumeAttachments: watched into ``handle.listers`` only when an enabled plugin reads them
(the volume plugins), their changes forwarded to the queue as cluster events."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ksched.api.objects import (
    CSIDriver,
    CSINode,
    CSINodeDriver,
    CSIStorageCapacity,
    LabelSelector,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    VolumeNodeResources,
)
from ksched.cluster import APIClient, APIClusterClient, connect_scheduler
from ksched.cluster.wiring import ON_REQUEST_PATHS, requested_listers
from ksched.framework import (
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    PodInfo,
    QueueingHint,
    Registry,
    Status,
)
from ksched.framework.listers import RevisionedStore
from ksched.plugins import register_builtins
from ksched.queue import events as ev
from ksched.scheduler.loop import RealTime, run_loop
from ksched.testing import (
    TestAPIServer,
    make_csidriver,
    make_csinode,
    make_csistoragecapacity,
    make_namespace,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_service,
    make_storage_class,
    make_volume_attachment,
)
from tests.queue._util import config

from .conftest import eventually
from .test_watch_resources import WatchingScheduler

pytestmark = pytest.mark.anyio

STORAGE = [
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses",
    "csinodes",
    "csidrivers",
    "csistoragecapacities",
    "volumeattachments",
]
PATHS = {
    "persistentvolumeclaims": "/api/v1/persistentvolumeclaims",
    "persistentvolumes": "/api/v1/persistentvolumes",
    "storageclasses": "/apis/storage.k8s.io/v1/storageclasses",
    "csinodes": "/apis/storage.k8s.io/v1/csinodes",
    "csidrivers": "/apis/storage.k8s.io/v1/csidrivers",
    "csistoragecapacities": "/apis/storage.k8s.io/v1/csistoragecapacities",
    "volumeattachments": "/apis/storage.k8s.io/v1/volumeattachments",
}


class VolumeReader:
    """Duck-typed plugin reading every storage lister (and Services, which send no events)."""

    name = "VolumeReader"
    reads_listers = frozenset({*STORAGE, "services"})


class Bare:
    name = "Bare"


def test_storage_listers_are_requested_in_a_fixed_order() -> None:
    sched = WatchingScheduler({"a": [Bare()], "b": [VolumeReader()]})
    assert requested_listers(sched.frameworks.values()) == ["services", *STORAGE]
    assert {k: ON_REQUEST_PATHS[k] for k in STORAGE} == PATHS
    assert requested_listers(WatchingScheduler({"a": [Bare()]}).frameworks.values()) == []


def _seed(apiserver: TestAPIServer) -> None:
    apiserver.create(make_namespace("team"))
    apiserver.create(make_pvc("data", "team", storage_class="fast", volume_name="pv-1"))
    apiserver.create(make_pv("pv-1", storage_class="fast", claim=("team", "data"), phase="Bound"))
    apiserver.create(make_storage_class("fast", binding_mode="WaitForFirstConsumer"))
    apiserver.create(make_csinode("n1", {"ebs.csi.aws.com": 25}))
    # kubelet's CSINode of a node without drivers: the API answers `drivers: null`
    bare = make_csinode("n2", {})
    bare["spec"]["drivers"] = None
    apiserver.create(bare)
    apiserver.create(make_csidriver("ebs.csi.aws.com", storageCapacity=True))
    apiserver.create(
        make_csistoragecapacity(
            "cap-1", "fast", "10Gi", {"zone": "a"}, namespace="team", maximum_volume_size="5Gi"
        )
    )
    apiserver.create(make_volume_attachment("va-1", "ebs.csi.aws.com", "n1", "pv-1"))


async def test_storage_is_watched_into_listers_and_forwarded_as_cluster_events(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    _seed(apiserver)
    sched = WatchingScheduler({"a": [Bare()], "b": [VolumeReader()]})
    informers = connect_scheduler(sched, client)
    assert sorted(informers.requested) == sorted([*STORAGE, "services"])
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(informers.run)
        for fw in sched.frameworks.values():
            for key in STORAGE:
                assert fw.handle.listers[key] is informers.requested[key].store
                assert isinstance(fw.handle.listers[key], RevisionedStore)
        listers = sched.frameworks["a"].handle.listers
        pvc = listers["persistentvolumeclaims"]["team/data"]
        assert isinstance(pvc, PersistentVolumeClaim)
        assert (pvc.spec.volume_name, pvc.spec.storage_class_name) == ("pv-1", "fast")
        assert pvc.status.phase == "Pending"  # the server's default
        pv = listers["persistentvolumes"]["pv-1"]
        assert isinstance(pv, PersistentVolume) and pv.status.phase == "Bound"
        assert pv.spec.claim_ref is not None and pv.spec.claim_ref.name == "data"
        assert pv.spec.persistent_volume_reclaim_policy == "Retain"
        sc = listers["storageclasses"]["fast"]
        assert isinstance(sc, StorageClass) and sc.volume_binding_mode == "WaitForFirstConsumer"
        n1, n2 = listers["csinodes"]["n1"], listers["csinodes"]["n2"]
        assert isinstance(n1, CSINode) and n1.spec.drivers == [
            CSINodeDriver(
                name="ebs.csi.aws.com", node_id="n1", allocatable=VolumeNodeResources(count=25)
            )
        ]
        assert n2.spec.drivers == []
        driver = listers["csidrivers"]["ebs.csi.aws.com"]
        assert isinstance(driver, CSIDriver) and driver.spec.attach_required is True
        assert driver.spec.storage_capacity is True
        cap = listers["csistoragecapacities"]["team/cap-1"]  # namespaced
        assert isinstance(cap, CSIStorageCapacity) and cap.storage_class_name == "fast"
        assert (cap.capacity, cap.maximum_volume_size) == ("10Gi", "5Gi")
        assert cap.node_topology == LabelSelector(match_labels={"zone": "a"})
        va = listers["volumeattachments"]["va-1"]
        assert isinstance(va, VolumeAttachment) and va.status.attached
        assert (va.spec.attacher, va.spec.node_name) == ("ebs.csi.aws.com", "n1")
        assert va.spec.source.persistent_volume_name == "pv-1"

        # what was listed arrived as Adds, one per object
        assert sorted(e.label for e, _, _ in sched.other) == sorted(
            f"{r}Add" for r in ev.STORAGE_RESOURCES for _ in range(2 if r == "CSINode" else 1)
        )
        sched.other.clear()
        claims = listers["persistentvolumeclaims"]
        before = claims.revision
        await eventually(lambda: apiserver.watcher_count() == len(informers.informers))
        apiserver.create(make_service("web", {"app": "web"}))  # no event: not a storage kind
        apiserver.create(make_pvc("logs"))
        await eventually(lambda: "default/logs" in claims)
        note = {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}}
        apiserver.patch("persistentvolumeclaims", "default", "logs", note)
        await eventually(lambda: claims["default/logs"].metadata.annotations != {})
        apiserver.delete("persistentvolumes", None, "pv-1")
        await eventually(lambda: not listers["persistentvolumes"])
        assert claims.revision == before + 2
        tg.cancel_scope.cancel()

    got = [(e, old, new) for e, old, new in sched.other]
    assert [e for e, _, _ in got] == [
        ClusterEvent("PersistentVolumeClaim", "Add", "PersistentVolumeClaimAdd"),
        ClusterEvent("PersistentVolumeClaim", "Update", "PersistentVolumeClaimUpdate"),
        ClusterEvent("PersistentVolume", "Delete", "PersistentVolumeDelete"),
    ]
    (_, none, added), (_, old, new), (_, gone, after) = got
    assert none is None and isinstance(added, PersistentVolumeClaim)
    assert old.metadata.annotations == {} and new.metadata.annotations != {}
    assert isinstance(gone, PersistentVolume) and gone.metadata.name == "pv-1" and after is None
    for key, path in PATHS.items():
        (listed,) = apiserver.find_requests(verb="list", resource=key)
        assert listed.path == path  # PVCs from all namespaces, as upstream's informer


def _claim_of(pod: PodInfo) -> str:
    return next(
        f"{pod.namespace}/{v.persistent_volume_claim.claim_name}"
        for v in pod.pod.spec.volumes
        if v.persistent_volume_claim is not None
    )


class ClaimWaiter(FilterPlugin):
    """Rejects a pod until its claim is in the lister; a PVC Add of that claim requeues it."""

    name = "ClaimWaiter"
    reads_listers = frozenset({"persistentvolumeclaims"})

    def filter(self, state: CycleState, pod: PodInfo, node: Any) -> Status | None:
        assert self.handle is not None
        if _claim_of(pod) not in self.handle.listers["persistentvolumeclaims"]:
            return Status.unschedulable("claim not found")
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", "Add"), self._hint)]

    def _hint(self, pod: PodInfo, old: Any, new: Any) -> str:
        key = f"{new.metadata.namespace}/{new.metadata.name}"
        return QueueingHint.QUEUE if key == _claim_of(pod) else QueueingHint.SKIP


async def test_a_claim_created_through_the_api_requeues_the_pod_waiting_for_it(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    from ksched.scheduler import Scheduler

    reg = Registry()
    register_builtins(reg)
    reg.register(ClaimWaiter.name, ClaimWaiter, "tests")
    sched = Scheduler(
        config({"filter": ["ClaimWaiter"]}), reg, cluster=APIClusterClient(client), seed=1
    )
    apiserver.create(make_node("n1"))
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    apiserver.create(make_pod("p", scheduler_name="ksched", volumes=[volume]))
    informers = connect_scheduler(sched, client)
    assert list(informers.requested) == ["persistentvolumeclaims"]
    async with anyio.create_task_group() as tg:
        await tg.start(informers.run)
        tg.start_soon(run_loop, sched, RealTime())
        pod = sched.frameworks["ksched"].handle.listers["pods"]["default/p"]
        await eventually(lambda: sched.queue.location(pod) == "unschedulable", timeout=10)
        apiserver.create(make_pvc("other"))  # the hint skips it
        await eventually(
            lambda: "default/other" in informers.requested["persistentvolumeclaims"].store
        )
        assert sched.queue.location(pod) == "unschedulable"
        apiserver.create(make_pvc("data"))

        def bound() -> bool:
            return apiserver.get("pods", "default", "p")["spec"].get("nodeName") == "n1"

        await eventually(bound, timeout=10, what="p bound once its claim exists")
        tg.cancel_scope.cancel()
