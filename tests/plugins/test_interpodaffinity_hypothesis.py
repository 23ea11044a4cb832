"""Property tests: the grouped, columnar InterPodAffinity equals upstream's pod-by-pod loops.

A brute-force reference walks every pod on every node exactly as upstream's
``getExistingAntiAffinityCounts``/``getIncomingAffinityAntiAffinityCounts``/``PreScore``
do; the plugin must produce the same counts, verdicts and raw scores, whether its index
was built from scratch or updated incrementally as pods come and go.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.cache import Cache
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.listers import RevisionedStore
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from ksched.plugins.interpodaffinity.filtering import PRE_FILTER_STATE_KEY
from ksched.plugins.interpodaffinity.scoring import PRE_SCORE_STATE_KEY
from ksched.plugins.interpodaffinity.terms import (
    NamespaceLabels,
    pod_matches_all_terms,
    pod_terms,
)
from tests.plugins.test_interpodaffinity_support import namespace, node, pod

KEYS = ["zone", "region", "h"]
NAMESPACES = {"ns1": namespace("ns1", {"team": "a"}), "ns2": namespace("ns2", {"team": "b"})}

node_labels = st.fixed_dictionaries(
    {},
    optional={
        "zone": st.sampled_from(["z1", "z2"]),
        "region": st.sampled_from(["r1", "r2"]),
        "h": st.sampled_from(["h1", "h2", "h3"]),
    },
)
pod_labels = st.fixed_dictionaries(
    {}, optional={"app": st.sampled_from(["a", "b"]), "tier": st.sampled_from(["x", "y"])}
)
selector = st.one_of(
    st.builds(
        lambda k, v: {"matchLabels": {k: v}},
        st.sampled_from(["app", "tier"]),
        st.sampled_from(["a", "b", "x"]),
    ),
    st.builds(
        lambda k, op, vs: {
            "matchExpressions": [
                {"key": k, "operator": op, **({"values": vs} if op in ("In", "NotIn") else {})}
            ]
        },
        st.sampled_from(["app", "tier"]),
        st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
        st.lists(st.sampled_from(["a", "b", "x"]), min_size=1, max_size=2),
    ),
    st.just({}),
)
namespaces_part = st.sampled_from(
    [
        {},
        {"namespaces": ["ns1"]},
        {"namespaceSelector": {}},
        {"namespaceSelector": {"matchLabels": {"team": "b"}}},
        {"namespaces": ["ns2"], "namespaceSelector": {"matchLabels": {"team": "a"}}},
    ]
)
term = st.builds(
    lambda s, k, n: {"labelSelector": s, "topologyKey": k, **n},
    selector,
    st.sampled_from(KEYS),
    namespaces_part,
)
weighted = st.builds(lambda w, t: {"weight": w, "podAffinityTerm": t}, st.integers(1, 100), term)
section = st.fixed_dictionaries(
    {},
    optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(term, min_size=1, max_size=2),
        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
            weighted, min_size=1, max_size=2
        ),
    },
)
affinity = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"podAffinity": section, "podAntiAffinity": section}),
)
pod_spec = st.tuples(st.sampled_from(["ns1", "ns2", "ns3"]), pod_labels, affinity)


def _pods(
    specs: list[tuple[str, dict[str, str], Any]], nodes: list[str], offset: int
) -> list[PodInfo]:
    return [
        pod(f"p{offset + i}", ns=ns, labels=lb, node=nodes[(offset + i) % len(nodes)], affinity=aff)
        for i, (ns, lb, aff) in enumerate(specs)
    ]


def _reference(
    snap: Snapshot, incoming: PodInfo, hard: int, namespaces: Any = None
) -> tuple[Any, ...]:
    """Upstream's loops, pod by pod."""
    nsl = NamespaceLabels(NAMESPACES if namespaces is None else namespaces)
    me = pod_terms(incoming)
    existing: dict[tuple[str, str], int] = {}
    aff: dict[tuple[str, str], int] = {}
    anti: dict[tuple[str, str], int] = {}
    score: dict[str, dict[str, int]] = {}

    def add(m: dict[tuple[str, str], int], labels: dict[str, str], key: str) -> None:
        if key in labels:
            m[(key, labels[key])] = m.get((key, labels[key]), 0) + 1

    def add_score(labels: dict[str, str], key: str, w: int) -> None:
        if key in labels:
            d = score.setdefault(key, {})
            d[labels[key]] = d.get(labels[key], 0) + w

    for ni in snap:
        assert ni.node is not None
        labels = ni.node.metadata.labels
        for p in ni.pods:
            other = pod_terms(p)
            for t in other.required_anti_affinity:
                if t.matches(incoming.namespace, incoming.labels, nsl):
                    add(existing, labels, t.topology_key)
            if pod_matches_all_terms(me.required_affinity, p.namespace, p.labels, nsl):
                for t in me.required_affinity:
                    add(aff, labels, t.topology_key)
            for t in me.required_anti_affinity:
                if t.matches(p.namespace, p.labels, nsl):
                    add(anti, labels, t.topology_key)
            if not labels:
                continue
            for t, w in me.preferred_affinity:
                if t.matches(p.namespace, p.labels, nsl):
                    add_score(labels, t.topology_key, w)
            for t, w in me.preferred_anti_affinity:
                if t.matches(p.namespace, p.labels, nsl):
                    add_score(labels, t.topology_key, -w)
            if hard > 0:
                for t in other.required_affinity:
                    if t.matches(incoming.namespace, incoming.labels, nsl):
                        add_score(labels, t.topology_key, hard)
            for t, w in other.preferred_affinity:
                if t.matches(incoming.namespace, incoming.labels, nsl):
                    add_score(labels, t.topology_key, w)
            for t, w in other.preferred_anti_affinity:
                if t.matches(incoming.namespace, incoming.labels, nsl):
                    add_score(labels, t.topology_key, -w)
    raw = {}
    for ni in snap:
        assert ni.node is not None
        lb = ni.node.metadata.labels
        raw[ni.name] = sum(v.get(lb[k], 0) for k, v in score.items() if k in lb)
    return existing, aff, anti, (raw if score else None)


