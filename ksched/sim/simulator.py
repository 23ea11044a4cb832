"""``ksched simulate``: the real scheduler against an in-memory cluster on virtual time.

The same Scheduler, frameworks, queue and cache as the daemon; the cluster client
applies binds and deletions to the in-memory cluster and feeds the resulting
events back, as the informers would. Time is a FakeClock that jumps to the next
deadline (backoff expiry, Permit timeout) whenever nothing else can run, so a
simulation is deterministic for a seed and never sleeps.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import msgspec

from ..api.kinds import REGISTRY, SimOwner, Watch, guess_resource
from ..api.objects import Node, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition
from ..api.resource import ResourceClaim
from ..api.workload import Condition, PodGroup
from ..cluster.wiring import watched_resources, workload_informer_paths
from ..framework.handle import BindError, RecordingEventRecorder
from ..framework.interface import ClusterEvent
from ..framework.listers import Listers, RevisionedStore
from ..framework.preemption import preempted_for_pod_group
from ..framework.registry import Registry
from ..framework.types import PodInfo
from ..queue.scheduling_queue import Entity
from ..scheduler.cycle_result import CycleResult
from ..scheduler.loop import Decided, LoopMode, run_loop
from ..scheduler.scheduler import MetricsRecorder, Scheduler
from ..util.clock import FakeClock, rfc3339
from .claim_controller import SimulatedClaimController
from .cluster_file import ClusterFile
from .pv_controller import SimulatedPVController
from .summary import NodeUsage, usage

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration

__all__ = ["PodResult", "SimulatedCluster", "Simulation", "simulate"]


@dataclass
class PodResult:
    namespace: str
    name: str
    node: str | None
    status: str
    message: str
    preempted: list[str] = field(default_factory=list)
    explain: dict[str, Any] | None = None

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "namespace": self.namespace,
            "name": self.name,
            "node": self.node,
            "status": self.status,
            "message": self.message,
            "preempted": self.preempted,
        }
        if explain:
            d["explain"] = self.explain
        return d


#: Seconds a deleted pod on a node stays Terminating before its kubelet finishes it: longer
#: than the first retry backoff (1 s), as on a cluster, where a preemptor is retried when
#: its first victim is gone. The differential harness gives kube-scheduler the same.
TERMINATION_SECONDS = 1.5
#: ... and the victims of a pod group's preemption, all gone within the 1 s before the
#: group can be retried. kube-scheduler retries such a group from its error backoffQ at
#: the first 1 s tick past its truncated backoff expiry, 1-2 s after the failure depending
#: on the clock's sub-second phase; victims still terminating then would make the outcome
#: a coin toss. The differential harness gives kube-scheduler the same.
GROUP_VICTIM_TERMINATION_SECONDS = 0.5


def _namespaced_key(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata", {})
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


class ClusterWatcher(Protocol):
    """What hears of the simulated cluster's changes (the Scheduler's informer handlers)."""

    def on_pod_update(self, old: PodInfo, new: PodInfo) -> None: ...

    def on_pod_delete(self, pod: PodInfo) -> None: ...

    def on_other_event(self, event: Any, old: Any = None, new: Any = None) -> None: ...


class SimulatedCluster:
    """ClusterClient over in-memory pods; changes are echoed to the scheduler as watch events.

    Storage objects (PVCs, PVs, StorageClasses, CSINodes, CSIDrivers, VolumeAttachments)
    live in ``storage``, the listers the volume plugins read; ``pv_controller`` plays the
    PV controller and the provisioners for the scheduler's writes.
    """

    def __init__(self, cluster: ClusterFile, clock: FakeClock | None = None) -> None:
        self.pods: dict[str, PodInfo] = {}
        self.objects: dict[str, dict[str, Any]] = {}
        # Who hears of the changes (``watch``): the scheduler, as its informers would.
        self._watcher: ClusterWatcher | None = None
        self.deleted: list[str] = []
        self.clock = clock or FakeClock()
        # Deleted pods still Terminating on their node: (finish time, order, uid).
        self.terminating: list[tuple[float, int, str]] = []
        self._terminations = itertools.count()
        # resourceVersions for the writes here, above any a cluster dump carries
        self._versions = itertools.count(1 << 40)
        for kind, items in cluster.others.items():
            for raw in items:
                meta = raw.get("metadata", {})
                self.objects[f"{kind}/{meta.get('namespace', '')}/{meta.get('name', '')}"] = raw
        self.pv_controller = SimulatedPVController(cluster, self._emit)
        self.storage = self.pv_controller.stores
        self.claim_controller = SimulatedClaimController(cluster, self._emit)
        # The DRA driver of devices with binding conditions, if one is played (the
        # differential replay's): a stored claim's ``status.devices`` as the driver
        # writes it ``driver_delay`` seconds after the scheduler's write, or None.
        # Without one, such a claim's PreBind waits out its bindingTimeout.
        self.device_driver: Callable[[ResourceClaim], list[dict[str, Any]] | None] | None = None
        self.driver_delay = 1.0
        self.driver_writes: list[tuple[float, int, str, str]] = []
        # Pods (uid) whose nomination a write took away before they were bound: a watch
        # of the pod (the differential's) saw it lose its node there.
        self.unnominated: set[str] = set()

    def watch(self, watcher: ClusterWatcher) -> None:
        """Echo every change to ``watcher`` from now on, as a watch of the API would."""
        self._watcher = watcher

    @property
    def watcher(self) -> ClusterWatcher:
        if self._watcher is None:
            raise RuntimeError("nobody watches the simulated cluster")
        return self._watcher

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        cur = self.pods.get(pod.uid)
        if cur is None:
            raise BindError(f'pods "{pod.name}" not found', retry=False)
        if cur.node_name:
            raise BindError(
                f'pod {pod.key} is already assigned to node "{cur.node_name}"', retry=False
            )
        spec = msgspec.structs.replace(cur.pod.spec, node_name=node_name)
        self._update(cur, cur.with_pod(msgspec.structs.replace(cur.pod, spec=spec)))

    async def delete_pod(self, pod: PodInfo) -> None:
        """A graceful deletion, as the API server does it: a pod on a node (with a grace
        period) only gets its deletionTimestamp; its kubelet finishes it
        ``TERMINATION_SECONDS`` later (``finish_termination``), one pod at a time. So a
        preemptor sees its victims go one by one, as kube-scheduler does on a cluster."""
        cur = self.pods.get(pod.uid)
        if cur is None or cur.pod.metadata.deletion_timestamp is not None:
            return  # gone, or already terminating
        self.deleted.append(cur.key)
        grace = cur.pod.spec.termination_grace_period_seconds
        if not cur.node_name or grace == 0:
            self._remove(cur.uid)
            return
        meta = msgspec.structs.replace(cur.pod.metadata, deletion_timestamp=rfc3339())
        self._update(cur, cur.with_pod(msgspec.structs.replace(cur.pod, metadata=meta)))
        delay = TERMINATION_SECONDS
        if preempted_for_pod_group(cur.pod.status.conditions):
            delay = GROUP_VICTIM_TERMINATION_SECONDS
        done = self.clock.now() + delay
        heapq.heappush(self.terminating, (done, next(self._terminations), cur.uid))

    def next_termination(self) -> float | None:
        return self.terminating[0][0] if self.terminating else None

    def finish_termination(self) -> bool:
        """The kubelet's part: remove the first terminating pod that is due; False if none."""
        if not self.terminating or self.terminating[0][0] > self.clock.now():
            return False
        _, _, uid = heapq.heappop(self.terminating)
        self._remove(uid)
        return True

    def _remove(self, uid: str) -> None:
        cur = self.pods.pop(uid, None)
        if cur is not None:
            self.watcher.on_pod_delete(cur)
            self.claim_controller.release(uid)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        cur = self.pods.get(pod.uid)
        if cur is None:
            return
        status = msgspec.structs.replace(cur.pod.status, nominated_node_name=node_name)
        self._update(cur, cur.with_pod(msgspec.structs.replace(cur.pod, status=status)))

    async def set_pod_condition(self, pod: PodInfo, condition: PodCondition) -> bool:
        cur = self.pods.get(pod.uid)
        if cur is None:
            return False
        conds = list(cur.pod.status.conditions)
        at = next((i for i, c in enumerate(conds) if c.type == condition.type), len(conds))
        conds[at : at + 1] = [condition]  # merged by type, in place
        status = msgspec.structs.replace(cur.pod.status, conditions=conds)
        self._update(cur, cur.with_pod(msgspec.structs.replace(cur.pod, status=status)))
        return True

    def update_pod(self, new: PodInfo) -> None:
        """A client's update of a stored pod (the differential replay's removal of
        scheduling gates), echoed to the scheduler as the pod watch would."""
        self._update(self.pods[new.uid], new)

    def _update(self, cur: PodInfo, new: PodInfo) -> None:
        """Store ``new`` and tell the scheduler, as the pod watch would: with a new
        resourceVersion, as every write gets (one equal to the old is a resync, which the
        scheduler rightly ignores)."""
        meta = msgspec.structs.replace(new.pod.metadata, resource_version=str(next(self._versions)))
        new = new.with_pod(msgspec.structs.replace(new.pod, metadata=meta))
        self.pods[new.uid] = new
        if (
            cur.pod.status.nominated_node_name
            and not new.pod.status.nominated_node_name
            and not new.node_name
        ):
            self.unnominated.add(new.uid)
        self.watcher.on_pod_update(cur, new)

    async def get_object(self, api_path: str) -> dict[str, Any] | None:
        return self.objects.get(api_path)

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        return self.pv_controller.update_volume(pv)

    async def update_persistent_volume_claim(
        self, pvc: PersistentVolumeClaim
    ) -> PersistentVolumeClaim:
        return self.pv_controller.update_claim(pvc)

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claim_controller.get(namespace, name)

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return self.claim_controller.update(claim)

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        new = self.claim_controller.update_status(claim)
        if self.device_driver is not None and self.device_driver(new) is not None:
            due = self.clock.now() + self.driver_delay
            meta = new.metadata
            item = (due, next(self._terminations), meta.namespace or "", meta.name)
            heapq.heappush(self.driver_writes, item)
        return new

    def next_driver_write(self) -> float | None:
        return self.driver_writes[0][0] if self.driver_writes else None

    def finish_driver_write(self) -> bool:
        """The driver's part: write the first due claim's device conditions (on the claim
        as it is by then); False if none is due."""
        if not self.driver_writes or self.driver_writes[0][0] > self.clock.now():
            return False
        _, _, namespace, name = heapq.heappop(self.driver_writes)
        cur = self.claim_controller.get(namespace, name)
        devices = None if cur is None or self.device_driver is None else self.device_driver(cur)
        if cur is not None and devices is not None:
            status = msgspec.structs.replace(cur.status, devices=devices)
            self.claim_controller.update_status(msgspec.structs.replace(cur, status=status))
        return True

    async def patch_resource_claim_status(
        self, namespace: str, name: str, patch: dict[str, Any]
    ) -> None:
        self.claim_controller.patch_status(namespace, name, patch)

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return self.claim_controller.create(claim)

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        self.claim_controller.delete(namespace, name)

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        cur = self.pods.get(pod.uid)
        if cur is None:
            raise BindError(f'pods "{pod.name}" not found', retry=False)
        new = msgspec.structs.replace(cur.pod.status, extended_resource_claim_status=status)
        self._update(cur, cur.with_pod(msgspec.structs.replace(cur.pod, status=new)))

    def _emit(self, event: ClusterEvent, old: Any, new: Any) -> None:
        if self._watcher is not None:
            self._watcher.on_other_event(event, old, new)


