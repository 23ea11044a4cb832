"""The typed Handle: ``listers`` by named key with typed views, and ``activate`` (upstream's
PodsToActivate), which moves pods in the scheduler that runs the daemon and ``ksched
simulate`` and is a documented no-op behind the extender server."""

from __future__ import annotations

import random

from ksched import Handle, Listers, default_registry
from ksched.api.objects import Namespace, ObjectMeta
from ksched.config import load_config_data
from ksched.extender.server import ExtenderServer
from ksched.framework.handle import NullCluster
from ksched.scheduler.scheduler import Scheduler
from ksched.testing import make_pod, pod_info
from ksched.util.clock import FakeClock

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def test_listers_wraps_a_plain_dict_and_types_the_builtin_keys() -> None:
    team = Namespace(metadata=ObjectMeta(name="team"))
    handle = Handle(listers={Listers.NAMESPACES: {"team": team}, "widgets": {}})
    assert isinstance(handle.listers, Listers)
    assert handle.listers.namespaces == {"team": team}
    assert handle.listers["widgets"] == {}  # a plugin's own collection, by its key
    assert handle.listers.services is None  # nobody fills it here
    assert handle.listers.store(Listers.SERVICES) == {}
    assert Listers.services.key == Listers.SERVICES == "services"


def _scheduler() -> Scheduler:
    reg = default_registry(entry_points=False)
    cfg, _ = load_config_data(CONFIG, "<test>", set(reg.names()))
    return Scheduler(cfg, reg, cluster=NullCluster(), clock=FakeClock(100.0))


def test_activate_moves_a_pool_pod_of_the_scheduler_queue_to_active() -> None:
    sched = _scheduler()
    handle = sched.frameworks["ksched"].handle
    assert handle.activator is sched.queue
    pod = pod_info(make_pod("p", scheduler_name="ksched"))
    sched.queue.add(pod, "ksched")
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    sched.queue.add_unschedulable_if_not_present(qpi)
    assert [q.pod_info.key for q in sched.queue.unschedulable_pods()] == ["default/p"]
    other = pod_info(make_pod("not-queued"))
    handle.activate([pod, other])  # a pod the queue does not hold is ignored
    assert not sched.queue.unschedulable_pods()
    assert [q.pod_info.key for q in sched.queue.active_pods()] == ["default/p"]


def test_activate_behind_the_extender_server_is_a_no_op() -> None:
    reg = default_registry(entry_points=False)
    cfg, _ = load_config_data(CONFIG, "<test>", set(reg.names()))
    handle = ExtenderServer(cfg, reg).fw.handle
    assert handle.activator is None
    handle.activate([pod_info(make_pod("p"))])  # kube-scheduler owns the queue there


def test_the_scheduler_builds_each_handle_with_its_own_state_not_in_listers() -> None:
    """The random source, the nominator, the preemptions in flight and the cache are the
    Handle's own fields, set when the profile's framework is built; no lister smuggles
    them (a plugin reading ``listers["rng"]`` finds nothing)."""
    reg = default_registry(entry_points=False)
    cfg, _ = load_config_data(
        {**CONFIG, "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]},
        "<test>",
        set(reg.names()),
    )
    sched = Scheduler(cfg, reg, cluster=NullCluster(), clock=FakeClock(100.0), seed=7)
    handles = [fw.handle for fw in sched.frameworks.values()]
    assert len(handles) == 2 and handles[0] is not handles[1]
    for h in handles:
        assert h.rng is sched.rng
        assert h.nominator is sched.queue.nominator
        assert h.preempting is sched.preempting
        assert h.pod_group_manager is sched.cache
        assert h.activator is sched.queue
        assert not {"rng", "nominator", "preempting"} & set(h.listers)
    # the seeded source is the one preemption draws its candidate offset from
    plugin = sched.frameworks["a"].plugins["DefaultPreemption"]
    want = random.Random(7).randrange(1000)
    assert plugin.get_offset_and_num_candidates(1000)[0] == want


def test_a_handle_without_a_scheduler_has_a_fixed_seed_and_no_nominator() -> None:
    """The extender server and plugin unit tests build plain handles: preemption is
    deterministic there too, and no pod is nominated."""
    a, b = Handle(), Handle()
    assert a.rng is not b.rng
    assert [a.rng.randrange(100) for _ in range(5)] == [b.rng.randrange(100) for _ in range(5)]
    assert a.nominator is None and dict(a.preempting) == {}
