"""Unit-test a plugin through a real framework, without ksched's internals.

``run_filter``, ``run_score`` and ``schedule`` take the pod and nodes as manifests (what
``make_pod``/``make_node`` build, or any dict a YAML file gives) or as ksched's typed
objects, put them in an offline scheduler exactly as ``ksched simulate`` does (real cache
and snapshot in node-tree order, admission of uid and priority, the listers the daemon
gives plugins), and run the plugin through that scheduler's ``Framework``: PreFilter then
Filter, PreScore then Score then NormalizeScore. A built-in plugin runs its vectorized
form (``filter_batch``/``score_batch``) as in a real cycle, a third-party plugin its
per-node one, so a test sees what the scheduler would.

A plugin is given as an instance (used as is; it gets the framework's handle if it has
none), a class (built by the framework with its default args, as ``pluginConfig``-less
config would), or the name of a built-in or installed plugin.

This module imports the scheduler; the rest of ``ksched.testing`` (the test API server)
does not, and ``ksched.testing`` loads this module only when one of its names is used.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import anyio
import msgspec
import numpy as np

from ..api.objects import Node, Pod, decode
from ..config.load import load_config_data
from ..config.types import (
    KubeSchedulerConfiguration,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)
from ..framework.cycle_state import CycleState
from ..framework.interface import POINTS, extension_points_of
from ..framework.registry import Registry
from ..framework.runtime import PREFILTER_NARROWED_KEY, Framework
from ..framework.snapshot import NodeInfoView
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from ..plugins import default_registry
from ..queue.scheduling_queue import Entity, QueuedPodInfo
from ..scheduler.cycle_result import CycleResult
from ..scheduler.loop import Decided, LoopMode, run_loop
from ..scheduler.scheduler import Scheduler
from ..sim.cluster_file import parse_cluster
from ..sim.simulator import Simulation, _admit

__all__ = [
    "NodeLike",
    "PluginLike",
    "PodLike",
    "ScheduleResult",
    "node_info",
    "pod_info",
    "run_filter",
    "run_score",
    "schedule",
]

#: A node: a manifest (``make_node``) or a decoded ``Node``.
NodeLike = Mapping[str, Any] | Node
#: A pod: a manifest (``make_pod``), a decoded ``Pod`` or a ``PodInfo``.
PodLike = Mapping[str, Any] | Pod | PodInfo
#: A plugin instance, a plugin class, or a registered plugin's name.
PluginLike = Any

_SOURCE = "ksched.testing"


class ScheduleResult(NamedTuple):
    """One scheduling cycle's outcome: the chosen node (None if none), and the message
    the scheduler would put in the pod's FailedScheduling event ("" when placed): the
    FitError text ("0/3 nodes are available: ...") or the error status's message."""

    node: str | None
    message: str


def _manifest(obj: Any, kind: str) -> dict[str, Any]:
    """``obj`` as the API JSON (a copy: the cluster file code fills in defaults)."""
    if isinstance(obj, PodInfo):
        raw = obj.raw
        obj = obj.pod if raw is None else raw
    if isinstance(obj, Mapping):
        out = json.loads(json.dumps(obj))
    elif isinstance(obj, Pod | Node):
        out = msgspec.to_builtins(obj)
    else:
        raise TypeError(f"expected a {kind} manifest or object, got {type(obj).__name__}")
    out.setdefault("apiVersion", "v1")
    out.setdefault("kind", kind)
    assert isinstance(out, dict)
    return out


def pod_info(pod: PodLike) -> PodInfo:
    """The PodInfo the scheduler sees for ``pod``, admitted as the API server would (a uid
    if it has none, ``spec.priority`` 0 if unset); for calling a plugin's methods directly."""
    if isinstance(pod, PodInfo):
        return pod
    raw = _manifest(pod, "Pod")
    return PodInfo(_admit(decode(raw, Pod), raw, {}, 0), raw)


def node_info(node: NodeLike, pods: Iterable[PodLike] = ()) -> NodeInfo:
    """A NodeInfo of ``node`` holding ``pods`` (their ``spec.nodeName`` is not checked)."""
    ni = NodeInfo()
    ni.set_node(node if isinstance(node, Node) else decode(_manifest(node, "Node"), Node))
    for p in pods:
        ni.add_pod(pod_info(p))
    return ni


def _plugin_name(plugin: PluginLike) -> str:
    if isinstance(plugin, str):
        return plugin
    name = getattr(plugin, "name", "")
    if not name:
        raise TypeError(f"{plugin!r} has no plugin name (a class attribute `name`)")
    return str(name)


def _adopt(plugin: Any) -> Any:
    """A factory handing the framework an already-built plugin (with a handle if it had
    none: plugins reach the snapshot and listers through it)."""

    def factory(args: Any, handle: Any) -> Any:
        if getattr(plugin, "handle", None) is None:
            plugin.handle = handle
        return plugin

    return factory


