"""The snapshot's image counts are frozen per node, as kube-scheduler's are.

Upstream's ``NodeInfo.Snapshot`` copies each image's ``NumNodes`` from the live node set
when it clones the node, and ``UpdateSnapshot`` clones only nodes whose generation moved
since the last snapshot (any node or pod event on them, including the confirmation of an
assumed pod, which is an update). A node that did not change keeps the count of its last
clone, and ImageLocality reads that count.
"""

from __future__ import annotations

import random

import msgspec
import numpy as np

from ksched.cache import Cache
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.plugins.imagelocality import ImageLocality
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod

MB = 1024 * 1024
X = [{"names": ["x:1"], "sizeBytes": 500 * MB}]


def bound(name: str, node: str) -> PodInfo:
    return make_pod(name).assumed_on(node)


def confirmed(pi: PodInfo) -> PodInfo:
    """The watch's version of an assumed pod: equal but for its resourceVersion."""
    meta = msgspec.structs.replace(pi.pod.metadata, resource_version="42")
    return PodInfo(msgspec.structs.replace(pi.pod, metadata=meta))


def counts(snap: Snapshot) -> dict[str, dict[str, int]]:
    """Per snapshot row, each image name's node count as the snapshot holds it."""
    return {
        ni.name: {name: st.num_nodes for name, st in ni.image_states.items()}
        for ni in snap.node_infos
    }


def a_then_b() -> tuple[Cache, Snapshot]:
    """Node a with image x, a snapshot, then node b with x too, and a snapshot."""
    c, snap = Cache(FakeClock()), Snapshot()
    c.add_node(make_node("a", images=X))
    c.update_snapshot(snap)
    c.add_node(make_node("b", images=X))
    c.update_snapshot(snap)
    return c, snap


def test_an_unchanged_node_keeps_the_count_of_its_last_clone() -> None:
    c, snap = a_then_b()
    assert counts(snap) == {"a": {"x:1": 1}, "b": {"x:1": 2}}
    c.add_pod(bound("p", "a"))  # a changes: cloned again, with the count of now
    c.update_snapshot(snap)
    assert counts(snap) == {"a": {"x:1": 2}, "b": {"x:1": 2}}


def test_removal_and_image_changes_leave_other_nodes_counts_alone() -> None:
    c, snap = Cache(FakeClock()), Snapshot()
    for n in "abc":
        c.add_node(make_node(n, images=X))
    c.update_snapshot(snap)
    assert counts(snap) == {n: {"x:1": 3} for n in "abc"}
    c.remove_node("c")  # the rows are re-laid out, a and b not cloned again
    c.update_snapshot(snap)
    assert counts(snap) == {"a": {"x:1": 3}, "b": {"x:1": 3}}
    c.update_node(make_node("b"))  # b no longer lists x
    c.update_snapshot(snap)
    assert counts(snap) == {"a": {"x:1": 3}, "b": {}}
    c.update_node(make_node("a", images=X))  # a node update (same images): a new clone
    c.update_snapshot(snap)
    assert counts(snap) == {"a": {"x:1": 1}, "b": {}}


def test_confirming_an_assumed_pod_clones_the_node_with_counts_of_now() -> None:
    """Upstream's AddPod of an assumed pod is ``updatePod``: a new generation, so the node
    is cloned again although nothing the scheduler reads from it changed but the counts."""
    c, snap = Cache(FakeClock()), Snapshot()
    c.add_node(make_node("a", images=X))
    c.add_node(make_node("z"))
    p = bound("p", "a")
    c.assume_pod(p, "a")
    c.update_snapshot(snap)
    c.add_node(make_node("b", images=X))
    c.update_snapshot(snap)
    assert counts(snap)["a"] == {"x:1": 1}
    gen = c.nodes["a"].generation
    c.add_pod(confirmed(p))
    assert c.nodes["a"].generation == gen  # confirmed in place
    assert c.update_snapshot(snap) == 1
    assert counts(snap)["a"] == {"x:1": 2}
    # with no count changed since its clone, a confirmation clones nothing
    q = bound("q", "a")
    c.assume_pod(q, "a")
    c.update_snapshot(snap)
    c.add_pod(confirmed(q))
    assert c.update_snapshot(snap) == 0


def test_a_snapshot_of_its_own_has_every_count_of_now() -> None:
    c, _ = a_then_b()
    other = Snapshot()
    c.update_snapshot(other)
    assert counts(other) == {"a": {"x:1": 2}, "b": {"x:1": 2}}


def test_image_locality_scores_the_frozen_counts() -> None:
    """The example of the fix: a (cloned when it alone held x) scores x at 1 node of 2,
    b at 2 of 2; once a changes, both at 2 of 2. The batch and per-node forms agree,
    and the batch form's cached columns follow a row whose counts alone changed."""
    c, snap = Cache(FakeClock()), Snapshot()
    plugin = ImageLocality(None, Handle(snapshot=snap))
    pod = make_pod(containers=[{"name": "c", "image": "x:1"}])
    rows = np.arange(2, dtype=np.intp)

    def scores() -> tuple[list[int], list[int]]:
        batch = plugin.score_batch(CycleState(), pod, snap, rows).tolist()
        return batch, [plugin.score(CycleState(), pod, ni) for ni in snap.node_infos]

    c.add_node(make_node("a", images=X))
    c.update_snapshot(snap)
    c.add_node(make_node("b", images=X))
    c.update_snapshot(snap)
    # a: (250M - 23M) * 100 / (1000M - 23M) = 23; b: (500M - 23M) * 100 / 977M = 48
    assert scores() == ([23, 48], [23, 48])
    c.add_pod(bound("p", "a"))
    c.update_snapshot(snap)
    assert scores() == ([48, 48], [48, 48])


def test_frozen_counts_equal_upstreams_generations() -> None:
    """Random node and pod events against a model of upstream: a node's counts in the
    snapshot are the live node-set sizes as of the last snapshot after it changed."""
    rng = random.Random(7)
    names = [f"img-{k}:v1" for k in range(5)]
    c, snap = Cache(FakeClock()), Snapshot()
    listed: dict[str, list[str]] = {}  # node -> the names it lists
    frozen: dict[str, dict[str, int]] = {}  # the model's snapshot
    changed: set[str] = set()
    assumed: dict[str, PodInfo] = {}
    serial = 0

    def live(name: str) -> int:
        return sum(name in ns for ns in listed.values())

    for _ in range(600):
        op = rng.random()
        node = f"n{rng.randrange(6)}"
        if op < 0.25:
            ns = rng.sample(names, rng.randint(0, 3))
            img = [{"names": ns, "sizeBytes": 10}] if ns else []
            c.add_node(make_node(node, images=img))
            listed[node] = ns
            changed.add(node)
        elif op < 0.33 and node in listed:
            c.remove_node(node)
            del listed[node]
            frozen.pop(node, None)
            changed.discard(node)
        elif op < 0.55 and node in listed:
            serial += 1
            c.add_pod(bound(f"p{serial}", node))
            changed.add(node)
        elif op < 0.7 and node in listed:
            serial += 1
            pi = bound(f"p{serial}", node)
            c.assume_pod(pi, node)
            assumed[pi.name] = pi
            changed.add(node)
        elif op < 0.85 and assumed:
            pi = assumed.pop(rng.choice(sorted(assumed)))
            c.add_pod(confirmed(pi))  # in place here; a new generation upstream
            if pi.node_name in listed:
                changed.add(pi.node_name)
        else:
            c.update_snapshot(snap)
            for n in changed:
                frozen[n] = {name: live(name) for name in listed[n]}
            changed.clear()
            assert counts(snap) == frozen
