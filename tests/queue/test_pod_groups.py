"""Pod groups in the scheduling queue (GenericWorkload, v1.37): members wait "incomplete"
for their PodGroup, ride in one entity through PreEnqueue (GangScheduling), activeQ,
backoffQ and the pool, and wait "pending" while their group is in flight."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import ObjectMeta
from ksched.api.workload import (
    BasicSchedulingPolicy,
    GangSchedulingPolicy,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
)
from ksched.cache import Cache
from ksched.framework.podgroup import PodGroupInfo
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.queue import events as ev
from ksched.queue.podgroups import QueuedPodGroupInfo
from ksched.queue.scheduling_queue import (
    ACTIVE_Q,
    BACKOFF_Q,
    UNSCHEDULABLE,
    QueuedPodInfo,
    SchedulingQueue,
)
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod

from ._util import make_queue

GW = {"GenericWorkload": True}


def pod_group(
    name: str = "g", min_count: int | None = None, priority: int | None = None, rv: str = "1"
) -> PodGroup:
    policy = (
        PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count))
        if min_count is not None
        else PodGroupSchedulingPolicy(basic=BasicSchedulingPolicy())
    )
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="default", resource_version=rv),
        spec=PodGroupSpec(scheduling_policy=policy, priority=priority),
    )


def member(name: str, group: str = "g", **kw: Any) -> PodInfo:
    return make_pod(name, schedulingGroup={"podGroupName": group}, **kw)


class Env:
    """A 1.37 queue with GenericWorkload and GangScheduling's PreEnqueue, fed as the
    scheduler's informer handlers feed it (cache first, then queue, then the event)."""

    def __init__(
        self, version: str = "1.37", gates: dict[str, bool] | None = None, gang: bool = True
    ) -> None:
        self.clock = FakeClock()
        self.moves: list[tuple[str, str, int, str | None]] = []
        gating = ["SchedulingGates", "GangScheduling"] if gang else ["SchedulingGates"]
        self.q: SchedulingQueue = make_queue(
            self.clock,
            points={"preEnqueue": gating},
            version=version,
            gates=GW if gates is None else gates,
        )
        self.q.on_entity_move = lambda *a: self.moves.append(a)
        self.cache = Cache(self.clock, generic_workload=self.q.generic_workload)
        for fw in self.q.frameworks.values():
            fw.handle.pod_group_manager = self.cache

    def add(self, *pods: PodInfo) -> None:
        for p in pods:
            self.cache.add_pod_group_member(p)
            self.q.add(p, "ksched")
            self.q.move_all_to_active_or_backoff(self.q.pending_events.add, None, p)

    def add_group(self, pg: PodGroup) -> None:
        self.cache.add_pod_group(pg)
        self.q.add_pod_group(pg)
        self.q.move_all_to_active_or_backoff(ev.POD_GROUP_ADD, None, pg)

    def update_group(self, old: PodGroup, new: PodGroup) -> None:
        self.cache.update_pod_group(old, new)
        self.q.update_pod_group(old, new)
        self.q.move_all_to_active_or_backoff(ev.POD_GROUP_UPDATE, old, new)

    def pop_group(self) -> QueuedPodGroupInfo:
        e = self.q.pop_nowait()
        assert isinstance(e, QueuedPodGroupInfo)
        return e


def names(e: QueuedPodGroupInfo) -> list[str]:
    return [m.pod_info.name for m in e.members]


def test_members_wait_incomplete_until_their_pod_group_is_observed() -> None:
    env = Env()
    a, b = member("a"), member("b")
    env.add(a, b)
    assert env.q.pop_nowait() is None
    assert env.q.location(a) == "incomplete"
    assert env.q.pending_counts()["incomplete"] == 2
    env.add_group(pod_group())
    assert env.q.pending_counts()["incomplete"] == 0
    group = env.pop_group()
    assert group.key == "default/g"
    assert names(group) == ["a", "b"]
    assert [p.name for p in group.info.unscheduled_pods] == ["a", "b"]
    assert env.q.in_flight() == 2  # every member is in flight
    assert group.attempts == 1 and all(m.attempts == 1 for m in group.members)


