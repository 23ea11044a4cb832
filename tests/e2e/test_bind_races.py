"""Bindings racing the rest of the cluster, answered by whichever API server the target
runs: the pod deleted while its binding is in flight (404), or bound by someone else
first (409). A PreBind gate holds the binding cycle while the test acts."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import PreBindPlugin
from ksched.framework.status import Status
from ksched.framework.types import PodInfo

from .conftest import E2E, JSON, wait_for

pytestmark = pytest.mark.e2e


class Gate(PreBindPlugin):
    """Holds every binding cycle until the test opens it."""

    name = "Gate"
    reached = threading.Event()
    opened = threading.Event()

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        Gate.reached.set()
        while not Gate.opened.is_set():
            await anyio.sleep(0.01)
        return None


@pytest.fixture
def gated(e2e: E2E) -> JSON:
    Gate.reached.clear()
    Gate.opened.clear()
    return e2e.config(
        profiles=[
            {
                "schedulerName": e2e.scheduler_name,
                "plugins": {"preBind": {"enabled": [{"name": "Gate"}]}},
            }
        ]
    )


def test_pod_deleted_mid_binding_is_forgotten(e2e: E2E, gated: JSON) -> None:
    node = e2e.create_node("only", cpu="1")
    with e2e.daemon(gated, plugins={"Gate": Gate}) as d:
        e2e.create_pod("doomed", cpu="800m")
        assert Gate.reached.wait(15)
        e2e.kube.ok("DELETE", f"/api/v1/namespaces/{e2e.namespace}/pods/doomed")
        key = f"{e2e.namespace}/doomed"
        wait_for(
            lambda: d.call(lambda: key not in d.daemon.informers.pods.store),
            what="the informer to see the deletion",
        )
        Gate.opened.set()  # the binding now gets 404 from the server
        # the assumed 800m is forgotten: a pod needing it fits at once
        e2e.create_pod("next", cpu="800m")
        assert e2e.wait_bound("next") == node
        assert e2e.events("doomed", "Scheduled") == []


def test_pod_bound_by_someone_else_first_is_not_requeued(e2e: E2E, gated: JSON) -> None:
    mine = e2e.create_node("mine", cpu="4")
    other = e2e.create_node("other", cpu="1")
    with e2e.daemon(gated, plugins={"Gate": Gate}) as d:
        e2e.create_pod("contested", cpu="2")  # fits only "mine"
        assert Gate.reached.wait(15)
        e2e.kube.ok(
            "POST",
            f"/api/v1/namespaces/{e2e.namespace}/pods/contested/binding",
            {"metadata": {"name": "contested"}, "target": {"kind": "Node", "name": other}},
        )
        wait_for(
            lambda: d.call(lambda: "contested" in _on_node(d, other)),
            what="the cache to see the pod on the other node",
        )
        Gate.opened.set()  # ksched's binding: 409, already assigned
        failed = wait_for(lambda: e2e.events("contested", "FailedScheduling"), 15)
        assert "is already assigned to node" in failed[0]["note"], failed
        # not requeued: the informer has it bound; ksched's assumed 2 CPU on "mine" are free
        wait_for(lambda: d.call(lambda: _on_node(d, mine) == []), what="mine to be empty")
        assert d.call(lambda: _queued(d)) == []
        e2e.create_pod("big", cpu="4")
        assert e2e.wait_bound("big") == mine
    assert e2e.node_of("contested") == other
    assert e2e.events("contested", "Scheduled") == []


def _queued(h: Any) -> list[str]:
    dump = h.daemon.scheduler.queue.dump()
    rows = [r for k in ("active", "backoff", "unschedulable") for r in dump[k]]
    return [r["pod"] for r in rows] + list(dump["inFlight"])


def _on_node(h: Any, node: str) -> list[str]:
    return [p.name for p in h.daemon.scheduler.cache.nodes[node].pods]
