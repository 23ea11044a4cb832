"""The differential harness's own pieces, without a control plane: the generator, the log
parser, the ksched replay and the comparison (the kube-marked run is in
``test_differential_kube.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from ksched.testing.differential import (
    Outcome,
    compare,
    default_features,
    generate,
    parse_features,
    parse_seeds,
)
from ksched.testing.differential.compare import Divergence, messages_agree
from ksched.testing.differential.generator import (
    ADMIN_ACCESS_LABEL,
    HOST,
    NET_DRIVER,
    ZONE,
    PendingPod,
)
from ksched.testing.differential.kube import (
    KubeReplay,
    api_path,
    parse_scores,
    placement_orders,
    placing_scores,
)
from ksched.testing.differential.local import KschedReplay, scenario_file
from ksched.testing.differential.report import PodReport, Report


def test_same_seed_same_scenario_and_seeds_differ() -> None:
    a, b = generate(7), generate(7)
    assert json.dumps(a.objects) == json.dumps(b.objects)
    assert [p.pod for p in a.pending] == [p.pod for p in b.pending]
    assert json.dumps(generate(8).objects) != json.dumps(a.objects)


def test_every_feature_group_shapes_some_pod() -> None:
    seen: set[str] = set()
    for seed in range(20):
        for p in generate(seed).pending:
            seen |= p.groups
    assert set(default_features()) <= seen


def test_feature_subset_only_uses_those_groups() -> None:
    for seed in range(10):
        sc = generate(seed, ["taints"])
        for p in sc.pending:
            assert p.groups <= {"taints", "base"}
        kinds = {o["kind"] for o in sc.objects}
        assert "PersistentVolume" not in kinds and "PriorityClass" not in kinds


def test_generated_objects_stay_within_their_seed() -> None:
    sc = generate(3)
    for o in sc.objects:
        meta = o["metadata"]
        if "namespace" in meta:
            assert meta["namespace"] in sc.namespaces
        elif o["kind"] != "Namespace":
            assert meta["name"].startswith("s3-"), meta["name"]
    # a node's taints are unique by key and effect, as the API server requires
    for o in sc.objects:
        if o["kind"] == "Node":
            taints = o["spec"].get("taints", [])
            assert len({(t["key"], t["effect"]) for t in taints}) == len(taints)


def _all(
    features: list[str], seeds: range = range(30)
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    objects: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for seed in seeds:
        sc = generate(seed, features)
        objects += sc.objects
        pods += [p.pod for p in sc.pending if set(features) & p.groups]
    return objects, pods


def _host_ports(pod: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [
        (p.get("hostIP", "0.0.0.0"), p.get("protocol", "TCP"), p["hostPort"])
        for c in pod["spec"]["containers"]
        for p in c.get("ports", [])
    ]


def test_running_pods_never_share_a_host_port_on_a_node() -> None:
    """kube-scheduler's cache frees a port when either of two holders goes (seed 43097:
    run-3, preempted, took run-2's 8080 with it), which no snapshot shows ksched."""
    coexisting = 0
    for seed in [*range(60), 43097]:
        by_node: dict[str, list[tuple[str, str, int]]] = {}
        for o in generate(seed, ["ports"]).objects:
            if o["kind"] == "Pod":
                by_node.setdefault(o["spec"]["nodeName"], []).extend(_host_ports(o))
        for ports in by_node.values():
            for i, (ip, proto, port) in enumerate(ports):
                for ip2, proto2, port2 in ports[i + 1 :]:
                    if (proto, port) == (proto2, port2):
                        assert "0.0.0.0" not in (ip, ip2) and ip != ip2, (seed, ports)
            coexisting += len(ports) > 1
    assert coexisting  # ports that don't conflict still share a node
    pods = {o["metadata"]["name"]: o for o in generate(43097).objects if o["kind"] == "Pod"}
    assert _host_ports(pods["run-2"]) == [("0.0.0.0", "TCP", 8080)]
    assert _host_ports(pods["run-3"]) == []


