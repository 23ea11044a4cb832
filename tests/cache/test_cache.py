"""Cache: aggregates, the assumed-pod lifecycle (assume/confirm/forget/expire), pod and node
events on assumed pods, the node tree, incremental snapshots, cleanup loop and dump."""

from __future__ import annotations

import datetime as dt
import json
import random

import anyio
import msgspec
import pytest

from ksched.api.objects import Node
from ksched.cache import Cache, CacheError, node_tree_order
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
SELECTOR = {"matchLabels": {"a": "b"}}


def zoned(name: str, zone: str, **kw: object) -> Node:
    return make_node(name, labels={ZONE: zone}, **kw)  # type: ignore[arg-type]


def relabel_node(node: Node, **labels: str) -> Node:
    meta = msgspec.structs.replace(node.metadata, labels={**node.metadata.labels, **labels})
    return msgspec.structs.replace(node, metadata=meta)


def bound(pi: PodInfo, node: str) -> PodInfo:
    return pi.assumed_on(node)


def cache_with(*names: str, ttl: float = 30.0) -> tuple[Cache, FakeClock]:
    clock = FakeClock()
    c = Cache(clock, assumed_ttl=ttl)
    for n in names:
        c.add_node(make_node(n))
    return c, clock


# -- aggregates --------------------------------------------------------------------------


def test_node_aggregates_follow_pods() -> None:
    c, _ = cache_with("n1")
    web = make_pod(
        "web",
        containers=[
            {
                "name": "c",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            }
        ],
    )
    aff = make_pod(
        "aff",
        cpu="100m",
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": SELECTOR}
                ]
            }
        },
    )
    besteffort = make_pod("be")
    for p in (web, aff, besteffort):
        c.add_pod(bound(p, "n1"))
    ni = c.nodes["n1"]
    assert ni.requested.milli_cpu == 600 and ni.requested.memory == 1 << 30
    assert ni.non_zero_requested.milli_cpu == 600 + 100  # best-effort counts 100m
    assert ni.used_ports.check_conflict("", "TCP", 8080)
    assert [p.name for p in ni.pods_with_affinity] == ["aff"]
    assert [p.name for p in ni.pods_with_required_anti_affinity] == ["aff"]
    c.remove_pod(bound(web, "n1"))
    c.remove_pod(bound(aff, "n1"))
    assert ni.requested.milli_cpu == 0 and not ni.used_ports.check_conflict("", "TCP", 8080)
    assert ni.pods_with_affinity == [] and [p.name for p in ni.pods] == ["be"]


def test_image_states_count_nodes_per_image() -> None:
    c = Cache(FakeClock())
    img = [{"names": ["nginx:1"], "sizeBytes": 100}]
    c.add_node(make_node("a", images=img))
    c.add_node(make_node("b", images=img))
    assert c.nodes["a"].image_states["nginx:1"].num_nodes == 2
    c.update_node(make_node("b"))  # image gone from b
    assert c.nodes["a"].image_states["nginx:1"].num_nodes == 1
    c.remove_node("a")
    assert c.dump()["images"] == 0


def _img(size: int, *names: str) -> dict[str, object]:
    return {"names": list(names), "sizeBytes": size}


def _states(c: Cache) -> dict[str, dict[str, tuple[int, int]]]:
    """Each live node's image states as (size, nodes holding the name): the live counts
    while no snapshot has frozen them (test_image_counts_frozen.py)."""
    return {
        n: {name: (st.size, st.num_nodes) for name, st in ni.image_states.items()}
        for n, ni in sorted(c.nodes.items())
        if ni.node is not None
    }


