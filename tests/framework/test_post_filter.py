"""RunPostFilterPlugins with deferred decisions (``PostFilterResult.resume``): a resumed
outcome is judged exactly like a returned one, and the synchronous runner refuses a
resume that waits for I/O with an Error status instead of failing the loop."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from ksched.config import default_plugin_args
from ksched.config.types import PluginRef, Plugins, PluginSet, Profile
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import (
    NodeToStatus,
    PostFilterOutcome,
    PostFilterPlugin,
    PostFilterResult,
)
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.plugins import default_registry
from tests.factories import make_pod


class Deferring(PostFilterPlugin):
    """Decides only when resumed; ``outcome`` is what resuming gives, after ``io`` yields."""

    name = "Deferring"
    outcome: PostFilterOutcome = (None, None)
    io = False

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        async def resume() -> PostFilterOutcome:
            if self.io:
                await asyncio.sleep(0)
            return self.outcome

        return PostFilterResult(resume=resume), None


class Nominating(PostFilterPlugin):
    name = "Nominating"

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        return PostFilterResult("node-2"), None


def framework() -> tuple[Framework, Deferring]:
    reg = default_registry(entry_points=False)
    reg.register(Deferring.name, Deferring)
    reg.register(Nominating.name, Nominating)
    plugins = Plugins(
        queue_sort=PluginSet([PluginRef("PrioritySort")]),
        bind=PluginSet([PluginRef("DefaultBinder")]),
        post_filter=PluginSet([PluginRef("Deferring"), PluginRef("Nominating")]),
    )
    fw = Framework(
        Profile("test", plugins=plugins), reg, Handle(), default_args=default_plugin_args
    )
    pl = fw.plugins["Deferring"]
    assert isinstance(pl, Deferring)
    return fw, pl


def run_async(fw: Framework) -> Any:
    async def go() -> Any:
        return await fw.run_post_filter_async(CycleState(), make_pod("p"), NodeToStatus())

    return anyio.run(go)


def test_a_resumed_success_wins() -> None:
    fw, pl = framework()
    pl.outcome, pl.io = (PostFilterResult("node-1"), None), True
    res, st = run_async(fw)
    assert st.is_success() and res == PostFilterResult("node-1")


@pytest.mark.parametrize("io", [False, True])
def test_a_resumed_rejection_lets_the_next_plugin_try(io: bool) -> None:
    fw, pl = framework()
    pl.outcome, pl.io = (None, Status(Code.UNSCHEDULABLE, "no luck")), io
    res, st = run_async(fw)
    assert st.is_success() and res == PostFilterResult("node-2")
    if not io:  # nothing to wait for: the synchronous runner resumes it too
        assert fw.run_post_filter(CycleState(), make_pod("p"), NodeToStatus()) == (res, st)


def test_a_resumed_error_is_attributed_to_its_plugin() -> None:
    fw, pl = framework()
    pl.outcome = (None, Status(Code.ERROR, "boom"))
    res, st = run_async(fw)
    assert res is None and (st.code, st.message(), st.plugin) == (Code.ERROR, "boom", "Deferring")


def test_waiting_for_io_in_a_synchronous_cycle_is_an_error() -> None:
    fw, pl = framework()
    pl.outcome, pl.io = (PostFilterResult("node-1"), None), True
    res, st = fw.run_post_filter(CycleState(), make_pod("p"), NodeToStatus())
    assert res is None and st.code == Code.ERROR
    assert st.message() == ("running PostFilter plugins: a coroutine run synchronously awaited I/O")
