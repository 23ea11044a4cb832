"""``ksched bench --apiserver real``: the harness, its JSON document, table and comparison.

The kube test runs a tiny workload end to end on the real control plane for every
contestant; it checks that the harness measures (every pod bound, the figures present),
never how fast anything is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ksched.api.objects import Node, Pod, decode
from ksched.bench import run_bench
from ksched.bench.real import (
    CHURN_NS,
    FIGURES,
    MEASURED_NS,
    REAL_WORKLOADS,
    _objects,
    compare,
    cpu_split,
    queue_moves,
    render_table,
    run_real_bench,
    scheduler_config,
)
from ksched.bench.workloads import DAEMONSET_NODE, DELETING_NS, GATED_NS, collection_path
from ksched.cli import main
from ksched.config import default_config
from ksched.plugins import default_registry
from ksched.testing.controlplane import Assets, ControlPlane

SCHEDULER_KEYS = {*FIGURES, "scheduled", "runs", "writes"}


def _doc(**pods_per_s: float | None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, v in pods_per_s.items():
        c = name.replace("_", "-")
        results[c] = {"pods_per_s": v, "scheduled": 10}
        if c != "null":
            results[c] |= {"p50_ms": 1.0, "p99_ms": 2.0, "cpu_s": 0.5, "rss_mb": 100.0}
    return {"workloads": [{"name": "SchedulingBasic", "nodes": 5, "pods": 10, "results": results}]}


# ---- the run, end to end --------------------------------------------------------------------------


@pytest.mark.kube
def test_tiny_workload_end_to_end_for_every_contestant() -> None:
    """Unschedulable at 3 nodes: measured pods bound by each contestant while the churn of
    pods that fit nowhere runs; the document has the issue's shape."""
    doc = run_real_bench(
        ["Unschedulable"],
        contestants=["ksched", "kube-scheduler", "null"],
        sizes={"Unschedulable": (3, 1, 8)},
    )
    assert doc["machine"]["cpus"] >= 1
    assert doc["versions"]["kubernetes"].startswith("v1.")
    (w,) = doc["workloads"]
    assert (w["name"], w["nodes"], w["init_pods"], w["pods"]) == ("Unschedulable", 3, 1, 8)
    assert set(w["results"]) == {"ksched", "kube-scheduler", "null"}
    for name in ("ksched", "kube-scheduler"):
        r = w["results"][name]
        assert set(r) == SCHEDULER_KEYS, name
        assert r["scheduled"] == 8, name
        assert r["pods_per_s"] > 0 and r["rss_mb"] > 0 and r["cpu_s"] >= 0, (name, r)
        assert 0 <= r["p50_ms"] <= r["p99_ms"], (name, r)
        # what each scheduler's queue did, read from its /metrics
        moves = r["runs"][0]["queue"]["moves"]
        # the pods' arrival into activeQ, by the release's name for the event (PodAdd,
        # UnschedulablePodAdd at 1.36, UnscheduledPodAdd at 1.37)
        added = [k for k in moves if k.startswith("active/") and k.endswith("PodAdd")]
        assert sum(moves[k] for k in added) > 0, r
    assert set(w["results"]["null"]) == {
        "pods_per_s",
        "drain_s",
        "scheduled",
        "apiserver_cpu_s",
        "runs",
        "writes",
    }
    # what each made the API server write, from its apiserver_request_total: the measured
    # pods' Bindings at least (a 409'd retry counts too); the null client nothing else here
    for name in ("ksched", "kube-scheduler", "null"):
        assert w["results"][name]["writes"].get("POST pods/binding", 0) >= 8, name
    assert "PATCH pods/status" not in w["results"]["null"]["writes"]
    # ready to the last bind: the null client's at least its binds' own span (it knows when
    # it started); a scheduler's ready is polled, so 8 pods may all bind before it is seen
    null = w["results"]["null"]
    assert null["drain_s"] >= 7 / null["pods_per_s"] - 0.01, null
    for r in w["results"].values():
        assert isinstance(r["drain_s"], float), r
    for r in w["results"].values():  # measured for every contestant (0 s in a tiny window)
        assert isinstance(r["apiserver_cpu_s"], float) and r["apiserver_cpu_s"] >= 0, r
    # the CPU ratio needs ksched to have spent a measurable tick: 8 pods on a fast machine may not
    expected = {"ksched/kube-scheduler", "ksched/null", "ksched/null drain"}
    if w["results"]["ksched"]["cpu_s"] > 0:
        expected.add("cpu kube-scheduler/ksched")
    assert set(w["ratios"]) == expected
    assert w["results"]["null"]["scheduled"] == 8
    json.dumps(doc)  # serialisable as --output json prints it
    assert "Unschedulable" in render_table(doc)


