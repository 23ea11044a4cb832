"""Replay one pending pod against ksched, in-process, on the state kube-scheduler saw.

The state (nodes, bound pods, claims, volumes, workloads, priority classes, PDBs) is the
API server's own objects, listed just before the pod was created, and the pod is the
created object (uid, generation, admission's priority and overhead). ``ksched simulate``
runs it: the same Scheduler, queue, frameworks and binding cycle as the daemon, on
virtual time, with explanations on so every Filter verdict and Score is visible. The
PodScheduled condition is built by the daemon's own builder. The DRA driver of devices
with binding conditions is played as the kube replay plays it (``driver.py``), on
virtual time.

Unlike the rest of ``ksched.testing`` this module imports ksched itself: it is the thing
under test.
"""

from __future__ import annotations

import functools
import json
from typing import Any, cast

import anyio
import msgspec

from ...api.objects import PodSchedulingGate
from ...api.resource import ResourceClaim
from ...cluster.status import scheduling_failed_condition
from ...config import load_config
from ...config.types import DEFAULT_SCHEDULER_NAME
from ...features import FeatureGates
from ...framework.listers import Listers
from ...framework.registry import Registry
from ...plugins import default_registry
from ...sim import Simulation, parse_cluster
from ...sim.simulator import PodResult
from ...util.clock import rfc3339
from .driver import DRIVER_DELAY, driver_status
from .generator import JSON
from .outcome import (
    HELD_AT_PRE_ENQUEUE,
    Outcome,
    ReplayHints,
    gated_outcome,
    group_outcome,
    victim_units,
)

__all__ = ["KschedReplay", "binding_driver", "scenario_file", "scenario_files"]

#: Where ksched's PodGroup informer keeps them (``ksched.framework.listers``).
POD_GROUPS_LISTER = Listers.SCHEDULING_POD_GROUPS


def binding_driver(claim: ResourceClaim) -> list[dict[str, Any]] | None:
    """``driver_status`` on ksched's claim: the simulator's DRA driver."""
    return driver_status(msgspec.to_builtins(claim), rfc3339())


def scenario_file(state: list[JSON], pod: JSON) -> str:
    """A ``kind: List`` that ``ksched simulate --cluster`` reads: the state plus the pod,
    which names ksched's default profile instead of kube-scheduler's."""
    return scenario_files(state, [pod])


def scenario_files(state: list[JSON], pods: list[JSON]) -> str:
    """``scenario_file`` with several pending pods (a PodGroup's members)."""
    mine = [
        {**p, "spec": {**p.get("spec", {}), "schedulerName": DEFAULT_SCHEDULER_NAME}} for p in pods
    ]
    items = [_strip(o) for o in [*state, *mine]]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1)


def _pod_group(sim: Simulation, key: str) -> JSON | None:
    """The PodGroup ``key`` in ksched's PodGroup lister (``scheduling.podgroups``, where
    the scheduler's status writes land), as JSON; None without one."""
    for fw in sim.sched.frameworks.values():
        store = fw.handle.listers.get(POD_GROUPS_LISTER)
        obj = store.get(key) if store is not None else None
        if obj is not None:
            return cast(JSON, msgspec.to_builtins(obj))
    return None


def _ungate(sim: Simulation, update: JSON) -> None:
    """The gate-removing update of a pending pod the scheduler holds gated: its
    scheduling gates and generation (what the update changed) on the pod it has."""
    meta = update["metadata"]
    cur = next(p for p in sim.cluster.pods.values() if p.uid == meta["uid"])
    gates = [PodSchedulingGate(name=g["name"]) for g in update["spec"].get("schedulingGates", [])]
    spec = msgspec.structs.replace(cur.pod.spec, scheduling_gates=gates)
    generation = int(meta.get("generation") or cur.pod.metadata.generation)
    new_meta = msgspec.structs.replace(cur.pod.metadata, generation=generation)
    sim.cluster.update_pod(
        cur.with_pod(msgspec.structs.replace(cur.pod, spec=spec, metadata=new_meta))
    )


def _strip(obj: JSON) -> JSON:
    """Without managedFields (noise to a reader; nothing schedules by them)."""
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


