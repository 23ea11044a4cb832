"""``simulate --explain NS/PODGROUP``: why a gang is pending, and the smallest change of
the cluster file that lets the whole group in.

Three answers, each from real simulations of the cluster file:

* where the members are (bound ones), or would be: the group's best attempt, its pending
  members scheduled one by one as plain pods (no preemption), inside each value of the
  group's topology key when it has one (the placements the cycle tries), best value kept;
* what blocks the rest: the members that fit nowhere in that attempt, their FitErrors
  merged (a node counts once per reason, whichever member it turned away), and the
  group-level reason (too few members for ``minCount``, no topology value with room);
* the smallest change, found by ``smallest_change`` over a ``fits(cluster)`` callable
  (whether every member binds, and where): (a) more nodes cloned from one node, fewest
  first; (b) evicting lower-priority pods, as few as still let it in; (c) a broader
  topology key, or none. Each suggestion is a ``ClusterChange`` (manifests to add,
  objects to delete or replace) already verified by re-simulating the changed file.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import yaml

from ..api.objects import Node
from ..api.workload import API_VERSION as SCHEDULING_API_VERSION
from ..framework.registry import Registry
from .cluster_file import ClusterFile, parse_cluster
from .groups import GroupSpec, placed, pod_groups, started
from .simulator import PodResult, Simulation, _admit

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration

__all__ = [
    "Attempt",
    "ClusterChange",
    "Fits",
    "GroupOutcome",
    "Run",
    "Suggestion",
    "explain_group",
    "fits_by",
    "merge_rejections",
    "outcome",
    "render_group_text",
    "simulator_run",
    "smallest_change",
]

#: Nodes a clone gets named after: ``<template>-copy-<i>``.
CLONE_SUFFIX = "-copy-"
#: Distinct node shapes tried as templates for (a), in file order.
MAX_TEMPLATES = 16
#: Values of a topology key tried for the group's best attempt (one simulation each).
MAX_PLACEMENTS = 64
#: Simulations the search may run in all (a large dump makes each one slow).
MAX_SIMULATIONS = 200
_HOSTNAME = "kubernetes.io/hostname"

ObjectRef = tuple[str, str, str]  # (kind, namespace or "", name)


@dataclass(frozen=True)
class GroupOutcome:
    """One simulation as the group saw it: ``fits`` when every member is bound;
    ``placed`` member -> node of those that are; ``pending`` the others."""

    fits: bool
    placed: Mapping[str, str]
    pending: tuple[str, ...] = ()


Fits = Callable[[ClusterFile], GroupOutcome]
#: Schedule a cluster file's pending pods (``explain``: keep each pod's explanation).
Run = Callable[[ClusterFile, bool], list[PodResult]]


def _ref(manifest: Mapping[str, Any]) -> ObjectRef:
    kind = str(manifest.get("kind", ""))
    meta = manifest.get("metadata") or {}
    ns = "" if kind == "Node" else str(meta.get("namespace") or "default")
    return kind, ns, str(meta.get("name", ""))


@dataclass(frozen=True)
class ClusterChange:
    """An edit of a cluster file: manifests to ``add``, objects to ``delete`` (kind,
    namespace, name) and manifests that ``replace`` the object of their kind and name."""

    add: tuple[dict[str, Any], ...] = ()
    delete: tuple[ObjectRef, ...] = ()
    replace: tuple[dict[str, Any], ...] = ()

    def _gone(self) -> set[ObjectRef]:
        return set(self.delete) | {_ref(m) for m in self.replace}

    def to_dict(self) -> dict[str, Any]:
        return {
            "add": list(self.add),
            "delete": [{"kind": k, "namespace": ns, "name": n} for k, ns, n in self.delete],
            "replace": list(self.replace),
        }

    def apply(self, cluster: ClusterFile) -> ClusterFile:
        """``cluster`` with the change made (the original is left as it was)."""
        gone = self._gone()
        items = [*self.replace, *self.add]
        new = parse_cluster(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "")
        sched = {
            kind: [
                o
                for o in objs
                if (kind, o.metadata.namespace or "default", o.metadata.name) not in gone
            ]
            for kind, objs in cluster.scheduling.items()
        }
        for kind, objs in new.scheduling.items():
            sched.setdefault(kind, []).extend(objs)
        return dataclasses.replace(
            cluster,
            nodes=[x for x in cluster.nodes if ("Node", "", x[0].metadata.name) not in gone]
            + new.nodes,
            pods=[
                x
                for x in cluster.pods
                if ("Pod", x[0].metadata.namespace, x[0].metadata.name) not in gone
            ]
            + new.pods,
            scheduling=sched,
        )

    def apply_documents(self, docs: Iterable[Any]) -> list[Any]:
        """The change made to a file's YAML/JSON documents (``kind: *List`` included)."""
        return [*_without(docs, self._gone()), *self.replace, *self.add]