# ---- the objects each workload creates --------------------------------------------------------------


@pytest.mark.parametrize("name", list(REAL_WORKLOADS))
def test_workload_objects_are_valid_and_init_pods_are_bound(name: str) -> None:
    setup, measured = _objects(REAL_WORKLOADS[name], 6, 4, 5, "sched-x")
    kinds = [m["kind"] for m in setup]
    assert kinds.index("Namespace") < kinds.index("Node")
    assert {m["metadata"]["name"] for m in setup if m["kind"] == "Namespace"} >= {
        MEASURED_NS,
        CHURN_NS,
    }
    nodes = {decode(m, Node).metadata.name for m in setup if m["kind"] == "Node"}
    for m in setup:
        if m["kind"] == "Pod":
            p = decode(m, Pod)
            assert p.spec.scheduler_name == "sched-x"
            # bound, unless one of the cluster's pods that stay pending (gated, deleted)
            assert p.spec.node_name in nodes or p.metadata.namespace in (GATED_NS, DELETING_NS)
            assert not p.metadata.uid  # the API server assigns it
    # the Priority admission plugin refuses spec.priority: a PriorityClass carries it
    classes = {m["metadata"]["name"]: m["value"] for m in setup if m["kind"] == "PriorityClass"}
    for m in [*setup, *measured]:
        if m["kind"] == "Pod":
            assert "priority" not in m["spec"]
            assert m["spec"].get("priorityClassName") in (None, *classes)
    if name in ("PreemptionBasic", "PreemptionAsync", "Unschedulable"):
        assert 10 in classes.values()  # the measured pods' or the churn's preemptors
    assert len(measured) == 5
    for m in measured:
        p = decode(m, Pod)
        assert (p.metadata.namespace, p.spec.scheduler_name, p.spec.node_name) == (
            MEASURED_NS,
            "sched-x",
            "",
        )
    churn = REAL_WORKLOADS[name].churn
    if churn is not None:
        for obj in churn.make(0):
            assert collection_path(obj).startswith(("/api/v1/", "/apis/"))


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"kind": "Node", "metadata": {"name": "n"}}, "/api/v1/nodes"),
        ({"kind": "Namespace", "metadata": {"name": "n"}}, "/api/v1/namespaces"),
        ({"kind": "Pod", "metadata": {"namespace": "a"}}, "/api/v1/namespaces/a/pods"),
        ({"kind": "Service", "metadata": {"namespace": "a"}}, "/api/v1/namespaces/a/services"),
        (
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {}},
            "/apis/resource.k8s.io/v1/deviceclasses",
        ),
        (
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"namespace": "a"},
            },
            "/apis/resource.k8s.io/v1/namespaces/a/resourceclaimtemplates",
        ),
        (
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {}},
            "/apis/policy/v1/poddisruptionbudgets",
        ),
    ],
)
def test_collection_paths(obj: dict[str, Any], path: str) -> None:
    assert collection_path(obj) == path


def test_daemonset_pods_all_land_on_the_named_node_in_process() -> None:
    cfg = default_config()
    r = run_bench(
        "SchedulingDaemonset",
        nodes=20,
        pods=30,
        config=cfg,
        registry=default_registry(entry_points=False),
    )
    assert r["scheduled"] == 30


@pytest.mark.parametrize(
    "name", ["PreemptionAsync", "Unschedulable", "MixedSchedulingBasePod", "PreemptionBasic"]
)
def test_new_workloads_schedule_every_measured_pod_in_process(name: str) -> None:
    r = run_bench(
        name,
        nodes=10,
        pods=10,
        init_pods=4,
        config=default_config(),
        registry=default_registry(entry_points=False),
    )
    assert r["scheduled"] == 10