def _registry(plugins: Sequence[PluginLike]) -> Registry:
    """The built-in and installed plugins, with the given classes and instances in place
    of any registered under the same name."""
    given = {_plugin_name(p): p for p in plugins if not isinstance(p, str)}
    reg = Registry()
    for spec in default_registry():
        if spec.name not in given:
            reg.register(spec.name, spec.cls or spec.factory, spec.distribution)
    for name, p in given.items():
        reg.register(name, p if isinstance(p, type) else _adopt(p), _SOURCE)
    return reg


def _profile(
    name: str, plugins: Sequence[PluginLike], reg: Registry, only: Sequence[str] = ()
) -> Profile:
    """A profile enabling each plugin at every extension point it implements (``only``:
    just these points), plus PrioritySort and DefaultBinder where no plugin queues or
    binds."""
    sets = Plugins()
    for p in plugins:
        pname = _plugin_name(p)
        spec = reg.get(pname)
        if spec is None:
            raise ValueError(f'unknown plugin "{pname}"; available: {", ".join(reg.names())}')
        target = p if not isinstance(p, str) else (spec.cls or p)
        points = spec.points if isinstance(target, str) else extension_points_of(target)
        for point in points:
            # PlacementFeasible is no config key (the framework takes GangScheduling)
            if POINTS[point].configured and (not only or point in only):
                sets.point(POINTS[point].attr).enabled.append(PluginRef(pname))
    if not sets.queue_sort.enabled:
        sets.queue_sort = PluginSet([PluginRef("PrioritySort")])
    if not sets.bind.enabled:
        sets.bind = PluginSet([PluginRef("DefaultBinder")])
    return Profile(scheduler_name=name, plugins=sets)


def _simulation(
    config: KubeSchedulerConfiguration,
    reg: Registry,
    nodes: Iterable[NodeLike],
    pods: Iterable[PodLike],
    objects: Iterable[Mapping[str, Any]],
) -> Simulation:
    """The offline scheduler of ``ksched simulate``, loaded with the cluster."""
    items = [
        *(_manifest(n, "Node") for n in nodes),
        *(_manifest(p, "Pod") for p in pods),
        *(_manifest(o, "object") for o in objects),
    ]
    cluster = parse_cluster(json.dumps({"kind": "List", "items": items}), _SOURCE)
    sim = Simulation(cluster, config, reg, seed=0, max_attempts_per_pod=1)
    sim._load()
    sim.sched.cache.update_snapshot(sim.sched.snapshot)
    return sim


def _one_plugin(
    plugin: PluginLike,
    points: Sequence[str],
    nodes: Iterable[NodeLike],
    pods: Iterable[PodLike],
    objects: Iterable[Mapping[str, Any]],
) -> tuple[Framework, Simulation]:
    reg = _registry([plugin])
    profile = _profile("ksched", [plugin], reg, points)
    if not any(profile.plugins.point(POINTS[p].attr).enabled for p in points):
        raise ValueError(f"plugin {_plugin_name(plugin)} is not a {' or '.join(points)} plugin")
    sim = _simulation(KubeSchedulerConfiguration(profiles=[profile]), reg, nodes, pods, objects)
    return sim.sched.frameworks["ksched"], sim


def run_filter(
    plugin: PluginLike,
    pod: PodLike,
    nodes: Iterable[NodeLike],
    *,
    pods: Iterable[PodLike] = (),
    objects: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Status | None]:
    """Each node's Filter verdict for ``pod``: None when it fits, else the rejecting Status.

    ``plugin``'s PreFilter (if it has one) runs first, as in a cycle: its rejection is
    every node's verdict, and nodes outside its PreFilterResult get the framework's
    "node(s) didn't satisfy plugin(s) [...]". ``pods`` are other pods (bound ones, with
    ``spec.nodeName``, sit on their nodes); ``objects`` any other objects plugins read
    (Services, PVCs, PodGroups, ...).
    """
    fw, sim = _one_plugin(plugin, ("preFilter", "filter"), nodes, pods, objects)
    snap = sim.sched.snapshot
    names = [ni.name for ni in snap.node_infos]
    state, pi = CycleState(), pod_info(pod)
    res, st, _ = fw.run_pre_filter(state, pi, snap)
    if not st.is_success():
        return dict.fromkeys(names, st)
    rows = snap.all_rows
    out: dict[str, Status | None] = {}
    if res is not None and res.node_names is not None:
        # The nodes left out get what the scheduling cycle gives them.
        narrowed = " ".join(sorted(state.get(PREFILTER_NARROWED_KEY, ())))
        missing = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) didn't satisfy plugin(s) [{narrowed}]"
        )
        out = {n: missing for n in names if n not in res.node_names}
        rows = rows[np.array([n in res.node_names for n in names], dtype=np.bool_)]
    found = fw.find_feasible(state, pi, snap, rows, 0, len(rows), explain=True)
    error = found.statuses.absent
    feasible = {snap.node_infos[int(r)].name for r in found.feasible}
    for r in rows.tolist():
        name = names[r]
        out[name] = error if error is not None else found.statuses.get(name)
        if name in feasible:
            out[name] = None
    return {n: out[n] for n in names}