def test_image_counts_follow_add_update_and_remove() -> None:
    c = Cache(FakeClock())
    web = _img(100, "web@sha256:1", "web:v1")
    db = _img(300, "db:v2")
    c.add_node(make_node("a", images=[web, db]))
    c.add_node(make_node("b", images=[web]))
    c.add_node(make_node("c", images=[_img(999, "web:v1")]))  # a later size is ignored
    assert _states(c) == {
        "a": {"web@sha256:1": (100, 2), "web:v1": (100, 3), "db:v2": (300, 1)},
        "b": {"web@sha256:1": (100, 2), "web:v1": (100, 3)},
        "c": {"web:v1": (100, 3)},
    }
    # the nodes holding a name share its one summary, as in upstream's imageStates
    assert c.nodes["a"].image_states["web:v1"] is c.nodes["c"].image_states["web:v1"]
    c.update_node(make_node("b", images=[db]))  # b's images change
    assert _states(c)["a"] == {"web@sha256:1": (100, 1), "web:v1": (100, 2), "db:v2": (300, 2)}
    assert _states(c)["b"] == {"db:v2": (300, 2)}
    c.remove_node("a")
    assert _states(c) == {"b": {"db:v2": (300, 1)}, "c": {"web:v1": (100, 1)}}
    assert c.dump()["images"] == 2  # web@sha256:1 is on no node: forgotten
    c.update_node(make_node("c"))
    assert c.dump()["images"] == 1
    # a name no node lists any more starts afresh, with the size of its next node
    c.add_node(make_node("d", images=[_img(7, "web:v1")]))
    assert _states(c)["d"] == {"web:v1": (7, 1)}


def test_a_node_listing_a_name_twice_counts_once() -> None:
    c = Cache(FakeClock())
    twice = [_img(5, "x:1", "x:1"), _img(6, "x:1", "y:1")]
    c.add_node(make_node("a", images=twice))
    c.add_node(make_node("b", images=[_img(5, "x:1")]))
    assert _states(c)["a"] == {"x:1": (5, 2), "y:1": (6, 1)}
    c.update_node(make_node("a", images=twice))  # the same list again: no double count
    assert _states(c)["a"] == {"x:1": (5, 2), "y:1": (6, 1)}
    c.remove_node("a")
    assert _states(c) == {"b": {"x:1": (5, 1)}}
    assert c.dump()["images"] == 1


def test_a_removed_node_with_pods_left_gives_back_its_images() -> None:
    c = Cache(FakeClock())
    c.add_node(make_node("a", images=[_img(5, "x:1")]))
    c.add_node(make_node("b", images=[_img(5, "x:1")]))
    c.add_pod(bound(make_pod("p"), "a"))
    c.remove_node("a")  # the pod's deletion has not arrived: a ghost NodeInfo stays
    assert c.nodes["a"].image_states == {}
    assert _states(c) == {"b": {"x:1": (5, 1)}}
    c.add_node(make_node("a", images=[_img(5, "x:1")]))  # back before its pod went
    assert _states(c)["b"] == {"x:1": (5, 2)}


def test_image_counts_equal_upstreams_node_sets() -> None:
    """Random add/update/remove sequences against upstream's imageStates model: per name
    the first node's size and the set of nodes listing it, NumNodes being its length."""
    rng = random.Random(33)
    names = [f"img-{k}:v1" for k in range(8)]
    c = Cache(FakeClock())
    nodes: dict[str, list[dict[str, object]]] = {}  # node -> its images, as the cache has them
    ref: dict[str, tuple[int, set[str]]] = {}

    def ref_remove(node: str) -> None:
        for img in nodes.pop(node):
            for name in img["names"]:  # type: ignore[attr-defined]
                state = ref.get(name)
                if state is not None:
                    state[1].discard(node)
                    if not state[1]:
                        del ref[name]

    for _ in range(400):
        node = f"n{rng.randrange(6)}"
        if node in nodes and rng.random() < 0.3:
            c.remove_node(node)
            ref_remove(node)
        else:
            imgs = [
                _img(rng.choice((10, 20)), *rng.sample(names, rng.randint(1, 3)))
                for _ in range(rng.randint(0, 4))
            ]
            if node in nodes:
                ref_remove(node)
            c.add_node(make_node(node, images=imgs))
            nodes[node] = imgs
            for img in imgs:
                for name in img["names"]:  # type: ignore[attr-defined]
                    ref.setdefault(name, (img["sizeBytes"], set()))[1].add(node)  # type: ignore[arg-type]
        want = {
            n: {
                name: (ref[name][0], len(ref[name][1]))
                for img in imgs
                for name in img["names"]  # type: ignore[attr-defined]
            }
            for n, imgs in sorted(nodes.items())
        }
        assert _states(c) == want
        assert c.dump()["images"] == len(ref)


