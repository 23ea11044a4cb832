"""``ksched bench``'s pod-group workloads: scheduler_perf's podgroup/{basicscheduling,
gangscheduling,tas} and Gangs20x500, their objects, the flags their runs need and the
per-group timing (last member created -> group bound)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ksched.api.objects import Pod, decode
from ksched.api.workload import PodGroup
from ksched.bench import run_bench
from ksched.bench.real import (
    MEASURED_NS,
    REAL_WORKLOADS,
    _median_run,
    _objects,
    apiserver_args,
    gate_args,
    render_table,
    run_real_bench,
    unsupported,
)
from ksched.bench.workloads import (
    GROUPS_LISTED,
    POD_GROUP_WORKLOADS,
    WORKLOADS,
    collection_path,
    feature_gates_of,
    group_latencies,
    group_report,
    group_service_times,
    groups_of,
)
from ksched.config import default_config
from ksched.plugins import default_registry


def _groups(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in objs if m["kind"] == "PodGroup"]


# ---- the generators ----------------------------------------------------------------------------


def test_gang_scheduling_is_upstreams_templates() -> None:
    """createPodGroups gang-0..n-1 (minCount podsPerGroup), then createPods
    test-gang-scheduling-i in gang-(i div podsPerGroup): pause 3.10.1, 100m/100Mi requested,
    no limits."""
    objs, init, measured = WORKLOADS["GangScheduling"](10, 9, 0)
    assert init == []
    groups = _groups(objs)
    assert [g["metadata"]["name"] for g in groups] == ["gang-0", "gang-1", "gang-2"]
    for g in groups:
        assert g["apiVersion"] == "scheduling.k8s.io/v1beta1"
        assert g["spec"] == {"schedulingPolicy": {"gang": {"minCount": 3}}}
        assert g["metadata"]["namespace"] == "sched-1"
        decode(g, PodGroup)
    assert len([m for m in objs if m["kind"] == "Node"]) == 10
    assert [m["metadata"]["name"] for m in measured] == [
        f"test-gang-scheduling-{i}" for i in range(9)
    ]
    assert [m["spec"]["schedulingGroup"]["podGroupName"] for m in measured] == [
        f"gang-{i // 3}" for i in range(9)
    ]
    (c,) = measured[0]["spec"]["containers"]
    assert c["image"] == "registry.k8s.io/pause:3.10.1"
    assert c["resources"] == {"requests": {"cpu": "100m", "memory": "100Mi"}}
    pod = decode(measured[4], Pod)
    assert pod.spec.scheduling_group is not None
    assert pod.spec.scheduling_group.pod_group_name == "gang-1"


def test_basic_scheduling_groups_have_the_basic_policy() -> None:
    objs, _, measured = WORKLOADS["BasicScheduling"](3, 6, 0)
    assert [(g["metadata"]["name"], g["spec"]) for g in _groups(objs)] == [
        ("basic-group-0", {"schedulingPolicy": {"basic": {}}}),
        ("basic-group-1", {"schedulingPolicy": {"basic": {}}}),
    ]
    assert measured[5]["metadata"]["name"] == "test-basic-scheduling-5"
    assert measured[5]["spec"]["schedulingGroup"] == {"podGroupName": "basic-group-1"}


def test_tas_nodes_have_a_rack_per_hundred_and_gangs_of_four_a_rack_constraint() -> None:
    objs, _, measured = WORKLOADS["TopologyAwareScheduling"](250, 8, 0)
    nodes = [m for m in objs if m["kind"] == "Node"]
    assert nodes[199]["metadata"]["name"] == "node-199"
    assert nodes[199]["metadata"]["labels"] == {
        "kubernetes.io/hostname": "node-199",
        "topology.kubernetes.io/zone": "zone-1",
        "topology.kubernetes.io/rack": "rack-1",
    }
    assert nodes[200]["metadata"]["labels"]["topology.kubernetes.io/rack"] == "rack-2"
    groups = _groups(objs)
    assert len(groups) == 2
    assert groups[0]["spec"] == {
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
    }
    decode(groups[0], PodGroup)
    assert measured[0]["metadata"]["name"] == "test-tas-scheduling-0"


def test_a_last_partial_group_is_a_gang_of_its_size() -> None:
    """pods not a multiple of podsPerGroup: every gang can still be placed whole."""
    objs, _, measured = WORKLOADS["GangScheduling"](3, 7, 0)
    assert [g["spec"]["schedulingPolicy"]["gang"]["minCount"] for g in _groups(objs)] == [3, 3, 1]
    assert measured[6]["spec"]["schedulingGroup"]["podGroupName"] == "gang-2"


def test_gangs20x500_is_twenty_gangs_of_a_twentieth_each() -> None:
    objs, _, measured = WORKLOADS["Gangs20x500"](1000, 10000, 0)
    groups = _groups(objs)
    assert len(groups) == 20 and len(measured) == 10000
    assert {g["spec"]["schedulingPolicy"]["gang"]["minCount"] for g in groups} == {500}
    members = groups_of(measured)
    assert {g: list(members.values()).count(g) for g in set(members.values())} == {
        f"gang-{k}": 500 for k in range(20)
    }
    # pods in gang order: gang k's members are created together, after gang k-1's
    assert [members[m["metadata"]["name"]] for m in measured[499:501]] == ["gang-0", "gang-1"]
    assert POD_GROUP_WORKLOADS["Gangs20x500"].sizes(1000) == [50] * 20
    assert POD_GROUP_WORKLOADS["Gangs20x500"].sizes(5) == [1] * 5  # never an empty gang


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("BasicScheduling", "5000Nodes_1000Groups_3000Pods"),
        ("GangScheduling", "5000Nodes_1000Gangs_3000Pods"),
        ("TopologyAwareScheduling", "5000Nodes_750Gangs_3000Pods"),
        ("BasicScheduling_1000PerGroup", "5000Nodes_3Groups_3000Pods_1000PerGroup"),
        ("GangScheduling_1000PerGroup", "5000Nodes_3Gangs_3000Pods_1000PerGroup"),
        ("TopologyAwareScheduling_1000PerGroup", "5000Nodes_3Gangs_3000Pods_1000PerGroup"),
        ("Gangs20x500", "1000Nodes_20Gangs_10000Pods"),
    ],
)
def test_full_sizes_are_upstreams_performance_workloads(name: str, variant: str) -> None:
    wl = REAL_WORKLOADS[name]
    assert wl.variant(wl.scales["full"]) == variant


def test_feature_gates_per_workload() -> None:
    assert feature_gates_of("GangScheduling") == ("GenericWorkload",)
    assert feature_gates_of("Gangs20x500") == ("GenericWorkload",)
    assert feature_gates_of("TopologyAwareScheduling") == (
        "GenericWorkload",
        "TopologyAwareWorkloadScheduling",
    )
    assert feature_gates_of("SchedulingBasic") == ()
    assert REAL_WORKLOADS["SchedulingBasic"].feature_gates == ()
    assert REAL_WORKLOADS["SchedulingBasic"].variant((5, 0, 5)) is None


# ---- what the runs are given ---------------------------------------------------------------------


def test_api_server_serves_v1beta1_with_the_gates() -> None:
    assert apiserver_args(REAL_WORKLOADS["TopologyAwareScheduling"].feature_gates) == [
        "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
        "--runtime-config=scheduling.k8s.io/v1beta1=true",
    ]
    assert gate_args(("GenericWorkload",)) == ["--feature-gates=GenericWorkload=true"]
    assert apiserver_args(()) == [] and gate_args(()) == []


def test_pod_group_workloads_need_a_v1_37_control_plane() -> None:
    assert unsupported(REAL_WORKLOADS["GangScheduling"], "v1.37.2") is None
    why = unsupported(REAL_WORKLOADS["GangScheduling"], "v1.36.3")
    assert why is not None and "v1.37" in why
    assert unsupported(REAL_WORKLOADS["SchedulingBasic"], "v1.36.3") is None


def test_real_objects_create_the_pod_groups_before_any_pod() -> None:
    setup, measured = _objects(REAL_WORKLOADS["GangScheduling"], 4, 0, 6, "sched-x")
    kinds = [m["kind"] for m in setup]
    assert kinds.count("PodGroup") == 2
    assert kinds.index("Namespace") < kinds.index("PodGroup")
    assert "Pod" not in kinds  # measured pods come after the setup
    (pg, _) = _groups(setup)
    assert (
        collection_path(pg) == f"/apis/scheduling.k8s.io/v1beta1/namespaces/{MEASURED_NS}/podgroups"
    )
    assert {m["metadata"]["namespace"] for m in measured} == {MEASURED_NS}
    assert {m["spec"]["schedulingGroup"]["podGroupName"] for m in measured} == {"gang-0", "gang-1"}


# ---- per-group timing -----------------------------------------------------------------------------


def test_group_latency_is_last_member_created_to_last_member_bound() -> None:
    """A fake timeline: gang-0's members created at 0, 1, 2 and bound at 2.5, 3, 2.2 ->
    3 - 2 = 1 s; gang-1's created at 3, 4, bound at 4.25, 4.5 -> 0.5 s; gang-2 has a member
    never bound; gang-3 bound (a backlog) before the harness saw the scheduler -> 0."""
    groups = {"a": "gang-0", "b": "gang-0", "c": "gang-0", "d": "gang-1", "e": "gang-1"}
    groups |= {"f": "gang-2", "g": "gang-2", "h": "gang-3"}
    created = {"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0, "e": 4.0, "f": 4.0, "g": 4.0, "h": 6.0}
    bound = {"a": 2.5, "b": 3.0, "c": 2.2, "d": 4.25, "e": 4.5, "f": 5.0, "h": 5.5}
    assert group_latencies(groups, created, bound) == {
        "gang-0": 1.0,
        "gang-1": 0.5,
        "gang-2": None,
        "gang-3": 0.0,
    }


def test_service_time_starts_at_the_later_of_complete_and_the_previous_group_bound() -> None:
    """Three gangs of one pod created at once (a queue): bound at 1, 2 and 5 -> latencies
    1, 2, 5 but service times 1, 1 and 3 (a 2 s pause before the third shows); a gang
    complete only after the previous one was bound counts from its completion."""
    groups = {"a": "g-0", "b": "g-1", "c": "g-2", "d": "g-3"}
    created = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 10.0}
    bound = {"a": 1.0, "b": 2.0, "c": 5.0, "d": 10.5}
    assert group_latencies(groups, created, bound) == {
        "g-0": 1.0,
        "g-1": 2.0,
        "g-2": 5.0,
        "g-3": 0.5,
    }
    assert group_service_times(groups, created, bound) == {
        "g-0": 1.0,
        "g-1": 1.0,
        "g-2": 3.0,
        "g-3": 0.5,
    }
    del bound["b"]  # a group never bound has no service time; the next counts from g-0's
    assert group_service_times(groups, created, bound) == {"g-0": 1.0, "g-2": 4.0, "g-3": 0.5}


def test_group_report_gives_max_median_and_each_group_in_order() -> None:
    """Thirteen gangs of one pod, all created at 0, gang-k bound at k+1 (gang-12 never):
    latencies 1..12, each service time 1."""
    groups = {f"p{k}": f"gang-{k}" for k in range(13)}
    created = dict.fromkeys(groups, 0.0)
    bound = {f"p{k}": float(k + 1) for k in range(12)}
    r = group_report(groups, created, bound)
    assert (r["groups"], r["bound"], r["max_s"], r["median_s"]) == (13, 12, 12.0, 6.5)
    assert (r["service_max_s"], r["service_median_s"]) == (1.0, 1.0)
    assert list(r["per_group_s"])[:3] == ["gang-0", "gang-1", "gang-2"]
    assert list(r["per_group_s"])[-3:] == ["gang-10", "gang-11", "gang-12"]
    assert r["per_group_s"]["gang-12"] is None
    n = GROUPS_LISTED + 1
    many = group_report({f"p{k}": f"g-{k}" for k in range(n)}, created, {})
    assert "per_group_s" not in many and many["bound"] == 0
    assert (many["max_s"], many["median_s"], many["service_max_s"]) == (None, None, None)


def test_in_process_run_reports_every_group_bound() -> None:
    """The plumbing (PodGroups into the simulated cluster, binds recorded per pod) at the
    default gates, where the pods schedule one by one."""
    r = run_bench(
        "GangScheduling",
        nodes=4,
        pods=9,
        config=default_config(),
        registry=default_registry(entry_points=False),
    )
    assert r["scheduled"] == 9
    g = r["pod_groups"]
    assert (g["groups"], g["bound"]) == (3, 3)
    assert list(g["per_group_s"]) == ["gang-0", "gang-1", "gang-2"]
    assert 0 <= g["median_s"] <= g["max_s"]


def test_plain_workloads_have_no_group_report() -> None:
    r = run_bench(
        "SchedulingBasic",
        nodes=2,
        pods=2,
        config=default_config(),
        registry=default_registry(entry_points=False),
    )
    assert "pod_groups" not in r


# ---- the real bench's document and table -------------------------------------------------------------


def _fake_one(results: dict[str, dict[str, Any]]) -> Any:
    async def one(name: str, contestant: str, *args: Any) -> dict[str, Any]:
        return dict(results[contestant])

    return one


def test_document_names_the_variant_and_table_the_group_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    groups = {"groups": 20, "bound": 20, "max_s": 1.5, "median_s": 0.75}
    groups |= {"service_max_s": 0.25, "service_median_s": 0.125}
    monkeypatch.setenv("KSCHED_KUBE_VERSION", "v1.37.2")
    monkeypatch.setattr(
        "ksched.bench.real._one",
        _fake_one(
            {
                "ksched": {"scheduled": 0, "pods_per_s": None, "error": "x\nrefused\n"},
                "kube-scheduler": {"scheduled": 40, "pods_per_s": 9.0, "pod_groups": groups},
            }
        ),
    )
    doc = run_real_bench(
        ["Gangs20x500"], contestants=["ksched", "kube-scheduler"], sizes={"Gangs20x500": (4, 0, 40)}
    )
    (w,) = doc["workloads"]
    assert w["variant"] == "4Nodes_20Gangs_40Pods"
    assert w["feature_gates"] == ["GenericWorkload"]
    assert w["results"]["kube-scheduler"]["pod_groups"] == groups
    assert w["results"]["ksched"]["error"] == "x\nrefused\n"
    json.dumps(doc)
    lines = render_table(doc).splitlines()
    assert (
        "pod groups, Gangs20x500 4Nodes_20Gangs_40Pods: "
        "kube-scheduler max 1.5 median 0.75, service max 0.25 median 0.125 (20/20 bound)"
    ) in lines
    assert "error, ksched on Gangs20x500: refused" in lines


def test_pod_group_workloads_are_skipped_on_a_v1_36_control_plane(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[str] = []

    async def one(name: str, contestant: str, *args: Any) -> dict[str, Any]:
        ran.append(name)
        return {"scheduled": 1, "pods_per_s": 1.0}

    monkeypatch.setenv("KSCHED_KUBE_VERSION", "v1.36.3")
    monkeypatch.setattr("ksched.bench.real._one", one)
    doc = run_real_bench(
        ["GangScheduling", "SchedulingBasic"],
        contestants=["null"],
        sizes={"GangScheduling": (2, 0, 3), "SchedulingBasic": (2, 0, 3)},
    )
    assert ran == ["SchedulingBasic"]
    skipped, basic = doc["workloads"]
    assert skipped["name"] == "GangScheduling" and "v1.37" in skipped["skipped"]
    assert basic["name"] == "SchedulingBasic" and "results" in basic
    table = render_table(doc)
    assert "skipped GangScheduling: needs Kubernetes v1.37" in table
    assert "SchedulingBasic" in table.splitlines()[1]


def test_repeated_runs_fold_the_group_times_into_medians() -> None:
    runs = [
        {"scheduled": 10, "pods_per_s": 1.0, "pod_groups": {"groups": 2, "bound": b, **t}}
        for b, t in [
            (2, {"max_s": 1.0, "median_s": 0.5, "service_max_s": 0.4, "service_median_s": 0.2}),
            (1, {"max_s": 3.0, "median_s": 1.5, "service_max_s": 0.6, "service_median_s": 0.3}),
            (2, {"max_s": 2.0, "median_s": 1.0, "service_max_s": 0.5, "service_median_s": None}),
        ]
    ]
    out = _median_run(runs)
    assert out["pod_groups"] == {
        "groups": 2,
        "bound": 1,
        "max_s": 2.0,
        "median_s": 1.0,
        "service_max_s": 0.5,
        "service_median_s": 0.25,
    }
    assert [r["pod_groups"]["max_s"] for r in out["runs"]] == [1.0, 3.0, 2.0]
    assert _median_run(runs[:1])["pod_groups"] == runs[0]["pod_groups"]


# ---- on the real control plane ------------------------------------------------------------------------


def _needs_v1_37() -> None:
    from ksched.bench.real import _versions

    if unsupported(REAL_WORKLOADS["GangScheduling"], _versions()["kubernetes"]):
        pytest.skip("pod-group workloads need KSCHED_KUBE_VERSION=v1.37.2")


@pytest.mark.kube
def test_gangs_live_on_the_real_control_plane() -> None:
    """Gangs20x500 at 20 gangs of 2: the PodGroups are served (v1beta1), the pods created
    while kube-scheduler runs keep their schedulingGroup, and every gang is timed."""
    _needs_v1_37()
    doc = run_real_bench(
        ["Gangs20x500"], contestants=["kube-scheduler", "null"], sizes={"Gangs20x500": (4, 0, 40)}
    )
    (w,) = doc["workloads"]
    for c in ("kube-scheduler", "null"):
        r = w["results"][c]
        assert r["scheduled"] == 40, (c, r)
        g = r["pod_groups"]
        assert (g["groups"], g["bound"]) == (20, 20), (c, g)
        assert 0 <= g["median_s"] <= g["max_s"]
        assert set(g["per_group_s"]) == {f"gang-{k}" for k in range(20)}


def test_e2e_run_creates_the_pod_groups_and_times_them() -> None:
    """--mode e2e: the PodGroups POSTed to the test API server (v1beta1) with the pods;
    at the default gates the pods schedule one by one, every group timed."""
    from ksched.bench.e2e import run_e2e_bench

    r = run_e2e_bench(
        "GangScheduling",
        nodes=3,
        pods=6,
        config=default_config(),
        registry=default_registry(entry_points=False),
    )
    assert r["scheduled"] == 6
    assert (r["pod_groups"]["groups"], r["pod_groups"]["bound"]) == (2, 2)


def test_cli_runs_a_pod_group_workload_with_its_gates(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process/e2e config gets the workload's featureGates (as scheduler_perf's)."""
    from ksched.cli import main

    seen: list[list[str]] = []

    class Stop(Exception):
        pass

    def resolve(gates: list[str], emulated: list[str]) -> Any:
        seen.append(list(gates))
        raise Stop

    monkeypatch.setattr("ksched.features.resolve_feature_gates", resolve)
    with pytest.raises(Stop):
        main(["bench", "--workload", "TopologyAwareScheduling", "--feature-gates", "A=false"])
    assert seen == [["A=false", "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"]]
    with pytest.raises(Stop):
        main(["bench", "--workload", "SchedulingBasic"])
    assert seen[-1] == []


def test_cli_real_takes_a_list_of_workloads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ksched.cli import main

    ran: list[list[str]] = []

    def fake(workloads: list[str], **kwargs: Any) -> dict[str, Any]:
        ran.append(list(workloads))
        return {"workloads": []}

    monkeypatch.setattr("ksched.bench.real.run_real_bench", fake)
    argv = ["bench", "--apiserver", "real", "--output", "json", "--workload"]
    assert main([*argv, "GangScheduling,Gangs20x500"]) == 0
    assert ran == [["GangScheduling", "Gangs20x500"]]
    capsys.readouterr()
