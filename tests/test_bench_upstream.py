"""The workloads of v1.37's scheduler_perf users run now (misc/, batching/,
topology_spreading/): their shapes against upstream's templates, their feature gates and
scheduler config, and tiny in-process runs where every pod ends where it must."""

from __future__ import annotations

import collections
from typing import Any

import anyio
import pytest

from ksched.api.objects import Pod, decode
from ksched.bench import run_bench
from ksched.bench.real import (
    MEASURED_NS,
    REAL_WORKLOADS,
    Deletions,
    _delete_at_rate,
    _objects,
    apiserver_args,
    gate_args,
    run_real_bench,
    unsupported,
)
from ksched.bench.workloads import (
    DAEMONSET_NODE,
    DELETING_NS,
    EXTENDED_RESOURCE,
    FINALIZER,
    GATED_NS,
    MOON_ZONES,
    NO_TOPOLOGY_CONFIG,
    SCHEDULING_GATE,
    UPSTREAM_WORKLOADS,
    WORKLOADS,
    feature_gates_of,
    scheduler_config_of,
)
from ksched.config import default_config, load_config_data
from ksched.features import resolve_feature_gates
from ksched.plugins import default_registry

ZONE = "topology.kubernetes.io/zone"


def _run(
    name: str, nodes: int, pods: int, init_pods: int = 0
) -> tuple[dict[str, Any], dict[str, str]]:
    """``name`` in process with its gates and scheduler config, as ``ksched bench`` runs it."""
    gates = resolve_feature_gates(
        [",".join(g if "=" in g else f"{g}=true" for g in feature_gates_of(name))]
        if feature_gates_of(name)
        else []
    )
    registry = default_registry(entry_points=False)
    own = scheduler_config_of(name)
    cfg = (
        load_config_data(own, name, set(registry.names()), gates)[0]
        if own is not None
        else default_config(gates)
    )
    placed: dict[str, str] = {}
    r = run_bench(
        name,
        nodes=nodes,
        pods=pods,
        init_pods=init_pods,
        config=cfg,
        registry=registry,
        placements=placed,
    )
    return r, placed


def _measured(placed: dict[str, str]) -> dict[str, str]:
    return {k.split("/", 1)[1]: v for k, v in placed.items() if k.startswith(f"{MEASURED_NS}/")}


# ---- shapes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "port", "requests"),
    [
        (
            "HostPortConflict",
            {"containerPort": 80, "hostPort": 80},
            {"cpu": "100m", "memory": "100Mi"},
        ),
        ("ResourceSaturation", None, {"cpu": "3", "memory": "1Gi"}),
    ],
)
def test_batching_pods_are_upstreams_templates_ten_to_a_signature(
    name: str, port: dict[str, int] | None, requests: dict[str, str]
) -> None:
    nodes, init, measured = WORKLOADS[name](4, 25, 7)
    assert len(nodes) == 4 and init == [] and len(measured) == 25
    (c,) = measured[0]["spec"]["containers"]
    assert c["image"] == "registry.k8s.io/pause:3.10.1"
    assert c["resources"] == {"requests": requests}
    assert c.get("ports") == ([port] if port else None)
    signatures = [m["metadata"]["labels"]["signature"] for m in measured]
    assert signatures[:10] == ["signature-label-0"] * 10
    assert signatures[10] == "signature-label-1" and signatures[24] == "signature-label-2"
    # the _OpportunisticBatchingDisabled variant: a signature per pod, the gate off
    _, _, alone = WORKLOADS[f"{name}_OpportunisticBatchingDisabled"](4, 3, 0)
    assert [m["metadata"]["labels"]["signature"] for m in alone] == [
        "signature-label-0",
        "signature-label-1",
        "signature-label-2",
    ]
    assert feature_gates_of(name) == ("OpportunisticBatching",)
    assert feature_gates_of(f"{name}_OpportunisticBatchingDisabled") == (
        "OpportunisticBatching=false",
    )


def test_extended_resource_node_i_has_the_one_resource_pod_i_asks_for() -> None:
    nodes, init, measured = WORKLOADS["SchedulingWithExtendedResource"](3, 3, 0)
    assert init == []
    for i, (n, p) in enumerate(zip(nodes, measured, strict=True)):
        res = f"{EXTENDED_RESOURCE}-{i}"
        assert n["status"]["capacity"][res] == "1" == n["status"]["allocatable"][res]
        assert n["metadata"]["labels"]["node-with-extended-resource"] == "true"
        (c,) = p["spec"]["containers"]
        assert c["resources"] == {"requests": {res: "1"}, "limits": {res: "1"}}
        assert c["image"] == "registry.k8s.io/pause:3.9"
    assert feature_gates_of("SchedulingWithExtendedResource") == (
        "DynamicResourceAllocation",
        "DRAExtendedResource",
    )


