"""Golden expectations recorded from the real kube-scheduler, for scenario files.

A scenario file is what ``ksched simulate --cluster`` reads (multi-document YAML); its
pods without ``spec.nodeName`` are pending and are scheduled one at a time, in file
order. ``record`` replays it against kube-scheduler and writes ``NAME.golden.json`` beside
it: per pending pod, the outcome (status, FitError text, the nodes kube-scheduler scored
highest). ``check`` runs ksched's simulator on the same file and lists where it disagrees
with the golden file. Upgrading the pinned Kubernetes version is then one command plus a
diff of the golden files::

    python -m ksched.testing.differential --record tests/sim/golden/*.yaml

A scenario must not depend on a random tie-break: a pending pod whose highest score is
shared by several nodes is recorded with all of them, and later pods should not care which.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ...config.types import DEFAULT_SCHEDULER_NAME
from ..controlplane import DEFAULT_VERSION, ControlPlane
from .compare import messages_agree
from .generator import JSON, PendingPod, Scenario
from .kube import KubeReplay
from .local import KschedReplay

__all__ = ["check", "golden_path", "load_scenario", "record"]

KUBE_SCHEDULER = "default-scheduler"


def golden_path(scenario: Path) -> Path:
    return scenario.with_name(scenario.stem + ".golden.json")


def load_scenario(path: Path) -> Scenario:
    """The file's objects in order, its unbound pods pending (for kube-scheduler)."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    objects: list[JSON] = []
    pending: list[PendingPod] = []
    namespaces: set[str] = set()
    declared = {d["metadata"]["name"] for d in docs if d.get("kind") == "Namespace"}
    for d in docs:
        ns = d.get("metadata", {}).get("namespace")
        if d.get("kind") in ("Pod", "PersistentVolumeClaim", "Service", "ReplicaSet"):
            ns = ns or "default"
            d["metadata"]["namespace"] = ns
        if ns and ns not in declared:
            namespaces.add(ns)
        if d.get("kind") == "Pod" and not d.get("spec", {}).get("nodeName"):
            d["spec"]["schedulerName"] = KUBE_SCHEDULER
            pending.append(PendingPod(d, {path.stem}))
        else:
            objects.append(d)
    extra = sorted(namespaces - {"default"})
    ns_objs: list[JSON] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in extra
    ]
    existing = ("default",) if "default" in namespaces else ()
    return Scenario(
        0, (path.stem,), [*ns_objs, *objects], pending, existing_namespaces=existing, prefix=""
    )


def record(paths: list[Path], cp: ControlPlane | None = None) -> dict[Path, dict[str, Any]]:
    """Replay each scenario against kube-scheduler and write its golden file."""
    if cp is None:
        with ControlPlane(with_controller_manager=True) as own:
            return record(paths, own)
    out: dict[Path, dict[str, Any]] = {}
    with KubeReplay(cp) as kube:
        for path in paths:
            pods: dict[str, Any] = {}
            for run in kube.run(load_scenario(path)):
                k = run.kube
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
                }
            golden = {"kubeScheduler": DEFAULT_VERSION, "pods": pods}
            golden_path(path).write_text(json.dumps(golden, indent=2) + "\n")
            out[path] = golden
    return out


def check(path: Path, replay: KschedReplay | None = None) -> list[str]:
    """Where ksched's simulation of ``path`` disagrees with its golden file."""
    golden = json.loads(golden_path(path).read_text())["pods"]
    scenario = load_scenario(path)
    ours = replay or KschedReplay()
    state = [o for o in scenario.objects if o["kind"] != "Namespace"]
    problems: list[str] = []
    for pending in scenario.pending:
        key = f"{pending.namespace}/{pending.name}"
        want = golden.get(key)
        pod = {**pending.pod, "spec": {**pending.pod["spec"]}}
        pod["spec"]["schedulerName"] = DEFAULT_SCHEDULER_NAME
        pod["metadata"] = {**pod["metadata"], "uid": f"golden-{key}", "generation": 1}
        got = ours(state, pod)
        if want is None:
            problems.append(f"{key}: not in the golden file")
            continue
        if got.status != want["status"]:
            problems.append(f"{key}: {got.status}, kube-scheduler: {want['status']}")
        elif not messages_agree(want["message"], got.message):
            problems.append(f"{key}: message {got.message!r}, kube-scheduler: {want['message']!r}")
        elif got.node is not None and want["nodes"] and got.node not in want["nodes"]:
            problems.append(f"{key}: node {got.node}, kube-scheduler's best: {want['nodes']}")
        if got.node is not None:
            bound = {**pod, "spec": {**pod["spec"], "nodeName": got.node}}
            state.append(bound)
    return problems