class _Recorder:
    def __init__(self) -> None:
        self.results: OrderedDict[str, PodResult] = OrderedDict()
        # The scheduler's explanations (with explain=True). It keeps only the latest
        # 1000; each result takes its pod's when the outcome is known, so a simulation
        # of more pods still explains every one.
        self.explanations: dict[str, dict[str, Any]] | None = None
        # every failed attempt's (reason, message) per pod uid, in order: what the daemon
        # would have written as FailedScheduling events and PodScheduled conditions
        self.failures: dict[str, list[tuple[str, str]]] = {}
        # the node each pod's first failed attempt nominated ("" for none)
        self.first_nominated: dict[str, str] = {}
        # The PodGroups (the lister's store): the pod-group cycle's condition writes
        # land there, as the API server's would reach the informer.
        self.pod_groups: RevisionedStore[PodGroup] | None = None
        # every PodGroupInitiallyScheduled written, per PodGroup (namespace/name)
        self.pod_group_conditions: dict[str, list[Condition]] = {}

    def _put(self, key: str, r: PodResult) -> None:
        self.results.pop(key, None)
        self.results[key] = r
        if self.explanations is not None:
            r.explain = self.explanations.get(f"{r.namespace}/{r.name}")

    def scheduled(self, pod: PodInfo, node: str, profile: str, attempts: int) -> None:
        self._put(pod.uid, PodResult(pod.namespace, pod.name, node, "Scheduled", ""))

    def failed(
        self, pod: PodInfo, profile: str, reason: str, message: str, result: CycleResult | None
    ) -> None:
        self.failures.setdefault(pod.uid, []).append((reason, message))
        pf = result.post_filter if result is not None else None
        self.first_nominated.setdefault(pod.uid, pf.nominated_node_name if pf is not None else "")
        status = "Error" if reason == "SchedulerError" else "Unschedulable"
        self._put(pod.uid, PodResult(pod.namespace, pod.name, None, status, message))

    def pod_group_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        """The status patch, applied: the condition replaces the one of its type."""
        meta = pod_group.metadata
        key = f"{meta.namespace}/{meta.name}"
        self.pod_group_conditions.setdefault(key, []).append(condition)
        store = self.pod_groups
        if store is None:
            return
        cur = store.get(key, pod_group)
        kept = [c for c in cur.status.conditions if c.type != condition.type]
        status = msgspec.structs.replace(cur.status, conditions=[*kept, condition])
        new = msgspec.structs.replace(cur, status=status)
        store[key] = new
        store.bump(cur, new)