def test_pod_group_seen_first_then_members_form_one_entity_in_member_order() -> None:
    env = Env()
    env.add_group(pod_group())
    env.add(member("low", priority=1), member("high", priority=5), member("mid", priority=3))
    assert env.q.location(member("x")) is None
    group = env.pop_group()
    assert names(group) == ["high", "mid", "low"]
    assert env.q.pop_nowait() is None


def test_gang_is_gated_until_min_count_members_exist() -> None:
    env = Env()
    env.add_group(pod_group(min_count=3))
    a, b, c = member("a"), member("b"), member("c")
    env.add(a, b)
    assert env.q.pop_nowait() is None
    assert env.q.location(a) == UNSCHEDULABLE
    [row] = env.q.dump()["gated"][:1]
    assert row["gatingPlugin"] == "GangScheduling"
    assert row["gatingMessage"] == (
        "waiting for minCount pods from a gang to appear in scheduling queue"
    )
    assert env.q.pending_counts()["gated"] == 2
    assert env.q.entity_counts()[("gated", "podgroup")] == 1
    env.add(c)  # the third member's UnscheduledPodAdd: GangScheduling's hint says Queue
    group = env.pop_group()
    assert names(group) == ["a", "b", "c"]


def test_lowered_min_count_requeues_the_gated_gang_by_its_hint() -> None:
    env = Env()
    old = pod_group(min_count=3, rv="1")
    env.add_group(old)
    env.add(member("a"), member("b"))
    raised = pod_group(min_count=4, rv="2")
    env.update_group(old, raised)
    assert env.q.pop_nowait() is None  # minCount went up: QueueSkip
    lowered = pod_group(min_count=2, rv="3")
    env.update_group(raised, lowered)
    group = env.pop_group()
    assert group.info.pod_group.spec.scheduling_policy.gang == GangSchedulingPolicy(min_count=2)


def test_a_member_arriving_while_its_group_is_in_flight_waits_pending_and_rejoins() -> None:
    env = Env()
    env.add_group(pod_group())
    a = member("a")
    env.add(a)
    group = env.pop_group()
    b = member("b")
    env.add(b)
    assert env.q.location(b) == "pending"
    assert env.q.pending_counts()["pending"] == 1
    env.q.done(a)  # a was bound
    env.q.add_attempted_pod_group_if_needed(group, 1, None)
    assert env.q.pending_counts()["pending"] == 0
    again = env.pop_group()
    assert names(again) == ["b"]
    assert again.attempts == 2  # the entity's queueing state carries over


def test_nothing_to_requeue_after_a_fully_scheduled_group() -> None:
    env = Env()
    env.add_group(pod_group())
    a = member("a")
    env.add(a)
    group = env.pop_group()
    env.q.done(a)
    env.q.add_attempted_pod_group_if_needed(group, 1, Status())
    assert env.q.pop_nowait() is None
    # the group is no longer in flight: a new member makes a new entity at once
    env.add(member("b"))
    assert names(env.pop_group()) == ["b"]


def fail_member(env: Env, qpi: QueuedPodInfo, plugin: str = "NodeAddOnly") -> None:
    qpi.unschedulable_plugins = {plugin}
    env.q.add_unschedulable_if_not_present(qpi)


def test_rejected_group_backs_off_with_its_failed_members() -> None:
    env = Env()
    env.q.pop_from_backoff = False  # an idle pop would take it from backoffQ at once
    env.add_group(pod_group())
    env.add(member("a"), member("b"))
    group = env.pop_group()
    a, b = group.members
    fail_member(env, a)
    fail_member(env, b)
    assert env.q.location(a.pod_info) == "pending"
    assert env.q.in_flight() == 0  # a failed member is done at once
    env.q.add_attempted_pod_group_if_needed(group, 1, Status(Code.UNSCHEDULABLE, "no"))
    assert env.q.location(a.pod_info) == BACKOFF_Q
    again = env.q.get_entity(group.queue_key)
    assert isinstance(again, QueuedPodGroupInfo)
    assert again.unschedulable_count == 1 and a.unschedulable_count == 1
    assert env.q.backoff_duration(again) == 1.0
    assert env.q.pop_nowait() is None
    env.clock.advance(1.0)
    assert names(env.pop_group()) == ["a", "b"]


