"""``simulate --explain NS/PODGROUP``: the smallest-change search over a fake ``fits``, the
merged FitErrors, the text, and the real simulator behind them.

Until the pod-group cycle schedules groups as one unit, members are scheduled one by one
here; the end-to-end tests of a pending gang (GenericWorkload on) are marked xfail and
become real once the cycle lands."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main
from ksched.config import load_config
from ksched.plugins import default_registry
from ksched.sim import PodResult, load_cluster, parse_cluster
from ksched.sim.cluster_file import ClusterFile
from ksched.sim.group_explain import (
    ClusterChange,
    GroupOutcome,
    broader_keys,
    explain_group,
    merge_rejections,
    outcome,
    render_group_text,
    simulator_run,
    smallest_change,
)
from ksched.sim.group_explain import _best_attempt as best_attempt
from ksched.sim.groups import pod_groups

ROOT = Path(__file__).resolve().parents[2]
GANG = ROOT / "examples" / "gang-pending.yaml"


def node(name: str, labels: dict[str, str] | None = None, gpu: str = "0") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "status": {"allocatable": {"cpu": "4", "pods": "10", "nvidia.com/gpu": gpu}},
    }


def pod(name: str, ns: str = "ml", node_name: str = "", group: str = "", prio: int = 0) -> Any:
    spec: dict[str, Any] = {"schedulerName": "ksched", "priority": prio}
    if node_name:
        spec["nodeName"] = node_name
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def pod_group(name: str, min_count: int | None = None, topology: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    }
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": spec,
    }


def cluster(*items: dict[str, Any]) -> ClusterFile:
    return parse_cluster(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}), "t"
    )


def fake(test: Callable[[ClusterFile], bool], where: str = "n") -> Callable[[ClusterFile], Any]:
    """A ``fits`` that lets the group in when ``test(cluster)``, placing every member on
    node ``where``; it records each cluster it was asked about."""
    seen: list[ClusterFile] = []

    def fits(c: ClusterFile) -> GroupOutcome:
        seen.append(c)
        members = pod_groups(c)["ml/g"].members
        if test(c):
            return GroupOutcome(True, dict.fromkeys(members, where))
        return GroupOutcome(False, {}, members)

    fits.seen = seen  # type: ignore[attr-defined]
    return fits


def node_names(c: ClusterFile) -> list[str]:
    return [n.metadata.name for n, _ in c.nodes]


GROUP3 = [pod_group("g", 3), *(pod(f"w-{i}", group="g") for i in range(3))]


# ---- (a) more nodes ------------------------------------------------------------------------


def test_add_nodes_picks_the_template_needing_fewest_copies() -> None:
    c = cluster(
        node("cpu-1"), node("gpu-a", {"t": "a"}, "2"), node("gpu-b", {"t": "b"}, "8"), *GROUP3
    )

    def enough(x: ClusterFile) -> bool:
        """Two copies of gpu-b are enough, or three of gpu-a."""
        names = node_names(x)
        b = sum(n.startswith("gpu-b-copy-") for n in names)
        return b >= 2 or sum(n.startswith("gpu-a-copy-") for n in names) >= 3

    fits = fake(enough)
    found, tried = smallest_change(c, pod_groups(c)["ml/g"], fits)
    assert found is not None and found.strategy == "add-nodes"
    assert found.summary == "2 more nodes like gpu-b"
    added = found.change.add
    assert [d["metadata"]["name"] for d in added] == ["gpu-b-copy-1", "gpu-b-copy-2"]
    # the copy is the node under a new name: labels (hostname following), resources, no uid
    assert added[0]["metadata"]["labels"] == {"kubernetes.io/hostname": "gpu-b-copy-1", "t": "b"}
    assert added[0]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert "uid" not in added[0]["metadata"]
    assert [(t.strategy, t.works) for t in tried] == [("add-nodes", True)]
    # the suggestion is the very change that was verified
    assert enough(found.change.apply(c))


def test_nodes_of_one_shape_are_one_template() -> None:
    c = cluster(node("a-1", {"t": "a"}), node("a-2", {"t": "a"}), node("b-1", {"t": "b"}), *GROUP3)
    fits = fake(lambda x: False)
    found, tried = smallest_change(c, pod_groups(c)["ml/g"], fits)
    assert found is None
    assert tried[0].tried == "up to 3 copies of each of a-1, b-1"
    added = [[n for n in node_names(x) if "-copy-" in n] for x in fits.seen]  # type: ignore[attr-defined]
    assert ["a-1-copy-1", "a-1-copy-2", "a-1-copy-3"] in added
    assert not any(n.startswith("a-2") for names in added for n in names)


# ---- (b) evictions ---------------------------------------------------------------------------


def test_evict_names_the_fewest_lower_priority_pods_that_make_room() -> None:
    c = cluster(
        node("n1"),
        node("n2"),
        pod("low-1", "batch", "n1", prio=1),
        pod("low-2", "batch", "n1", prio=5),
        pod("low-3", "batch", "n2", prio=1),
        pod("low-4", "batch", "n2", prio=5),
        pod("high", "batch", "n2", prio=100),
        *[
            {**p, "spec": {**p["spec"], "priority": 10}} if p["kind"] == "Pod" else p
            for p in GROUP3
        ],
    )

    def room(x: ClusterFile) -> bool:
        keys = {p.key for p, _ in x.pods}
        copies = any("-copy-" in n for n in node_names(x))
        return not copies and "batch/low-1" not in keys and "batch/low-3" not in keys

    fits = fake(room)
    found, tried = smallest_change(c, pod_groups(c)["ml/g"], fits)
    assert found is not None and found.strategy == "evict"
    assert found.summary == "evict these 2 lower-priority pods: batch/low-1, batch/low-3"
    assert found.change.delete == (("Pod", "batch", "low-1"), ("Pod", "batch", "low-3"))
    assert [(t.strategy, t.works) for t in tried] == [("add-nodes", False), ("evict", True)]
    # never a pod of higher priority than the group's
    for x in fits.seen:  # type: ignore[attr-defined]
        assert "batch/high" in {p.key for p, _ in x.pods}


def test_no_lower_priority_pod_no_eviction() -> None:
    c = cluster(node("n1"), pod("other", "batch", "n1", prio=0), *GROUP3)
    found, tried = smallest_change(c, pod_groups(c)["ml/g"], fake(lambda x: False))
    assert found is None
    assert tried[1].strategy == "evict" and tried[1].tried == "no pod below priority 0 runs"
    assert tried[2].tried == "the group has no topology constraint"


# ---- (c) a broader topology key --------------------------------------------------------------

RACKS = [
    node("n1", {"rack": "r1", "zone": "z1", "region": "x"}),
    node("n2", {"rack": "r2", "zone": "z1", "region": "x"}),
    node("n3", {"rack": "r3", "zone": "z2", "region": "x"}),
]


def test_broader_keys_hold_whole_domains_closest_first() -> None:
    nodes = [n for n, _ in cluster(*RACKS).nodes]
    assert broader_keys(nodes, "rack") == ["zone", "region"]
    assert broader_keys(nodes, "zone") == ["region"]
    # a rack split over two zones: zone is no longer broader
    split = [*RACKS, node("n4", {"rack": "r1", "zone": "z2", "region": "x"})]
    assert broader_keys([n for n, _ in cluster(*split).nodes], "rack") == ["region"]
    assert broader_keys(nodes, "missing") == []


def test_relax_topology_tries_broader_keys_then_none() -> None:
    c = cluster(*RACKS, pod_group("g", 2, "rack"), pod("w-0", group="g"), pod("w-1", group="g"))

    def relaxed_to(key: str | None) -> Callable[[ClusterFile], bool]:
        def test(x: ClusterFile) -> bool:
            if any("-copy-" in n for n in node_names(x)):
                return False
            pg = x.scheduling["PodGroup"][0]
            sc = pg.spec.scheduling_constraints
            return (sc.topology[0].key if sc and sc.topology else None) == key

        return test

    found, tried = smallest_change(c, pod_groups(c)["ml/g"], fake(relaxed_to("region"), "n1"))
    assert found is not None and found.strategy == "relax-topology"
    assert found.summary == "relax the rack constraint: fits in region x"
    (manifest,) = found.change.replace
    assert manifest["spec"]["schedulingConstraints"] == {"topology": [{"key": "region"}]}
    assert manifest["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert [(t.tried, t.works) for t in tried[2:]] == [
        ("relax the rack constraint to zone", False),
        ("relax the rack constraint: fits in region x", True),
    ]
    found, tried = smallest_change(c, pod_groups(c)["ml/g"], fake(relaxed_to(None)))
    assert found is not None and found.summary == "drop the rack constraint"
    assert "schedulingConstraints" not in found.change.replace[0]["spec"]
    assert len(tried) == 5


# ---- the change, applied -------------------------------------------------------------------


def test_a_change_applies_alike_to_the_parsed_file_and_its_documents() -> None:
    docs = [*RACKS, pod("old", "batch", "n1"), pod_group("g", 2, "rack"), pod("w-0", group="g")]
    change = ClusterChange(
        add=(node("n9"),),
        delete=(("Pod", "batch", "old"),),
        replace=(pod_group("g", 2, "zone"),),
    )
    text = yaml.safe_dump_all(
        change.apply_documents([{"apiVersion": "v1", "kind": "List", "items": docs[:3]}, *docs[3:]])
    )
    for c in (change.apply(cluster(*docs)), parse_cluster(text, "docs")):
        assert sorted(node_names(c)) == ["n1", "n2", "n3", "n9"]
        assert [p.key for p, _ in c.pods] == ["ml/w-0"]
        (pg,) = c.scheduling["PodGroup"]
        assert pg.spec.scheduling_constraints.topology[0].key == "zone"
    assert json.loads(json.dumps(change.to_dict()))["delete"] == [
        {"kind": "Pod", "namespace": "batch", "name": "old"}
    ]


# ---- blockers and text ---------------------------------------------------------------------


def test_rejections_of_the_members_merge_once_per_node() -> None:
    a = {"rejected": [{"reason": "Insufficient cpu", "nodes": ["n2", "n1"], "plugins": ["Fit"]}]}
    b = {
        "rejected": [
            {"reason": "Insufficient cpu", "nodes": ["n1", "n3"], "plugins": ["Fit"]},
            {"reason": "node(s) had untolerated taint(s)", "nodes": ["n4"], "plugins": ["Taint"]},
        ]
    }
    m = merge_rejections([a, b], 5)
    assert [(g["count"], g["nodes"]) for g in m["rejected"]] == [
        (1, ["n4"]),
        (3, ["n1", "n2", "n3"]),
    ]
    assert m["message"] == (
        "1/5 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu."
    )
    assert m["members"] == 2


def _fake_run(bound: dict[str, str]) -> Callable[[ClusterFile, bool], list[PodResult]]:
    """A ``run`` that binds the pods in ``bound`` and leaves every other pending pod."""

    def run(c: ClusterFile, explain: bool) -> list[PodResult]:
        out = []
        for p, _ in c.pods:
            if p.spec.node_name:
                continue
            at = bound.get(p.key)
            status = "Scheduled" if at else "Unschedulable"
            model = {"rejected": [{"reason": "Insufficient cpu", "nodes": ["n1"], "plugins": []}]}
            out.append(
                PodResult(p.metadata.namespace, p.metadata.name, at, status, "" if at else "no",
                          explain=None if at or not explain else model)
            )  # fmt: skip
        return out

    return run


def test_too_few_members_for_the_gang_is_said_and_nothing_is_searched() -> None:
    c = cluster(node("n1"), pod_group("g", 3), pod("w-0", group="g"))
    model = explain_group(c, "ml/g", _fake_run({}), fits=fake(lambda x: True))
    assert model["reasons"] == [
        "gang minCount 3 not satisfiable: only 1 member pod(s) exist; no change of nodes helps, "
        "the group waits for more member pods"
    ]
    assert model["suggestion"] is None and model["tried"] == []


def test_text_names_members_blocker_reason_and_change() -> None:
    c = cluster(node("n1"), *GROUP3)
    run = _fake_run({"ml/w-0": "n1"})
    model = explain_group(c, "ml/g", run, fits=fake(lambda x: len(x.nodes) > 1, "n1"))
    text = "\n".join(render_group_text(model))
    assert text.startswith("ml/g: PodGroup (gang minCount 3): pending, 1/3 bound\n")
    assert "    ml/w-0  bound to n1\n" in text
    assert "    ml/w-1  pending, fits nowhere\n" in text
    assert "blocked (2 members fit nowhere): 0/1 nodes are available: 1 Insufficient cpu." in text
    assert "group: gang minCount 3 not satisfiable: at most 1 of 3 members fit at once" in text
    assert "    add-nodes: 1 more node like n1: fits\n" in text
    assert "smallest change that lets the whole group in: 1 more node like n1" in text
    assert "    add to the cluster file:\n      apiVersion: v1\n      kind: Node\n" in text
    assert "        name: n1-copy-1\n" in text


def test_a_group_that_fits_is_only_described() -> None:
    c = cluster(node("n1"), *GROUP3)
    run = _fake_run({f"ml/w-{i}": "n1" for i in range(3)})
    model = explain_group(c, "ml/g", run, fits=fake(lambda x: pytest.fail("searched")))
    assert model["fits"] and model["started"] and model["suggestion"] is None
    assert (
        render_group_text(model)[0]
        == "ml/g: PodGroup (gang minCount 3): all members bound, 3/3 bound"
    )


# ---- with the simulator --------------------------------------------------------------------


def _config(gates: Any = None) -> tuple[Any, Any]:
    registry = default_registry()
    cfg, _ = load_config(None, set(registry.names()), gates)
    return cfg, registry


def _apply_to_file(path: Path, change: dict[str, Any], out: Path) -> Path:
    """The JSON change applied to a YAML file the way a user would: drop, replace, add."""
    docs = list(yaml.safe_load_all(path.read_text()))
    gone = {(d["kind"], d["namespace"], d["name"]) for d in change["delete"]}
    gone |= {
        (m["kind"], m["metadata"].get("namespace", ""), m["metadata"]["name"])
        for m in change["replace"]
    }

    def keep(d: dict[str, Any]) -> bool:
        meta = d["metadata"]
        ns = "" if d["kind"] == "Node" else meta.get("namespace", "default")
        return (d["kind"], ns, meta["name"]) not in gone

    items = [d for doc in docs for d in doc.get("items", [doc]) if keep(d)]
    items += change["replace"] + change["add"]
    out.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return out


def _statuses(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> dict[str, Any]:
    assert main(["simulate", "--cluster", str(path), "--output", "json", *flags]) == 0
    return {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}


def test_real_simulation_finds_the_node_to_add_and_it_lets_the_gang_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, registry = _config()
    c = load_cluster(str(GANG))
    model = explain_group(c, "ml/trainer", simulator_run(cfg, registry))
    assert model["blocked"]["message"] == (
        "0/12 nodes are available: 3 Insufficient nvidia.com/gpu, "
        "9 node(s) didn't match Pod's node affinity/selector."
    )
    found = model["suggestion"]
    assert found["summary"] == "1 more node like gpu-a5"
    assert set(found["placed"]) == {f"ml/trainer-{i}" for i in range(4)}
    before = _statuses(capsys, GANG)
    assert [before[f"trainer-{i}"]["status"] for i in range(4)].count("Scheduled") < 4
    after = _statuses(capsys, _apply_to_file(GANG, found["change"], tmp_path / "c.yaml"))
    assert all(after[f"trainer-{i}"]["status"] == "Scheduled" for i in range(4))


def test_best_attempt_is_the_topology_value_where_most_members_fit() -> None:
    cfg, registry = _config()
    racks = [node(f"n{i}", {"rack": r}, "1") for i, r in enumerate(["r1", "r2", "r2", "r3"])]
    members = [
        {**p, "spec": {**p["spec"], "containers": [
            {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}
        for p in (pod(f"w-{i}", group="g") for i in range(3))
    ]  # fmt: skip
    c = cluster(*racks, pod_group("g", 3, "rack"), *members)
    where, would = best_attempt(c, pod_groups(c)["ml/g"], simulator_run(cfg, registry), {})
    assert where == "rack=r2"
    assert sorted(would.values()) == ["n1", "n2"]


def test_outcome_reads_the_members_results() -> None:
    c = cluster(node("n1"), pod_group("g", 2), pod("w-0", group="g", node_name="n1"),
                pod("w-1", group="g"))  # fmt: skip
    ok = outcome(c, "ml/g", [PodResult("ml", "w-1", "n1", "Scheduled", "")])
    assert ok == GroupOutcome(True, {"ml/w-0": "n1", "ml/w-1": "n1"}, ())
    no = outcome(c, "ml/g", [PodResult("ml", "w-1", None, "Unschedulable", "x")])
    assert no == GroupOutcome(False, {"ml/w-0": "n1"}, ("ml/w-1",))


def test_cli_needs_generic_workload_to_explain_a_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", str(GANG), "--explain", "ml/trainer"]) == 2
    err = capsys.readouterr().err
    assert "ml/trainer: a pod group, but GenericWorkload is off" in err
    assert "--feature-gates=GenericWorkload=true" in err


GATE = "--feature-gates=GenericWorkload=true"


def test_cli_explains_the_pending_gang_and_its_change_lets_it_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        ["simulate", "--cluster", str(GANG), GATE, "--output", "json", "--explain", "ml/trainer"]
    )
    out = capsys.readouterr().out
    assert rc == 0
    model = json.loads(out)["podGroup"]
    assert model["bound"] == 0 and not model["fits"]
    assert model["blocked"]["message"] == (
        "0/12 nodes are available: 3 Insufficient nvidia.com/gpu, "
        "9 node(s) didn't match Pod's node affinity/selector."
    )
    assert model["suggestion"]["summary"] == "1 more node like gpu-a5"
    changed = _apply_to_file(GANG, model["suggestion"]["change"], tmp_path / "c.yaml")
    after = _statuses(capsys, changed, GATE)
    assert all(after[f"trainer-{i}"]["status"] == "Scheduled" for i in range(4))
    assert main(["simulate", "--cluster", str(GANG), GATE, "--explain", "ml/trainer"]) == 0
    text = capsys.readouterr().out
    assert "ml/trainer: PodGroup (gang minCount 4): pending, 0/4 bound" in text
    assert "smallest change that lets the whole group in: 1 more node like gpu-a5" in text


TOPOLOGY = [
    *RACKS,
    pod_group("g", 2, "rack"),
    *(
        {
            **p,
            "spec": {
                **p["spec"],
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{
                        "key": "kubernetes.io/hostname", "operator": "In",
                        "values": ["n1", "n2", "n3"]}]}]}}},
            },
        }
        for p in (pod("w-0", group="g"), pod("w-1", group="g"))
    ),
]  # fmt: skip


def test_cli_relaxes_the_topology_constraint_when_nodes_cannot_help(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Members pinned to n1-n3 by hostname (copies cannot help), one per node, a rack
    each: no rack holds both, zone z1 (racks r1, r2) does."""
    path = tmp_path / "topo.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": TOPOLOGY}))
    gates = "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
    rc = main(["simulate", "--cluster", str(path), gates, "--output", "json", "--explain", "ml/g"])
    model = json.loads(capsys.readouterr().out)["podGroup"]
    assert rc == 0
    assert model["reasons"][0].startswith(
        "topology constraint: no single value of rack has room for all 2 pending members"
    )
    found = model["suggestion"]
    assert found["summary"] == "relax the rack constraint: fits in zone z1"
    assert [t["strategy"] for t in model["tried"]] == ["add-nodes", "evict", "relax-topology"]
    changed = _apply_to_file(path, found["change"], tmp_path / "c.yaml")
    after = _statuses(capsys, changed, gates)
    assert {after["w-0"]["node"], after["w-1"]["node"]} == {"n1", "n2"}