def _without(docs: Iterable[Any], gone: set[ObjectRef]) -> list[Any]:
    """``docs`` but the objects ``gone``, looked for inside lists too."""
    out: list[Any] = []
    for d in docs:
        if not isinstance(d, dict):
            if d is not None:
                out.append(d)
        elif str(d.get("kind", "")).endswith("List") and isinstance(d.get("items"), list):
            out.append({**d, "items": _without(d["items"], gone)})
        elif _ref(d) not in gone:
            out.append(d)
    return out


@dataclass(frozen=True)
class Attempt:
    """One strategy as ``smallest_change`` tried it: what, and whether it let the group in."""

    strategy: str
    tried: str
    works: bool


@dataclass(frozen=True)
class Suggestion:
    strategy: str  # "add-nodes", "evict" or "relax-topology"
    summary: str
    change: ClusterChange
    placed: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "summary": self.summary,
            "change": self.change.to_dict(),
            "placed": dict(self.placed),
        }


# ---- the search ----------------------------------------------------------------------------


def _json_value(v: Any) -> Any:
    """YAML's timestamps (``creationTimestamp: 2024-01-01T00:00:00Z`` unquoted) as the
    RFC 3339 strings the API writes."""
    if isinstance(v, datetime.datetime | datetime.date):
        return v.isoformat().replace("+00:00", "Z")
    raise TypeError(f"not JSON: {type(v).__name__}")


def _raw(raw: dict[str, Any] | bytes) -> dict[str, Any]:
    """A manifest of the file as plain JSON values (a copy: the file's stays as it was)."""
    out = json.loads(raw if isinstance(raw, bytes) else json.dumps(raw, default=_json_value))
    assert isinstance(out, dict)
    return out


def _shape(node: Node) -> bytes:
    """What makes two nodes interchangeable for a pod: labels but the hostname, allocatable
    resources, taints, schedulability."""
    labels = {k: v for k, v in node.metadata.labels.items() if k != _HOSTNAME}
    spec = node.spec
    return msgspec.json.encode(
        [sorted(labels.items()), node.status.allocatable, spec.taints, spec.unschedulable]
    )


def _clones(cluster: ClusterFile, template: str, n: int) -> tuple[dict[str, Any], ...]:
    """``n`` manifests of ``template`` under fresh names, its hostname label following."""
    raw = next(r for node, r in cluster.nodes if node.metadata.name == template)
    taken = {node.metadata.name for node, _ in cluster.nodes}
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < n:
        i += 1
        name = f"{template}{CLONE_SUFFIX}{i}"
        if name in taken:
            continue
        d = _raw(raw)
        d["apiVersion"], d["kind"] = "v1", "Node"
        meta = d.setdefault("metadata", {})
        for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
            meta.pop(k, None)
        meta["name"] = name
        labels = meta.get("labels")
        if isinstance(labels, dict) and _HOSTNAME in labels:
            labels[_HOSTNAME] = name
        out.append(d)
    return tuple(out)