def test_successful_cycle_with_failed_members_keeps_the_group_timestamp() -> None:
    env = Env()
    env.add_group(pod_group())
    env.add(member("a"), member("b"))
    group = env.pop_group()
    t0 = group.timestamp
    env.clock.advance(5.0)
    a, b = group.members
    env.q.done(a.pod_info)
    fail_member(env, b)
    env.q.add_attempted_pod_group_if_needed(group, 1, None)
    again = env.pop_group()
    assert names(again) == ["b"]
    assert again.timestamp == t0  # preemption is tried next, ahead of newer entities
    assert again.unschedulable_count == 0


def test_errored_cycle_counts_an_error_and_renews_the_timestamp() -> None:
    env = Env()
    env.add_group(pod_group())
    env.add(member("a"))
    group = env.pop_group()
    env.clock.advance(5.0)
    [a] = group.members
    env.q.add_unschedulable_if_not_present(a, error=True)
    env.q.add_attempted_pod_group_if_needed(group, 1, Status.as_error("boom"))
    again = env.q.get_entity(group.queue_key)
    assert isinstance(again, QueuedPodGroupInfo)
    assert again.consecutive_errors == 1 and again.timestamp == env.clock.now()


def test_group_priority_is_its_pod_groups_in_queue_order() -> None:
    env = Env()
    env.add(make_pod("solo", priority=5))
    env.add_group(pod_group(priority=10))
    env.add(member("a", priority=0))
    first = env.q.pop_nowait()
    assert isinstance(first, QueuedPodGroupInfo) and first.priority == 10
    second = env.q.pop_nowait()
    assert isinstance(second, QueuedPodInfo) and second.pod_info.name == "solo"


def test_deleting_members_shrinks_then_drops_the_entity() -> None:
    env = Env()
    env.add_group(pod_group())
    a, b, c = member("a"), member("b"), member("c", group="other")
    env.add(a, b, c)
    env.q.delete(a)
    assert env.q.location(b) == ACTIVE_Q
    env.q.delete(b)
    assert env.q.location(b) is None
    assert env.q.pop_nowait() is None
    env.q.delete(c)  # incomplete
    assert env.q.pending_counts()["incomplete"] == 0


def test_a_member_deleted_in_flight_does_not_come_back() -> None:
    env = Env()
    env.add_group(pod_group())
    env.add(member("a"))
    group = env.pop_group()
    [a] = group.members
    env.q.delete(a.pod_info)
    fail_member(env, a)
    env.q.add_attempted_pod_group_if_needed(group, 1, Status(Code.UNSCHEDULABLE))
    assert env.q.pop_nowait() is None and env.q.in_flight() == 0


def test_deleting_the_pod_group_sends_queued_and_pending_members_back_to_incomplete() -> None:
    env = Env()
    pg = pod_group()
    env.add_group(pg)
    env.add(member("a"), member("b"))
    env.q.delete_pod_group(pg)
    assert env.q.pending_counts()["incomplete"] == 2
    assert env.q.pop_nowait() is None
    env.add_group(pg)
    group = env.pop_group()
    c = member("c")
    env.add(c)  # pending: the group is in flight
    env.q.delete_pod_group(pg)
    assert env.q.location(c) == "incomplete"
    env.q.add_attempted_pod_group_if_needed(group, 1, None)
    assert env.q.pop_nowait() is None


def test_updating_a_member_in_its_entity_and_while_incomplete() -> None:
    env = Env()
    a = member("a", labels={"v": "1"})
    env.add(a)
    a2 = member("a", labels={"v": "2"}, uid=a.uid)
    env.q.update(a, a2)
    env.add_group(pod_group())
    group = env.q.get_entity("PodGroup/default/g")
    assert isinstance(group, QueuedPodGroupInfo)
    assert group.members[0].pod_info is a2
    a3 = member("a", labels={"v": "3"}, uid=a.uid)
    env.q.update(a2, a3)
    assert group.members[0].pod_info is a3 and group.info.unscheduled_pods[0] is a3
    assert env.q.get(a3) is group.members[0]