# -- assumed pods --------------------------------------------------------------------------


def test_assume_then_confirm_then_nothing_expires() -> None:
    c, clock = cache_with("n1")
    pod = make_pod("p", cpu="1")
    assumed = pod.assumed_on("n1")
    c.assume_pod(assumed, "n1")
    assert c.is_assumed(pod) and c.nodes["n1"].requested.milli_cpu == 1000
    snap = Snapshot()
    c.update_snapshot(snap)
    assert int(snap.req_cpu[snap.row("n1")]) == 1000  # the next cycle sees it
    with pytest.raises(CacheError):
        c.assume_pod(assumed, "n1")
    c.finish_binding(assumed)
    c.add_pod(bound(pod, "n1"))  # the watch confirms
    assert not c.is_assumed(pod) and c.nodes["n1"].requested.milli_cpu == 1000
    clock.advance(3600)
    assert c.cleanup_expired() == []
    with pytest.raises(CacheError):
        c.add_pod(bound(pod, "n1"))  # already added


def test_forget_gives_resources_back_and_only_works_on_assumed_pods() -> None:
    c, _ = cache_with("n1")
    pod = make_pod("p", cpu="1").assumed_on("n1")
    c.assume_pod(pod, "n1")
    c.forget_pod(pod)
    assert c.nodes["n1"].requested.milli_cpu == 0 and c.get_pod(pod) is None
    with pytest.raises(CacheError):
        c.forget_pod(pod)  # not in the cache any more
    c.add_pod(pod)
    with pytest.raises(CacheError):
        c.forget_pod(pod)  # added, not assumed
    other = make_pod("q").assumed_on("n1")
    c.assume_pod(other, "n1")
    with pytest.raises(CacheError):
        c.forget_pod(other.assumed_on("n2"))  # assumed elsewhere


def test_assumed_pod_expires_only_after_finish_binding_plus_ttl() -> None:
    c, clock = cache_with("n1", ttl=30)
    pod = make_pod("p", cpu="1").assumed_on("n1")
    c.assume_pod(pod, "n1")
    clock.advance(1000)
    assert c.cleanup_expired() == []  # binding still in progress: never expires
    c.finish_binding(pod)  # at t=1000
    clock.set(1030)
    assert c.cleanup_expired() == []  # deadline not passed yet (upstream: now.After)
    clock.set(1030.001)
    assert c.cleanup_expired() == [pod]
    assert c.get_pod(pod) is None and c.nodes["n1"].requested.milli_cpu == 0
    # The bound pod showing up late is simply added back.
    c.add_pod(pod)
    assert c.nodes["n1"].requested.milli_cpu == 1000 and not c.is_assumed(pod)


def test_ttl_zero_never_expires() -> None:
    c, clock = cache_with("n1", ttl=0)
    pod = make_pod("p").assumed_on("n1")
    c.assume_pod(pod, "n1")
    c.finish_binding(pod)
    clock.advance(1e9)
    assert c.cleanup_expired() == [] and c.is_assumed(pod)


def test_confirming_an_identical_version_leaves_the_node_and_snapshot_alone() -> None:
    c, _ = cache_with("n1")
    pod = make_pod("p", cpu="1", labels={"app": "x"})
    assumed = pod.assumed_on("n1")
    c.assume_pod(assumed, "n1")
    snap = Snapshot()
    c.update_snapshot(snap)
    gen = c.nodes["n1"].generation
    # the watch's version: new resourceVersion, otherwise the same pod on the same node
    meta = msgspec.structs.replace(assumed.pod.metadata, resource_version="42")
    observed = PodInfo(msgspec.structs.replace(assumed.pod, metadata=meta))
    c.add_pod(observed)
    ni = c.nodes["n1"]
    assert not c.is_assumed(pod) and ni.generation == gen and ni.requested.milli_cpu == 1000
    assert ni.pods == [observed] and ni.pods[0] is observed
    assert c.update_snapshot(snap) == 0  # nothing to re-clone
    c.remove_pod(observed)
    assert c.nodes["n1"].requested.milli_cpu == 0