def _add_nodes(
    cluster: ClusterFile, spec: GroupSpec, fits: Fits, attempts: list[Attempt]
) -> Suggestion | None:
    """(a) The fewest clones of one node that let the group in: each node shape's first
    node, tried with one clone per pending member (enough if a member fits an empty one),
    then the least number found by bisection (more nodes never hurt)."""
    need = max(1, len([m for m in spec.members if m not in spec.bound]))
    templates: dict[bytes, str] = {}
    for node, _ in cluster.nodes:
        templates.setdefault(_shape(node), node.metadata.name)
    best: tuple[int, str, ClusterChange, GroupOutcome] | None = None
    for template in list(templates.values())[:MAX_TEMPLATES]:
        hi = need if best is None else min(need, best[0] - 1)
        if hi < 1:
            break
        change = ClusterChange(add=_clones(cluster, template, hi))
        out = fits(change.apply(cluster))
        if not out.fits:
            continue
        lo = 1
        found = (hi, change, out)
        while lo < hi:
            mid = (lo + hi) // 2
            change = ClusterChange(add=_clones(cluster, template, mid))
            out = fits(change.apply(cluster))
            if out.fits:
                hi, found = mid, (mid, change, out)
            else:
                lo = mid + 1
        best = (found[0], template, found[1], found[2])
    if best is None:
        shown = ", ".join(list(templates.values())[:MAX_TEMPLATES])
        attempts.append(Attempt("add-nodes", f"up to {need} copies of each of {shown}", False))
        return None
    n, template, change, out = best
    summary = f"{n} more node{'s' * (n != 1)} like {template}"
    attempts.append(Attempt("add-nodes", summary, True))
    return Suggestion("add-nodes", summary, change, out.placed)


def _priorities(cluster: ClusterFile) -> dict[str, int]:
    """Every live pod's priority as admission resolves it (``ns/name`` -> value)."""
    classes = {pc.metadata.name: pc.value for pc in cluster.priority_classes}
    default = next((pc.value for pc in cluster.priority_classes if pc.global_default), 0)
    out = {}
    for pod, raw in cluster.pods:
        admitted = _admit(pod, raw, classes, default)
        out[f"{pod.metadata.namespace}/{pod.metadata.name}"] = admitted.spec.priority or 0
    return out


def _evict(
    cluster: ClusterFile, spec: GroupSpec, fits: Fits, attempts: list[Attempt]
) -> Suggestion | None:
    """(b) The lower-priority pods whose eviction lets the group in, as preemption picks
    victims: all of them first, then reprieved a node at a time, then one at a time from
    the highest priority down, each kept only if the group still fits without it."""
    prio = _priorities(cluster)
    members = set(spec.members)
    group = max((prio.get(m, 0) for m in spec.members), default=0)
    victims: dict[str, str] = {}  # pod -> node
    for pod, _ in cluster.pods:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        live = pod.status.phase not in ("Succeeded", "Failed")
        if live and pod.spec.node_name and key not in members and prio[key] < group:
            victims[key] = pod.spec.node_name
    if not victims:
        attempts.append(Attempt("evict", f"no pod below priority {group} runs", False))
        return None

    def without(keys: Iterable[str]) -> tuple[ClusterChange, GroupOutcome]:
        refs: list[ObjectRef] = []
        for k in sorted(keys):
            ns, name = k.split("/", 1)
            refs.append(("Pod", ns, name))
        change = ClusterChange(delete=tuple(refs))
        return change, fits(change.apply(cluster))

    evicted = set(victims)
    change, out = without(evicted)
    if not out.fits:
        tried = f"evicting all {len(victims)} pods below priority {group}"
        attempts.append(Attempt("evict", tried, False))
        return None
    for node in sorted(set(victims.values())):
        trial = {v for v in evicted if victims[v] != node}
        if trial != evicted:
            c, o = without(trial)
            if o.fits:
                evicted, change, out = trial, c, o
    for v in sorted(evicted, key=lambda k: (-prio[k], k)):
        c, o = without(evicted - {v})
        if o.fits:
            evicted, change, out = evicted - {v}, c, o
    names = sorted(evicted)
    summary = (
        f"evict {'this' if len(names) == 1 else f'these {len(names)}'} lower-priority "
        f"pod{'s' * (len(names) != 1)}: {', '.join(names)}"
    )
    attempts.append(Attempt("evict", summary, True))
    return Suggestion("evict", summary, change, out.placed)