def _check(
    plugin: InterPodAffinity, snap: Snapshot, incoming: PodInfo, hard: int, namespaces: Any = None
) -> None:
    existing, aff, anti, raw = _reference(snap, incoming, hard, namespaces)
    state = CycleState()
    _, st_ = plugin.pre_filter(state, incoming, snap)
    if pod_terms(incoming).error:
        return
    if st_ is not None:
        assert st_.is_skip()
        assert not existing and not pod_terms(incoming).required_affinity
        assert not pod_terms(incoming).required_anti_affinity
    else:
        s = state.read(PRE_FILTER_STATE_KEY)
        assert s.existing_anti_affinity_counts.to_dict() == existing
        assert s.affinity_counts.to_dict() == aff
        assert s.anti_affinity_counts.to_dict() == anti
        mask = plugin.filter_batch(state, incoming, snap)
        for i, ni in enumerate(snap):
            assert bool(mask[i]) == (plugin.filter(state, incoming, ni) is None)
    st2 = plugin.pre_score(state, incoming, list(snap))
    if raw is None:
        assert st2 is not None and st2.is_skip()
        return
    assert st2 is None
    assert state.read(PRE_SCORE_STATE_KEY) is not None
    for ni in snap:
        assert plugin.score(state, incoming, ni) == raw[ni.name]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    labels=st.lists(node_labels, min_size=1, max_size=5),
    first=st.lists(pod_spec, max_size=6),
    later=st.lists(pod_spec, max_size=4),
    removed=st.integers(0, 3),
    incoming=pod_spec,
    hard=st.sampled_from([0, 1, 7]),
)
def test_matches_upstream_loops_fresh_and_incremental(
    labels: list[dict[str, str]],
    first: list[Any],
    later: list[Any],
    removed: int,
    incoming: Any,
    hard: int,
) -> None:
    names = [f"n{i}" for i in range(len(labels))]
    nodes = [node(nm, lb) for nm, lb in zip(names, labels, strict=True)]
    cache = Cache()
    for nd in nodes:
        cache.add_node(nd)
    first_pods = _pods(first, names, 0)
    for p in first_pods:
        cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    args = InterPodAffinityArgs(hard, False)
    handle = Handle(snapshot=snap, listers={"namespaces": NAMESPACES})
    plugin = InterPodAffinity(args, handle)
    ns, lb, aff = incoming
    pending = pod("incoming", ns=ns, labels=lb, affinity=aff)
    _check(plugin, snap, pending, hard)

    # Pods come and go; the same plugin's index is updated in place.
    for p in first_pods[:removed]:
        cache.remove_pod(p)
    for p in _pods(later, names, 100):
        cache.add_pod(p)
    cache.update_snapshot(snap)
    _check(plugin, snap, pending, hard)
    fresh = InterPodAffinity(args, Handle(snapshot=snap, listers={"namespaces": NAMESPACES}))
    _check(fresh, snap, pending, hard)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    labels=st.lists(node_labels, min_size=1, max_size=4),
    rounds=st.lists(
        st.tuples(st.lists(pod_spec, max_size=3), st.integers(0, 2), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    incoming=st.lists(pod_spec, min_size=1, max_size=2),
)
def test_counts_brought_up_to_date_from_the_journal_match_upstream_every_round(
    labels: list[dict[str, str]], rounds: list[Any], incoming: list[Any]
) -> None:
    """One plugin over many cycles: PreFilter's counts of each incoming pod's terms are
    those of its previous cycle moved by the index's journal (PreFilterMemo), across pods
    coming and going and namespace relabels (a revisioned namespaces lister, bumped), and
    equal upstream's loops every time; replicas asking again with nothing changed share
    nothing mutable with earlier states."""
    names = [f"n{i}" for i in range(len(labels))]
    cache = Cache()
    for nm, lb in zip(names, labels, strict=True):
        cache.add_node(node(nm, lb))
    namespaces: RevisionedStore[Any] = RevisionedStore()
    namespaces.update(NAMESPACES)
    snap = Snapshot()
    cache.update_snapshot(snap)
    plugin = InterPodAffinity(
        InterPodAffinityArgs(1, False), Handle(snapshot=snap, listers={"namespaces": namespaces})
    )
    pending = [
        pod(f"incoming{i}", ns=ns, labels=lb, affinity=aff)
        for i, (ns, lb, aff) in enumerate(incoming)
    ]
    placed: list[PodInfo] = []
    for r, (added, removed, relabel) in enumerate(rounds):
        for p in placed[:removed]:
            cache.remove_pod(p)
        placed = placed[removed:]
        for p in _pods(added, names, 100 * (r + 1)):
            cache.add_pod(p)
            placed.append(p)
        if relabel:
            team = "b" if namespaces["ns1"].metadata.labels.get("team") == "a" else "a"
            namespaces["ns1"] = namespace("ns1", {"team": team})
            namespaces.bump()
        cache.update_snapshot(snap)
        for p in pending:
            _check(plugin, snap, p, 1, namespaces)
            _check(plugin, snap, p, 1, namespaces)


def test_a_replica_replays_the_journal_instead_of_rebuilding() -> None:
    """The memo is used: a replica's PreFilter after a pod was placed replays the few
    journal entries rather than recounting every group."""
    names = ["n0", "n1", "n2"]
    cache = Cache()
    for i, nm in enumerate(names):
        cache.add_node(node(nm, {"zone": f"z{i % 2}", "h": nm}))
    term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    cache.add_pod(pod("p0", ns="ns1", labels={"app": "a"}, node="n0", affinity=aff))
    snap = Snapshot()
    cache.update_snapshot(snap)
    plugin = InterPodAffinity(
        InterPodAffinityArgs(1, False), Handle(snapshot=snap, listers={"namespaces": NAMESPACES})
    )
    builds = 0
    build = plugin.memo._build

    def counting(*a: Any) -> Any:
        nonlocal builds
        builds += 1
        return build(*a)

    plugin.memo._build = counting  # type: ignore[method-assign]
    for i in range(1, 5):
        replica = pod(f"p{i}", ns="ns1", labels={"app": "a"}, affinity=aff)
        _check(plugin, snap, replica, 1)
        cache.add_pod(pod(f"p{i}", ns="ns1", labels={"app": "a"}, node=names[i % 3], affinity=aff))
        cache.update_snapshot(snap)
    assert builds == 1
