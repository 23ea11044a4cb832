"""The ``gang`` group against the real kube-scheduler (v1.37 and later: run with
``KSCHED_KUBE_VERSION=v1.37.2``): the harness's replay of a PodGroup as one unit gives
kube-scheduler's all-or-nothing outcomes, and a few random seeds agree with ksched."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.features.versions import minor_key
from ksched.testing.controlplane import ControlPlane
from ksched.testing.controlplane._build import kube_version
from ksched.testing.differential import run_differential
from ksched.testing.differential.gates import emulation_of
from ksched.testing.differential.generator import (
    GANG_GATES,
    HOST,
    GangBatch,
    PendingPod,
    Scenario,
    apiserver_args,
)
from ksched.testing.differential.golden import golden_path, record
from ksched.testing.differential.kube import KubeReplay, api_path

pytestmark = pytest.mark.kube

# Small: about 40 pods (a third in PodGroups), half a minute per side on 2 cores.
GANG_SEEDS = [0, 1, 2, 3]
GANG_GROUPS = ("gang", "preemption", "resources")
RELEASE = "v1.37.2"  # the gang goldens' release


@pytest.fixture(scope="module")
def cp() -> Iterator[ControlPlane]:
    version = kube_version()
    if minor_key(emulation_of(version)) < (1, 37):
        pytest.skip(f"the gang group needs v1.37 or later (KSCHED_KUBE_VERSION={version})")
    args = apiserver_args(version, GANG_GROUPS)
    with ControlPlane(with_controller_manager=True, apiserver_args=args) as plane:
        yield plane


def _node(name: str, cpu: str) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "4Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOST: name}},
        "spec": {},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _obj(api_version: str, kind: str, ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def _gang(seed: int, cpus: list[str], timing: str, min_count: int, size: int) -> Scenario:
    """A gang of ``size`` one-CPU pods with quorum ``min_count`` on nodes of ``cpus``."""
    ns = f"gang{seed}"
    policy = {"gang": {"minCount": min_count}}
    group = _obj("scheduling.k8s.io/v1beta1", "PodGroup", ns, "g", {"schedulingPolicy": policy})
    names = [f"m{i}" for i in range(size)]
    pending = [
        PendingPod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": n, "namespace": ns},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                    ],
                    "schedulingGroup": {"podGroupName": "g"},
                },
            },
            {"gang"},
            f"{ns}/g",
        )
        for n in names
    ]
    nodes = [_node(f"s{seed}-n{i}", c) for i, c in enumerate(cpus)]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    batches = {f"{ns}/g": GangBatch(group, timing, names)}
    return Scenario(seed, ("gang",), [namespace, *nodes], pending, batches=batches)


def test_the_replay_sees_kube_schedulers_all_or_nothing(cp: ControlPlane) -> None:
    """A gang of 3 (quorum 3) where 2 fit stays unscheduled, every member and the
    PodGroup saying so; where 3 fit all bind and the PodGroup is Scheduled; a gang with
    fewer members than its quorum is never tried (no condition anywhere)."""
    with KubeReplay(cp, batching=False, feature_gates=list(GANG_GATES)) as kube:
        short = list(kube.run(_gang(9001, ["1", "1"], "first", 3, 3)))
        fits = list(kube.run(_gang(9002, ["1", "1", "1"], "late", 3, 3)))
        held = list(kube.run(_gang(9003, ["2", "2"], "spread", 3, 2)))
        assert not kube.refused, kube.refused
    assert [r.kube.status for r in short] == ["Unschedulable"] * 3
    group = short[0].kube.group
    assert group is not None and group["allBound"] is False
    assert group["condition"]["status"] == "False"
    assert group["condition"]["reason"] == "Unschedulable"
    assert "minCount (3) cannot be satisfied" in group["condition"]["message"]
    assert all(r.kube.group == group for r in short)

    assert [r.kube.status for r in fits] == ["Scheduled"] * 3
    assert sorted(str(r.kube.node) for r in fits) == ["s9002-n0", "s9002-n1", "s9002-n2"]
    group = fits[0].kube.group
    assert group is not None and group["allBound"] is True
    assert (group["condition"]["status"], group["condition"]["reason"]) == ("True", "Scheduled")

    assert [r.kube.status for r in held] == ["Pending", "Pending"]
    assert all(r.kube.condition is None for r in held)
    group = held[0].kube.group
    assert group is not None and group["condition"] is None and group["allBound"] is False


def test_random_seeds_record_kube_schedulers_pod_groups(cp: ControlPlane) -> None:
    """``kube_only``: every PodGroup of the seeds gets an outcome, some all bound, some
    not; nothing refused by the API server (the generator's inputs are valid)."""
    report = run_differential(GANG_SEEDS, GANG_GROUPS, cp=cp, batching=False, kube_only=True)
    assert not report.rejected, report.rejected
    groups = report.pod_groups()
    assert len(groups) >= 5, report.text()
    assert any("all bound" in g and "not all" not in g for g in groups), groups
    assert any("not all bound" in g for g in groups), groups
    members = [p for p in report.pods if p.group is not None]
    assert members and all(p.kube_status != "Timeout" for p in report.pods), report.text()


def test_gang_seeds_agree_with_kube_scheduler(cp: ControlPlane, tmp_path: Path) -> None:
    report = run_differential(GANG_SEEDS, GANG_GROUPS, cp=cp, outdir=tmp_path, batching=False)
    assert report.groups()["gang"].pods >= 10
    assert not report.rejected, report.rejected
    assert not report.diverging, report.text()


def test_the_recorder_reproduces_the_committed_gang_goldens(
    cp: ControlPlane, tmp_path: Path
) -> None:
    """Recording the PodGroup scenarios again gives the committed expectations (the
    outcomes, best nodes and group outcomes; the tie-break's pick aside)."""
    golden_dir = Path(__file__).parent / "gang_golden"
    names = ["gang_of_three_waits_for_room_for_all", "basic_group_places_what_fits"]
    copies = []
    for name in names:
        dst = tmp_path / f"{name}.yaml"
        dst.write_text((golden_dir / f"{name}.yaml").read_text())
        copies.append(dst)
    recorded = record(copies, cp)
    for name, path in zip(names, copies, strict=True):
        committed = json.loads(golden_path(golden_dir / f"{name}.yaml", RELEASE).read_text())
        fields = ("status", "message", "nodes", "group")
        fresh = {k: [v.get(f) for f in fields] for k, v in recorded[path]["pods"].items()}
        assert fresh == {k: [v.get(f) for f in fields] for k, v in committed["pods"].items()}


def _new_namespace(kube: KubeReplay, ns: str) -> str:
    """Creates ``ns``; the resource version its watches start from."""
    kube.api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    return str(kube.api.ok("GET", api_path("Pod", ns) + "?limit=1")["metadata"]["resourceVersion"])


def test_a_groups_outcome_is_what_the_placing_cycle_wrote(cp: ControlPlane) -> None:
    """kube-scheduler guards a PodGroup's True condition against its informer's copy, so
    a fast retry of a member left over can write False over it (a CI run saw it on
    basic_group_places_what_fits). With a member bound the replay reads the True from
    the PodGroup's history; with none bound, the condition as it stands."""
    with KubeReplay(cp, batching=False, feature_gates=list(GANG_GATES)) as kube:
        ns = "regress"
        rv = _new_namespace(kube, ns)
        spec: dict[str, Any] = {"schedulingPolicy": {"basic": {}}}
        body = _obj("scheduling.k8s.io/v1beta1", "PodGroup", ns, "g", spec)
        group = kube.api.ok("POST", api_path("PodGroup", ns), body)
        path = api_path("PodGroup", ns, "g")
        kube._pod_groups.append(path)
        for status, reason, message in [
            ("True", "Scheduled", ""),
            ("False", "Unschedulable", "pod group is unschedulable"),
        ]:
            cond = {
                "type": "PodGroupInitiallyScheduled",
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": "2026-11-29T00:00:00Z",
            }
            group = kube.api.ok(
                "PUT", path + "/status", {**group, "status": {"conditions": [cond]}}
            )
        placed = kube._await_group_condition(ns, "g", True, True, rv)
        standing = kube._await_group_condition(ns, "g", True, False, rv)
    assert placed is not None and standing is not None
    assert placed["status"]["conditions"][0]["status"] == "True"
    assert standing["status"]["conditions"][0]["reason"] == "Unschedulable"


def test_a_members_error_waits_for_its_retrys_verdict(cp: ControlPlane) -> None:
    """kube-scheduler retries a pod after an error, so the replay records the retry's
    verdict: a CI run saw v1.37.2 pop a gang's member before the others reached its
    queue, and DynamicResources' PodGroupPostFilter fail that lone group cycle with
    "not found". Here a writer plays the scheduler on a pod no scheduler serves."""
    with KubeReplay(cp, batching=False, feature_gates=list(GANG_GATES)) as kube:
        ns = "retry"
        rv = _new_namespace(kube, ns)
        spec = {"schedulerName": "nobody", "containers": [{"name": "c", "image": "app:1"}]}
        pod = _obj("v1", "Pod", ns, "m", spec)
        kube.api.ok("POST", api_path("Pod", ns), pod)
        path = api_path("Pod", ns, "m")
        verdicts = [
            ("SchedulerError", 'error in "DynamicResources" PodGroupPostFilter plugins: not found'),
            ("Unschedulable", "pod group is unschedulable"),
        ]

        def play_the_scheduler() -> None:
            for reason, message in verdicts:
                cur = kube.api.ok("GET", path)
                cond = {"type": "PodScheduled", "status": "False", "reason": reason}
                cur["status"]["conditions"] = [{**cond, "message": message}]
                kube.api.ok("PUT", path + "/status", cur)
                time.sleep(1.5)  # kube-scheduler's first backoff is 1 s

        writer = threading.Thread(target=play_the_scheduler)
        writer.start()
        seen = kube._watch_batch(ns, ["m"], rv)
        writer.join()
        kube.api.request("DELETE", path, {"gracePeriodSeconds": 0})
    out = seen["m"].outcome()
    assert (out.status, out.message) == ("Unschedulable", "pod group is unschedulable")
