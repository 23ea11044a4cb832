"""GenericWorkload's informer: scheduling.k8s.io PodGroups into ``handle.listers``, only with
the gate on (the gate is refused by ksched today: these tests set it directly)."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import anyio
import pytest

from ksched.api.workload import PodGroup
from ksched.cluster import APIClient, connect_scheduler
from ksched.cluster.wiring import (
    SCHEDULING_POD_GROUPS_PATH,
    SCHEDULING_POD_GROUPS_V1ALPHA2_PATH,
    workload_informer_paths,
)
from ksched.features import FeatureGates
from ksched.framework.listers import Listers
from ksched.testing import TestAPIServer, make_namespace

from .conftest import eventually
from .test_watch_resources import GangLike, WatchingScheduler, fast_backoff, podgroup

pytestmark = pytest.mark.anyio

KEY = Listers.SCHEDULING_POD_GROUPS


def gates(version: str, on: bool) -> FeatureGates:
    return FeatureGates(version, MappingProxyType({"GenericWorkload": on}))


def scheduling_podgroup(name: str, min_count: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def test_watched_only_with_generic_workload_in_the_releases_version() -> None:
    assert workload_informer_paths(gates("1.37", True)) == {KEY: SCHEDULING_POD_GROUPS_PATH}
    assert SCHEDULING_POD_GROUPS_PATH == "/apis/scheduling.k8s.io/v1beta1/podgroups"
    # kube-scheduler v1.36 watches v1alpha2 (all kube-apiserver v1.36 serves)
    assert workload_informer_paths(gates("1.36", True)) == {
        KEY: "/apis/scheduling.k8s.io/v1alpha2/podgroups"
    }
    assert workload_informer_paths(gates("1.37", False)) == {}
    assert workload_informer_paths(gates("1.36", False)) == {}
    assert workload_informer_paths(None) == {}
    assert KEY != "podgroups"  # Coscheduling's CRD lister keeps its key


async def test_pod_groups_fill_the_lister_next_to_coschedulings(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    apiserver.create(scheduling_podgroup("gang", 3))
    apiserver.create(podgroup("crd", 2))
    sched = WatchingScheduler({"a": [GangLike()]})
    informers = connect_scheduler(
        sched, client, backoff=fast_backoff(), features=gates("1.37", True)
    )
    assert SCHEDULING_POD_GROUPS_PATH in [i.path for i in informers.informers]
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(informers.run)
        listers = sched.frameworks["a"].handle.listers
        pgs = listers[KEY]
        assert pgs is informers.requested[KEY].store
        gang = pgs["default/gang"]
        assert isinstance(gang, PodGroup)
        assert gang.spec.scheduling_policy.gang is not None
        assert gang.spec.scheduling_policy.gang.min_count == 3
        # the scheduler-plugins CRD of the same kind stays apart, raw, under "podgroups"
        assert list(pgs) == ["default/gang"]
        assert list(listers["podgroups"]) == ["default/crd"]

        rev = pgs.revision
        apiserver.create(make_namespace("team"))
        apiserver.create(scheduling_podgroup("late", 2, namespace="team"))
        await eventually(lambda: "team/late" in pgs, what="late PodGroup in the lister")
        assert pgs.revision > rev
        apiserver.delete("podgroups.scheduling.k8s.io", "default", "gang")
        await eventually(lambda: "default/gang" not in pgs)
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("version", ["1.37", "1.36"])
async def test_no_informer_without_the_gate(client: APIClient, version: str) -> None:
    sched = WatchingScheduler({"a": []})
    informers = connect_scheduler(sched, client, features=gates(version, False))
    assert not {SCHEDULING_POD_GROUPS_PATH, SCHEDULING_POD_GROUPS_V1ALPHA2_PATH} & {
        i.path for i in informers.informers
    }
    assert KEY not in sched.frameworks["a"].handle.listers


async def test_emulating_1_36_decodes_v1alpha2_pod_groups(client: APIClient) -> None:
    """The v1.36 informer turns v1alpha2 objects into the v1beta1 shape."""
    sched = WatchingScheduler({"a": []})
    informers = connect_scheduler(sched, client, features=gates("1.36", True))
    (inf,) = [i for i in informers.informers if i.path == SCHEDULING_POD_GROUPS_V1ALPHA2_PATH]
    raw = {
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "t"}},
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "disruptionMode": "PodGroup",
        },
    }
    pg = inf.decode(json.dumps(raw).encode())
    assert isinstance(pg, PodGroup)
    assert pg.spec.workload_ref is not None and pg.spec.workload_ref.template_name == "t"
    assert pg.spec.disruption_mode is not None and pg.spec.disruption_mode.all is not None


async def test_features_default_to_the_schedulers_config(client: APIClient) -> None:
    """The daemon passes no ``features``: the scheduler's own configuration decides."""

    class Config:
        features = gates("1.37", True)

    sched = WatchingScheduler({"a": []})
    sched.config = Config()  # type: ignore[attr-defined]
    informers = connect_scheduler(sched, client)
    assert KEY in informers.requested
