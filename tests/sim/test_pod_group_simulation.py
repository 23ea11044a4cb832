"""A pod group in ``ksched simulate``'s world (v1.37, GenericWorkload): a cluster file with
a PodGroup and its pods, the pod-group cycle on the simulated cluster, its condition written
into the PodGroups the scheduler reads. The group is assembled here from the popped members
where the queue does not pop pod groups itself (the queue's own grouping is tested with it).
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import anyio
import pytest

from ksched.features import FeatureGates
from ksched.framework.listers import Listers
from ksched.framework.podgroup import PodGroupInfo
from ksched.framework.registry import Registry
from ksched.plugins import BUILTIN_PLUGINS, builtin_plugin
from ksched.queue.podgroups import QueuedPodGroupInfo
from ksched.scheduler.dispatch import schedule_entity
from ksched.sim import PodResult, Simulation, parse_cluster
from tests.queue._util import config
from tests.scheduler.test_schedule_one_podgroup import GangScheduling

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """The scheduler's binding cycles run on asyncio (its binding runner's tasks)."""
    return "asyncio"


def cluster(min_count: int, pods: int, priority_class: str = "") -> str:
    pc = f"priorityClassName: {priority_class}, " if priority_class else ""
    items = [
        "- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, "
        "value: 1000}",
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}, "
        'status: {allocatable: {cpu: "2", pods: "10"}}}',
        "- {apiVersion: v1, kind: Node, metadata: {name: n2}, "
        'status: {allocatable: {cpu: "2", pods: "10"}}}',
        "- apiVersion: scheduling.k8s.io/v1beta1\n  kind: PodGroup\n"
        "  metadata: {name: workers, namespace: ml, generation: 2}\n"
        f"  spec: {{{pc}schedulingPolicy: {{gang: {{minCount: {min_count}}}}}}}",
    ]
    for i in range(pods):
        items.append(
            "- apiVersion: v1\n  kind: Pod\n"
            f"  metadata: {{name: w{i}, namespace: ml}}\n"
            "  spec:\n    schedulerName: ksched\n"
            + (f"    priorityClassName: {priority_class}\n" if priority_class else "")
            + "    schedulingGroup: {podGroupName: workers}\n"
            '    containers: [{name: c, resources: {requests: {cpu: "1"}}}]'
        )
    return "apiVersion: v1\nkind: List\nitems:\n" + "\n".join(items) + "\n"


async def simulate(
    min_count: int, pods: int, priority_class: str = ""
) -> tuple[Simulation, list[PodResult]]:
    reg = Registry()
    for name in BUILTIN_PLUGINS:
        if name != "GangScheduling":  # the tests' fake, until the real one is merged
            reg.register(name, builtin_plugin(name))
    reg.register(GangScheduling.name, GangScheduling, "tests")
    cfg = config(
        {
            "preFilter": ["NodeResourcesFit"],
            "filter": ["NodeResourcesFit"],
            "permit": ["GangScheduling"],
        }
    )
    cfg = dataclasses.replace(
        cfg, features=FeatureGates("1.37", MappingProxyType({"GenericWorkload": True}))
    )
    sim = Simulation(parse_cluster(cluster(min_count, pods, priority_class), "c.yaml"), cfg, reg)
    pending = sim._load()
    q = sim.sched.queue
    members = []
    while (got := q.pop_nowait()) is not None:
        if isinstance(got, QueuedPodGroupInfo):
            group = got
            break
        members.append(got)
    else:
        store = sim.sched.frameworks["ksched"].handle.listers[Listers.SCHEDULING_POD_GROUPS]
        info = PodGroupInfo("ml", "workers", store["ml/workers"], [m.pod_info for m in members])
        group = QueuedPodGroupInfo(info, "ksched", members)
    async with anyio.create_task_group() as tg:
        sim.sched.loop.task_group = tg
        await schedule_entity(sim.sched, group, tg)
        await sim._settle()
    return sim, sim._results(pending)


async def test_a_gang_that_fits_is_bound_and_its_pod_group_says_so() -> None:
    sim, results = await simulate(4, 4)
    assert sorted(r.node or "" for r in results) == ["n1", "n1", "n2", "n2"]
    assert all(r.status == "Scheduled" for r in results)
    store = sim.sched.frameworks["ksched"].handle.listers[Listers.SCHEDULING_POD_GROUPS]
    (cond,) = store["ml/workers"].status.conditions
    assert (cond.type, cond.status, cond.reason, cond.observed_generation) == (
        "PodGroupInitiallyScheduled",
        "True",
        "Scheduled",
        2,
    )
    assert sim.recorder.pod_group_conditions["ml/workers"] == [cond]


async def test_a_gang_too_big_for_the_cluster_binds_nothing() -> None:
    sim, results = await simulate(5, 5)
    assert all(r.node is None and r.status == "Unschedulable" for r in results)
    msgs = sorted({r.message for r in results})
    group = "minCount (5) cannot be satisfied: 4 scheduled, 0 remaining, "
    assert msgs == [
        "0/2 nodes are available: 2 Insufficient cpu.",
        "pod group is unschedulable, " + group,
    ]
    store = sim.sched.frameworks["ksched"].handle.listers[Listers.SCHEDULING_POD_GROUPS]
    (cond,) = store["ml/workers"].status.conditions
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", group)
    # the simulated cluster is as it was: nothing assumed
    assert not sim.sched.cache.assumed
    assert all(ni.requested.milli_cpu == 0 for ni in sim.sched.cache.nodes.values())


async def test_the_pod_group_gets_its_priority_from_its_priority_class_as_its_pods() -> None:
    """Admission resolves a PodGroup's priority like a pod's: members of class "high" and
    their group of class "high" agree (validation passes)."""
    sim, results = await simulate(2, 2, "high")
    assert all(r.status == "Scheduled" for r in results)
    store = sim.sched.frameworks["ksched"].handle.listers[Listers.SCHEDULING_POD_GROUPS]
    assert store["ml/workers"].spec.priority == 1000
