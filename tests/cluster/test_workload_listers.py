"""Services, ReplicationControllers, ReplicaSets and StatefulSets: watched into
``handle.listers`` only when an enabled plugin reads them (PodTopologySpread); sync of
on-request listers in general (the storage kinds: test_storage_listers)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ksched.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
)
from ksched.cluster import APIClient, Backoff, connect_scheduler
from ksched.cluster.wiring import requested_listers
from ksched.framework.listers import RevisionedStore
from ksched.plugins.podtopologyspread import PodTopologySpread
from ksched.testing import (
    TestAPIServer,
    make_controller,
    make_csinode,
    make_namespace,
    make_priority_class,
    make_service,
)

from .conftest import eventually
from .test_watch_resources import WatchingScheduler, _Handle

pytestmark = pytest.mark.anyio

WORKLOADS = ["services", "replicationcontrollers", "replicasets", "statefulsets"]
PATHS = {
    "services": "/api/v1/services",
    "replicationcontrollers": "/api/v1/replicationcontrollers",
    "replicasets": "/apis/apps/v1/replicasets",
    "statefulsets": "/apis/apps/v1/statefulsets",
}


def _spread() -> PodTopologySpread:
    return PodTopologySpread({}, _Handle())


class Bare:
    name = "Bare"


def test_only_plugins_that_read_them_request_workload_listers() -> None:
    assert requested_listers([]) == []
    no_spread = WatchingScheduler({"a": [Bare()]}).frameworks.values()
    assert requested_listers(no_spread) == []
    one_profile = WatchingScheduler({"a": [Bare()], "b": [_spread()]}).frameworks.values()
    assert requested_listers(one_profile) == WORKLOADS

    class Odd:
        name = "Odd"
        reads_listers = frozenset({"secrets"})

    with pytest.raises(ValueError, match="plugin Odd: reads_listers: unknown lister 'secrets'"):
        requested_listers(WatchingScheduler({"a": [Odd()]}).frameworks.values())


async def test_workloads_are_watched_into_revisioned_listers_of_every_profile(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    apiserver.create(make_namespace("team"))
    apiserver.create(make_service("web", {"app": "web"}, "team"))
    apiserver.create(make_service("headless", None))
    apiserver.create(make_controller("ReplicationController", "old", {"app": "old"}))
    rs = make_controller("ReplicaSet", "web", {"app": "web"}, "team")
    rs["spec"]["selector"]["matchExpressions"] = [
        {"key": "tier", "operator": "In", "values": ["front"]}
    ]
    apiserver.create(rs)
    apiserver.create(make_controller("StatefulSet", "db", {"app": "db"}))
    # PodTopologySpread enabled in one profile: every profile gets the listers.
    sched = WatchingScheduler({"a": [Bare()], "b": [_spread()]})
    informers = connect_scheduler(sched, client)
    assert sorted(informers.requested) == sorted(WORKLOADS)
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(informers.run)
        for fw in sched.frameworks.values():
            for key in WORKLOADS:
                assert fw.handle.listers[key] is informers.requested[key].store
        listers = sched.frameworks["a"].handle.listers
        svc = listers["services"]["team/web"]
        assert isinstance(svc, Service) and svc.spec.selector == {"app": "web"}
        assert svc.metadata.uid and svc.metadata.namespace == "team"
        assert listers["services"]["default/headless"].spec.selector is None
        rc = listers["replicationcontrollers"]["default/old"]
        assert isinstance(rc, ReplicationController) and rc.spec.selector == {"app": "old"}
        got_rs = listers["replicasets"]["team/web"]
        assert isinstance(got_rs, ReplicaSet)
        assert got_rs.spec.selector == LabelSelector(
            match_labels={"app": "web"},
            match_expressions=[LabelSelectorRequirement("tier", "In", ["front"])],
        )
        ss = listers["statefulsets"]["default/db"]
        assert isinstance(ss, StatefulSet) and ss.metadata.labels == {"app": "db"}

        # Every applied change bumps the lister's revision (what cached selectors check).
        services = listers["services"]
        assert isinstance(services, RevisionedStore) and services.revision == 2
        await eventually(lambda: apiserver.watcher_count() == len(informers.informers))
        apiserver.create(make_service("api", {"app": "api"}))
        await eventually(lambda: "default/api" in services)
        assert services.revision == 3
        apiserver.patch("services", "default", "api", {"spec": {"selector": {"app": "v2"}}})
        await eventually(lambda: services["default/api"].spec.selector == {"app": "v2"})
        assert services.revision == 4
        apiserver.delete("services", "default", "api")
        await eventually(lambda: "default/api" not in services)
        assert services.revision == 5
        rss = listers["replicasets"]
        before = rss.revision
        apiserver.delete("replicasets", "team", "web")
        await eventually(lambda: rss.revision == before + 1 and not rss)
        tg.cancel_scope.cancel()
    for key, path in PATHS.items():
        (listed,) = apiserver.find_requests(verb="list", resource=key)
        assert listed.path == path  # all namespaces, as upstream's informers


async def test_not_watched_without_a_plugin_that_reads_them(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    sched = WatchingScheduler({"a": [Bare()]})
    informers = connect_scheduler(sched, client)
    async with anyio.create_task_group() as tg:
        await tg.start(informers.run)
        tg.cancel_scope.cancel()
    assert informers.requested == {}
    assert not set(WORKLOADS) & set(sched.frameworks["a"].handle.listers)
    assert [r for r in apiserver.requests if r.resource in PATHS] == []


@pytest.mark.parametrize(
    ("key", "obj", "stored"),
    [
        ("replicasets", make_controller("ReplicaSet", "web", {"app": "web"}), "default/web"),
        ("csinodes", make_csinode("n1", {"ebs.csi.aws.com": 25}), "n1"),
        # on request only: the stock system:kube-scheduler role may not list them
        ("priorityclasses", make_priority_class("gold", 1000), "gold"),
    ],
)
async def test_scheduling_waits_for_the_on_request_listers(
    apiserver: TestAPIServer, client: APIClient, key: str, obj: Any, stored: str
) -> None:
    """A failed first list of an on-request collection holds up sync until a retry has it."""

    class Reader:
        name = "Reader"
        reads_listers = frozenset({key})

    apiserver.create(obj)
    apiserver.faults.fail_next(2, verb="list", resource=key, code=500)
    sched = WatchingScheduler({"a": [Reader()]})
    informers = connect_scheduler(sched, client, backoff=Backoff(0.05, 0.1, jitter=0.0))
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(informers.run)
        store: Any = sched.frameworks["a"].handle.listers[key]
        assert stored in store
        tg.cancel_scope.cancel()
    assert apiserver.count_requests(verb="list", resource=key) == 3