def broader_keys(nodes: Sequence[Node], key: str) -> list[str]:
    """Node-label keys whose domains each hold whole ``key`` domains, and fewer of them
    (rack -> zone -> region): every node labelled ``key`` has the other too, and one
    ``key`` value never spans two of its values. Closest (most values) first."""
    labelled = [n.metadata.labels for n in nodes if key in n.metadata.labels]
    if not labelled:
        return []
    narrow = len({ls[key] for ls in labelled})
    found: list[tuple[int, str]] = []
    for other in sorted({k for ls in labelled for k in ls} - {key}):
        seen: dict[str, str] = {}
        if all(other in ls and seen.setdefault(ls[key], ls[other]) == ls[other] for ls in labelled):
            values = len(set(seen.values()))
            if values < narrow:
                found.append((values, other))
    found.sort(key=lambda t: (-t[0], t[1]))
    return [k for _, k in found]


def _pod_group_manifest(spec: GroupSpec, key: str | None) -> dict[str, Any]:
    """The group's PodGroup with its topology constraint on ``key`` (None: without one)."""
    assert spec.pod_group is not None
    d = msgspec.to_builtins(spec.pod_group)
    assert isinstance(d, dict)
    d["apiVersion"], d["kind"] = SCHEDULING_API_VERSION, "PodGroup"
    d["metadata"].setdefault("namespace", spec.key.split("/", 1)[0])
    body = d.setdefault("spec", {})
    if key is None:
        body.pop("schedulingConstraints", None)
    else:
        body["schedulingConstraints"] = {"topology": [{"key": key}]}
    return d


def _relax_topology(
    cluster: ClusterFile, spec: GroupSpec, fits: Fits, attempts: list[Attempt]
) -> Suggestion | None:
    """(c) The group's topology constraint on a broader node-label key, closest first,
    then none."""
    if not spec.topology_keys or spec.pod_group is None:
        attempts.append(Attempt("relax-topology", "the group has no topology constraint", False))
        return None
    key = spec.topology_keys[0]
    nodes = {n.metadata.name: n for n, _ in cluster.nodes}
    for other in [*broader_keys(list(nodes.values()), key), None]:
        change = ClusterChange(replace=(_pod_group_manifest(spec, other),))
        out = fits(change.apply(cluster))
        if other is None:
            summary = f"drop the {key} constraint"
        else:
            summary = f"relax the {key} constraint to {other}"
        if out.fits and other is not None:
            values = sorted(
                {nodes[n].metadata.labels.get(other, "") for n in out.placed.values() if n in nodes}
            )
            summary = f"relax the {key} constraint: fits in {other} {', '.join(values)}"
        attempts.append(Attempt("relax-topology", summary, out.fits))
        if out.fits:
            return Suggestion("relax-topology", summary, change, out.placed)
    return None


class _OutOfBudget(Exception):
    pass