def run_score(
    plugin: PluginLike,
    pod: PodLike,
    nodes: Iterable[NodeLike],
    *,
    pods: Iterable[PodLike] = (),
    objects: Iterable[Mapping[str, Any]] = (),
) -> dict[str, int]:
    """Each node's score for ``pod`` after NormalizeScore, before the plugin's weight.

    Every node is scored (Filter is not run, as in upstream's plugin tests), after the
    plugin's PreScore over all of them. A PreScore that says Skip scores every node 0, as
    the framework leaves it out of the total; an error raises AssertionError with its
    message."""
    fw, sim = _one_plugin(plugin, ("preScore", "score"), nodes, pods, objects)
    snap = sim.sched.snapshot
    state, pi = CycleState(), pod_info(pod)
    names = [ni.name for ni in snap.node_infos]
    st = fw.run_pre_score(state, pi, NodeInfoView(snap.node_infos, snap.all_rows))
    if not st.is_success():
        raise AssertionError(st.message())
    scored, st = fw.run_score(state, pi, snap, snap.all_rows, explain=True)
    if scored is None:
        raise AssertionError(st.message())
    per = scored.per_plugin or {}
    name = _plugin_name(plugin)
    if name not in per:  # skipped at PreScore
        return dict.fromkeys(names, 0)
    return {n: int(s) for n, s in zip(names, per[name][1].tolist(), strict=True)}


class _OneCycle:
    """The loop's policy for ``schedule``: one dry-run cycle of the target pod (the pods
    queued before it are passed over), then stop."""

    mode = LoopMode.DRY_RUN
    drain_timeout: float | None = 0.0
    defer_api_calls = False

    def __init__(self, target: str) -> None:
        self.target = target
        self.result: CycleResult | None = None

    async def pass_time(self, sched: Scheduler) -> None:
        return None

    async def next_entity(self, sched: Scheduler) -> Entity | None:
        if self.result is not None:
            return None
        while (entity := sched.queue.pop_nowait()) is not None:
            if isinstance(entity, QueuedPodInfo) and entity.pod_info.uid == self.target:
                return entity
        return None

    async def after_decision(self, sched: Scheduler, entity: Entity, decided: Decided) -> None:
        assert isinstance(decided, CycleResult)
        self.result = decided


def schedule(
    config_or_plugins: KubeSchedulerConfiguration | Mapping[str, Any] | Sequence[PluginLike],
    pod: PodLike,
    nodes: Iterable[NodeLike],
    *,
    pods: Iterable[PodLike] = (),
    objects: Iterable[Mapping[str, Any]] = (),
    plugins: Sequence[PluginLike] = (),
) -> ScheduleResult:
    """One scheduling cycle of ``pod`` (PostFilter, i.e. preemption, included; nothing is
    bound or evicted): the node it would go to, or the scheduler's message for it.

    ``config_or_plugins``: a loaded configuration, its data (the YAML as a dict: defaults
    and validation apply), or a list of plugins making up a profile on their own (plus
    PrioritySort and DefaultBinder when none of them queues or binds). ``plugins``: plugin
    classes or instances a configuration names, registered for this call (they need not
    be installed). A pod whose ``schedulerName`` names no profile is scheduled by the first
    one. It runs the scheduler's loop on an event loop of its own: call it from
    synchronous code (a plain test function), not from a coroutine.
    """
    if isinstance(config_or_plugins, KubeSchedulerConfiguration):
        config, reg = config_or_plugins, _registry(plugins)
    elif isinstance(config_or_plugins, Mapping):
        reg = _registry(plugins)
        config, _ = load_config_data(dict(config_or_plugins), _SOURCE, reg.names())
    else:
        given = list(config_or_plugins)
        reg = _registry([*plugins, *given])
        config = KubeSchedulerConfiguration(profiles=[_profile("ksched", given, reg)])
    raw = _manifest(pod, "Pod")
    spec = raw.setdefault("spec", {})
    profiles = [p.scheduler_name for p in config.profiles]
    if spec.get("schedulerName") not in profiles:
        spec["schedulerName"] = profiles[0]
    if spec.get("nodeName"):
        raise ValueError("the pod has spec.nodeName: the scheduler never sees such a pod")
    sim = _simulation(config, reg, nodes, [*pods, raw], objects)
    sched = sim.sched
    target = pod_info(raw).uid
    one = _OneCycle(target)
    anyio.run(run_loop, sched, one)
    res = one.result
    if res is not None:
        if res.status.is_success():
            return ScheduleResult(res.node, "")
        # the event message, as the scheduler's failure handling reported it
        return ScheduleResult(None, sim.recorder.results[target].message)
    gated = next((q for q in sched.queue.unschedulable_pods() if q.pod_info.uid == target), None)
    if gated is not None and gated.gating_status is not None:
        return ScheduleResult(None, gated.gating_status.message())
    raise AssertionError("the pod never reached the scheduling queue")