def test_dra_group_covers_every_request_form() -> None:
    objects, pods = _all(["dra"])
    kinds = {o["kind"] for o in objects}
    assert {"DeviceClass", "ResourceSlice", "ResourceClaimTemplate", "ResourceClaim"} <= kinds
    devices = [d for o in objects if o["kind"] == "ResourceSlice" for d in o["spec"]["devices"]]
    assert all(d["attributes"] and d["capacity"] for d in devices)
    claims = [
        o["spec"]["spec"]["devices"]
        if o["kind"] == "ResourceClaimTemplate"
        else o["spec"]["devices"]
        for o in objects
        if o["kind"] in ("ResourceClaimTemplate", "ResourceClaim")
    ]
    requests = [r for c in claims for r in c["requests"]]
    modes = {r["exactly"]["allocationMode"] for r in requests if "exactly" in r}
    assert modes == {"All", "ExactCount"}
    assert any("firstAvailable" in r for r in requests)
    assert any("selectors" in r.get("exactly", {}) for r in requests)
    assert any("matchAttribute" in k for c in claims for k in c.get("constraints", []))
    refs = [r for p in pods for r in p["spec"]["resourceClaims"]]
    assert any("resourceClaimTemplateName" in r for r in refs)
    # a shared claim is named by several pods: the first allocates it, the rest find it so
    shared = [
        (p["metadata"]["namespace"], r["resourceClaimName"])
        for p in pods
        for r in p["spec"]["resourceClaims"]
        if "resourceClaimName" in r
    ]
    assert len(shared) > len(set(shared))
    for p in pods:
        names = {r["name"] for r in p["spec"]["resourceClaims"]}
        assert {c["name"] for c in p["spec"]["containers"][0]["resources"]["claims"]} == names


def test_dradevices_group_covers_taints_shares_capacity_and_admin_access() -> None:
    objects, pods = _all(["dradevices"])
    devices = [
        d
        for o in objects
        if o["kind"] == "ResourceSlice" and o["spec"]["driver"] == NET_DRIVER
        for d in o["spec"]["devices"]
    ]
    effects = {t["effect"] for d in devices for t in d.get("taints", [])}
    assert effects == {"NoSchedule", "NoExecute", "None"}
    shared = [d for d in devices if d.get("allowMultipleAllocations")]
    policies = [d["capacity"]["bandwidth"].get("requestPolicy") for d in shared]
    assert None in policies
    assert any(p and "validRange" in p for p in policies)
    assert any(p and "validValues" in p for p in policies)
    # request policies only on shareable devices, as the API server requires
    assert all(
        "requestPolicy" not in d["capacity"]["bandwidth"] for d in devices if d not in shared
    )
    claims = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): (
            o["spec"]["spec"]["devices"]
            if o["kind"] == "ResourceClaimTemplate"
            else o["spec"]["devices"]
        )
        for o in objects
        if o["kind"] in ("ResourceClaimTemplate", "ResourceClaim")
    }
    labelled = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "Namespace" and o["metadata"]["labels"].get(ADMIN_ACCESS_LABEL) == "true"
    }
    specs: list[tuple[str, dict[str, Any]]] = []
    for (ns, _), c in claims.items():
        for r in c["requests"]:
            specs += (
                [(ns, r["exactly"])] if "exactly" in r else [(ns, s) for s in r["firstAvailable"]]
            )
    assert any("tolerations" in s for _, s in specs)
    assert any("capacity" in s for _, s in specs)
    admins = [ns for ns, s in specs if s.get("adminAccess")]
    assert admins and set(admins) <= labelled  # admission refuses it elsewhere
    assert any(r.get("name") == "nic" for p in pods for r in p["spec"]["resourceClaims"])


def test_dradevices_scenarios_replay_in_ksched_without_errors() -> None:
    """Every pod of a few scenarios, on the cluster as set up (no real control plane):
    ksched decodes the new fields and schedules or explains; the only errors are the CEL
    runtime errors the ``dra`` group's failing selectors raise on purpose."""
    replay = KschedReplay()
    seen: set[str] = set()
    for seed in range(4):
        sc = generate(seed, ["dra", "dradevices"])
        state = [o for o in sc.objects if o["kind"] not in ("Namespace",)]
        for p in sc.pending:
            out = replay(state, {**p.pod, "metadata": {**p.pod["metadata"], "uid": p.name}})
            ok = out.status in ("Scheduled", "Unschedulable") or (
                out.status == "Error" and "CEL runtime error" in out.message
            )
            assert ok, (seed, p.name, out.message)
            seen.add(out.status)
    assert {"Scheduled", "Unschedulable"} <= seen