class _VirtualTime:
    """The simulator's part in the loop: time is virtual and moves only when nothing else
    can happen; every decision's binding cycle settles before the next pod."""

    mode = LoopMode.BIND
    drain_timeout: float | None = 0.0  # what is still in flight at the end never finishes
    defer_api_calls = False  # the in-memory cluster answers at once

    def __init__(
        self, sim: Simulation, budget: int, on_attempt: Callable[[Entity], None] | None
    ) -> None:
        self.sim = sim
        self.budget = budget
        self.on_attempt = on_attempt

    async def pass_time(self, sched: Scheduler) -> None:
        return None  # next_entity moves the clock

    async def next_entity(self, sched: Scheduler) -> Entity | None:
        sim, q = self.sim, sched.queue
        while self.budget > 0:
            entity = q.pop_nowait()
            if entity is not None:
                self.budget -= 1
                return entity
            await sim._settle()
            if q.has_active():
                continue
            if sim.cluster.finish_termination() or sim.cluster.finish_driver_write():
                continue  # one pod gone: let the scheduler react before the next
            # Nothing runnable: jump virtual time to the next deadline, if any.
            deadlines = [
                t
                for t in (
                    q.next_backoff_expiry(),
                    sim.clock.next_deadline(),
                    sim.cluster.next_termination(),
                    sim.cluster.next_driver_write(),
                )
                if t is not None
            ]
            if not deadlines:
                return None
            sim.clock.set(min(deadlines))
            q.flush_backoff_completed()
        return None

    async def after_decision(self, sched: Scheduler, entity: Entity, decided: Decided) -> None:
        await self.sim._settle()
        if self.on_attempt is not None:
            self.on_attempt(entity)