def test_daemonset_node_is_the_one_selected() -> None:
    setup, measured = _objects(REAL_WORKLOADS["SchedulingDaemonset"], 3, 0, 2, "ksched")
    names = [m["metadata"]["name"] for m in setup if m["kind"] == "Node"]
    assert names[0] == DAEMONSET_NODE and len(names) == 4
    term = measured[0]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]
    assert term["matchFields"][0]["values"] == [DAEMONSET_NODE]


def test_scheduler_config_gives_both_schedulers_the_same_client_limits() -> None:
    cfg = scheduler_config({"profiles": [{"schedulerName": "mine"}], "leaderElection": {}})
    assert cfg["clientConnection"] == {"qps": 5000, "burst": 5000}
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["profiles"] == [{"schedulerName": "mine"}]
    assert scheduler_config()["profiles"] == [{"schedulerName": "ksched"}]


# ---- table and comparison ---------------------------------------------------------------------------


def test_queue_moves_sum_the_schedulers_queue_counters_by_label() -> None:
    text = """# TYPE scheduler_queue_incoming_pods_total counter
scheduler_queue_incoming_pods_total{event="AssignedPodDelete",queue="unschedulable"} 7
scheduler_queue_incoming_pods_total{event="AssignedPodDelete",queue="active"} 2
scheduler_queue_incoming_pods_total{event="PodAdd",queue="active"} 10
# TYPE scheduler_queueing_hint_execution_duration_seconds histogram
scheduler_queueing_hint_execution_duration_seconds_bucket{event="AssignedPodDelete",hint="Queue",plugin="NodeResourcesFit",le="+Inf"} 9
scheduler_queueing_hint_execution_duration_seconds_count{event="AssignedPodDelete",hint="Queue",plugin="NodeResourcesFit"} 9
scheduler_queueing_hint_execution_duration_seconds_sum{event="AssignedPodDelete",hint="Queue",plugin="NodeResourcesFit"} 0.001
"""
    assert queue_moves(text) == {
        "moves": {
            "active/AssignedPodDelete": 2,
            "active/PodAdd": 10,
            "unschedulable/AssignedPodDelete": 7,
        },
        "hints": {"NodeResourcesFit/AssignedPodDelete/Queue": 9},
    }


def test_table_has_the_ratios() -> None:
    doc = _doc(ksched=300.0, kube_scheduler=100.0, null=400.0)
    lines = render_table(doc).splitlines()
    assert lines[0].split()[:3] == ["WORKLOAD", "NODES", "PODS"]
    assert (
        lines[0].rstrip().endswith("ksched/kube  ksched/null  cpu kube/ksched  ksched/null drain")
    )
    assert lines[1].split()[-4:] == ["3.00", "0.75", "1.00", "-"]  # no drain recorded
    assert len(lines) == 2  # bind-only null: no note


def test_table_notes_what_the_null_client_writes_besides_bindings() -> None:
    from ksched.bench.e2e import NullWrites

    doc = _doc(ksched=300.0, null=400.0)
    doc["workloads"][0]["null_writes"] = NullWrites(victims=3).describe()
    note = render_table(doc).splitlines()[-1]
    assert note == f"null writes, SchedulingBasic: {NullWrites(victims=3).describe()}"
    assert "DisruptionTarget" in note and note.endswith("+ binding")


def test_table_shows_the_api_servers_cpu_per_pod_and_the_pinning() -> None:
    doc = _doc(ksched=300.0, null=400.0)
    doc["workloads"][0]["results"]["ksched"]["apiserver_cpu_s"] = 0.025  # 10 pods
    doc["pinned"] = cpu_split([0, 1, 2, 3]).describe()
    lines = render_table(doc).splitlines()

    def cell(column: str) -> str:
        start = lines[0].index(column)
        return lines[1][start:].split()[0]

    assert cell("ksched apiserver ms/pod") == "2.5"
    assert cell("null apiserver ms/pod") == "-"
    assert lines[-1] == (
        "pinned: etcd and kube-apiserver on CPUs [0, 1], "
        "the scheduler and the harness on CPUs [2, 3]"
    )