def test_confirming_a_relabelled_version_updates_the_node() -> None:
    c, _ = cache_with("n1")
    pod = make_pod("p", cpu="1", labels={"app": "x"})
    assumed = pod.assumed_on("n1")
    c.assume_pod(assumed, "n1")
    snap = Snapshot()
    c.update_snapshot(snap)
    gen = c.nodes["n1"].generation
    meta = msgspec.structs.replace(assumed.pod.metadata, labels={"app": "y"})
    observed = PodInfo(msgspec.structs.replace(assumed.pod, metadata=meta))
    c.add_pod(observed)
    assert c.nodes["n1"].generation != gen and c.nodes["n1"].pods == [observed]
    assert c.update_snapshot(snap) == 1
    assert snap.get("n1").pods[0].labels == {"app": "y"}  # type: ignore[union-attr]


def test_assumed_pod_bound_to_another_node_moves_there() -> None:
    c, _ = cache_with("n1", "n2")
    pod = make_pod("p", cpu="1")
    c.assume_pod(pod.assumed_on("n1"), "n1")
    c.add_pod(bound(pod, "n2"))
    assert c.nodes["n1"].requested.milli_cpu == 0
    assert c.nodes["n2"].requested.milli_cpu == 1000 and not c.is_assumed(pod)


def test_update_of_an_assumed_pod_is_rejected_and_changes_nothing() -> None:
    c, _ = cache_with("n1")
    pod = make_pod("p", cpu="1").assumed_on("n1")
    c.assume_pod(pod, "n1")
    with pytest.raises(CacheError):
        c.update_pod(pod, make_pod("p", cpu="3", uid=pod.uid).assumed_on("n1"))
    assert c.is_assumed(pod) and c.nodes["n1"].requested.milli_cpu == 1000
    with pytest.raises(CacheError):
        c.update_pod(make_pod("nope"), make_pod("nope"))


def test_update_of_an_added_pod_replaces_its_resources() -> None:
    c, _ = cache_with("n1")
    pod = make_pod("p", cpu="1", uid="u1").assumed_on("n1")
    c.add_pod(pod)
    bigger = make_pod("p", cpu="3", uid="u1").assumed_on("n1")
    c.update_pod(pod, bigger)
    assert c.nodes["n1"].requested.milli_cpu == 3000 and c.get_pod(pod) is bigger


def test_delete_of_an_assumed_pod_removes_it_and_unknown_delete_is_an_error() -> None:
    c, _ = cache_with("n1")
    pod = make_pod("p", cpu="1")
    c.assume_pod(pod.assumed_on("n1"), "n1")
    c.remove_pod(pod)  # the version from the event may not even carry nodeName
    assert not c.is_assumed(pod) and c.nodes["n1"].requested.milli_cpu == 0
    with pytest.raises(CacheError):
        c.remove_pod(pod)


def test_removed_node_lingers_until_its_pods_are_gone() -> None:
    c, _ = cache_with("n1", "n2")
    pod = bound(make_pod("p"), "n1")
    c.add_pod(pod)
    c.remove_node("n1")
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.row("n1") is None and c.nodes["n1"].node is None and c.node_count() == 1
    c.remove_pod(pod)
    assert "n1" not in c.nodes
    with pytest.raises(CacheError):
        c.remove_node("n1")
    # A pod may also arrive before its node.
    c.add_pod(bound(make_pod("early"), "n3"))
    c.update_snapshot(snap)
    assert snap.row("n3") is None
    c.add_node(make_node("n3"))
    c.update_snapshot(snap)
    ni = snap.get("n3")
    assert ni is not None and [p.name for p in ni.pods] == ["early"]