def smallest_change(
    cluster: ClusterFile, spec: GroupSpec, fits: Fits, *, budget: int = MAX_SIMULATIONS
) -> tuple[Suggestion | None, list[Attempt]]:
    """The first of (a) add nodes, (b) evict, (c) relax topology that lets the whole
    group in, and every attempt made on the way; at most ``budget`` calls of ``fits``
    (each a whole simulation), the search gives up beyond."""
    attempts: list[Attempt] = []
    calls = 0

    def counted(c: ClusterFile) -> GroupOutcome:
        nonlocal calls
        if calls >= budget:
            raise _OutOfBudget
        calls += 1
        return fits(c)

    for strategy in (_add_nodes, _evict, _relax_topology):
        try:
            found = strategy(cluster, spec, counted, attempts)
        except _OutOfBudget:
            name = strategy.__name__.strip("_").replace("_", "-")
            attempts.append(Attempt(name, f"gave up after {budget} simulations", False))
            return None, attempts
        if found is not None:
            return found, attempts
    return None, attempts


# ---- the simulator behind it ---------------------------------------------------------------


def simulator_run(
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    seed: int | None = 0,
    adopt: Mapping[str, str] | None = None,
) -> Run:
    def run(cluster: ClusterFile, explain: bool) -> list[PodResult]:
        sim = Simulation(cluster, config, registry, seed=seed, explain=explain, adopt=adopt)
        return anyio.run(sim.run)

    return run


def outcome(cluster: ClusterFile, key: str, results: Iterable[PodResult]) -> GroupOutcome:
    """Group ``key`` of ``cluster`` after a simulation with these results."""
    spec = pod_groups(cluster).get(key)
    if spec is None or not spec.members:
        return GroupOutcome(False, {})
    nodes = placed(spec, results)
    pending = tuple(m for m in spec.members if m not in nodes)
    return GroupOutcome(not pending, nodes, pending)


def fits_by(run: Run, key: str) -> Fits:
    """The real ``fits``: simulate the cluster file, then look at group ``key``."""
    return lambda cluster: outcome(cluster, key, run(cluster, False))


def _alone(
    cluster: ClusterFile, spec: GroupSpec, domain: tuple[str, str] | None = None
) -> ClusterFile:
    """``cluster`` with the group's pending members as plain pods that never preempt
    (inside topology ``domain`` = (key, value) when given): the group's attempt, one
    member after another, without the all-or-nothing."""
    manifests = []
    for pod, raw in cluster.pods:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if key not in spec.members or key in spec.bound:
            continue
        d = _raw(raw)
        d["apiVersion"], d["kind"] = "v1", "Pod"
        d.setdefault("metadata", {})["namespace"] = pod.metadata.namespace
        body = d.setdefault("spec", {})
        body.pop("schedulingGroup", None)
        body["preemptionPolicy"] = "Never"
        if domain is not None:
            body["nodeSelector"] = {**(body.get("nodeSelector") or {}), domain[0]: domain[1]}
        manifests.append(d)
    return ClusterChange(replace=tuple(manifests)).apply(cluster)


def merge_rejections(models: Sequence[dict[str, Any]], node_count: int) -> dict[str, Any]:
    """The pending members' FitErrors as one: per reason the nodes that turned any of them
    away for it (once each), ordered and worded as ``FitError.Error()``."""
    groups: dict[str, dict[str, Any]] = {}
    for m in models:
        for g in m.get("rejected") or []:
            cur = groups.setdefault(
                g["reason"], {"reason": g["reason"], "nodes": [], "plugins": []}
            )
            cur["nodes"] += [n for n in g["nodes"] if n not in cur["nodes"]]
            cur["plugins"] += [p for p in g["plugins"] if p not in cur["plugins"]]
    out = [
        {
            **g,
            "count": len(g["nodes"]),
            "nodes": sorted(g["nodes"]),
            "plugins": sorted(g["plugins"]),
        }
        for g in groups.values()
    ]
    out.sort(key=lambda g: f"{g['count']} {g['reason']}")
    rejected = {n for g in out for n in g["nodes"]}
    avail = max(0, node_count - len(rejected))
    parts = ", ".join(f"{g['count']} {g['reason']}" for g in out)
    msg = f"{avail}/{node_count} nodes are available: {parts}." if out else ""
    return {"nodes": node_count, "members": len(models), "rejected": out, "message": msg}


