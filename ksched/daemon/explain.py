"""``/debug/explain``: why a pod is (or would be) placed where it is.

Recording full explanations (every Filter plugin's verdict on every node, every Score
plugin's scores) on every attempt would multiply the cost of a scheduling cycle, so the
daemon does not. Instead it keeps two cheap things and computes the rest on request:

* ``Outcomes``: the last attempt's result per pod (result, node, FitError message,
  rejecting plugins, attempts) — a small tuple stored by the observer, bounded LRU;
* ``explain_pending``: for a pod still in the scheduling queue, re-run PreFilter, Filter,
  PreScore and Score with ``explain=True`` against the current cache snapshot, without
  assuming, reserving or binding. The round-robin start index is a copy and the tie-break
  RNG is restored afterwards, so the request does not change what the scheduler does next.

The recomputation reflects the cluster as it is now, which is what one debugging a
pending pod wants to know; the ``lastAttempt`` part says what the last real attempt saw.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..framework.cycle_state import CycleState
from ..framework.deadline import PluginTimeout
from ..framework.status import Code, Status
from ..framework.types import PodInfo
from ..scheduler.cycle_result import CycleResult
from ..scheduler.explanation import preemption_of
from ..scheduler.schedule_one import schedule_pod

if TYPE_CHECKING:
    from ..queue.scheduling_queue import QueuedPodInfo
    from ..scheduler.scheduler import Scheduler

__all__ = ["Outcomes", "explain_pending", "find_pending"]

# (result, node, message, attempts, rejecting plugins, unix time, preemption)
_Outcome = tuple[str, str | None, str, int, frozenset[str] | set[str], float, dict[str, Any] | None]


class Outcomes:
    """The last attempt's outcome of recently attempted pods, by ``namespace/name``."""

    def __init__(self, limit: int = 10000) -> None:
        self.limit = limit
        self._data: OrderedDict[str, _Outcome] = OrderedDict()

    def record(self, key: str, outcome: _Outcome) -> None:
        data = self._data
        data[key] = outcome
        data.move_to_end(key)
        if len(data) > self.limit:
            data.popitem(last=False)

    def scheduled(self, pod: PodInfo, node: str, attempts: int) -> None:
        self.record(pod.key, ("Scheduled", node, "", attempts, frozenset(), time.time(), None))

    def failed(self, pod: PodInfo, reason: str, message: str, result: CycleResult | None) -> None:
        plugins: frozenset[str] | set[str] = frozenset()
        preemption = None
        if result is not None and result.fit_error is not None:
            plugins = result.fit_error.diagnosis.unschedulable_plugins
            preemption = preemption_of(result)
        self.record(pod.key, (reason, None, message, 0, plugins, time.time(), preemption))

    def get(self, key: str) -> dict[str, Any] | None:
        o = self._data.get(key)
        if o is None:
            return None
        result, node, message, attempts, plugins, at, preemption = o
        out: dict[str, Any] = {
            "result": result,
            "node": node,
            "message": message,
            "unschedulablePlugins": sorted(plugins),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)),
            "preemption": preemption,
        }
        if attempts:
            out["attempts"] = attempts
        return out

    def __len__(self) -> int:
        return len(self._data)


def find_pending(sched: Scheduler, key: str) -> QueuedPodInfo | None:
    """The queued entry of pod ``namespace/name`` (active, backoff or unschedulable), if any."""
    for q in sched.queue.unschedulable_pods():
        if q.pod_info.key == key:
            return q
    for q in sched.queue.backoff_pods():
        if q.pod_info.key == key:
            return q
    for q in sched.queue.active_pods():
        if q.pod_info.key == key:
            return q
    return None


def explain_pending(
    sched: Scheduler, qpi: QueuedPodInfo, preemption: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The explanation model (``ksched.scheduler.explanation``) of ``qpi`` on the current
    snapshot, with no side effects.

    PostFilter is not re-run (a plugin's PostFilter may act: Coscheduling rejects its
    gang's waiting pods), so ``preemption`` is the last real attempt's, when it had one.
    """
    pod = qpi.pod_info
    out: dict[str, Any] = {"computedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    fw = sched.frameworks[qpi.profile]
    if pod.error is not None:
        res = CycleResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, pod.error))
        out.update(sched.describe(res, preemption=preemption, weights=fw.weights))
        return out
    sched.cache.update_snapshot(sched.snapshot)
    rng_state = sched.rng.getstate()
    pause = getattr(sched.metrics, "paused", None)
    if pause is not None:
        pause(True)
    try:
        with sched.deadline:
            # The cycle's own routine on a copy of the round-robin start: the scheduler's
            # next cycle starts where it would have.
            res = schedule_pod(sched, fw, CycleState(), pod, True, sched.rotation.copy())
    except (Exception, PluginTimeout) as e:  # a plugin's Error status, or one that hung
        res = CycleResult(Status(Code.ERROR, str(e)))
    finally:
        sched.rng.setstate(rng_state)
        if pause is not None:
            pause(False)
    out.update(sched.describe(res, preemption=preemption, weights=fw.weights))
    return out