def test_runqueue_seconds_count_a_process_kept_off_the_cpu() -> None:
    """Two busy processes pinned to one CPU: each waits in the run queue about as long as
    the other runs; an idle (sleeping) process waits for nothing; a gone one is -1."""
    import subprocess
    import sys
    import time

    from ksched.bench.e2e import proc_runqueue_seconds

    cpu = min(os.sched_getaffinity(0))
    spin = (
        f"import os,time\nos.sched_setaffinity(0,{{{cpu}}})\n"
        "t=time.time()\nwhile time.time()-t<1.5: pass"
    )
    busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    time.sleep(1.2)
    waited = [proc_runqueue_seconds(p.pid) for p in busy]
    slept = proc_runqueue_seconds(idle.pid)
    for p in [*busy, idle]:
        p.wait()
    assert sum(waited) > 0.4, waited  # 1.2 s on one CPU for two: ~0.6 s waited in all
    assert 0 <= slept < 0.2, slept
    assert proc_runqueue_seconds(busy[0].pid) == -1.0  # reaped: no /proc entry


def test_cpu_split_gives_the_api_server_the_first_half() -> None:
    assert cpu_split([3, 1, 2]).describe() == {"apiserver": [1], "scheduler": [2, 3]}
    with pytest.raises(ValueError, match="--pin needs at least 2 CPUs"):
        cpu_split([0])


def test_table_marks_a_run_that_did_not_bind_everything() -> None:
    doc = _doc(ksched=None, null=50.0)
    doc["workloads"][0]["results"]["ksched"]["scheduled"] = 3
    row = render_table(doc).splitlines()[1]
    assert "(3/10 bound)" in row and row.split()[-4:] == ["-", "-", "-", "-"]


# ---- repeated runs ------------------------------------------------------------------------------------


def test_repeat_interleaves_contestants_and_reports_medians(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three rounds: each starts with a different contestant; each contestant's figures
    are its medians and each ratio the median of the rounds' ratios, with its range."""
    order: list[str] = []
    # per round: ksched, kube-scheduler, null pods/s; ksched and kube-scheduler CPU
    figures = {
        0: (100.0, 50.0, 200.0, 2.0, 4.0),
        1: (300.0, 100.0, 400.0, 1.0, 4.0),
        2: (90.0, 90.0, 100.0, 2.0, 2.0),
    }

    async def fake_one(name: str, contestant: str, *args: Any) -> dict[str, Any]:
        rnd = len(order) // 3
        order.append(contestant)
        k, ks, null, kcpu, kscpu = figures[rnd]
        if contestant == "null":
            return {"pods_per_s": null, "drain_s": 10.0, "scheduled": 10}
        pps, cpu = (k, kcpu) if contestant == "ksched" else (ks, kscpu)
        return {
            "pods_per_s": pps,
            "drain_s": (5.0, 20.0, 10.0)[rnd],
            "scheduled": 10 - rnd,
            "p50_ms": 1.0,
            "p99_ms": 2.0,
            "cpu_s": cpu,
            "rss_mb": 100.0 + rnd,
        }

    monkeypatch.setattr("ksched.bench.real._one", fake_one)
    doc = run_real_bench(
        ["SchedulingBasic"],
        contestants=["ksched", "kube-scheduler", "null"],
        sizes={"SchedulingBasic": (2, 0, 10)},
        repeat=3,
    )
    assert order == [
        "ksched",
        "kube-scheduler",
        "null",
        "kube-scheduler",
        "null",
        "ksched",
        "null",
        "ksched",
        "kube-scheduler",
    ]
    (w,) = doc["workloads"]
    k = w["results"]["ksched"]
    assert (k["pods_per_s"], k["cpu_s"], k["rss_mb"], k["scheduled"]) == (100.0, 2.0, 101.0, 8)
    assert [r["pods_per_s"] for r in k["runs"]] == [100.0, 300.0, 90.0]
    assert w["results"]["null"]["pods_per_s"] == 200.0
    # round ratios ksched/kube 2.0, 3.0, 1.0; ksched/null 0.5, 0.75, 0.9; cpu 2.0, 4.0, 1.0
    assert w["ratios"]["ksched/kube-scheduler"] == {"median": 2.0, "min": 1.0, "max": 3.0}
    assert w["ratios"]["ksched/null"] == {"median": 0.75, "min": 0.5, "max": 0.9}
    assert w["ratios"]["cpu kube-scheduler/ksched"] == {"median": 2.0, "min": 1.0, "max": 4.0}
    # null's drain over ksched's: 10/5, 10/20, 10/10
    assert w["ratios"]["ksched/null drain"] == {"median": 1.0, "min": 0.5, "max": 2.0}
    assert k["drain_s"] == 10.0 and [r["drain_s"] for r in k["runs"]] == [5.0, 20.0, 10.0]
    assert doc["repeat"] == 3
    row = render_table(doc).splitlines()[1]
    assert "2.00 (1.00-3.00)" in row and "0.75 (0.50-0.90)" in row


def test_repeat_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="repeat"):
        run_real_bench(["SchedulingBasic"], repeat=0)
    assert main(["bench", "--apiserver", "real", "--repeat", "0"]) == 2
    assert "--repeat must be at least 1" in capsys.readouterr().err


