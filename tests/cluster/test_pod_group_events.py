"""v1.37's PodGroup event handlers: the informer's adds, updates and deletes of
scheduling.k8s.io PodGroups reach the scheduler's ``on_pod_group_*`` (cache, queue and
the PodGroup cluster events); v1.36's informer only fills the lister."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ksched.api.workload import PodGroup
from ksched.cluster import APIClient, connect_scheduler
from ksched.testing import TestAPIServer

from .conftest import eventually
from .test_scheduling_podgroups import gates, scheduling_podgroup
from .test_watch_resources import WatchingScheduler, fast_backoff

pytestmark = pytest.mark.anyio


class PodGroupScheduler(WatchingScheduler):
    def __init__(self) -> None:
        super().__init__({"a": []})
        self.seen: list[tuple[str, Any]] = []

    def on_pod_group_add(self, pg: PodGroup) -> None:
        self.seen.append(("add", pg.metadata.name))

    def on_pod_group_update(self, old: PodGroup, new: PodGroup) -> None:
        gang = new.spec.scheduling_policy.gang
        self.seen.append(("update", gang.min_count if gang else None))

    def on_pod_group_delete(self, pg: PodGroup) -> None:
        self.seen.append(("delete", pg.metadata.name))


@pytest.mark.parametrize("version", ["1.37", "1.36"])
async def test_pod_group_changes_reach_the_scheduler_from_1_37(
    apiserver: TestAPIServer, client: APIClient, version: str
) -> None:
    if version == "1.37":
        apiserver.create(scheduling_podgroup("g", 3))
    sched = PodGroupScheduler()
    informers = connect_scheduler(
        sched, client, backoff=fast_backoff(), features=gates(version, True)
    )
    (inf,) = [i for i in informers.informers if i.path.endswith("/podgroups")]
    if version == "1.36":  # the lister's handler alone
        assert len(inf.handlers) == 1
        return
    assert len(inf.handlers) == 2
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(informers.run)
        await eventually(lambda: ("add", "g") in sched.seen, what="PodGroup add")
        obj = apiserver.get("podgroups.scheduling.k8s.io", "default", "g")
        obj["spec"]["schedulingPolicy"]["gang"]["minCount"] = 2
        apiserver.update(obj)
        await eventually(lambda: ("update", 2) in sched.seen, what="PodGroup update")
        apiserver.delete("podgroups.scheduling.k8s.io", "default", "g")
        await eventually(lambda: ("delete", "g") in sched.seen, what="PodGroup delete")
        tg.cancel_scope.cancel()
