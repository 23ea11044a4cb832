"""Golden expectations recorded from the real kube-scheduler, for scenario files.

A scenario file is what ``ksched simulate --cluster`` reads (multi-document YAML); its
pods without ``spec.nodeName`` are pending and are scheduled one at a time, in file
order. ``record`` replays it against kube-scheduler and writes ``NAME.golden.json`` beside
it: per pending pod, the outcome (status, FitError text, the nodes kube-scheduler scored
highest). There is one golden file per kube-scheduler release ksched supports
(``NAME.v1.37.2.golden.json``): ``check`` runs ksched's simulator on the same file at that
release's ``--emulated-version`` and lists where it disagrees. Adding a version is then one
command per release plus a diff of the golden files::

    KSCHED_KUBE_VERSION=v1.37.2 python -m ksched.testing.differential \
        --record tests/sim/golden/*.yaml

Each golden file says what produced it: the pinned version, the SHA-256 of the scenario
file it was recorded from, and a digest over both and the expectations. ``provenance``
lists what does not hold (another version, a scenario edited since, expectations edited
by hand), so a test can refuse expectations the recorder did not write.

A pending pod whose highest score is shared by several nodes is recorded with all of them
and the one kube-scheduler's random tie-break chose; ``check`` accepts any of them and
goes on from kube-scheduler's choice, so later pods see the state they were recorded on.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import yaml

from ...config.types import DEFAULT_SCHEDULER_NAME
from ...features import resolve_feature_gates, version_of_release
from ..controlplane import ControlPlane, build, find_assets
from ..controlplane._build import kube_version as pinned_kube_version
from .compare import compare_group, messages_agree
from .generator import GANG_GATES, JSON, GangBatch, PendingPod, Scenario, apiserver_args
from .kube import KubeReplay
from .local import KschedReplay
from .outcome import Outcome, ReplayHints

__all__ = ["check", "golden_path", "load_scenario", "provenance", "record"]

KUBE_SCHEDULER = "default-scheduler"


_NAMESPACED = (
    "Pod",
    "PersistentVolumeClaim",
    "Service",
    "ReplicaSet",
    "StatefulSet",
    "ReplicationController",
    "PodGroup",
)


def golden_path(scenario: Path, version: str | None = None) -> Path:
    """The golden file of ``scenario`` recorded from kube-scheduler ``version`` (the pinned
    one, ``$KSCHED_KUBE_VERSION`` or ksched's default release, if None)."""
    return scenario.with_name(f"{scenario.stem}.{version or pinned_kube_version()}.golden.json")


def load_scenario(path: Path, *, for_kube: bool = False) -> Scenario:
    """The file's objects in order, its unbound pods pending. ``for_kube``: namespaces and
    controllers go before the pods, and an owner reference to an object in the file names
    its real uid once created (the garbage collector deletes pods of a missing owner).
    A PodGroup of the file (scheduling.k8s.io/v1beta1) is replayed with its members
    (``GangBatch``, which must be consecutive pending pods): created before them, so the
    last member releases the group whole (members that come first are moved into it one
    by one, and kube-scheduler may pop part of the group: see ``generator._gang``)."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    objects: list[JSON] = []
    pending: list[PendingPod] = []
    namespaces: set[str] = set()
    declared = {d["metadata"]["name"] for d in docs if d.get("kind") == "Namespace"}
    batches: dict[str, GangBatch] = {}
    for d in docs:
        ns = d.get("metadata", {}).get("namespace")
        if d.get("kind") in _NAMESPACED:
            ns = ns or "default"
            d["metadata"]["namespace"] = ns
        if ns and ns not in declared:
            namespaces.add(ns)
        if d.get("kind") == "PodGroup":
            batches[f"{ns}/{d['metadata']['name']}"] = GangBatch(d, "first")
        elif d.get("kind") == "Pod" and not d.get("spec", {}).get("nodeName"):
            d["spec"]["schedulerName"] = KUBE_SCHEDULER
            pending.append(PendingPod(d, {path.stem}))
        else:
            objects.append(d)
    _join_batches(path, pending, batches)
    extra = sorted(namespaces - {"default"})
    ns_objs: list[JSON] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in extra
    ]
    existing = ("default",) if "default" in namespaces else ()
    if for_kube:
        objects = _for_kube(objects)
    return Scenario(
        0,
        (path.stem,),
        [*ns_objs, *objects],
        pending,
        existing_namespaces=existing,
        prefix="",
        gates=GANG_GATES if batches else (),
        batches=batches,
    )


def _join_batches(path: Path, pending: list[PendingPod], batches: dict[str, GangBatch]) -> None:
    """Each pending pod naming a PodGroup of the file joins its batch (in file order)."""
    for p in pending:
        group = (p.pod["spec"].get("schedulingGroup") or {}).get("podGroupName")
        key = f"{p.namespace}/{group}"
        if group and key in batches:
            p.batch = key
            batches[key].members.append(p.name)
    order = [p.batch for p in pending]
    runs = [k for i, k in enumerate(order) if k and (i == 0 or order[i - 1] != k)]
    if len(runs) != len(set(runs)):
        raise ValueError(f"{path}: a PodGroup's pending members must be consecutive")


def _for_kube(objects: list[JSON]) -> list[JSON]:
    def ref(kind: str, ns: str | None, name: str) -> str:
        return f"{kind}/{ns or ''}/{name}"

    present = {
        ref(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects
    }
    for o in objects:
        meta = o["metadata"]
        for owner in meta.get("ownerReferences") or []:
            key = ref(owner.get("kind", ""), meta.get("namespace"), owner.get("name", ""))
            if key in present:
                owner["uid"] = {"$uid": key}
    rank = {"Namespace": 0, "Pod": 2}
    return sorted(objects, key=lambda o: rank.get(o["kind"], 1))


def record(
    paths: list[Path], cp: ControlPlane | None = None, *, kube_version: str | None = None
) -> dict[Path, dict[str, Any]]:
    """Replay each scenario against kube-scheduler (``cp``'s, else a control plane of
    ``kube_version``: default the pinned one) and write its golden file, which names that
    release."""
    if cp is None:
        version = kube_version or pinned_kube_version()
        assets = find_assets(version) or build(version)
        gang = any(load_scenario(p).batches for p in paths)
        args = apiserver_args(version, ("gang",)) if gang else ()
        with ControlPlane(assets=assets, with_controller_manager=True, apiserver_args=args) as own:
            return record(paths, own)
    out: dict[Path, dict[str, Any]] = {}
    gates = GANG_GATES if any(load_scenario(p).batches for p in paths) else ()
    with KubeReplay(cp, batching=False, feature_gates=gates) as kube:
        for path in paths:
            pods: dict[str, Any] = {}
            for run in kube.run(load_scenario(path, for_kube=True)):
                k = run.kube
                if k.status in ("Rejected", "Timeout"):
                    key = f"{run.pending.namespace}/{run.pending.name}"
                    raise ValueError(f"{path}: {key}: {k.status}: {k.message}")
                best = max(k.totals.values(), default=None)
                nodes = (
                    sorted(n for n, v in k.totals.items() if v == best)
                    if k.totals
                    else ([k.node] if k.node else [])
                )
                pods[f"{run.pending.namespace}/{run.pending.name}"] = {
                    "status": k.status,
                    "message": k.message,
                    "nodes": nodes,
                    "node": k.node,
                }
                if k.group is not None:  # its PodGroup's outcome (victims: not recorded)
                    group = {f: k.group[f] for f in ("podGroup", "condition", "allBound")}
                    pods[f"{run.pending.namespace}/{run.pending.name}"]["group"] = group
            if kube.refused:
                # a golden file of a scenario the API server only partly took would be wrong
                raise ValueError(f"{path}: the API server refused {'; '.join(kube.refused)}")
            golden = _signed(cp.assets.version, _sha256(path), pods)
            golden_path(path, cp.assets.version).write_text(json.dumps(golden, indent=2) + "\n")
            out[path] = golden
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _digest(version: str, scenario: str, pods: Any) -> str:
    body = json.dumps([version, scenario, pods], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


def _signed(version: str, scenario: str, pods: dict[str, Any]) -> dict[str, Any]:
    return {
        "kubeScheduler": version,
        "scenarioSha256": scenario,
        "digest": _digest(version, scenario, pods),
        "pods": pods,
    }


def provenance(path: Path, version: str | None = None) -> list[str]:
    """Why ``path``'s golden file is not the recorder's output for this scenario file and
    the pinned ``version`` (default: ``$KSCHED_KUBE_VERSION`` or ksched's default release;
    empty when it is)."""
    version = version or pinned_kube_version()
    gpath = golden_path(path, version)
    if not gpath.is_file():
        return [f"{gpath.name}: missing; record it"]
    try:
        golden = json.loads(gpath.read_text())
    except ValueError as e:
        return [f"{gpath.name}: not JSON ({e})"]
    if not isinstance(golden, dict):
        return [f"{gpath.name}: not a golden file"]
    problems: list[str] = []
    recorded = golden.get("kubeScheduler")
    if recorded != version:
        problems.append(f"{gpath.name}: recorded from kube-scheduler {recorded}, pinned {version}")
    if golden.get("scenarioSha256") != _sha256(path):
        problems.append(f"{gpath.name}: {path.name} changed since it was recorded")
    digest = _digest(str(recorded), str(golden.get("scenarioSha256")), golden.get("pods"))
    if golden.get("digest") != digest:
        problems.append(f"{gpath.name}: expectations not written by the recorder")
    if problems:
        problems.append(f"re-record: python -m ksched.testing.differential --record {path}")
    return problems


def check(path: Path, version: str | None = None, replay: KschedReplay | None = None) -> list[str]:
    """Where ksched's simulation of ``path``, at the ``--emulated-version`` of release
    ``version`` (the pinned one if None) and the gates the file's inputs need, disagrees
    with that release's golden file. A PodGroup's members are simulated together
    (``KschedReplay.batch``) and its outcome compared too."""
    version = version or pinned_kube_version()
    golden = json.loads(golden_path(path, version).read_text())["pods"]
    scenario = load_scenario(path)
    minor = version_of_release(version).minor
    ours = replay or KschedReplay(features=resolve_feature_gates(scenario.gates, [minor]))
    state = list(scenario.objects)  # namespaces too: their labels select pods
    problems: list[str] = []
    for batch, step in itertools.groupby(scenario.pending, lambda p: p.batch):
        pods = [_pending(p) for p in step]
        if not batch:  # pods alone: one at a time, each on the state the last one left
            for pod in pods:
                got = ours(state, pod)
                problems += _disagree(pod, golden, got)
                state += _bound(pod, got, golden.get(_key(pod)))
            continue
        ties = {k: n for k in map(_key, pods) if (n := (golden.get(k) or {}).get("node"))}
        outs = ours.batch(state, [scenario.batches[batch].pod_group], pods, ReplayHints(ties))
        for pod, got in zip(pods, outs, strict=True):
            problems += _disagree(pod, golden, got)
        want = golden.get(_key(pods[0])) or {}
        problems += _group_disagree(batch, want.get("group"), outs[0].group)
        for pod, got in zip(pods, outs, strict=True):
            state += _bound(pod, got, golden.get(_key(pod)))
    return problems


def _key(pod: JSON) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def _pending(pending: PendingPod) -> JSON:
    """The pod as ksched gets it: its profile, a uid and a generation."""
    pod = {**pending.pod, "spec": {**pending.pod["spec"]}}
    pod["spec"]["schedulerName"] = DEFAULT_SCHEDULER_NAME
    key = f"{pending.namespace}/{pending.name}"
    pod["metadata"] = {**pod["metadata"], "uid": f"golden-{key}", "generation": 1}
    return pod


def _disagree(pod: JSON, golden: dict[str, Any], got: Outcome) -> list[str]:
    key = _key(pod)
    want = golden.get(key)
    if want is None:
        return [f"{key}: not in the golden file"]
    if got.status != want["status"]:
        return [f"{key}: {got.status}, kube-scheduler: {want['status']}"]
    if not messages_agree(want["message"], got.message):
        return [f"{key}: message {got.message!r}, kube-scheduler: {want['message']!r}"]
    if got.node is not None and want["nodes"] and got.node not in want["nodes"]:
        return [f"{key}: node {got.node}, kube-scheduler's best: {want['nodes']}"]
    return []


def _group_disagree(key: str, want: dict[str, Any] | None, got: dict[str, Any] | None) -> list[str]:
    """The PodGroup's recorded outcome (condition, every member bound) against ksched's."""
    mine = None if got is None else {**got, "victims": []}
    theirs = None if want is None else {**want, "victims": []}
    return [
        f"{key}: {d.detail}: {d.ksched!r}, kube-scheduler: {d.kube!r}"
        for d in compare_group(theirs, mine)
    ]


def _bound(pod: JSON, got: Outcome, want: dict[str, Any] | None) -> list[JSON]:
    """The pod bound where ksched put it (among equally good nodes, where kube-scheduler's
    tie-break did: the later pods' expectations were recorded on that state); nothing
    when it did not bind."""
    if got.node is None:
        return []
    node = got.node
    if want is not None and got.node in want["nodes"] and want.get("node"):
        node = want["node"]
    return [{**pod, "spec": {**pod["spec"], "nodeName": node}}]