# ---- DRA: SchedulingWithResourceClaimTemplate ----------------------------------------------------------


def test_dra_init_claims_are_preallocated_one_device_each() -> None:
    """Each bound init pod references its own claim by name; the claims' statuses give
    every init pod a distinct device of its own node's pool and reserve it for the pod;
    the measured pods keep the template reference for the resourceclaim controller."""
    setup, measured = _objects(REAL_WORKLOADS["SchedulingWithResourceClaimTemplate"], 3, 7, 4, "k")
    kinds = [m["kind"] for m in setup]
    assert kinds.count("ResourceSlice") == 3 and kinds.count("DeviceClass") == 1
    claims = {m["metadata"]["name"]: m for m in setup if m["kind"] == "ResourceClaim"}
    pods = [m for m in setup if m["kind"] == "Pod"]
    assert len(claims) == len(pods) == 7
    taken = set()
    for p in pods:
        (ref,) = p["spec"]["resourceClaims"]
        claim = claims[ref["resourceClaimName"]]
        assert "resourceClaimTemplateName" not in ref
        (res,) = claim["status"]["allocation"]["devices"]["results"]
        assert res["pool"] == p["spec"]["nodeName"]
        taken.add((res["pool"], res["device"]))
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": p["metadata"]["name"]}
        ]
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
    assert len(taken) == 7  # no device given twice
    for m in measured:
        assert m["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    # every template's namespace exists before the template is created
    namespaces = {m["metadata"]["name"] for m in setup if m["kind"] == "Namespace"}
    for m in setup:
        if m["kind"] == "ResourceClaimTemplate":
            assert m["metadata"]["namespace"] in namespaces


@pytest.mark.kube
def test_dra_workload_fills_the_devices_exactly() -> None:
    """2 nodes x 10 devices, 15 held by init pods: the API server takes the preallocated
    claims' statuses, the real resourceclaim controller makes the measured pods' claims,
    and both schedulers (and the null client, allocating claims itself) bind all five
    pods."""
    doc = run_real_bench(
        ["SchedulingWithResourceClaimTemplate"],
        contestants=["ksched", "kube-scheduler", "null"],
        sizes={"SchedulingWithResourceClaimTemplate": (2, 15, 5)},
    )
    (w,) = doc["workloads"]
    # the null client binds only after the API server took its claim writes
    for name in ("ksched", "kube-scheduler", "null"):
        assert w["results"][name]["scheduled"] == 5, name


def test_compare_flags_only_what_got_slower() -> None:
    saved = _doc(ksched=300.0, kube_scheduler=100.0, null=400.0)
    assert compare(_doc(ksched=290.0, kube_scheduler=100.0, null=400.0), saved) == []
    (line,) = compare(_doc(ksched=200.0, kube_scheduler=100.0, null=400.0), saved)
    assert line.startswith("SchedulingBasic: ksched slower: 200.0 pods/s, was 300.0")
    assert compare(_doc(ksched=None, null=1.0), {"workloads": []}) == []


# ---- CLI input errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--apiserver", "real", "--workload", "Nope"], "unknown workload 'Nope'"),
        (
            ["--apiserver", "real", "--workload", "GangScheduling,Nope"],
            "unknown workload 'Nope'",
        ),
        (["--scale", "full"], "need --apiserver real"),
        (["--against", "kube-scheduler"], "need --apiserver real"),
        (["--pin"], "need --apiserver real"),
    ],
)
def test_bench_real_bad_arguments_exit_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *argv]) == 2
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize("content", ["{not json", '{"workloads": 3}', "[]"])
def test_compare_file_that_is_not_a_saved_run_exits_2(
    tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "saved.json"
    f.write_text(content)
    argv = ["bench", "--apiserver", "real", "--workload", "SchedulingBasic", "--compare", str(f)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ksched bench: --compare {f}:") and len(err.splitlines()) == 1


# ---- the null client's mandatory writes -------------------------------------------------------


def test_null_writes_are_bind_only_except_preemption_basic_and_dra() -> None:
    """The null client makes the writes the workload makes any scheduler do: victims'
    deletions for PreemptionBasic's preemptors, claim allocations for DRA; the JSON says so."""
    described = {
        name: wl.null_writes_for(wl.scales["small"]).describe()
        for name, wl in REAL_WORKLOADS.items()
    }
    assert (
        described.pop("PreemptionBasic")
        == "per preemptor: its status (nomination) + 3 victims' DisruptionTarget status + deletion + binding"
    )
    dra = REAL_WORKLOADS["SchedulingWithResourceClaimTemplate"]
    assert described.pop("SchedulingWithResourceClaimTemplate") == (
        "per pod: its nomination + per claim: finalizer + status (allocation, reservedFor)"
        " + binding"
    )
    assert set(described.values()) == {"binding"}
    # the init pods hold devices 0-4 of each node at small scale (1000 pods, 200 nodes)
    assert dra.null_writes_for((200, 1000, 1000)).first_device == 5
    assert dra.null_writes_for((2, 15, 5)).first_device == 8


def _run_null(
    srv: Any,
    writes: Any,
    until: Callable[[], bool],
    profile: str = "ksched",
    script: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """A NullScheduler with ``writes`` against the test API server until ``until()``
    (after ``script``, when given, has run beside it)."""
    import anyio

    from ksched.bench.e2e import NullScheduler
    from ksched.cluster import APIClient, connect_scheduler

    async def main() -> None:
        client = await APIClient.for_master(srv.url, qps=0)
        try:
            null = NullScheduler(client, [profile], writes=writes)
            async with anyio.create_task_group() as tg:
                informers = connect_scheduler(null, client)
                tg.start_soon(informers.run)
                await informers.wait_synced()
                tg.start_soon(null.run)
                if script is not None:
                    await script()
                with anyio.fail_after(10):
                    while not until():
                        await anyio.sleep(0.02)
                tg.cancel_scope.cancel()
            assert null.errors == 0
        finally:
            await client.close()

    anyio.run(main)


def _bound(srv: Any, name: str, ns: str = "default") -> bool:
    return bool(srv.get("pods", ns, name)["spec"].get("nodeName"))


@pytest.mark.parametrize("victims", [0, 3])
def test_null_deletes_victims_of_a_preemptor_before_binding_it(victims: int) -> None:
    from ksched.bench.e2e import NullWrites
    from ksched.testing import TestAPIServer, make_node, make_pod

    with TestAPIServer().run_in_thread() as srv:
        for n in ("n1", "n2"):
            srv.create(make_node(n))
            for i in range(4):
                srv.create(make_pod(f"low-{n}-{i}", node_name=n))
        plain = make_pod("plain", scheduler_name="ksched")
        srv.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": 10,
            }
        )
        for name in ("pre-1", "pre-2"):
            srv.create(make_pod(name, scheduler_name="ksched", priority_class_name="high"))
        srv.create(plain)
        _run_null(
            srv,
            NullWrites(victims=victims),
            lambda: all(_bound(srv, n) for n in ("pre-1", "pre-2", "plain")),
        )
        deletes = srv.find_requests(verb="delete", resource="pods")
        # three per preemptor, each from its own node; the plain pod deletes nothing
        assert len(deletes) == 2 * victims
        assert len({d.name for d in deletes}) == 2 * victims
        for pre in ("pre-1", "pre-2"):
            node = srv.get("pods", "default", pre)["spec"]["nodeName"]
            gone = [d.name for d in deletes if d.name and d.name.startswith(f"low-{node}-")]
            assert len(gone) == victims, (pre, node)
        # each victim's DisruptionTarget condition before its deletion; each preemptor's
        # PodScheduled=False with its nomination
        statuses = srv.find_requests(verb="patch", resource="pods/status")
        marked = {r.name: r for r in statuses if r.name and r.name.startswith("low-")}
        assert set(marked) == {d.name for d in deletes}
        for d in deletes:
            (cond,) = marked[d.name].body["status"]["conditions"]
            assert (cond["type"], cond["reason"]) == ("DisruptionTarget", "PreemptionByScheduler")
            assert marked[d.name].time <= d.time
        nominated = {r.name: r.body["status"] for r in statuses if r.name in ("pre-1", "pre-2")}
        assert len(nominated) == (2 if victims else 0)
        for pre, st in nominated.items():
            assert st["nominatedNodeName"] == srv.get("pods", "default", pre)["spec"]["nodeName"]
            conds = [(c["type"], c["status"]) for c in st["conditions"]]
            assert conds == [("PodScheduled", "False")]
        # every eviction before any preemptor's Binding
        binds = [
            b
            for b in srv.find_requests(verb="create", resource="pods/binding")
            if b.name != "plain"
        ]
        assert all(d.time <= min(b.time for b in binds) for d in deletes)


def test_null_binds_a_preemptor_only_once_its_victims_are_gone() -> None:
    """A victim that stays Terminating (here held by a finalizer, on the real control plane
    until the PodReaper finishes it) holds the preemptor's Binding back, as a scheduler's
    cache frees the room only once the victim is gone; its going releases it."""
    import anyio

    from ksched.bench.e2e import NullWrites
    from ksched.testing import TestAPIServer, make_node, make_pod

    with TestAPIServer().run_in_thread() as srv:
        srv.create(make_node("n1"))
        for i in range(3):
            low = make_pod(f"low-{i}", node_name="n1")
            if i == 1:
                low["metadata"]["finalizers"] = ["test.k8s.io/hold"]
            srv.create(low)
        srv.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": 10,
            }
        )
        srv.create(make_pod("pre", scheduler_name="ksched", priority_class_name="high"))

        async def script() -> None:
            with anyio.fail_after(10):
                while srv.count_requests(verb="delete", resource="pods") < 3:
                    await anyio.sleep(0.02)
            await anyio.sleep(0.5)
            # two victims gone, one Terminating: no Binding yet
            assert srv.try_get("pods", "default", "low-0") is None
            assert srv.get("pods", "default", "low-1")["metadata"]["deletionTimestamp"]
            assert not _bound(srv, "pre")
            held = srv.get("pods", "default", "low-1")
            held["metadata"]["finalizers"] = []
            srv.update(held)

        _run_null(srv, NullWrites(victims=3), lambda: _bound(srv, "pre"), script=script)