def test_csi_group_limits_nodes_and_counts_what_is_there() -> None:
    objects, pods = _all(["csi"])
    counts = [
        d.get("allocatable", {}).get("count")
        for o in objects
        if o["kind"] == "CSINode"
        for d in o["spec"]["drivers"]
    ]
    assert {1, 2, 3, None} <= set(counts)  # a driver without a count has no limit
    pvs = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolume"}
    assert pvs and all("csi" in pv["spec"] and pv["spec"]["claimRef"] for pv in pvs.values())
    running = [o for o in objects if o["kind"] == "Pod" and o["spec"].get("volumes")]
    assert running and all(o["spec"]["nodeName"] for o in running)
    attached = [o for o in objects if o["kind"] == "VolumeAttachment"]
    assert attached and all(a["spec"]["source"]["persistentVolumeName"] in pvs for a in attached)
    assert any(len(p["spec"]["volumes"]) > 1 for p in pods)


def test_volumes_group_provisions_against_storage_capacity() -> None:
    """Dynamic claims of a class whose CSI driver (mostly) reports capacity, per node or
    per zone but never both: one capacity at most reaches a node."""
    objects, pods = _all(["volumes"])
    drivers = [o for o in objects if o["kind"] == "CSIDriver"]
    assert {d["spec"]["storageCapacity"] for d in drivers} == {True, False}
    caps = [o for o in objects if o["kind"] == "CSIStorageCapacity"]
    assert any("maximumVolumeSize" in c for c in caps)
    keys = {next(iter(c["nodeTopology"]["matchLabels"])) for c in caps}
    assert keys == {HOST, ZONE}
    for seed in range(30):
        sc = generate(seed, ["volumes"])
        reach = [
            (k, v)
            for o in sc.objects
            if o["kind"] == "CSIStorageCapacity"
            for k, v in o["nodeTopology"]["matchLabels"].items()
        ]
        assert len({k for k, _ in reach}) <= 1 and len(set(reach)) == len(reach)
    dynamic = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "PersistentVolumeClaim" and o["spec"]["storageClassName"].endswith("-cap")
    }
    used = {v["persistentVolumeClaim"]["claimName"] for p in pods for v in p["spec"]["volumes"]}
    assert dynamic & used


def test_volumes_scenarios_replay_in_ksched_with_capacity_verdicts() -> None:
    """Without a control plane: some pod is refused for want of free storage, another
    scheduled with its claim provisioned (the simulated provisioner)."""
    replay = KschedReplay()
    messages: list[str] = []
    scheduled_dynamic = 0
    for seed in range(6, 26):
        sc = generate(seed, ["volumes"])
        state = [o for o in sc.objects if o["kind"] != "Namespace"]
        for p in sc.pending:
            vols = p.pod["spec"].get("volumes", [])
            if not any(v["persistentVolumeClaim"]["claimName"].startswith("dyn-") for v in vols):
                continue
            out = replay(state, {**p.pod, "metadata": {**p.pod["metadata"], "uid": p.name}})
            assert out.status in ("Scheduled", "Unschedulable"), (seed, p.name, out.message)
            messages.append(out.message)
            scheduled_dynamic += out.status == "Scheduled"
    assert any("did not have enough free storage" in m for m in messages)
    assert scheduled_dynamic


def test_csi_group_drivers_may_require_their_csinode_entry() -> None:
    objects, _ = _all(["csi"])
    drivers = [o for o in objects if o["kind"] == "CSIDriver"]
    assert {d["spec"].get("preventPodSchedulingIfMissing", False) for d in drivers} == {
        True,
        False,
    }
    assert any(o["kind"] == "CSINode" and o["spec"]["drivers"] == [] for o in objects)


def test_spread_min_domains_goes_beyond_the_domains_there_are() -> None:
    seen = set()
    for seed in range(40):
        sc = generate(seed, ["spread"])
        zones = {o["metadata"]["labels"][ZONE] for o in sc.objects if o["kind"] == "Node"}
        for p in sc.pending:
            for c in p.pod["spec"].get("topologySpreadConstraints", []):
                if "minDomains" in c and c["topologyKey"] == ZONE:
                    seen.add(c["minDomains"] > len(zones))
    assert seen == {True, False}