def test_the_search_gives_up_after_its_budget_of_simulations() -> None:
    c = cluster(node("a", {"t": "a"}), node("b", {"t": "b"}), *GROUP3)
    fits = fake(lambda x: False)
    found, tried = smallest_change(c, pod_groups(c)["ml/g"], fits, budget=1)
    assert found is None
    assert [(t.strategy, t.tried) for t in tried] == [("add-nodes", "gave up after 1 simulations")]
    assert len(fits.seen) == 1  # type: ignore[attr-defined]


def test_copies_carry_yaml_timestamps_as_rfc3339() -> None:
    text = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    allocatable: {cpu: "4", pods: "10"}
    conditions: [{type: Ready, status: "True", lastHeartbeatTime: 2024-05-06T07:08:09Z}]
"""
    c = parse_cluster(text, "t")
    fits = fake(lambda x: len(x.nodes) > 1)
    c = ClusterChange(add=tuple(json.loads(json.dumps(m)) for m in GROUP3)).apply(c)
    found, _ = smallest_change(c, pod_groups(c)["ml/g"], fits)
    assert found is not None
    (copy,) = found.change.add
    assert copy["status"]["conditions"][0]["lastHeartbeatTime"] == "2024-05-06T07:08:09Z"
    json.dumps(found.to_dict())  # the CLI's JSON


def test_a_pod_of_the_group_name_is_explained_as_the_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    docs = [node("n1"), pod_group("g"), pod("g", group="g")]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs}))
    assert main(["simulate", "--cluster", str(path), "--explain", "ml/g"]) == 0
    assert capsys.readouterr().out.startswith("ml/g: Scheduled on n1")


@pytest.mark.parametrize("flag", ["--compare", "--report"])
def test_a_group_is_explained_without_compare_and_report(
    tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "r.html"
    other = str(ROOT / "examples" / "most-allocated.yaml") if flag == "--compare" else str(page)
    args = ["simulate", "--cluster", str(GANG), "--explain", "ml/trainer", flag, other]
    assert main(args) == 2
    assert "a pod group is explained without --compare and --report" in capsys.readouterr().err
    assert not page.exists()