def test_while_gated_has_half_as_many_gated_pods_on_the_named_node() -> None:
    cluster, init, measured = WORKLOADS["SchedulingWhileGated"](1, 10, 6)
    nodes = [m for m in cluster if m["kind"] == "Node"]
    gated = [m for m in cluster if m["kind"] == "Pod"]
    assert [n["metadata"]["name"] for n in nodes] == [DAEMONSET_NODE]
    assert nodes[0]["status"]["allocatable"]["pods"] == "90000"
    assert len(gated) == 5 and len(init) == 6 and len(measured) == 10
    for m in gated:
        assert m["metadata"]["namespace"] == GATED_NS
        assert m["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    for m in [*init, *measured]:  # light-pod.yaml
        assert m["spec"]["terminationGracePeriodSeconds"] == 0
        assert "resources" not in m["spec"]["containers"][0]


def test_deleted_pods_with_finalizers_are_pending_with_the_finalizer() -> None:
    cluster, init, measured = WORKLOADS["SchedulingDeletedPodsWithFinalizers"](3, 4, 2)
    deleting = [m for m in cluster if m["kind"] == "Pod"]
    assert init == [] and len(deleting) == 2 and len(measured) == 4
    assert {m["metadata"]["namespace"] for m in deleting} == {DELETING_NS}
    assert all(m["metadata"]["finalizers"] == [FINALIZER] for m in deleting)


def test_spreading_workloads_use_moon_zones_and_upstreams_pods() -> None:
    nodes, _, measured = WORKLOADS["PreferredTopologySpreading"](4, 2, 1)
    assert [n["metadata"]["labels"][ZONE] for n in nodes] == [*MOON_ZONES, MOON_ZONES[0]]
    (tsc,) = measured[0]["spec"]["topologySpreadConstraints"]
    assert (tsc["maxSkew"], tsc["whenUnsatisfiable"]) == (5, "ScheduleAnyway")
    assert measured[0]["metadata"]["labels"] == {"color": "blue"}
    cluster, _, measured = WORKLOADS["DefaultTopologySpreading"](3, 2, 1)
    (svc,) = [m for m in cluster if m["kind"] == "Service"]
    assert svc["metadata"]["namespace"] == MEASURED_NS
    assert svc["spec"]["selector"] == measured[0]["metadata"]["labels"] == {"app": "scheduler-perf"}
    assert "topologySpreadConstraints" not in measured[0]["spec"]


@pytest.mark.parametrize(
    ("name", "full"),
    [
        ("SchedulingBasic_50000Pods", (5000, 5000, 50000)),
        ("HostPortConflict", (20000, 0, 20000)),
        ("ResourceSaturation", (20000, 0, 20000)),
        ("SchedulingWithExtendedResource", (5000, 0, 5000)),
        ("SchedulingWhileGated", (1, 20000, 20000)),
        ("SchedulingDeletedPodsWithFinalizers", (5000, 5000, 5000)),
        ("PreferredTopologySpreading", (5000, 5000, 5000)),
        ("DefaultTopologySpreading", (5000, 5000, 10000)),
        ("SchedulingDaemonset", (15000, 0, 30000)),
    ],
)
def test_full_sizes_are_upstreams_performance_sizes(name: str, full: tuple[int, int, int]) -> None:
    wl = REAL_WORKLOADS[name]
    assert wl.scales["full"] == full
    assert set(wl.scales) == {"small", "full"}


# ---- gates and scheduler config --------------------------------------------------------------------


def test_gates_go_to_every_component_as_upstreams_config_sets_them() -> None:
    basic = REAL_WORKLOADS["SchedulingBasic_50000Pods"]
    assert gate_args(basic.feature_gates) == ["--feature-gates=SchedulerAsyncAPICalls=false"]
    ext = REAL_WORKLOADS["SchedulingWithExtendedResource"]
    assert gate_args(ext.feature_gates) == [
        "--feature-gates=DynamicResourceAllocation=true,DRAExtendedResource=true"
    ]
    assert apiserver_args(ext.feature_gates) == gate_args(ext.feature_gates)  # no v1beta1
    # only the pod-group workloads need v1.37
    assert unsupported(REAL_WORKLOADS["HostPortConflict"], "v1.36.3") is None
    for name in UPSTREAM_WORKLOADS:  # ksched implements every one of these values
        gates = feature_gates_of(name)
        resolve_feature_gates(
            [",".join(g if "=" in g else f"{g}=true" for g in gates)] if gates else []
        )


def test_batching_runs_with_upstreams_no_topology_config() -> None:
    for name in ("HostPortConflict", "ResourceSaturation_OpportunisticBatchingDisabled"):
        assert REAL_WORKLOADS[name].scheduler_config is NO_TOPOLOGY_CONFIG
    assert REAL_WORKLOADS["SchedulingWhileGated"].scheduler_config is None
    cfg = load_config_data(
        NO_TOPOLOGY_CONFIG, "x", set(default_registry(entry_points=False).names())
    )[0]
    (prof,) = cfg.profiles
    assert prof.scheduler_name == "ksched"
    args = next(pc.args for pc in prof.plugin_config if pc.name == "PodTopologySpread")
    assert args == {"defaultingType": "List", "defaultConstraints": []}


def test_cli_in_process_uses_the_workloads_config_and_gates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ksched.cli import main

    seen: list[Any] = []

    def fake(workload: str, **kw: Any) -> dict[str, Any]:
        seen.append(kw["config"])
        return {}

    monkeypatch.setattr("ksched.bench.run_bench", fake)
    assert main(["bench", "--workload", "HostPortConflict_OpportunisticBatchingDisabled"]) == 0
    (cfg,) = seen
    assert not cfg.features.enabled("OpportunisticBatching")
    args = next(pc.args for pc in cfg.profiles[0].plugin_config if pc.name == "PodTopologySpread")
    assert args["defaultConstraints"] == []


def test_real_run_gives_each_workload_its_own_config_unless_one_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    async def one(
        name: str, contestant: str, wl: Any, size: Any, cfg: Any, *a: Any
    ) -> dict[str, Any]:
        seen[name] = cfg
        return {"scheduled": size[2], "pods_per_s": 1.0}

    monkeypatch.setattr("ksched.bench.real._one", one)
    monkeypatch.setattr("ksched.bench.real._versions", lambda: {"kubernetes": "v1.37.2"})
    doc = run_real_bench(["HostPortConflict", "SchedulingWhileGated"], contestants=["null"])
    spread = seen["HostPortConflict"]["profiles"][0]["pluginConfig"][0]
    assert spread["args"]["defaultConstraints"] == []
    assert "pluginConfig" not in seen["SchedulingWhileGated"]["profiles"][0]
    assert doc["workloads"][0]["feature_gates"] == ["OpportunisticBatching"]
    assert "feature_gates" not in doc["workloads"][1]
    mine = {"profiles": [{"schedulerName": "ksched"}]}
    run_real_bench(["HostPortConflict"], contestants=["null"], config=mine)
    assert "pluginConfig" not in seen["HostPortConflict"]["profiles"][0]


# ---- the real harness's objects and deletions ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "ns"),
    [("SchedulingWhileGated", GATED_NS), ("SchedulingDeletedPodsWithFinalizers", DELETING_NS)],
)
def test_real_objects_keep_the_other_pods_pending(name: str, ns: str) -> None:
    setup, _ = _objects(REAL_WORKLOADS[name], 3, 4, 6, "sched-x")
    pods = [decode(m, Pod) for m in setup if m["kind"] == "Pod"]
    pending = [p for p in pods if not p.spec.node_name]
    assert pending and {p.metadata.namespace for p in pending} == {ns}
    assert all(p.spec.scheduler_name == "sched-x" and not p.metadata.uid for p in pending)
    assert len(pods) - len(pending) == (4 if name == "SchedulingWhileGated" else 0)
    assert ns in {m["metadata"]["name"] for m in setup if m["kind"] == "Namespace"}
    kinds = [m["kind"] for m in setup]
    assert kinds.index("Namespace") < kinds.index("Pod")