@pytest.mark.anyio
async def test_run_cleanup_expires_on_the_fake_clock() -> None:
    c, clock = cache_with("n1", ttl=5)
    pod = make_pod("p").assumed_on("n1")
    c.assume_pod(pod, "n1")
    c.finish_binding(pod)
    seen: list[list[PodInfo]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(c.run_cleanup, 1.0, seen.append)
        while not seen and clock.now() < 100:
            await anyio.lowlevel.checkpoint()
            clock.advance_to_next()
            await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
    assert seen == [[pod]] and clock.now() == 6.0


# -- node tree ------------------------------------------------------------------------------


def test_node_tree_interleaves_zones_in_first_seen_order() -> None:
    c = Cache(FakeClock())
    for name, zone in [
        ("a1", "a"),
        ("a2", "a"),
        ("b1", "b"),
        ("c1", "c"),
        ("a3", "a"),
        ("b2", "b"),
        ("x", ""),
    ]:
        c.add_node(zoned(name, zone) if zone else make_node(name))
    assert c.node_order() == ["a1", "b1", "c1", "x", "a2", "b2", "a3"]
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [ni.name for ni in snap] == c.node_order()
    assert node_tree_order({}) == []


def test_node_tree_removal_keeps_order_and_empty_zones_leave_the_rotation() -> None:
    c = Cache(FakeClock())
    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c")]:
        c.add_node(zoned(name, zone))
    c.remove_node("a1")  # upstream nodeTree.removeNode preserves the zone's order
    assert c.node_order() == ["a2", "b1", "c1", "a3"]
    c.remove_node("b1")  # zone b is empty: gone from the zone list
    c.add_node(zoned("b9", "b"))  # and comes back last
    assert c.node_order() == ["a2", "c1", "b9", "a3"]
    # A zone change moves the node to the end of its new zone.
    c.update_node(zoned("a2", "c"))
    assert c.node_order() == ["a3", "c1", "b9", "a2"]
    assert c.node_count() == 4


# -- incremental snapshot ---------------------------------------------------------------------


def test_snapshot_refreshes_only_dirty_nodes_and_their_columns() -> None:
    c, _ = cache_with("n1", "n2", "n3")
    snap = Snapshot()
    assert c.update_snapshot(snap) == 3
    before = list(snap.node_infos)
    assert c.update_snapshot(snap) == 0
    pod = make_pod("p", cpu="1500m", memory="1Gi").assumed_on("n2")
    c.assume_pod(pod, "n2")
    assert c.update_snapshot(snap) == 1
    i = snap.row("n2")
    assert i is not None
    assert snap.node_infos[0] is before[0] and snap.node_infos[2] is before[2]
    assert snap.node_infos[i] is not before[i]
    assert int(snap.req_cpu[i]) == 1500 and int(snap.num_pods[i]) == 1
    assert int(snap.req_mem[i]) == 1 << 30 and int(snap.nz_cpu[i]) == 1500
    assert before[i].pods == []  # the previous snapshot's clone is untouched
    # Node object changes: labels, taints, allocatable, unschedulable.
    zone_ids, vocab = snap.label_column(ZONE)
    assert int(zone_ids[i]) == -1
    node = make_node(
        "n2",
        cpu="8",
        labels={ZONE: "z"},
        unschedulable=True,
        taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
    )
    c.update_node(node)
    assert c.update_snapshot(snap) > 0
    i = snap.row("n2")
    assert i is not None
    zone_ids, vocab = snap.label_column(ZONE)
    assert int(zone_ids[i]) == vocab["z"]
    assert int(snap.alloc_cpu[i]) == 8000 and bool(snap.unschedulable[i])
    assert snap.taint_sets[int(snap.taint_ids[i])][0].key == "k"


def test_node_add_and_remove_rebuild_reusing_unchanged_clones() -> None:
    c, _ = cache_with("n1", "n2")
    snap = Snapshot()
    c.update_snapshot(snap)
    n1 = snap.get("n1")
    c.add_node(make_node("n3"))
    assert c.update_snapshot(snap) == 1  # only the new node is cloned
    assert snap.get("n1") is n1 and [ni.name for ni in snap] == ["n1", "n2", "n3"]
    assert len(snap.alloc_cpu) == 3 and list(snap.all_rows) == [0, 1, 2]
    c.remove_node("n1")
    assert c.update_snapshot(snap) == 0
    assert [ni.name for ni in snap] == ["n2", "n3"] and snap.row("n1") is None


def test_a_snapshot_the_cache_did_not_last_update_is_rebuilt() -> None:
    c, _ = cache_with("n1", "n2")
    s1, s2 = Snapshot(), Snapshot()
    c.update_snapshot(s1)
    c.assume_pod(make_pod("p", cpu="1").assumed_on("n1"), "n1")
    c.update_snapshot(s2)
    assert c.update_snapshot(s1) == 2  # s1 missed the change: full rebuild
    i = s1.row("n1")
    assert i is not None and int(s1.req_cpu[i]) == 1000


def _with_required_term(name: str, kind: str) -> PodInfo:
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": SELECTOR}
    return make_pod(
        name, affinity={kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    )


def test_affinity_lists_follow_incremental_updates() -> None:
    c, _ = cache_with("n1", "n2")
    snap = Snapshot()
    c.update_snapshot(snap)
    aff = _with_required_term("aff", "podAffinity")
    c.add_pod(bound(aff, "n2"))
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.have_pods_with_affinity] == ["n2"]
    assert snap.have_pods_with_affinity[0] is snap.get("n2")
    assert snap.any_pods_with_affinity
    assert snap.have_pods_with_required_anti_affinity == []
    anti = _with_required_term("anti", "podAntiAffinity")
    c.add_pod(bound(anti, "n1"))
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.have_pods_with_affinity] == ["n1", "n2"]
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity] == ["n1"]
    c.add_pod(bound(make_pod("plain"), "n2"))  # the row's NodeInfo is another object now
    c.update_snapshot(snap)
    assert snap.have_pods_with_affinity[1] is snap.get("n2")
    c.remove_pod(bound(aff, "n2"))
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.have_pods_with_affinity] == ["n1"]
    assert snap.any_pods_with_affinity
    c.remove_pod(bound(anti, "n1"))
    c.update_snapshot(snap)
    assert snap.have_pods_with_affinity == []
    assert snap.have_pods_with_required_anti_affinity == []
    assert not snap.any_pods_with_affinity


