"""A plugin that hangs fails that pod's attempt only: the synchronous deadline (SIGALRM)
over PreFilter..Permit, and the binding timeout over PreBind/Bind/PostBind.

Timeouts here are a few hundredths of a second of real time: what is checked is that a
stuck plugin is abandoned and named, not how fast anything runs."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.deadline import PluginTimeout, SyncDeadline, _Alarm
from ksched.framework.interface import (
    BindPlugin,
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PostBindPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    QueueingHint,
    ReservePlugin,
    ScorePlugin,
)
from ksched.framework.registry import Registry
from ksched.framework.status import Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins import register_builtins
from ksched.scheduler.dispatch import schedule_entity
from ksched.scheduler.scheduler import Scheduler
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod
from tests.queue._util import config
from tests.scheduler.test_binding_cycle import FakeCluster, Outcomes, _Observer

pytestmark = pytest.mark.anyio


SHORT = 0.05


# "Forever" for a hung plugin: long against the deadlines, short enough that a broken
# deadline makes the tests fail instead of hanging the suite.
STUCK = 5.0


def _spin() -> None:
    end = time.monotonic() + STUCK
    while time.monotonic() < end:
        pass


# -- SyncDeadline on its own ------------------------------------------------------------------


class _Owner:
    name = "Owner"

    def work(self, how: str) -> str:
        if how == "spin":
            _spin()
        if how == "sleep":
            time.sleep(STUCK)  # a blocking call is interrupted too (ITIMER_REAL)
        return "done"


def _nothing_fires_outside() -> bool:
    """Code after a region is never interrupted, though the timer may still run."""
    end = time.monotonic() + 3 * SHORT
    while time.monotonic() < end:
        pass
    time.sleep(SHORT)
    return True


def _index(*plugins: Any) -> Any:
    return lambda: {id(p): p.name for p in plugins}


@pytest.mark.parametrize("how", ["spin", "sleep"])
def test_interrupts_stuck_code_and_names_the_plugin(how: str) -> None:
    owner = _Owner()
    dl = SyncDeadline(SHORT, _index(owner))
    with pytest.raises(PluginTimeout) as ei:
        dl.call(owner.work, how)
    assert str(ei.value) == 'plugin "Owner" (work) did not return within 0.05s'
    assert _nothing_fires_outside()


def test_returns_result_and_nothing_fires_later() -> None:
    owner = _Owner()
    dl = SyncDeadline(SHORT, _index(owner))
    assert dl.call(owner.work, "now") == "done"
    assert _nothing_fires_outside()


def test_code_outside_plugins_is_named_generically() -> None:
    dl = SyncDeadline(SHORT, _index())
    with pytest.raises(PluginTimeout, match=r"^plugin code did not return within 0\.05s$"):
        dl.call(_spin)


def test_a_shorter_region_after_a_longer_one_still_fires_on_time() -> None:
    long, short = SyncDeadline(60.0), SyncDeadline(SHORT)
    with long:
        pass  # leaves the timer set ~60 s ahead
    t0 = time.monotonic()
    with pytest.raises(PluginTimeout):
        short.call(_spin)
    assert time.monotonic() - t0 < STUCK


def test_a_longer_region_after_a_shorter_one_is_not_cut_short() -> None:
    short, longer = SyncDeadline(SHORT), SyncDeadline(10 * SHORT)
    with short:
        pass  # leaves the timer set SHORT ahead
    end = time.monotonic() + 4 * SHORT
    with longer:  # the timer fires inside, early for this region: it must re-arm, not raise
        while time.monotonic() < end:
            pass


def test_inner_region_keeps_the_outer_armed() -> None:
    outer, inner = SyncDeadline(SHORT), SyncDeadline(60.0)
    with pytest.raises(PluginTimeout), outer:
        with inner:
            pass
        # The inner region ended: the outer timer must still fire.
        _spin()
    assert _nothing_fires_outside()


def test_disabled_by_zero_or_off_the_main_thread() -> None:
    assert not SyncDeadline(0).enabled and not SyncDeadline(None).enabled
    assert SyncDeadline(1.0).enabled
    seen: list[SyncDeadline | None] = []

    def other() -> None:
        with SyncDeadline(SHORT):
            seen.append(_Alarm.armed)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [None]  # nothing armed from a non-main thread


# -- in the scheduler ---------------------------------------------------------------------------


class HangFilter(FilterPlugin):
    """Spins forever on pods labelled hang=filter; counts its calls."""

    name = "HangFilter"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.calls = 0

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.calls += 1
        if pod.labels.get("hang") == "filter":
            _spin()
        return None


class HangScore(ScorePlugin):
    name = "HangScore"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if pod.labels.get("hang") == "score":
            time.sleep(STUCK)
        return 0


class HangReserve(ReservePlugin):
    name = "HangReserve"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.unreserved: list[str] = []

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if pod.labels.get("hang") == "reserve":
            _spin()
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.unreserved.append(pod.name)


class HangPreBind(PreBindPlugin):
    name = "HangPreBind"

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if pod.labels.get("hang") == "prebind":
            await anyio.sleep(STUCK)
        return None


class HangBind(BindPlugin):
    name = "HangBind"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        assert self.handle is not None
        if pod.labels.get("hang") == "bind":
            await anyio.sleep(STUCK)
        await self.handle.cluster.bind(pod, node_name)
        return None


class HangPostBind(PostBindPlugin):
    name = "HangPostBind"

    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        if pod.labels.get("hang") == "postbind":
            await anyio.sleep(STUCK)


class HangPreEnqueue(PreEnqueuePlugin):
    name = "HangPreEnqueue"

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if pod.labels.get("hang") == "preenqueue":
            _spin()
        return None


class HangHint(FilterPlugin):
    """Rejects pods labelled hint=...; its Node/Add hint hangs for hint=hang."""

    name = "HangHint"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("no") if pod.labels.get("hint") else None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Node", "Add"), self._hint)]

    def _hint(self, pod: PodInfo, old: Any, new: Any) -> str:
        if pod.labels.get("hint") == "hang":
            _spin()
        return QueueingHint.SKIP


PLUGINS = (
    HangFilter,
    HangScore,
    HangReserve,
    HangPreBind,
    HangBind,
    HangPostBind,
    HangPreEnqueue,
    HangHint,
)


class Harness:
    def __init__(self, plugin_timeout: float | None = SHORT, binding_timeout: float = SHORT):
        reg = Registry()
        register_builtins(reg)
        for cls in PLUGINS:
            reg.register(cls.name, cls, "tests")
        cfg = config(
            {
                "filter": ["NodeResourcesFit", "HangFilter", "HangHint"],
                "preEnqueue": ["HangPreEnqueue"],
                "preFilter": ["NodeResourcesFit"],
                "score": ["HangScore"],
                "reserve": ["HangReserve"],
                "preBind": ["HangPreBind"],
                "bind": ["HangBind"],
                "postBind": ["HangPostBind"],
            }
        )
        self.cluster = FakeCluster()
        self.out = Outcomes()
        self.sched = Scheduler(
            cfg,
            reg,
            cluster=self.cluster,
            clock=FakeClock(),
            observer=_Observer(self.out),
            seed=1,
            assumed_ttl=0,
            plugin_timeout=plugin_timeout,
            binding_timeout=binding_timeout,
        )
        self.cluster.sched = self.sched
        self.fw = self.sched.frameworks["ksched"]
        for i in range(3):
            self.sched.on_node_add(make_node(f"n{i}", cpu="8", pods=50))

    def add(self, name: str, **labels: str) -> PodInfo:
        pod = make_pod(name, labels=labels, cpu="1")
        self.cluster.create(pod)
        return pod

    def where(self, pod: PodInfo) -> str | None:
        return self.sched.queue.location(pod)

    async def run(self, pods: int) -> None:
        """Attempt every active pod once and wait for the binding cycles to end."""
        async with anyio.create_task_group() as tg:
            while (qpi := self.sched.queue.pop_nowait()) is not None:
                await schedule_entity(self.sched, qpi, tg)
        assert self.sched.in_flight_bindings == 0


def _failed(h: Harness, name: str) -> str:
    msgs = [m for n, m in h.out.failed if n == name]
    assert len(msgs) == 1, h.out.failed
    return msgs[0]


@pytest.mark.parametrize(
    ("hang", "plugin"),
    [
        ("filter", '"HangFilter" (filter)'),
        ("score", '"HangScore" (score)'),
        ("reserve", '"HangReserve" (reserve)'),
    ],
)
async def test_hung_scheduling_plugin_fails_only_that_pod(hang: str, plugin: str) -> None:
    h = Harness()
    stuck = h.add("stuck", hang=hang)
    h.add("fine")
    await h.run(2)
    assert h.out.scheduled == ["fine"] and h.cluster.bound.keys() == {"fine"}
    assert _failed(h, "stuck") == f"plugin {plugin} did not return within 0.05s"
    # Nothing of the abandoned attempt stays behind: not assumed, resources free, requeued.
    assert not h.sched.cache.is_assumed(stuck) and h.sched.cache.get_pod(stuck) is None
    assert h.sched.queue.location(stuck) is not None
    assert sum(ni.requested.milli_cpu for ni in h.sched.cache.nodes.values()) == 1000
    if hang == "reserve":
        assert h.fw.plugins["HangReserve"].unreserved == ["stuck"]


async def test_the_stuck_plugin_is_not_called_again_in_that_attempt() -> None:
    h = Harness()
    h.add("stuck", hang="filter")
    await h.run(1)
    assert h.fw.plugins["HangFilter"].calls == 1
    assert _nothing_fires_outside()


@pytest.mark.parametrize(
    ("hang", "plugin"),
    [("prebind", '"HangPreBind" (pre_bind)'), ("bind", '"HangBind" (bind)')],
)
async def test_hung_binding_plugin_fails_the_binding_and_frees_the_pod(
    hang: str, plugin: str
) -> None:
    h = Harness()
    stuck = h.add("stuck", hang=hang)
    h.add("fine")
    await h.run(2)
    assert h.cluster.bound == {"fine": h.cluster.bound["fine"]}
    assert _failed(h, "stuck") == f"plugin {plugin} did not return within 0.05s"
    assert not h.sched.cache.is_assumed(stuck) and h.sched.cache.get_pod(stuck) is None
    assert h.sched.queue.location(stuck) is not None  # retried with backoff
    assert h.fw.plugins["HangReserve"].unreserved == ["stuck"]


async def test_hung_post_bind_leaves_the_pod_bound(logs: list[MutableMapping[str, Any]]) -> None:
    h = Harness()
    h.add("stuck", hang="postbind")
    await h.run(1)
    assert h.out.scheduled == ["stuck"] and not h.out.failed
    [entry] = [e for e in logs if e["event"] == "postbind abandoned"]
    assert entry["error"] == 'plugin "HangPostBind" (post_bind) did not return within 0.05s'


async def test_zero_timeouts_leave_plugins_unbounded() -> None:
    h = Harness(plugin_timeout=0, binding_timeout=0)
    assert h.sched.deadline.seconds is None and h.sched.overdue.limit is None
    h.add("stuck", hang="prebind")
    with anyio.move_on_after(0.3) as scope:
        await h.run(1)
    assert scope.cancel_called and not h.out.failed


async def test_explain_reports_a_hung_plugin_as_an_error() -> None:
    from ksched.daemon.explain import explain_pending

    h = Harness()
    h.add("stuck", hang="filter")
    qpi = h.sched.queue.pop_nowait()
    assert qpi is not None
    out = explain_pending(h.sched, qpi)
    assert out["result"] == "Error"
    assert out["message"] == 'plugin "HangFilter" (filter) did not return within 0.05s'


async def test_hung_pre_enqueue_gates_only_that_pod() -> None:
    h = Harness()
    stuck = h.add("stuck", hang="preenqueue")
    h.add("fine")
    await h.run(1)
    assert h.out.scheduled == ["fine"]
    assert h.where(stuck) == "unschedulable"  # waits in the pool, as for a PreEnqueue error
    [row] = h.sched.queue.dump()["gated"]
    assert row["pod"] == stuck.key
    assert row["gatingMessage"] == (
        'plugin "HangPreEnqueue" (pre_enqueue) did not return within 0.05s'
    )


async def test_hung_queueing_hint_counts_as_queue() -> None:
    h = Harness()
    stuck = h.add("stuck", hint="hang")
    skipped = h.add("skipped", hint="skip")
    await h.run(1)
    assert h.where(stuck) == h.where(skipped) == "unschedulable"
    h.sched.on_node_add(make_node("n9", cpu="8", pods=50))
    # The hanging hint is abandoned and, like a failing one, moves its pod; the other
    # pod's hint answered Skip.
    assert h.where(stuck) == "backoff" and h.where(skipped) == "unschedulable"


def test_a_handler_installed_later_turns_deadlines_off() -> None:
    got: list[int] = []
    SyncDeadline(SHORT).call(lambda: None)  # ours is installed
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: got.append(signum))
    try:
        time.sleep(2 * SHORT)  # whatever timer was running fires now
        got.clear()
        dl = SyncDeadline(SHORT)
        with dl:
            time.sleep(2 * SHORT)  # not interrupted: the deadline is off
        time.sleep(2 * SHORT)
        assert got == [] and not dl.enabled
    finally:
        signal.signal(signal.SIGALRM, previous)
        _Alarm.usable = None  # let later tests install ours again


def test_deadlines_work_again_once_sigalrm_is_given_back() -> None:
    """Whoever borrowed SIGALRM and put our handler back: the deadline is ours again
    (it stayed off for the rest of the process, and a later test's hung plugin hung)."""
    SyncDeadline(SHORT).call(lambda: None)  # ours is installed
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: None)
    time.sleep(2 * SHORT)  # whatever timer was running fires now, into the borrower
    signal.signal(signal.SIGALRM, previous)
    _Alarm.usable = None  # asked afresh, as after a reset
    dl = SyncDeadline(SHORT)
    assert dl.enabled
    with pytest.raises(PluginTimeout), dl:
        time.sleep(40 * SHORT)


def test_the_timer_is_stopped_at_exit() -> None:
    """Interpreter shutdown restores SIGALRM's default action (terminate): a timer left
    running then killed an exiting daemon with -14 instead of its exit status."""
    import subprocess
    import sys

    script = (
        "import atexit, signal, sys\n"
        "from ksched.framework.deadline import SyncDeadline\n"
        "with SyncDeadline(30.0):\n"
        "    pass\n"
        "assert signal.getitimer(signal.ITIMER_REAL)[0] > 0  # left running, by design\n"
        "atexit._run_exitfuncs()\n"
        "print(signal.getitimer(signal.ITIMER_REAL))\n"
        "sys.exit(1)\n"
    )
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    assert p.stdout.strip() == "(0.0, 0.0)"