def test_null_allocates_each_claim_before_binding() -> None:
    from ksched.bench.e2e import NullWrites
    from ksched.testing import TestAPIServer, make_node, make_pod

    with TestAPIServer().run_in_thread() as srv:
        srv.create(make_node("n1"))
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "pod-a-gpu", "namespace": "default"},
            "spec": {
                "devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "c"}}]}
            },
        }
        srv.create(claim)
        pod = make_pod("pod-a", scheduler_name="ksched")
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
        stored = srv.create(pod)
        stored["status"]["resourceClaimStatuses"] = [
            {"name": "gpu", "resourceClaimName": "pod-a-gpu"}
        ]
        srv.update_status(stored)
        writes = NullWrites(
            claims=True, driver="d.example.com", requests=("req-0",), first_device=5
        )
        _run_null(srv, writes, lambda: _bound(srv, "pod-a"))
        got = srv.get("resourceclaims", "default", "pod-a-gpu")
        assert got["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
        (result,) = got["status"]["allocation"]["devices"]["results"]
        assert result == {
            "request": "req-0",
            "driver": "d.example.com",
            "pool": "n1",
            "device": "instance-5",
        }
        assert got["status"]["reservedFor"] == [
            {"resource": "pods", "name": "pod-a", "uid": stored["metadata"]["uid"]}
        ]
        patches = srv.find_requests(verb="patch", resource="resourceclaims")
        (bind,) = srv.find_requests(verb="create", resource="pods/binding")
        assert len(patches) == 2 and all(p.time <= bind.time for p in patches)
        # the nomination before PreBind's writes, as a scheduler makes it
        (nominated,) = srv.find_requests(verb="patch", resource="pods/status")
        assert nominated.time <= min(p.time for p in patches)
        assert nominated.body == {"status": {"nominatedNodeName": "n1"}}


@pytest.mark.kube
def test_null_preemption_writes_are_accepted_by_the_real_api_server() -> None:
    """PreemptionBasic at 2 nodes: each preemptor's three victims are deleted, then it is
    bound (a refused deletion would leave it unbound)."""
    doc = run_real_bench(
        ["PreemptionBasic"], contestants=["null"], sizes={"PreemptionBasic": (2, 8, 2)}
    )
    (w,) = doc["workloads"]
    assert w["results"]["null"]["scheduled"] == 2
    assert (
        w["null_writes"]
        == "per preemptor: its status (nomination) + 3 victims' DisruptionTarget status + deletion + binding"
    )


def test_ksched_runs_at_the_control_planes_version_unless_the_flags_name_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ksched.bench.real import _emulation, _versions

    cp = ControlPlane(assets=Assets(Path("/nonexistent"), "v1.36.3"))
    assert _emulation(cp, ["--feature-gates=OpportunisticBatching=false"]) == [
        "--emulated-version=1.36"
    ]
    assert _emulation(cp, ["--emulated-version=1.37"]) == []
    monkeypatch.setenv("KSCHED_KUBE_VERSION", "v1.36.3")
    assert _versions()["kubernetes"] == "v1.36.3"


def test_bench_profile_times_the_cli_by_cpu_and_writes_its_stats(tmp_path: Path) -> None:
    """``ksched.bench.cpuprofile`` (what ``KSCHED_BENCH_PROFILE`` runs the daemon under)
    runs the CLI with the arguments given, returns its exit code and leaves a profile
    ``pstats`` reads, with the CLI's own frames in it."""
    import pstats

    from ksched.bench.cpuprofile import main as profiled

    out = tmp_path / "plugins.prof"
    assert profiled([str(out), "plugins"]) == 0
    stats = pstats.Stats(str(out))
    assert any(
        fn.endswith("cli.py") and name == "main"
        for fn, _, name in stats.stats  # type: ignore[attr-defined]
    )


def test_request_counts_sum_an_api_servers_mutating_requests() -> None:
    from ksched.bench.real import request_counts, writes_between

    text = "\n".join(
        [
            "# HELP apiserver_request_total [STABLE] Counter of apiserver requests",
            'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",'
            'resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 5',
            'apiserver_request_total{code="409",component="apiserver",dry_run="",group="",'
            'resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",'
            'resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 9',
            'apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",'
            'resource="pods",scope="namespace",subresource="",verb="POST",version="v1"} 4',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",'
            'resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"}'
            " 3e+00",
            'apiserver_request_total_other{verb="POST"} 1',
        ]
    )
    # LIST is no write, a dry run writes nothing, codes and versions add up
    assert request_counts(text) == {"POST pods/binding": 7, "PATCH pods/status": 3}
    later = {"POST pods/binding": 10, "PATCH pods/status": 3, "DELETE pods": 1}
    assert writes_between(request_counts(text), later) == {
        "DELETE pods": 1,
        "POST pods/binding": 3,
    }
