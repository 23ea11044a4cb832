"""Plugins' ``watch_resources``: informers of custom collections into ``handle.listers``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
import pytest

from ksched.cluster import APIClient, Backoff, connect_scheduler
from ksched.cluster.wiring import watched_resources
from ksched.framework import ClusterEvent, PermitPlugin, PodInfo, WatchedResource
from ksched.testing import TestAPIServer, make_namespace, make_pod

from .conftest import eventually
from .test_wiring import FakeScheduler

pytestmark = pytest.mark.anyio

PG_RESOURCE = "podgroups.v1alpha1.scheduling.x-k8s.io"
PODGROUPS = WatchedResource(
    "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", "podgroups", PG_RESOURCE
)
# A CRD the server does not serve (404 on list).
WIDGETS = WatchedResource("/apis/example.com/v1/widgets", "widgets", "widgets.v1.example.com")


class GangLike(PermitPlugin):
    name = "GangLike"
    watch_resources: ClassVar[list[WatchedResource]] = [PODGROUPS]


class WidgetReader:
    """Duck-typed: no base class, the attribute is all that counts."""

    name = "WidgetReader"
    watch_resources = (PODGROUPS, WIDGETS)


@dataclass
class _Handle:
    listers: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Framework:
    plugins: dict[str, Any]
    handle: _Handle = field(default_factory=_Handle)


class WatchingScheduler(FakeScheduler):
    def __init__(self, plugins_by_profile: dict[str, list[Any]]) -> None:
        super().__init__([])
        frameworks: dict[str, Any] = {
            p: _Framework({pl.name: pl for pl in plugins})
            for p, plugins in plugins_by_profile.items()
        }
        self.frameworks = frameworks
        self.other: list[tuple[ClusterEvent, Any, Any]] = []

    def on_other_event(self, event: ClusterEvent, old: Any = None, new: Any = None) -> None:
        self.other.append((event, old, new))


def podgroup(name: str, min_member: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member},
    }


def fast_backoff() -> Backoff:
    return Backoff(0.02, 0.05, jitter=0.0)


async def test_declared_resources_are_watched_into_listers_and_events(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    apiserver.create(podgroup("early", 2))
    apiserver.create(make_pod("p", scheduler_name="a"))
    # Two profiles, both declaring podgroups: one informer; the missing CRD: an empty store.
    sched = WatchingScheduler({"a": [GangLike()], "b": [WidgetReader()]})
    informers = connect_scheduler(sched, client, backoff=fast_backoff())
    assert sorted(informers.custom) == ["podgroups", "widgets"]
    assert [i.path for i in informers.informers].count(PODGROUPS.path) == 1
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(informers.run)  # synced although widgets answer 404
        for fw in sched.frameworks.values():
            listers = fw.handle.listers
            assert listers["podgroups"] is informers.custom["podgroups"].store
            assert listers["widgets"] == {}
            assert isinstance(listers["pods"]["default/p"], PodInfo)
        pgs = sched.frameworks["a"].handle.listers["podgroups"]
        assert pgs["default/early"]["spec"]["minMember"] == 2
        assert informers.custom["widgets"].not_served

        # The listed object was an Add; later changes arrive as Add/Update/Delete.
        ev, old, new = sched.other[0]
        assert ev == ClusterEvent(PG_RESOURCE, "Add", f"{PG_RESOURCE}Add")
        assert old is None and new["metadata"]["name"] == "early"

        await eventually(lambda: apiserver.watcher_count("podgroups") == 1)
        apiserver.create(make_namespace("team"))
        apiserver.create(podgroup("late", 3, namespace="team"))
        await eventually(lambda: "team/late" in pgs, what="late podgroup in the lister")
        apiserver.patch("podgroups", "team", "late", {"spec": {"minMember": 4}})
        await eventually(lambda: pgs["team/late"]["spec"]["minMember"] == 4)
        apiserver.delete("podgroups", "default", "early")
        await eventually(lambda: "default/early" not in pgs)
        tg.cancel_scope.cancel()

    actions = [(e.resource, e.action, e.label) for e, _, _ in sched.other]
    assert actions == [
        (PG_RESOURCE, a, f"{PG_RESOURCE}{a}") for a in ("Add", "Add", "Update", "Delete")
    ]
    _, old, new = sched.other[2]
    assert (old["spec"]["minMember"], new["spec"]["minMember"]) == (3, 4)
    _, old, new = sched.other[3]
    assert old["metadata"]["name"] == "early" and new is None


async def test_missing_collection_appearing_later_is_picked_up(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """A 404 (CRD not installed yet) syncs empty; the list is retried until it is served."""
    apiserver.create(podgroup("g", 2))
    apiserver.faults.fail_next(2, verb="list", resource="podgroups", code=404, reason="NotFound")
    sched = WatchingScheduler({"a": [GangLike()]})
    informers = connect_scheduler(sched, client, backoff=fast_backoff())
    pgs = informers.custom["podgroups"]
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(informers.run)
        # synced empty while not served: in step with the server, not stale (readiness)
        assert pgs.stale_for() == 0.0
        await eventually(lambda: "default/g" in pgs.store, what="podgroup after the CRD appeared")
        assert not pgs.not_served
        assert [e.action for e, _, _ in sched.other] == ["Add"]
        tg.cancel_scope.cancel()
    assert len(apiserver.find_requests(verb="list", resource="podgroups")) >= 3


async def test_no_declarations_no_extra_informers(client: APIClient) -> None:
    class Plain:
        name = "Plain"

    sched = WatchingScheduler({"a": [Plain(), PermitPlugin()]})
    informers = connect_scheduler(sched, client)
    assert informers.custom == {}
    assert len(informers.informers) == 4
    assert set(sched.frameworks["a"].handle.listers) == {"namespaces", "pdbs", "pods"}


def test_conflicting_or_builtin_declarations_are_rejected() -> None:
    class Other:
        name = "Other"
        watch_resources = (WatchedResource("/apis/x.io/v1/podgroups", "podgroups", "x"),)

    class Shadow:
        name = "Shadow"
        watch_resources = (WatchedResource("/api/v1/pods", "pods", "Pod"),)

    same = [_Framework({"G": GangLike()}), _Framework({"W": WidgetReader()})]
    assert watched_resources(same) == [PODGROUPS, WIDGETS]
    with pytest.raises(ValueError, match="declared differently"):
        watched_resources([_Framework({"G": GangLike(), "O": Other()})])
    with pytest.raises(ValueError, match="built in"):
        watched_resources([_Framework({"S": Shadow()})])