def _admit(pod: Pod, raw: Any, classes: dict[str, int], global_default: int) -> Pod:
    """What admission would have done: uid and priority from the PriorityClass."""
    meta = pod.metadata
    if not meta.uid:
        meta = msgspec.structs.replace(meta, uid=f"sim-{meta.namespace}-{meta.name}")
    spec = pod.spec
    if spec.priority is None:
        value = (
            classes.get(spec.priority_class_name, global_default)
            if spec.priority_class_name
            else global_default
        )
        spec = msgspec.structs.replace(spec, priority=value)
    return msgspec.structs.replace(pod, metadata=meta, spec=spec)


def _scheduling_listers(cluster: ClusterFile, features: Any) -> dict[str, Any]:
    """The file's scheduling.k8s.io PodGroups under the lister key the daemon's informer
    fills, only when it would have one (GenericWorkload); static: revision 0."""
    out: dict[str, Any] = {}
    classes = {pc.metadata.name: pc.value for pc in cluster.priority_classes}
    global_default = next((pc.value for pc in cluster.priority_classes if pc.global_default), 0)
    for key in workload_informer_paths(features):
        store: RevisionedStore[Any] = RevisionedStore()
        for pg in cluster.scheduling.get("PodGroup", []):
            pg = _admit_pod_group(pg, classes, global_default)
            store[f"{pg.metadata.namespace}/{pg.metadata.name}"] = pg
        out[key] = store
    return out


