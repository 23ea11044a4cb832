"""connect_scheduler: informers → scheduler handlers and listers; then the whole daemon path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from ksched.api.objects import Namespace, Node
from ksched.cluster import APIClient, APIClusterClient, StatusReporter, connect_scheduler
from ksched.cluster.wiring import PODS_FIELD_SELECTOR
from ksched.framework.types import PodInfo
from ksched.testing import TestAPIServer, make_namespace, make_node, make_pod

from .conftest import eventually

pytestmark = pytest.mark.anyio


@dataclass
class _Handle:
    listers: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Framework:
    handle: _Handle = field(default_factory=_Handle)


class FakeScheduler:
    def __init__(self, profiles: list[str]) -> None:
        self.frameworks = {p: _Framework() for p in profiles}
        self.calls: list[tuple[str, str]] = []
        self.pods: dict[str, PodInfo] = {}

    def on_node_add(self, node: Node) -> None:
        self.calls.append(("node_add", node.name))

    def on_node_update(self, old: Node, new: Node) -> None:
        self.calls.append(("node_update", new.name))

    def on_node_delete(self, node: Node) -> None:
        self.calls.append(("node_delete", node.name))

    def on_pod_add(self, pod: PodInfo) -> None:
        self.calls.append(("pod_add", pod.name))
        self.pods[pod.name] = pod

    def on_pod_update(self, old: PodInfo, new: PodInfo) -> None:
        self.calls.append(("pod_update", new.name))
        self.pods[new.name] = new

    def on_pod_delete(self, pod: PodInfo) -> None:
        self.calls.append(("pod_delete", pod.name))


async def test_informers_feed_handlers_and_listers(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    apiserver.create(make_node("n1"))
    apiserver.create(make_pod("mine", scheduler_name="ksched-a"))
    apiserver.create(make_pod("theirs", scheduler_name="other"))
    apiserver.create(make_pod("bound", node_name="n1", scheduler_name="ksched-a"))
    apiserver.create({**make_pod("finished"), "status": {"phase": "Succeeded"}})
    apiserver.create(make_namespace("team", labels={"tier": "gold"}))
    apiserver.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb", "namespace": "team"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
        }
    )
    sched = FakeScheduler(["ksched-a", "ksched-b"])
    informers = connect_scheduler(sched, client, profiles={"ksched-a", "ksched-b"})
    assert not informers.synced
    async with anyio.create_task_group() as tg:
        await tg.start(informers.run)  # returns once everything has synced
        assert informers.synced
        assert ("node_add", "n1") in sched.calls
        assert {n for k, n in sched.calls if k == "pod_add"} == {"mine", "theirs", "bound"}
        assert sched.pods["mine"].raw is not None  # pending and ours: kept for extenders
        assert sched.pods["theirs"].raw is None
        assert sched.pods["bound"].raw is None

        listers = sched.frameworks["ksched-b"].handle.listers
        assert isinstance(listers["namespaces"]["team"], Namespace)
        assert listers["namespaces"]["team"].metadata.labels["tier"] == "gold"
        assert listers["pdbs"]["team/pdb"].spec.min_available == 1
        # kube-scheduler watches no PriorityClasses and its stock role may not: nothing
        # enabled here reads them, so they are not watched
        assert "priorityclasses" not in listers

        await eventually(lambda: apiserver.watcher_count() == 4)
        apiserver.create(make_namespace("late"))
        apiserver.delete("pods", "default", "theirs")
        await eventually(lambda: "late" in listers["namespaces"])
        await eventually(lambda: ("pod_delete", "theirs") in sched.calls)
        tg.cancel_scope.cancel()
    (pods_list,) = apiserver.find_requests(verb="list", resource="pods")
    assert pods_list.path == "/api/v1/pods"
    assert pods_list.query["fieldSelector"] == PODS_FIELD_SELECTOR


async def test_daemon_path_schedules_binds_and_reports(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """Real Scheduler + informers + binder + status reporter against the test API server."""
    from ksched.config import default_config
    from ksched.framework.registry import Registry
    from ksched.plugins import register_builtins
    from ksched.scheduler import Scheduler
    from ksched.scheduler.loop import RealTime, run_loop

    name = default_config().profiles[0].scheduler_name
    apiserver.create(make_node("n1", cpu="2"))
    apiserver.create(make_pod("fits", cpu="1", scheduler_name=name))
    apiserver.create(make_pod("too-big", cpu="8", scheduler_name=name))
    reg = Registry()
    register_builtins(reg)
    reporter = StatusReporter(client)
    sched = Scheduler(
        default_config(),
        reg,
        cluster=APIClusterClient(client),
        observer=reporter,
        recorder=reporter,
    )
    informers = connect_scheduler(sched, client, profiles=set(sched.frameworks))
    async with anyio.create_task_group() as tg:
        await tg.start(reporter.run)
        await tg.start(informers.run)
        tg.start_soon(run_loop, sched, RealTime())

        def bound() -> bool:
            return apiserver.get("pods", "default", "fits")["spec"].get("nodeName") == "n1"

        def reported() -> bool:
            conds = apiserver.get("pods", "default", "too-big").get("status", {}).get("conditions")
            return bool(conds) and conds[-1].get("reason") == "Unschedulable"

        await eventually(bound, timeout=10, what="fits bound")
        await eventually(reported, timeout=10, what="too-big reported")
        await eventually(lambda: len(apiserver.list("events.events.k8s.io", "default")) >= 2)
        tg.cancel_scope.cancel()
    evs = {e["reason"]: e for e in apiserver.list("events.events.k8s.io", "default")}
    assert evs["Scheduled"]["note"] == "Successfully assigned default/fits to n1"
    assert "Insufficient cpu" in evs["FailedScheduling"]["note"]