def test_deletions_take_the_namespaces_pods_at_the_rate() -> None:
    class API:
        def __init__(self) -> None:
            self.deleted: list[tuple[str, float]] = []

        async def get(self, path: str) -> dict[str, Any]:
            assert path == "/api/v1/namespaces/ns/pods"
            return {"items": [{"metadata": {"name": n}} for n in ("c", "a", "b")]}

        async def delete(self, obj: dict[str, Any]) -> None:
            assert obj["metadata"]["namespace"] == "ns"
            self.deleted.append((obj["metadata"]["name"], anyio.current_time()))

    api = API()

    async def main() -> float:
        t0 = anyio.current_time()
        await _delete_at_rate(api, Deletions("ns", 20))  # type: ignore[arg-type]
        return anyio.current_time() - t0

    took = anyio.run(main)
    assert [n for n, _ in api.deleted] == ["a", "b", "c"]
    assert took >= 0.14  # three at 20/s: paced, not all at once
    assert REAL_WORKLOADS["SchedulingWhileGated"].deletions == Deletions("sched-0", 50)
    assert REAL_WORKLOADS["SchedulingDeletedPodsWithFinalizers"].deletions == Deletions(
        DELETING_NS, 100
    )


# ---- tiny in-process runs: every pod where it must be ----------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["HostPortConflict", "ResourceSaturation", "ResourceSaturation_OpportunisticBatchingDisabled"],
)
def test_one_pod_per_node_and_the_rest_pending(name: str) -> None:
    r, placed = _run(name, 6, 9)
    measured = _measured(placed)
    assert r["scheduled"] == 6 and len(measured) == 9
    on = [n for n in measured.values() if n]
    assert len(on) == len(set(on)) == 6  # each node holds one