def _admit_pod_group(pg: PodGroup, classes: dict[str, int], global_default: int) -> PodGroup:
    """What the Priority admission plugin does to a PodGroup (with GenericWorkload): its
    priority from its PriorityClass, as for a pod, so members and group agree."""
    spec = pg.spec
    if spec.priority is not None:
        return pg
    name = spec.priority_class_name
    value = classes.get(name, global_default) if name else global_default
    return msgspec.structs.replace(pg, spec=msgspec.structs.replace(spec, priority=value))


def _file_listers(cluster: ClusterFile) -> dict[str, Any]:
    """The listers of the kinds a simulation keeps as the file has them
    (``SimOwner.LISTER`` rows): static, revision 0 throughout; a plain mapping where the
    daemon's informer store is one (the always-watched kinds), else a RevisionedStore. A
    kind the file may omit (``file_may_omit``: Services and controllers) and has none of
    stays unknown rather than empty, so a plain `kubectl get nodes,pods` dump keeps
    PodTopologySpread's fallback for controlled pods instead of losing their default
    spreading to controllers it never listed."""
    out: dict[str, Any] = {}
    for row in REGISTRY.cluster_file_kinds().values():
        if row.sim_owner is not SimOwner.LISTER or not row.lister:
            continue
        objs = cluster.listed.get(row.lister)
        if objs is None and row.file_may_omit:
            continue
        store: dict[str, Any] = {} if row.watch is Watch.ALWAYS else RevisionedStore()
        for obj in objs or ():
            meta = obj.metadata
            store[f"{meta.namespace}/{meta.name}" if row.namespaced else meta.name] = obj
        out[row.lister] = store
    return out


def _custom_listers(cluster: ClusterFile, frameworks: Iterable[Any]) -> dict[str, Any]:
    """What the enabled plugins' ``watch_resources`` would have the daemon watch: the
    file's custom objects of each collection's group and resource (any version, as an API
    server converts), raw, keyed as the daemon keys them."""
    out: dict[str, Any] = {}
    for wr in watched_resources(frameworks):
        parts = wr.path.strip("/").split("/")
        group = parts[1] if parts[0] == "apis" and len(parts) == 4 else ""
        resource = parts[-1]
        store: dict[str, Any] = {}
        for kind, items in cluster.others.items():
            if guess_resource(kind) != resource:
                continue
            for raw in items:
                api_version = str(raw.get("apiVersion") or "")
                if (api_version.rpartition("/")[0] if "/" in api_version else "") == group:
                    store[_namespaced_key(raw)] = raw
        out[wr.lister] = store
    return out