def test_activating_a_member_moves_its_whole_group_out_of_backoff() -> None:
    env = Env()
    env.add_group(pod_group())
    env.add(member("a"), member("b"))
    group = env.pop_group()
    for m in group.members:
        fail_member(env, m)
    env.q.add_attempted_pod_group_if_needed(group, 1, Status(Code.UNSCHEDULABLE))
    a = group.members[0].pod_info
    assert env.q.location(a) == BACKOFF_Q
    env.q.activate([a])
    assert env.q.location(a) == ACTIVE_Q
    assert names(env.pop_group()) == ["a", "b"]


def test_a_cluster_event_requeues_a_group_when_any_members_hint_says_so() -> None:
    env = Env()
    env.q.pop_from_backoff = False
    env.add_group(pod_group(min_count=2))
    env.add(member("a"), member("b"))
    group = env.pop_group()
    a, b = group.members
    fail_member(env, a, "NothingHelps")
    fail_member(env, b, "NodeAddOnly")
    env.q.add_attempted_pod_group_if_needed(group, 1, Status(Code.UNSCHEDULABLE))
    # a pool entity (how it got there is beside the point here)
    entity = env.q.get_entity(group.queue_key)
    assert isinstance(entity, QueuedPodGroupInfo)
    env.q._remove(entity.queue_key)
    env.q._push_unschedulable(entity, "test")
    assert env.q.move_all_to_active_or_backoff(ev.NODE_DELETE, make_node("n"), None) == 0
    assert env.q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n")) == 1
    assert env.q.location(a.pod_info) in (ACTIVE_Q, BACKOFF_Q)


def test_incoming_metrics_count_the_group_once_per_queue_change() -> None:
    env = Env()
    env.add_group(pod_group())
    env.add(member("a"))
    env.add(member("b"))
    assert env.moves == [
        ("UnscheduledPodAdd", ACTIVE_Q, 1, "podgroup"),
        ("UnscheduledPodAdd", ACTIVE_Q, 2, None),  # back where it was: pods only
    ]
    assert env.q.pending_counts()[ACTIVE_Q] == 2
    counts = env.q.entity_counts()
    # no pod entity was ever queued (the members are the group's): no "pod" series yet
    assert (ACTIVE_Q, "pod") not in counts and counts[(ACTIVE_Q, "podgroup")] == 1
    assert (BACKOFF_Q, "podgroup") not in counts  # a series appears on first use


def test_an_entity_counts_unless_its_strategy_names_the_queue_it_lands_in() -> None:
    """recordIncomingEntitiesMetrics: a pool pod that a hint requeues after backoff and
    that lands in backoffQ is an incoming pod, not an incoming entity."""
    env = Env()
    env.add(make_pod("p"))
    qpi = env.q.pop_nowait()
    assert isinstance(qpi, QueuedPodInfo)
    fail_member(env, qpi)  # NodeAddOnly: to the pool, counted
    env.moves.clear()
    env.q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))
    assert env.moves == [("NodeAdd", BACKOFF_Q, 1, None)]


@pytest.mark.parametrize(("version", "gates"), [("1.37", {}), ("1.36", GW)])
def test_without_generic_workload_a_member_is_an_ordinary_pod(
    version: str, gates: dict[str, bool]
) -> None:
    env = Env(version, gates, gang=False)  # upstream enables it only with the gate
    a = member("a")
    env.add(a)
    qpi = env.q.pop_nowait()
    assert isinstance(qpi, QueuedPodInfo) and qpi.pod_info is a
    assert "incomplete" not in env.q.pending_counts()


def test_a_groups_max_backoff_grows_with_the_square_root_of_its_size() -> None:
    env = Env()
    pg = pod_group()
    group = QueuedPodGroupInfo(PodGroupInfo("default", "g", pg), "ksched")
    for name in "abcd":
        group.add_member(QueuedPodInfo(member(name), "ksched", 0.0))
    group.unschedulable_count = 5  # 1, 2, 4, 8, 16 seconds
    assert env.q.backoff_duration(group) == 16.0  # under 10 * sqrt(4)
    group.unschedulable_count = 6
    assert env.q.backoff_duration(group) == 20.0
    solo = QueuedPodInfo(make_pod("p"), "ksched", 0.0, unschedulable_count=6)
    assert env.q.backoff_duration(solo) == 10.0