def _best_attempt(
    cluster: ClusterFile, spec: GroupSpec, run: Run, free: Mapping[str, str]
) -> tuple[str | None, dict[str, str]]:
    """The topology value (``key=value``) where most pending members fit, and where each
    would go (the first ``MAX_PLACEMENTS`` values, in order); without a topology
    constraint, the unconstrained attempt ``free``."""
    if not spec.topology_keys:
        return None, dict(free)
    key = spec.topology_keys[0]
    values = sorted({n.metadata.labels[key] for n, _ in cluster.nodes if key in n.metadata.labels})
    best: tuple[str | None, dict[str, str]] = (None, {})
    for v in values[:MAX_PLACEMENTS]:
        got = outcome(cluster, spec.key, run(_alone(cluster, spec, (key, v)), False)).placed
        fresh = {m: n for m, n in got.items() if m not in spec.bound}
        if best[0] is None or len(fresh) > len(best[1]):
            best = (f"{key}={v}", fresh)
    return best


def explain_group(
    cluster: ClusterFile, key: str, run: Run, fits: Fits | None = None
) -> dict[str, Any]:
    """The model ``render_group_text`` prints and ``--output json`` shows (module doc)."""
    spec = pod_groups(cluster)[key]
    results = run(cluster, True)
    by_key = {f"{r.namespace}/{r.name}": r for r in results}
    now = outcome(cluster, key, results)
    members = []
    for m in spec.members:
        r = by_key.get(m)
        members.append(
            {
                "pod": m,
                "node": now.placed.get(m),
                "status": "Scheduled" if m in now.placed else (r.status if r else "NotConsidered"),
                "message": "" if m in now.placed or r is None else r.message,
            }
        )
    model: dict[str, Any] = {
        "podGroup": key,
        "minCount": spec.min_count,
        "topology": list(spec.topology_keys),
        "members": members,
        "bound": len(now.placed),
        "started": started(spec, now.placed),
        "fits": now.fits,
        "attempt": None,
        "blocked": None,
        "reasons": [],
        "suggestion": None,
        "tried": [],
    }
    if now.fits:
        return model
    need = spec.min_count
    if not spec.members:
        model["reasons"] = ["no pod of the file names it in spec.schedulingGroup.podGroupName"]
        return model
    if need is not None and len(spec.members) < need:
        model["reasons"] = [
            f"gang minCount {need} not satisfiable: only {len(spec.members)} member pod(s) "
            "exist; "
            "no change of nodes helps, the group waits for more member pods"
        ]
        return model
    alone = run(_alone(cluster, spec), True)
    free = {
        f"{r.namespace}/{r.name}": r.node
        for r in alone
        if r.status == "Scheduled" and r.node and f"{r.namespace}/{r.name}" in spec.members
    }
    stuck = [
        r.explain
        for r in alone
        if f"{r.namespace}/{r.name}" in spec.members and r.status != "Scheduled" and r.explain
    ]
    where, would = _best_attempt(cluster, spec, run, free)
    pending = [x for x in spec.members if x not in spec.bound]
    model["attempt"] = {"placement": where, "nodes": {x: would.get(x) for x in pending}}
    if stuck:
        model["blocked"] = merge_rejections(stuck, len(cluster.nodes))
    reasons = []
    if spec.topology_keys and len(would) < len(pending):
        k = spec.topology_keys[0]
        best = f" (best: {where} fits {len(would)})" if where else ""
        reasons.append(
            f"topology constraint: no single value of {k} has room for all "
            f"{len(pending)} pending members{best}"
        )
    if need is not None and len(spec.bound) + len(would) < need:
        reasons.append(
            f"gang minCount {need} not satisfiable: at most {len(spec.bound) + len(would)} "
            f"of {len(spec.members)} members fit at once"
        )
    if len(would) == len(pending):
        msg = next((x["message"] for x in members if x["message"]), "")
        reasons.append(
            "every pending member fits when tried one by one; the group cycle left it "
            f"pending{': ' + msg if msg else ''}"
        )
    model["reasons"] = reasons
    found, attempts = smallest_change(cluster, spec, fits or fits_by(run, key))
    model["suggestion"] = found.to_dict() if found is not None else None
    model["tried"] = [dataclasses.asdict(a) for a in attempts]
    return model