class Simulation:
    def __init__(
        self,
        cluster: ClusterFile,
        config: KubeSchedulerConfiguration,
        registry: Registry,
        *,
        seed: int | None = 0,
        explain: bool = False,
        max_attempts_per_pod: int = 20,
        adopt: Mapping[str, str] | None = None,
        metrics: MetricsRecorder | None = None,
        tie_breaks: Mapping[str, str] | None = None,
        placement_orders: Mapping[str, list[list[str]]] | None = None,
        before_pod_update: Callable[[PodInfo, PodInfo], None] | None = None,
    ) -> None:
        """``adopt`` maps other schedulers' names (``"*"``: any) to the profile that
        schedules their pending pods here (``Scheduler.adopted``); ``metrics``,
        ``tie_breaks``, ``placement_orders`` and ``before_pod_update`` go to the
        Scheduler as they are."""
        self.cluster_file = cluster
        self.clock = FakeClock()
        self.cluster = SimulatedCluster(cluster, self.clock)
        self.recorder = _Recorder()
        self.events = RecordingEventRecorder()
        self.sched = Scheduler(
            config,
            registry,
            cluster=self.cluster,
            clock=self.clock,
            observer=self.recorder,
            recorder=self.events,
            seed=seed,
            explain=explain,
            assumed_ttl=0,
            metrics=metrics,
            adopt=adopt,
            tie_breaks=tie_breaks,
            placement_orders=placement_orders,
            before_pod_update=before_pod_update,
        )
        # Pending pods left alone, by their schedulerName (no profile, not adopted).
        self.skipped: Counter[str] = Counter()
        self.cluster.watch(self.sched)
        if explain:
            self.recorder.explanations = self.sched.explanations
        ext = self.sched.extenders
        if ext is not None:
            # Extenders are real HTTP calls here too: they get the manifests' node objects,
            # and a pod an extender bound is bound in the simulated cluster, as the watch
            # would report it.
            for node, raw in cluster.nodes:
                # JSON bytes of a JSON file go out as they are, not as a base64 string
                ext.nodes.set_raw(node, msgspec.Raw(raw) if isinstance(raw, bytes) else raw)
            ext.on_bound = self.cluster.bind
        # Informer-backed listers as the daemon provides them to plugins.
        listers: dict[str, Any] = {
            **_file_listers(cluster),
            # Custom objects plugins read synchronously (Coscheduling's PodGroups).
            **_custom_listers(cluster, self.sched.frameworks.values()),
            # Every non-terminal pod, for any scheduler (PodInfo values).
            Listers.PODS: self.cluster.pods,
        }
        # Storage for the volume plugins: the simulated PV controller's stores (always
        # there, empty for a kind the file has none of: a claim missing from the file is
        # missing, as kube-scheduler would find it), so what VolumeBinding writes it reads.
        listers.update(self.cluster.storage)
        # DRA: the simulated resourceclaim controller's stores, written by DynamicResources.
        listers.update(self.cluster.claim_controller.listers())
        scheduling = _scheduling_listers(cluster, self.sched.config.features)
        listers.update(scheduling)
        self.recorder.pod_groups = scheduling.get(Listers.SCHEDULING_POD_GROUPS)
        for fw in self.sched.frameworks.values():
            fw.handle.listers.update(listers)
        self.explain = explain
        self.max_attempts = max_attempts_per_pod
        self._replayed = False  # replay_history filled the cache

    def replay_history(self, states: Sequence[ClusterFile]) -> None:
        """Earlier states of the cluster, oldest first, each seen by one scheduling cycle
        before the file's own: their nodes and bound pods go to the cache as the informers
        would have delivered the changes between them (by resourceVersion), and each ends
        with a snapshot. What a snapshot cloned from a node stays until the node changes
        (its image counts: ``Cache._freeze_images``), so one pod of a long run replayed
        alone gets the snapshot its scheduler had. Call before ``run``."""
        cache = self.sched.cache
        for cf in states:
            self._sync_nodes(cf, cache.add_node, lambda _old, new: cache.update_node(new))
            classes = {pc.metadata.name: pc.value for pc in cf.priority_classes}
            default = next((pc.value for pc in cf.priority_classes if pc.global_default), 0)
            bound = [
                PodInfo(_admit(pod, raw, classes, default), raw)
                for pod, raw in cf.pods
                if pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed")
            ]
            for pi in bound:
                old = cache.get_pod(pi)
                if old is None:
                    cache.add_pod(pi)
                elif old.pod.metadata.resource_version != pi.pod.metadata.resource_version:
                    cache.update_pod(old, pi)
            self._drop_missing(
                cf, bound, cache.remove_pod, lambda n: cache.remove_node(n.metadata.name)
            )
            cache.update_snapshot(self.sched.snapshot)
        self._replayed = bool(states)

    def _drop_missing(
        self,
        cf: ClusterFile,
        bound: Iterable[PodInfo],
        remove_pod: Callable[[PodInfo], object],
        remove_node: Callable[[Node], object],
    ) -> None:
        """Bound pods and nodes the cache has that ``cf`` no longer lists: deleted."""
        cache = self.sched.cache
        uids = {pi.uid for pi in bound}
        for old in [p for p in cache.list_pods() if p.uid not in uids]:
            remove_pod(old)
        names = {node.metadata.name for node, _raw in cf.nodes}
        for ni in [ni for ni in cache.nodes.values() if ni.node is not None]:
            if ni.node is not None and ni.node.metadata.name not in names:
                remove_node(ni.node)

    def _sync_nodes(
        self,
        cf: ClusterFile,
        add: Callable[[Node], object],
        update: Callable[[Node, Node], object],
    ) -> None:
        """``cf``'s nodes the cache does not have at their resourceVersion: added or updated."""
        nodes = self.sched.cache.nodes
        for node, _raw in cf.nodes:
            ni = nodes.get(node.metadata.name)
            old = ni.node if ni is not None else None
            if old is None:
                add(node)
            elif not node.metadata.resource_version or (
                old.metadata.resource_version != node.metadata.resource_version
            ):
                update(old, node)

    def _load(self) -> list[PodInfo]:
        cf = self.cluster_file
        classes = {pc.metadata.name: pc.value for pc in cf.priority_classes}
        global_default = next((pc.value for pc in cf.priority_classes if pc.global_default), 0)
        # Without a history (replay_history) the cache is empty: every node is added.
        self._sync_nodes(cf, self.sched.on_node_add, self.sched.on_node_update)
        if self.sched.generic_workload:  # v1.37's PodGroup informer handlers
            for pg in cf.scheduling.get("PodGroup", []):
                self.sched.on_pod_group_add(pg)
        pending: list[PodInfo] = []
        for pod, raw in cf.pods:
            if pod.status.phase in ("Succeeded", "Failed"):
                continue
            admitted = _admit(pod, raw, classes, global_default)
            if not admitted.spec.node_name:
                admitted = self.cluster.claim_controller.claims_for(admitted)
            pi = PodInfo(admitted, raw)
            self.cluster.pods[pi.uid] = pi
            if pi.node_name:
                known = self.sched.cache.get_pod(pi)
                if known is None:
                    self.sched.on_pod_add(pi)
                elif known.pod.metadata.resource_version != pi.pod.metadata.resource_version:
                    self.sched.on_pod_update(known, pi)
        if self._replayed:
            bound = [pi for pi in self.cluster.pods.values() if pi.node_name]
            self._drop_missing(cf, bound, self.sched.on_pod_delete, self.sched.on_node_delete)
        for pi in self.cluster.pods.values():
            if pi.node_name:
                continue
            if self.sched.responsible_for(pi):
                pending.append(pi)
                self.sched.on_pod_add(pi)
            else:
                self.skipped[pi.pod.spec.scheduler_name] += 1
        return pending

    async def _settle(self) -> None:
        """Let started binding cycles run until each finished or waits (Permit, or asleep
        on the clock: ``Handle.parked``), and started preemptions until their victims
        are evicted."""
        sched = self.sched
        progress = sched.loop.progress

        def waiting() -> int:
            return sum(1 for wp in sched.waiting_pods if not wp.done)

        await anyio.sleep(0)  # the tasks just started take their first step
        ext = sched.extenders
        if ext is not None and any(e.is_binder for e in ext.extenders):
            # An extender's bind is a real HTTP call: give it real time, up to its timeout.
            limit = max(e.timeout for e in ext.extenders) + 1.0
            with anyio.move_on_after(limit):
                await progress.until(lambda: sched.in_flight_bindings <= waiting())
            return
        handles = [fw.handle for fw in sched.frameworks.values()]

        def idle() -> bool:
            held = waiting() + sum(h.parked for h in handles)
            return sched.in_flight_bindings <= held and not sched.preempting

        await progress.until(idle)
        if waiting():
            # Permit timers start in tasks of their own: let them register their
            # deadlines on the virtual clock before time may jump.
            for _ in range(3):
                await anyio.sleep(0)

    async def run(self, on_loaded: Callable[[Simulation], None] | None = None) -> list[PodResult]:
        """Schedule the file's pending pods; ``on_loaded`` sees the cluster before that."""
        pending = self._load()
        if on_loaded is not None:
            on_loaded(self)
        try:
            await self.drive(self.max_attempts * max(1, len(pending)))
        finally:
            if self.sched.extenders is not None:
                await self.sched.extenders.aclose()
        return self._results(pending)

    async def run_measured(self) -> tuple[list[PodResult], list[NodeUsage], list[NodeUsage]]:
        """``run``, plus every node's usage before and after (the report, what-if)."""
        before: list[NodeUsage] = []
        results = await self.run(lambda s: before.extend(usage(s.sched.cache.nodes.values())))
        return results, before, usage(self.sched.cache.nodes.values())

    def add_pending(self, pods: list[PodInfo]) -> None:
        """More pending pods (bench: the measured batch after the init pods)."""
        for pi in pods:
            if pi.pod.spec.resource_claims:
                pod = self.cluster.claim_controller.claims_for(pi.pod)
                pi = pi if pod is pi.pod else pi.with_pod(pod)
            self.cluster.pods[pi.uid] = pi
            self.sched.on_pod_add(pi)

    async def drive(self, budget: int, on_attempt: Callable[[Entity], None] | None = None) -> None:
        """Run the scheduler until nothing can happen any more (or ``budget`` attempts).

        ``on_attempt(entity)`` is called after each attempt's binding cycle settled.
        """
        await run_loop(self.sched, _VirtualTime(self, budget, on_attempt))

    def _results(self, pending: list[PodInfo]) -> list[PodResult]:
        out: list[PodResult] = []
        rec = self.recorder.results
        gated = {q.pod_info.uid: q for q in self.sched.queue.unschedulable_pods() if q.gated}
        for pi in pending:
            if pi.uid not in rec:
                q = gated.get(pi.uid)
                msg = (
                    q.gating_status.message()
                    if q is not None and q.gating_status
                    else "pod was not attempted"
                )
                rec[pi.uid] = PodResult(pi.namespace, pi.name, None, "Unschedulable", msg)
        devices = self.cluster.claim_controller.devices_by_node() if self.explain else {}
        for uid, r in rec.items():
            r.preempted = sorted(self.sched.preemptions.get(uid, []))
            if self.explain:
                if r.explain is None:
                    r.explain = self.sched.explanations.get(f"{r.namespace}/{r.name}")
                pod = self.cluster.pods.get(uid)
                if (
                    devices
                    and pod is not None
                    and (
                        pod.pod.spec.resource_claims
                        or pod.pod.status.extended_resource_claim_status
                    )
                ):
                    # DRA: every node's devices (and the claim holding each) at the end
                    r.explain = {**(r.explain or {}), "devices": devices}
            out.append(r)
        return out


def simulate(
    cluster: ClusterFile,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    seed: int | None = 0,
    explain: bool = False,
    adopt: Mapping[str, str] | None = None,
    on_skipped: Callable[[Counter[str]], None] | None = None,
) -> list[PodResult]:
    """Schedule ``cluster``'s pending pods; ``on_skipped`` hears of the pending pods no
    profile took (by schedulerName), if any."""
    sim = Simulation(cluster, config, registry, seed=seed, explain=explain, adopt=adopt)
    results = anyio.run(sim.run)
    if sim.skipped and on_skipped is not None:
        on_skipped(sim.skipped)
    return results