def test_jsonl_lines_summarize_to_the_same_report(tmp_path: Path) -> None:
    div = Divergence("score", "weighted score", 3, 1, "TaintToleration", "n1")
    pods = [
        PodReport(1, "d1-a/p0", ["taints"], "Scheduled", "Scheduled", [div], "x.json", True),
        PodReport(1, "d1-a/p1", ["base"], "Unschedulable", "Unschedulable", []),
        PodReport(2, "d2-a/p0", ["dra"], "Rejected", "-", []),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in pods))
    rep = Report.from_jsonl([path])
    assert rep.seeds == [1, 2] and len(rep.pods) == 2 and len(rep.rejected) == 1
    assert rep.by_kind() == {"score:TaintToleration": 1}
    assert rep.groups()["all"].unschedulable == 1
    out = subprocess.run(
        [sys.executable, "-m", "ksched.testing.differential", "--summarize", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1, out.stderr
    assert "score TaintToleration n1: weighted score" in out.stdout
    # the diverging seed re-run after a fix: its pod counts once, by the later comparison
    rerun = tmp_path / "rerun.jsonl"
    fixed = PodReport(1, "d1-a/p0", ["taints"], "Scheduled", "Scheduled", [], "", True)
    rerun.write_text(json.dumps(fixed.to_dict()) + "\n")
    rep = Report.from_jsonl([path, rerun])
    assert len(rep.pods) == 2 and not rep.diverging
    # a damaged file is a one-line error naming the line, exit status 2
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"seed": 1}\n\xff{not json\n')
    out = subprocess.run(
        [sys.executable, "-m", "ksched.testing.differential", "--summarize", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert out.stderr.startswith(f"python -m ksched.testing.differential: {bad}:1: ")
    assert len(out.stderr.strip().splitlines()) == 1


def test_parse_seeds_and_features() -> None:
    assert parse_seeds("0-3,9") == [0, 1, 2, 3, 9]
    assert parse_seeds("5") == [5]
    with pytest.raises(ValueError, match="bad seed range '3-1'"):
        parse_seeds("3-1")
    with pytest.raises(ValueError, match="bad seed range 'x'"):
        parse_seeds("x")
    assert parse_features("") == default_features()
    assert parse_features("volumes,taints") == ("taints", "volumes")
    with pytest.raises(ValueError, match="unknown feature group"):
        parse_features("gpus")


LOG = """\
I1126 01:30:04.317 1 schedule_one.go:123] "Attempting to schedule pod" pod="ns/p"
I1126 01:30:04.317 1 schedule_one.go:982] "Plugin scored node for pod" pod="ns/p" plugin="A" node="n0" score=7
I1126 01:30:05.317 1 schedule_one.go:123] "Attempting to schedule pod" pod="ns/p"
I1126 01:30:05.317 1 schedule_one.go:982] "Plugin scored node for pod" pod="ns/p" plugin="TaintToleration" node="n0" score=300
I1126 01:30:05.317 1 schedule_one.go:982] "Plugin scored node for pod" pod="ns/q" plugin="TaintToleration" node="n0" score=1
I1126 01:30:05.317 1 schedule_one.go:982] "Plugin scored node for pod" pod="ns/p" plugin="ImageLocality" node="n1" score=12
I1126 01:30:05.318 1 schedule_one.go:1050] "Calculated node's final score for pod" pod="ns/p" node="n0" score=453
"""


def test_parse_scores_keeps_the_last_attempt_of_the_pod() -> None:
    scores, totals = parse_scores(LOG, "ns/p")
    assert scores == {"TaintToleration": {"n0": 300}, "ImageLocality": {"n1": 12}}
    assert totals == {"n0": 453}
    assert parse_scores(LOG, "ns/none") == ({}, {})


GROUP_LOG = """\
I1 "Attempting to schedule pod group" podGroupType="podgroup" podGroup="ns/g"
I1 "Attempting to schedule a pod belonging to a pod group" podGroupType="podgroup" podGroup="ns/g" pod="ns/m"
I1 "Calculated node's final score for pod" podGroupType="podgroup" podGroup="ns/g" pod="ns/m" node="old" score=1
I2 "Attempting to schedule pod group" podGroupType="podgroup" podGroup="ns/g"
I2 "Attempting to schedule a pod belonging to a pod group" podGroupType="podgroup" podGroup="ns/g" pod="ns/m"
I2 "Plugin scored node for pod" podGroupType="podgroup" podGroup="ns/g" pod="ns/m" plugin="A" node="a1" score=5
I2 "Calculated node's final score for pod" podGroupType="podgroup" podGroup="ns/g" pod="ns/m" node="a1" score=5
I2 "Calculated node's final score for pod" podGroupType="podgroup" podGroup="ns/g" pod="ns/m" node="a2" score=4
I2 "Attempting to schedule a pod belonging to a pod group" podGroupType="podgroup" podGroup="ns/g" pod="ns/m"
I2 "Calculated node's final score for pod" podGroupType="podgroup" podGroup="ns/g" pod="ns/m" node="b1" score=7
I2 "Calculated node's final score for pod" podGroupType="podgroup" podGroup="ns/g" pod="ns/m" node="b2" score=6
"""


def test_placement_orders_are_the_groups_runs_in_every_cycle() -> None:
    log = (
        'I1 "Attempting to schedule pod group" podGroup="ns/g"\n'
        'I1 "Assuming placement in snapshot" podGroup="ns/g" placement="r9"\n'
        'I2 "Attempting to schedule pod group" podGroup="ns/g"\n'
        'I2 "Assuming placement in snapshot" podGroup="ns/g" placement="r1"\n'
        'I2 "Assuming placement in snapshot" podGroup="ns/other" placement="x"\n'
        'I2 "Assuming placement in snapshot" podGroup="ns/g" placement="r0"\n'
        'I2 "Assuming placement in snapshot" podGroup="ns/g" placement="r1"\n'
    )
    # every cycle's runs, in order: (r9) in the first, then (r1, r0) and a rerun from r1
    assert placement_orders(log, "ns/g") == [["r9", "r1", "r0"], ["r1"]]
    assert placement_orders(log, "ns/none") == []


def test_placing_scores_are_the_chosen_placements_in_the_groups_last_cycle() -> None:
    # two placements tried in the last cycle: the one that scored the member's node
    assert placing_scores(GROUP_LOG, "ns/m", "ns/g", "a1") == (
        {"A": {"a1": 5}},
        {"a1": 5, "a2": 4},
    )
    assert placing_scores(GROUP_LOG, "ns/m", "ns/g", "b2")[1] == {"b1": 7, "b2": 6}
    # an earlier cycle's scores never count; a node no attempt scored (the only feasible
    # one, or the nominated one): no scores at all
    assert placing_scores(GROUP_LOG, "ns/m", "ns/g", "old") == ({}, {})
    assert placing_scores(GROUP_LOG, "ns/m", "ns/g", "n8") == ({}, {})
    # unplaced: its last attempt
    assert placing_scores(GROUP_LOG, "ns/m", "ns/g", None)[1] == {"b1": 7, "b2": 6}


def _scheduled(node: str, totals: dict[str, int], **kw: object) -> Outcome:
    return Outcome("Scheduled", node=node, totals=totals, **kw)  # type: ignore[arg-type]


def test_compare_accepts_any_top_scored_node_and_flags_scores() -> None:
    ours = _scheduled("a", {"a": 10, "b": 10}, scores={"P": {"a": 5, "b": 5}})
    kube = _scheduled("b", {"a": 10, "b": 10}, scores={"P": {"a": 5, "b": 5}})
    assert compare(kube, ours) == []
    kube = _scheduled("b", {"a": 10, "b": 10}, scores={"P": {"a": 5, "b": 6}})
    (d,) = compare(kube, ours)
    assert (d.what, d.plugin, d.node, d.kube, d.ksched) == ("score", "P", "b", 6, 5)
    kube = _scheduled("c", {}, scores={})
    (d,) = compare(kube, _scheduled("a", {"a": 3, "c": 1}))
    assert d.what == "node" and d.ksched == ["a"]


def test_compare_feasibility_and_message() -> None:
    kube = Outcome("Unschedulable", message="0/1 nodes are available: 1 Insufficient cpu.")
    assert [d.what for d in compare(kube, _scheduled("a", {}))] == ["feasibility"]
    ours = Outcome("Unschedulable", message="0/1 nodes are available: 1 Too many pods.")
    (d,) = compare(kube, ours)
    assert d.what == "message"


def test_dynamic_resources_texts_are_compared_and_only_its_zero_scores_excused() -> None:
    diag = "0/3 nodes are available: 3 Insufficient cpu."
    ours = (
        f"{diag} no new claims to deallocate, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
    assert messages_agree(ours, ours)
    assert not messages_agree(ours, ours.replace("no new claims to deallocate, ", ""))
    claim = '0/3 nodes are available: persistentvolumeclaim "x" not found.'
    assert messages_agree(f"{claim} not found", f"{claim} not found")
    assert not messages_agree(f"{claim} not found", f"{claim} preemption: x")
    # ksched's DynamicResources skips Score where kube-scheduler logs 0 on every node
    zero = _scheduled("a", {"a": 1}, scores={"DynamicResources": {"a": 0}})
    assert compare(zero, _scheduled("a", {"a": 1})) == []
    some = _scheduled("a", {"a": 1}, scores={"DynamicResources": {"a": 3}})
    assert [d.what for d in compare(some, _scheduled("a", {"a": 1}))] == ["score"]


def _node(name: str, cpu: str, taints: list[dict[str, str]] | None = None) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "10"}},
    }


def _pod(name: str, cpu: str, generation: int = 1) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "d",
            "uid": f"uid-{name}",
            "generation": generation,
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def test_ksched_replay_reports_v136_texts_and_condition() -> None:
    from ksched.features.gates import set_feature_gates

    state = [_node("a", "1"), _node("b", "1"), _node("c", "1")]
    # v1.36's DynamicResources PostFilter adds its sentence, v1.37's none
    v1_36 = KschedReplay(features=set_feature_gates([], ["1.36"]))(state, _pod("p", "2"))
    assert v1_36.message == (
        "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    replay = KschedReplay()
    out = replay(state, _pod("p", "2", generation=3))
    assert out.status == "Unschedulable"
    assert out.message == (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert out.condition == {
        "reason": "Unschedulable",
        "message": out.message,
        "observedGeneration": 3,
    }
    ok = replay([_node("x", "4"), _node("y", "4")], _pod("q", "1"))
    assert ok.status == "Scheduled" and ok.node in ("x", "y")
    assert ok.feasible == ["x", "y"]
    assert set(ok.scores) >= {"NodeResourcesFit", "TaintToleration"}


def test_scenario_file_is_what_ksched_simulate_reproduces(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(scenario_file([_node("x", "4")], _pod("q", "1")))
    proc = subprocess.run(
        [sys.executable, "-m", "ksched", "simulate", "--cluster", str(path), "--output", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    (pod,) = json.loads(proc.stdout)["pods"]
    assert (pod["name"], pod["node"], pod["status"]) == ("q", "x", "Scheduled")


def test_ksched_replay_counts_untolerated_taints_together() -> None:
    """v1.35+ (kubernetes#134740): one reason for all untolerated taints, none named."""
    state = [
        _node("a", "1", [{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        _node("b", "1", [{"key": "j", "value": "w", "effect": "NoExecute"}]),
        _node("c", "1"),
    ]
    out = KschedReplay()(state, _pod("p", "2"))
    assert out.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def _victim(name: str, priority: int, labels: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "d", "labels": labels or {}},
        "spec": {"priority": priority, "nodeName": "n"},
    }


def test_equally_good_preemption_candidates_are_a_tie_not_a_divergence() -> None:
    pdb = {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b", "namespace": "d"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}},
        "status": {"disruptionsAllowed": 0},
    }
    state = [
        _victim("a", 10),
        _victim("b", 10),
        _victim("c", 20),
        _victim("db", 10, {"app": "db"}),
        pdb,
    ]
    kube = Outcome("Scheduled", node="n1", nominated="n1", victims=["d/a"])
    tie = Outcome("Scheduled", node="n2", nominated="n2", victims=["d/b"], totals={"n2": 1})
    assert compare(kube, tie, state) == []
    # a higher-priority victim, a PDB violation or more victims are worse, not a tie
    for worse in (["d/c"], ["d/db"], ["d/a", "d/b"]):
        ours = Outcome("Scheduled", node="n2", nominated="n2", victims=worse)
        kinds = [d.what for d in compare(kube, ours, state)]
        assert "victims" in kinds and "node" in kinds, worse
    # v1.37 names the drawn candidate in the message: left out for a tie, not otherwise
    said = "0/2 nodes are available: 2 Insufficient cpu. preemption: found a potential " + (
        "placement for pod on node {}, preempting 1 victims"
    )
    cond = {"reason": "Unschedulable"}
    kube.message, kube.condition = said.format("n1"), {**cond, "message": said.format("n1")}
    tie.message, tie.condition = said.format("n2"), {**cond, "message": said.format("n2")}
    assert compare(kube, tie, state) == []
    same = Outcome("Scheduled", node="n1", nominated="n1", victims=["d/a"], totals={"n1": 1})
    same.message, same.condition = tie.message, tie.condition
    assert {d.what for d in compare(kube, same, state)} == {"message", "condition"}


def test_a_nomination_for_the_bound_node_is_judged_like_the_node() -> None:
    """v1.36 nominates the node before a slow binding; among tied nodes either may win."""
    kube = Outcome("Scheduled", node="a", nominated="a", totals={"a": 5, "b": 5})
    ours = Outcome("Scheduled", node="b", nominated="b", totals={"a": 5, "b": 5})
    assert compare(kube, ours) == []
    unannounced = Outcome("Scheduled", node="a", totals={"a": 5, "b": 5})
    assert [d.what for d in compare(kube, unannounced)] == ["nominated"]


def test_a_filter_error_is_compared_without_what_chance_picks() -> None:
    """kube-scheduler reports the first Filter error of its parallel run (any node's
    devices) and names a template's claim with the API server's random suffix."""
    text = (
        'running "DynamicResources" filter plugin: claim d1-a/p6-gpu{}, request r0: '
        "cannot add device gpu.example.com/{}/gpu-1 because a claim constraint would not "
        "be satisfied"
    )
    kube = Outcome("Error", message=text.format("-mgs9z", "s1-n1"))
    ours = Outcome("Error", message=text.format("", "s1-n0"))
    assert compare(kube, ours) == []
    other = Outcome("Error", message=text.format("", "s1-n0").replace("r0", "r1"))
    assert [d.what for d in compare(kube, other)] == ["message"]
    # the errors a preemption dry run lists are Filter errors too (seed 10324)
    fit = "0/6 nodes are available: 1 Insufficient cpu. preemption: [{}, {}]"
    assert messages_agree(
        fit.format(text.format("-txfsj", "s1-n5"), text.format("-txfsj", "s1-n2")),
        fit.format(text.format("", "s1-n5"), text.format("", "s1-n2")),
    )
    # outside a Filter error nothing is masked
    assert not messages_agree(
        "0/2 nodes are available: claim a/b-xyz12, x", "0/2 nodes are available: claim a/b, x"
    )


def test_node_order_follows_kube_schedulers_cache() -> None:
    """``_NodeOrder`` rebuilds ``NodeInfo.Pods`` from watch events: a pod is appended when
    it lands; removing one puts the node's last pod in its place (``removeFromSlice``),
    and an update is a removal and an add (``cache.updatePod``); other namespaces and
    unbound pods are not the scenario's or not on a node."""
    from ksched.testing.differential.kube import _NodeOrder

    order = _NodeOrder.__new__(_NodeOrder)
    order.namespaces = {"d1"}
    order.nodes, order.seen, order.rv = {}, {}, ""
    import threading

    order.lock = threading.Lock()

    def ev(kind: str, name: str, node: str, rv: int, ns: str = "d1") -> None:
        obj = {
            "metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv)},
            "spec": {"nodeName": node} if node else {},
        }
        order._apply({"type": kind, "object": obj})

    ev("ADDED", "a", "n1", 1)
    ev("ADDED", "b", "n1", 2)
    ev("ADDED", "c", "n1", 3)
    ev("ADDED", "p", "", 4)  # pending: not on a node
    ev("ADDED", "x", "n1", 5, ns="other")  # not the scenario's
    ev("MODIFIED", "p", "n1", 6)  # bound: lands last
    ev("MODIFIED", "a", "n1", 7)  # updated: removed (the last takes its place), re-added
    assert order.nodes["n1"] == ["d1/p", "d1/b", "d1/c", "d1/a"]
    ev("DELETED", "b", "n1", 8)
    assert order.nodes["n1"] == ["d1/p", "d1/a", "d1/c"]
    pods = [
        {
            "metadata": {"namespace": "d1", "name": n, "resourceVersion": rv},
            "spec": {"nodeName": "n1"},
        }
        for n, rv in (("a", "7"), ("c", "3"), ("p", "6"))
    ]
    assert order.rank(pods, timeout=0) == {"d1/p": 0, "d1/a": 1, "d1/c": 2}
    # a list the watch has not caught up with yet: no answer rather than a wrong one
    assert order.rank([*pods[:2]], timeout=0) is None


def test_feature_gates_reach_both_sides_and_bad_ones_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--feature-gates`` go to kube-scheduler's command line and ksched's replay alike
    (``--no-batching`` adds OpportunisticBatching=false to both); refused up front."""
    from ksched.features import resolve_feature_gates
    from ksched.testing.differential.__main__ import main
    from ksched.testing.differential.kube import gate_values

    assert gate_values(["A=true"], batching=True) == ["A=true"]
    assert gate_values(["A=true"], batching=False) == ["A=true", "OpportunisticBatching=false"]
    gates = resolve_feature_gates(["StorageCapacityScoring=true"])
    assert KschedReplay(features=gates).config.features is gates
    assert main(["--seeds", "0", "--feature-gates", "CoordinatedLeaderElection=true"]) == 2
    err = capsys.readouterr().err
    assert (
        "--feature-gates: feature gate CoordinatedLeaderElection=true is not implemented by ksched"
        in err
    )


class _FakeApi:
    """``_Api`` over a dict of paths: GETs answer from it, POSTs are recorded."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects
        self.posted: list[tuple[str, Any]] = []

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if method == "POST":
            self.posted.append((path, body))
            return 201, body
        got = self.objects.get(path)
        return (200, got) if got is not None else (404, {})


def test_the_kube_replay_provisions_claims_the_scheduler_selected_a_node_for() -> None:
    """The external provisioner's part: a PV on the selected node, pre-bound to the
    claim, for the claim annotated; none for a bound claim or one not annotated."""

    def claim(name: str, **extra: Any) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}-0000", **extra},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "3Gi"}},
                "storageClassName": "s0-cap",
            },
        }

    annotated = claim("a", annotations={"volume.kubernetes.io/selected-node": "s0-n1"})
    bound = claim("b")
    bound["spec"]["volumeName"] = "pv-b"
    api = _FakeApi(
        {
            api_path("PersistentVolumeClaim", "ns", "a"): annotated,
            api_path("PersistentVolumeClaim", "ns", "b"): bound,
            api_path("PersistentVolumeClaim", "ns", "c"): claim("c"),
            api_path("StorageClass", name="s0-cap"): {
                "metadata": {"name": "s0-cap"},
                "provisioner": "s0-cap.example.com",
            },
        }
    )
    replay = KubeReplay.__new__(KubeReplay)
    replay.api = api  # type: ignore[assignment]
    replay._provisioned = []
    vols = [{"name": n, "persistentVolumeClaim": {"claimName": n}} for n in "abc"]
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"volumes": vols}}
    replay._provision(PendingPod(pod, {"volumes"}), 0.2, threading.Event())
    ((path, pv),) = api.posted
    assert path == api_path("PersistentVolume")
    assert replay._provisioned == [pv["metadata"]["name"]] == ["s0-cap-uid-a-00"]
    spec = pv["spec"]
    assert spec["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "a",
        "uid": "uid-a-0000",
    }
    assert (spec["capacity"], spec["storageClassName"]) == ({"storage": "3Gi"}, "s0-cap")
    assert spec["csi"]["driver"] == "s0-cap.example.com"
    (term,) = spec["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": HOST, "operator": "In", "values": ["s0-n1"]}]


def test_a_pod_groups_condition_is_compared_blind_to_its_first_placements_status() -> None:
    from ksched.testing.differential.compare import compare_group

    def group(first: str, placements: int = 2) -> dict[str, object]:
        msg = (
            f"pod group is unschedulable, 0/{placements} placements are available, first "
            f"placement status: {first}, pod group preemption: No preemption victims found"
        )
        cond = {"status": "False", "reason": "Unschedulable", "message": msg}
        return {"condition": cond, "allBound": False, "victims": []}

    a = group("minCount (6) cannot be satisfied: 2 scheduled, 3 remaining")
    b = group("minCount (6) cannot be satisfied: 0 scheduled, 5 remaining")
    assert compare_group(a, b) == []  # which placement came first is upstream's chance
    c = group("minCount (6) cannot be satisfied: 2 scheduled, 3 remaining", placements=3)
    assert [d.detail for d in compare_group(a, c)] == ["PodGroupInitiallyScheduled message"]