def test_a_groups_backoff_expiry_is_kept_until_its_next_attempt() -> None:
    env = Env()
    env.q.pop_from_backoff = False
    env.add_group(pod_group())
    env.add(*(member(n) for n in "abcd"))
    group = env.pop_group()
    for m in group.members:
        fail_member(env, m)
    group.unschedulable_count = 5  # the 6th rejection: 32 s, capped at 10 * sqrt(4)
    env.q.add_attempted_pod_group_if_needed(group, 1, Status(Code.UNSCHEDULABLE))
    entity = env.q.get_entity(group.queue_key)
    assert isinstance(entity, QueuedPodGroupInfo)
    assert env.q.backoff_expiry(entity) == 20.0
    env.add(member("e"))  # joins in backoffQ: the cap would be 10 * sqrt(5) now
    assert entity.size() == 5 and env.q.backoff_expiry(entity) == 20.0
    assert env.q.next_backoff_expiry() == 20.0


def test_introspection_lists_members_one_by_one() -> None:
    env = Env()
    env.add_group(pod_group(min_count=3))
    env.add(member("a"), member("b"), member("x", group="other"))
    assert [q.pod_info.name for q in env.q.unschedulable_pods()] == ["a", "b"]
    dump = env.q.dump()
    assert [r["pod"] for r in dump["gated"]] == ["default/a", "default/b"]
    assert [r["pod"] for r in dump["incomplete"]] == ["default/x"]
    [x] = list(env.q.incomplete)
    assert env.q.get(x.pod_info) is x


def test_a_group_wide_pre_enqueue_verdict_is_asked_once_per_gating_of_the_group() -> None:
    """GangScheduling answers for the whole group (``pre_enqueue_per_pod_group``): gating
    a gang asks it once, not once per member, while SchedulingGates (the pod's own gates)
    is asked per member; every member still records its own gate, as before."""
    env = Env()
    env.add_group(pod_group(min_count=5))
    fw = env.q.frameworks["ksched"]
    calls: dict[str, int] = {}
    for p in fw.pre_enqueue_plugins:
        orig = p.pre_enqueue

        def counted(pod: PodInfo, orig: Any = orig, name: str = p.name) -> Status | None:
            calls[name] = calls.get(name, 0) + 1
            return orig(pod)  # type: ignore[no-any-return]

        p.pre_enqueue = counted  # type: ignore[method-assign]
    env.add(*(member(f"m{i}") for i in range(4)))
    (entity,) = [e for e in env.q._entries.values() if isinstance(e, QueuedPodGroupInfo)]
    assert entity.gated and {m.gating_plugin for m in entity.members} == {"GangScheduling"}
    calls.clear()
    env.add(member("m4"))  # the fifth: the quorum is there
    assert calls == {"SchedulingGates": 5, "GangScheduling": 1}
    assert not entity.gated and env.q.location(entity.members[0].pod_info) == ACTIVE_Q
    assert {m.gated for m in entity.members} == {False}


def test_a_group_is_requeued_at_the_strongest_strategy_any_member_gives() -> None:
    """Members are asked in turn until one settles it: after backoff unless some member's
    pending plugin can still queue the group immediately."""
    from ksched.queue.scheduling_queue import QUEUE_AFTER_BACKOFF, QUEUE_IMMEDIATELY

    env = Env()
    env.add_group(pod_group(min_count=3))
    env.add(member("a"), member("b"), member("c"))
    entity = env.pop_group()
    asked: list[str] = []
    orig = env.q._pod_worth_requeuing

    def spy(m: QueuedPodInfo, *a: Any) -> int:
        asked.append(m.pod_info.name)
        return orig(m, *a)

    env.q._pod_worth_requeuing = spy  # type: ignore[method-assign]
    for m in entity.members:
        m.unschedulable_plugins = {"NodeAddOnly"}
    node_add = (ev.NODE_ADD, None, make_node("n"))
    assert env.q._worth_requeuing(entity, *node_add) == QUEUE_AFTER_BACKOFF
    assert asked == ["a"]  # no pending plugin anywhere: the first member settles it
    asked.clear()
    entity.members[2].pending_plugins = {"NodeAddOnly"}
    assert env.q._worth_requeuing(entity, *node_add) == QUEUE_IMMEDIATELY
    assert asked == ["a", "b", "c"]