# ---- text ------------------------------------------------------------------------------------


def _yaml_lines(docs: Sequence[Any], indent: str) -> list[str]:
    text = yaml.safe_dump_all(list(docs), sort_keys=False, default_flow_style=False)
    return [indent + line if line else line for line in text.rstrip("\n").split("\n")]


def render_change(change: Mapping[str, Any], indent: str = "    ") -> list[str]:
    """A ``ClusterChange.to_dict()`` as a reader applies it to the file."""
    lines: list[str] = []
    if change.get("delete"):
        refs = ", ".join(
            f"{d['kind']} {d['namespace']}/{d['name']}" if d["namespace"] else d["name"]
            for d in change["delete"]
        )
        lines.append(f"{indent}delete from the cluster file: {refs}")
    if change.get("replace"):
        lines.append(f"{indent}replace in the cluster file (same kind and name) with:")
        lines += _yaml_lines(change["replace"], indent + "  ")
    if change.get("add"):
        lines.append(f"{indent}add to the cluster file:")
        lines += _yaml_lines(change["add"], indent + "  ")
    return lines


def render_group_text(model: Mapping[str, Any]) -> list[str]:
    """Human lines for ``simulate --explain NS/PODGROUP``."""
    key, members = model["podGroup"], model["members"]
    policy = f"gang minCount {model['minCount']}" if model["minCount"] is not None else "basic"
    if model["topology"]:
        policy += f", topology {', '.join(model['topology'])}"
    state = "all members bound" if model["fits"] else ("started" if model["started"] else "pending")
    lines = [f"{key}: PodGroup ({policy}): {state}, {model['bound']}/{len(members)} bound"]
    attempt = model.get("attempt") or {}
    would = attempt.get("nodes") or {}
    where = attempt.get("placement")
    lines.append(
        "  members"
        + (f" (best attempt: {where}; a node: where the member would go)" if where else "")
        + ":"
    )
    width = max(len(x["pod"]) for x in members) if members else 0
    for x in members:
        if x["node"]:
            what = f"bound to {x['node']}"
        elif would.get(x["pod"]):
            what = f"pending, would go to {would[x['pod']]}"
        else:
            what = "pending, fits nowhere" if attempt else x["status"]
        lines.append(f"    {x['pod'].ljust(width)}  {what}")
    blocked = model.get("blocked")
    if blocked:
        n = blocked["members"]
        lines.append(f"  blocked ({n} member{'s' * (n != 1)} fit nowhere): {blocked['message']}")
        for g in blocked["rejected"]:
            nodes = ", ".join(g["nodes"][:5]) + (
                f", +{len(g['nodes']) - 5} more" if len(g["nodes"]) > 5 else ""
            )
            lines.append(f"    {g['count']} {g['reason']} ({', '.join(g['plugins'])}): {nodes}")
    for r in model.get("reasons") or []:
        lines.append(f"  group: {r}")
    if model["fits"]:
        return lines
    tried = model.get("tried") or []
    if tried:
        lines.append("  tried, in order:")
        for t in tried:
            lines.append(f"    {t['strategy']}: {t['tried']}: {'fits' if t['works'] else 'no'}")
    found = model.get("suggestion")
    if found is None:
        if tried:
            lines.append("  no change tried lets the whole group in")
        return lines
    lines.append(f"  smallest change that lets the whole group in: {found['summary']}")
    return lines + render_change(found["change"])