class KschedReplay:
    """ksched's default profile (or ``config``), built once, run per pod, under
    ``features`` (the default gates if None)."""

    def __init__(
        self,
        config_path: str | None = None,
        registry: Registry | None = None,
        features: FeatureGates | None = None,
    ) -> None:
        self.config_path = config_path
        self.registry = registry or default_registry()
        known = set(self.registry.names())
        self.config, _warnings = load_config(config_path, known, features)

    def with_features(self, features: FeatureGates) -> KschedReplay:
        """The same profile under other gates (another version, the ``gates`` group's)."""
        if features == self.config.features:
            return self
        return KschedReplay(self.config_path, self.registry, features)

    def __call__(
        self,
        state: list[JSON],
        pod: JSON,
        history: list[list[JSON]] | None = None,
        update: JSON | None = None,
    ) -> Outcome:
        """``history``: the states before the earlier pods of the run, oldest first (each
        the state of one kube-scheduler snapshot: ``Simulation.replay_history``).
        ``update``: the pod as a client's update left it once the scheduler had seen
        ``pod`` gated (the ``schedgates`` group's removal of scheduling gates, as the API
        server returned it): applied before the first cycle, as kube-scheduler's queue
        saw the gated pod and then the update."""
        sim, results = self._simulate(state, [pod], history=history, update=update)
        return self._outcome(sim, results, update or pod)

    def batch(
        self,
        state: list[JSON],
        groups: list[JSON],
        pods: list[JSON],
        hints: ReplayHints | None = None,
    ) -> list[Outcome]:
        """A PodGroup's members, pending together with their PodGroup(s) beside
        ``state``: each member's outcome, and on each the group's (``group_outcome``:
        the PodGroup as ksched's scheduler left it in its lister). ``hints``: what
        kube-scheduler drew at random (a later member's best nodes depend on where the
        earlier ones went; the first placement tried names the group's status)."""
        sim, results = self._simulate([*state, *groups], pods, hints)
        outs = [self._outcome(sim, results, pod) for pod in pods]
        victims_of = sim.sched.preemptions
        # a member's own preemption (its uid), or the group's (the PodGroup's uid or key)
        found = {v for o in outs for v in o.victims}
        for group in groups:
            meta = group["metadata"]
            key = meta.get("uid") or f"{meta['namespace']}/{meta['name']}"
            found.update(victims_of.get(key, []))
        victims = victim_units(sorted(found), state)
        for o in outs:
            o.victims = []
        for group in groups:
            meta = group["metadata"]
            written = _pod_group(sim, f"{meta['namespace']}/{meta['name']}") or group
            summary = group_outcome(written, outs, victims)
            for o in outs:
                o.group = summary
        return outs

    def _simulate(
        self,
        state: list[JSON],
        pods: list[JSON],
        hints: ReplayHints | None = None,
        history: list[list[JSON]] | None = None,
        update: JSON | None = None,
    ) -> tuple[Simulation, list[PodResult]]:
        first = pods[0]["metadata"]
        text = scenario_files(state, pods)
        cluster = parse_cluster(text, f"{first['namespace']}/{first['name']}")
        sim = Simulation(
            cluster,
            self.config,
            self.registry,
            seed=0,
            explain=True,
            tie_breaks=None if hints is None else hints.ties,
            placement_orders=None if hints is None else hints.placement_orders,
        )
        if history:
            sim.replay_history([parse_cluster(scenario_files(h, []), "history") for h in history])
        sim.cluster.device_driver = binding_driver
        sim.cluster.driver_delay = DRIVER_DELAY
        on_loaded = None if update is None else functools.partial(_ungate, update=update)
        return sim, anyio.run(sim.run, on_loaded)

    def _outcome(self, sim: Simulation, results: list[PodResult], pod: JSON) -> Outcome:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        uid = pod["metadata"].get("uid", "")
        mine = next((r for r in results if f"{r.namespace}/{r.name}" == key), None)
        if mine is None:
            return Outcome("Error", message="ksched did not attempt the pod")
        failures = sim.recorder.failures.get(uid, [])
        cur = next((p for p in sim.cluster.pods.values() if p.uid == uid), None)
        if cur is not None and cur.pod.spec.scheduling_gates and not failures and not mine.node:
            # never let in by PreEnqueue: what the pod reports, as on the API server
            return gated_outcome(cast(JSON, msgspec.to_builtins(cur.pod)))
        out = Outcome(mine.status, node=mine.node, victims=sorted(mine.preempted))
        stopped = bool(failures) and (
            not sim.recorder.first_nominated.get(uid) or uid in sim.cluster.unnominated
        )
        if failures:
            reason, message = failures[0]
            if stopped:
                # The kube replay's outcome is the pod's first PodScheduled=False condition
                # unless it nominates a node (a preemption then runs its course, until the
                # pod binds or loses the nomination, e.g. to a failed binding): later
                # attempts (after a binding failure, a deallocation) are not waited for.
                status = "Error" if reason == "SchedulerError" else "Unschedulable"
                out = Outcome(status, victims=sorted(mine.preempted))
            out.message = message
            cond = scheduling_failed_condition(
                int(pod["metadata"].get("generation") or 0), reason, message
            )
            out.condition = {
                k: cond[k] for k in ("reason", "message", "observedGeneration") if k in cond
            }
        elif mine.status != "Scheduled":
            out.message = mine.message
            if pod["spec"].get("schedulingGroup"):
                # never tried, no condition written: what the kube replay calls Pending
                out.status = "Pending"
                out.message = HELD_AT_PRE_ENQUEUE
        if cur is not None and not stopped:
            out.nominated = cur.pod.status.nominated_node_name or ""
        explain: dict[str, Any] = mine.explain or {}
        out.scores = {
            plugin: {node: int(v["weighted"]) for node, v in per_node.items()}
            for plugin, per_node in (explain.get("score") or {}).items()
        }
        out.totals = {n: int(v) for n, v in (explain.get("total") or {}).items()}
        filt = explain.get("filter")
        if isinstance(filt, dict):
            out.feasible = sorted(
                n
                for n, verdicts in filt.items()
                if all(v in ("Success", "Skip") for v in verdicts.values())
            )
        return out