def test_extended_resource_pod_i_on_node_i() -> None:
    r, placed = _run("SchedulingWithExtendedResource", 5, 5)
    assert r["scheduled"] == 5
    for name, node in _measured(placed).items():
        assert node == f"scheduler-perf-extended-resource-{int(name.rsplit('-', 1)[1]):05d}"


def test_while_gated_binds_the_measured_pods_and_no_gated_one() -> None:
    r, placed = _run("SchedulingWhileGated", 1, 10, 4)
    assert r["scheduled"] == 10
    assert set(_measured(placed).values()) == {DAEMONSET_NODE}
    gated = {k: v for k, v in placed.items() if k.startswith(f"{GATED_NS}/")}
    assert len(gated) == 5 and set(gated.values()) == {""}
    assert sum(1 for k in placed if k.startswith("sched-0/")) == 4


def test_deleted_pods_workload_binds_every_measured_pod() -> None:
    r, placed = _run("SchedulingDeletedPodsWithFinalizers", 4, 8, 3)
    assert r["scheduled"] == 8 and all(_measured(placed).values())
    assert sum(1 for k in placed if k.startswith(f"{DELETING_NS}/")) == 3


@pytest.mark.parametrize("name", ["PreferredTopologySpreading", "DefaultTopologySpreading"])
def test_spreading_workloads_spread_the_measured_pods_over_the_zones(name: str) -> None:
    r, placed = _run(name, 6, 30, 6)
    assert r["scheduled"] == 30
    zone_of = {f"scheduler-perf-{i:05d}": MOON_ZONES[i % 3] for i in range(6)}
    per_zone = collections.Counter(zone_of[n] for n in _measured(placed).values())
    assert set(per_zone) == set(MOON_ZONES)
    assert max(per_zone.values()) - min(per_zone.values()) <= 3, per_zone


def test_basic_50000_pods_variant_schedules_like_scheduling_basic() -> None:
    r, placed = _run("SchedulingBasic_50000Pods", 5, 20, 5)
    assert r["scheduled"] == 20 and all(_measured(placed).values())


# ---- end to end --------------------------------------------------------------------------------------


@pytest.mark.kube
def test_every_new_workload_end_to_end_for_every_contestant() -> None:
    """At a tiny size on the real control plane (gates, config and deletions as the full
    run has them): every contestant binds every measured pod, none errs."""
    names = [n for n in UPSTREAM_WORKLOADS if not n.endswith("_OpportunisticBatchingDisabled")]
    sizes = {n: (3, 2, 3) for n in names}
    doc = run_real_bench(names, contestants=["ksched", "kube-scheduler", "null"], sizes=sizes)
    assert [w["name"] for w in doc["workloads"]] == names
    for w in doc["workloads"]:
        for c, r in w["results"].items():
            assert "error" not in r, (w["name"], c, r)
            assert r["scheduled"] == 3, (w["name"], c, r)


def test_watch_lists_again_when_the_api_server_says_too_many_requests() -> None:
    """At 15,000 nodes the harness's re-list met a 429; it must retry, not end the run."""
    import aiohttp

    from ksched.bench.real import _Binds, _watch

    class Lines:
        async def readline(self) -> bytes:
            await anyio.sleep(0.01)  # as the network would, yield
            return b""  # the watch ends: list again

    class Response:
        content = Lines()

        async def __aenter__(self) -> Response:
            return self

        async def __aexit__(self, *exc: object) -> None:
            return None

    class Session:
        def get(self, *a: Any, **kw: Any) -> Response:
            return Response()

    class API:
        url = ""
        session = Session()
        lists = 0

        async def get(self, path: str) -> dict[str, Any]:
            self.lists += 1
            if self.lists == 1:
                raise aiohttp.ClientResponseError(None, (), status=429)  # type: ignore[arg-type]
            pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n"}}
            return {"items": [pod], "metadata": {"resourceVersion": "1"}}

    api, binds = API(), _Binds(1)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch, api, binds)
            with anyio.fail_after(5):
                await binds.done.wait()
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert api.lists >= 2 and set(binds.bound) == {"p"}