# -- dump -------------------------------------------------------------------------------------


def test_dump_is_json_and_shows_nodes_tree_and_assumed_pods() -> None:
    c, _ = cache_with("n1", ttl=30)
    c.add_node(zoned("z1", "a"))
    web = make_pod(
        "web",
        containers=[
            {
                "name": "c",
                "ports": [{"containerPort": 80, "hostPort": 80}],
                "resources": {"requests": {"cpu": "1"}},
            }
        ],
    )
    c.add_pod(bound(web, "n1"))
    assumed = make_pod("a").assumed_on("z1")
    c.assume_pod(assumed, "z1")
    c.finish_binding(assumed)
    d = json.loads(json.dumps(c.dump()))
    assert d["nodeTree"] == ["n1", "z1"]
    assert d["nodes"]["n1"]["pods"] == ["default/web"]
    assert d["nodes"]["n1"]["usedPorts"] == ["0.0.0.0/TCP/80"]
    assert d["nodes"]["n1"]["requested"]["cpu"] == 1000
    assert d["nodes"]["z1"]["zone"] == "a" and d["nodes"]["n1"]["zone"] == ""
    [row] = d["assumedPods"]
    # RFC 3339, wall clock: the assumed TTL (30 s) from now
    deadline = dt.datetime.fromisoformat(row.pop("deadline").replace("Z", "+00:00"))
    expected = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
    assert abs((deadline - expected).total_seconds()) < 5
    assert row == {"pod": "default/a", "node": "z1", "bindingFinished": True}
