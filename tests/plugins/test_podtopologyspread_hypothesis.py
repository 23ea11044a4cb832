"""PodTopologySpread's vectorised state against a direct transcription of upstream's
per-node loops (``calPreFilterState``/``Filter``, ``initPreScoreState``/``PreScore``/
``Score``/``NormalizeScore``) on random clusters."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ksched.framework.cycle_state import CycleState
from ksched.framework.snapshot import NodeInfoView, Snapshot
from ksched.framework.status import Code
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins.nodeaffinity import required_node_affinity
from ksched.plugins.podtopologyspread.common import (
    HOSTNAME,
    Constraint,
    count_pods,
    matches_inclusion,
    node_has_keys,
)
from ksched.plugins.podtopologyspread.filtering import PRE_FILTER_KEY, PreFilterState
from ksched.plugins.podtopologyspread.scoring import go_round, topology_normalizing_weight
from tests.factories import make_cache_and_snapshot, make_snapshot
from tests.plugins.test_podtopologyspread_common import (
    UNSCHEDULABLE_TAINT,
    mk_node,
    mk_pod,
    plugin,
    spread,
)

KEYS = ["zone", HOSTNAME, "rack"]
SELECTORS = [
    {"matchLabels": {"app": "a"}},
    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
    {},
    None,
]


@st.composite
def clusters(draw: Any) -> tuple[list[Any], list[PodInfo]]:
    nodes = []
    for i in range(draw(st.integers(1, 7))):
        labels: dict[str, str] = {}
        if draw(st.booleans()):
            labels["zone"] = draw(st.sampled_from(["z1", "z2", "z3", ""]))
        if draw(st.integers(0, 4)):
            labels[HOSTNAME] = f"n{i}"
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
        if draw(st.booleans()):
            labels["disk"] = "ssd"
        taints = [UNSCHEDULABLE_TAINT] if draw(st.integers(0, 3)) == 0 else None
        nodes.append(mk_node(f"n{i}", taints, labels=labels))
    pods = []
    for j in range(draw(st.integers(0, 14))):
        node = nodes[draw(st.integers(0, len(nodes) - 1))].metadata.name
        labels = draw(st.sampled_from([{}, {"app": "a"}, {"app": "b"}, {"other": "x"}]))
        ns = draw(st.sampled_from(["default", "default", "other"]))
        pods.append(mk_pod(f"p{j}", node, labels, ns, terminating=draw(st.integers(0, 5)) == 0))
    return nodes, pods


@st.composite
def incoming(draw: Any, when: str) -> PodInfo:
    constraints = []
    for _ in range(draw(st.integers(1, 2))):
        constraints.append(
            spread(
                draw(st.integers(1, 3)),
                draw(st.sampled_from(KEYS)),
                when,
                draw(st.sampled_from(SELECTORS)),
                min_domains=draw(st.sampled_from([None, 1, 2, 4]))
                if when == "DoNotSchedule"
                else None,
                affinity_policy=draw(st.sampled_from([None, "Honor", "Ignore"])),
                taints_policy=draw(st.sampled_from([None, "Honor", "Ignore"])),
                match_label_keys=draw(st.sampled_from([None, ["app"]])),
            )
        )
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["nodeSelector"] = {"disk": "ssd"}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
    labels = draw(st.sampled_from([{"app": "a"}, {"app": "b"}, {}]))
    return mk_pod("incoming", labels=labels, constraints=constraints, **spec)


def _reference_counts(
    pod: PodInfo, cs: tuple[Constraint, ...], infos: list[NodeInfo]
) -> list[dict[str, int]]:
    """``calPreFilterState``'s per-node loop, verbatim."""
    req = required_node_affinity(pod)
    out: list[dict[str, int]] = [{} for _ in cs]
    for ni in infos:
        node = ni.node
        assert node is not None
        if not node_has_keys(node.metadata.labels, cs):
            continue
        for i, c in enumerate(cs):
            if not matches_inclusion(c, pod, node, req):
                continue
            v = node.metadata.labels[c.topology_key]
            out[i][v] = out[i].get(v, 0) + count_pods(ni.pods, c.selector, pod.namespace)
    return out


@settings(max_examples=150, deadline=None)
@given(clusters(), incoming("DoNotSchedule"))
def test_filter_matches_the_per_node_reference(cluster: Any, pod: PodInfo) -> None:
    nodes, pods = cluster
    snap = make_snapshot(nodes, pods)
    _check_filter(plugin(snap), pod, snap)


def _check_filter(pl: Any, pod: PodInfo, snap: Snapshot) -> None:
    """PreFilter's counts and minimum, Filter and its batch form against the reference."""
    state = CycleState()
    _, st_ = pl.pre_filter(state, pod, snap)
    assert st_ is None
    s: PreFilterState = state.read(PRE_FILTER_KEY)
    want = _reference_counts(pod, s.constraints, snap.node_infos)
    assert [d.as_dict() for d in s.domains] == want
    mins = [min(m.values()) if m else 2**31 - 1 for m in want]
    assert [d.min for d in s.domains] == mins
    mask = pl.filter_batch(state, pod, snap)
    for row, ni in enumerate(snap.node_infos):
        assert ni.node is not None
        labels = ni.node.metadata.labels
        code = Code.SUCCESS
        for c, counts, low in zip(s.constraints, want, mins, strict=True):
            if c.topology_key not in labels:
                code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                break
            low = 0 if len(counts) < c.min_domains else low
            self_match = 1 if c.selector.matches(pod.labels) else 0
            if counts.get(labels[c.topology_key], 0) + self_match - low > c.max_skew:
                code = Code.UNSCHEDULABLE
                break
        got = pl.filter(state, pod, ni)
        assert (Code.SUCCESS if got is None else got.code) == code
        assert bool(mask[row]) == (code == Code.SUCCESS)


def _reference_scores(
    pod: PodInfo,
    cs: tuple[Constraint, ...],
    all_infos: list[NodeInfo],
    filtered: list[NodeInfo],
    require_all: bool,
) -> list[int]:
    """initPreScoreState + PreScore + Score + NormalizeScore, per node."""
    ignored = {
        ni.name
        for ni in filtered
        if require_all and ni.node is not None and not node_has_keys(ni.node.metadata.labels, cs)
    }
    counts: list[dict[str, int]] = [{} for _ in cs]
    for ni in filtered:
        if ni.name in ignored:
            continue
        assert ni.node is not None
        for i, c in enumerate(cs):
            if c.topology_key != HOSTNAME:
                counts[i].setdefault(ni.node.metadata.labels.get(c.topology_key, ""), 0)
    weights = []
    for i, c in enumerate(cs):
        size = len(filtered) - len(ignored) if c.topology_key == HOSTNAME else len(counts[i])
        weights.append(topology_normalizing_weight(size))
    req = required_node_affinity(pod)
    for ni in all_infos:
        node = ni.node
        assert node is not None
        if require_all and not node_has_keys(node.metadata.labels, cs):
            continue
        for i, c in enumerate(cs):
            if not matches_inclusion(c, pod, node, req):
                continue
            v = node.metadata.labels.get(c.topology_key, "")
            if v in counts[i]:
                counts[i][v] += count_pods(ni.pods, c.selector, pod.namespace)
    raw = []
    for ni in filtered:
        assert ni.node is not None
        if ni.name in ignored:
            raw.append(0)
            continue
        score = 0.0
        for i, c in enumerate(cs):
            value = ni.node.metadata.labels.get(c.topology_key)
            if value is None:
                continue
            cnt = (
                count_pods(ni.pods, c.selector, pod.namespace)
                if c.topology_key == HOSTNAME
                else counts[i][value]
            )
            score += cnt * weights[i] + (c.max_skew - 1)
        raw.append(go_round(score))
    valid = [s for ni, s in zip(filtered, raw, strict=True) if ni.name not in ignored]
    low, high = (min(valid), max(max(valid), 0)) if valid else (0, 0)
    out = []
    for ni, s in zip(filtered, raw, strict=True):
        if ni.name in ignored:
            out.append(0)
        elif high == 0:
            out.append(100)
        else:
            out.append(100 * (high + low - s) // high)
    return out


@settings(max_examples=150, deadline=None)
@given(clusters(), incoming("ScheduleAnyway"), st.booleans(), st.data())
def test_scores_match_the_per_node_reference(
    cluster: Any, pod: PodInfo, system: bool, data: Any
) -> None:
    nodes, pods = cluster
    snap = make_snapshot(nodes, pods)
    pl = plugin(snap, args={"defaultingType": "System" if system else "List"})
    _check_scores(pl, pod, snap, data)


def _check_scores(pl: Any, pod: PodInfo, snap: Snapshot, data: Any) -> None:
    """PreScore on random rows; Score (batch and per node) and NormalizeScore against
    the per-node reference."""
    rows = np.array(
        sorted(data.draw(st.sets(st.integers(0, snap.n - 1), min_size=1))), dtype=np.intp
    )
    state = CycleState()
    assert pl.pre_score(state, pod, NodeInfoView(snap.node_infos, rows)) is None
    cs = pl.constraints(pod, "ScheduleAnyway")
    filtered = [snap.node_infos[int(r)] for r in rows]
    raw = pl.score_batch(state, pod, snap, rows)
    assert raw.tolist() == [pl.score(state, pod, ni) for ni in filtered]
    pl.normalize_score(state, pod, raw)
    want = _reference_scores(pod, cs, snap.node_infos, filtered, require_all=True)
    assert raw.tolist() == want


def _relabelled(node: Any, data: Any) -> Any:
    labels = dict(node.metadata.labels)
    key = data.draw(st.sampled_from(KEYS))
    value = data.draw(st.sampled_from([None, "z1", "z2", "z4", ""]))
    if value is None:
        labels.pop(key, None)
    else:
        labels[key] = value
    meta = msgspec.structs.replace(node.metadata, labels=labels)
    return msgspec.structs.replace(node, metadata=meta)


@settings(max_examples=100, deadline=None)
@given(clusters(), incoming("ScheduleAnyway"), st.booleans(), st.data())
def test_a_long_lived_plugin_scores_as_the_reference_while_the_snapshot_changes(
    cluster: Any, pod: PodInfo, system: bool, data: Any
) -> None:
    """What PreScore keeps across cycles (label layouts, per-row counters, parsed
    constraints) follows pods placed and nodes relabelled in a snapshot updated in place,
    as the daemon's is: every cycle scores as the per-node reference."""
    nodes, pods = cluster
    cache, snap = make_cache_and_snapshot(nodes, pods)
    pl = plugin(snap, args={"defaultingType": "System" if system else "List"})
    by_name = {n.metadata.name: n for n in nodes}
    for step in range(data.draw(st.integers(1, 6))):
        if step:
            _change(cache, by_name, step, data)
            cache.update_snapshot(snap)
        _check_scores(pl, pod, snap, data)


def _change(cache: Any, by_name: dict[str, Any], step: int, data: Any) -> None:
    """Relabel a node or place a pod on one, as the daemon's cache sees them."""
    name = data.draw(st.sampled_from(sorted(by_name)))
    if data.draw(st.booleans()):
        by_name[name] = _relabelled(by_name[name], data)
        cache.update_node(by_name[name])
    else:
        labels = data.draw(st.sampled_from([{}, {"app": "a"}, {"app": "b"}]))
        cache.add_pod(mk_pod(f"s{step}", name, labels))


@settings(max_examples=100, deadline=None)
@given(clusters(), incoming("DoNotSchedule"), st.data())
def test_a_long_lived_plugin_filters_as_the_reference_while_the_snapshot_changes(
    cluster: Any, pod: PodInfo, data: Any
) -> None:
    """PreFilter's kept layouts (eligible domains when every node has every key) and
    counters follow a snapshot updated in place."""
    nodes, pods = cluster
    cache, snap = make_cache_and_snapshot(nodes, pods)
    pl = plugin(snap)
    by_name = {n.metadata.name: n for n in nodes}
    for step in range(data.draw(st.integers(1, 6))):
        if step:
            _change(cache, by_name, step, data)
            cache.update_snapshot(snap)
        _check_filter(pl, pod, snap)


@settings(max_examples=100, deadline=None)
@given(clusters(), incoming("DoNotSchedule"), st.data())
def test_add_pod_equals_recomputing_with_the_pods_placed(
    cluster: Any, pod: PodInfo, data: Any
) -> None:
    """AddPod for pods on one node (nominated pods, preemption reprieves) leaves the same
    counts, domains and minimum as a PreFilter over a cluster that holds them.

    Not for empty selectors: upstream counts nothing for them in PreFilter but AddPod
    matches every pod (mirrored here)."""
    nodes, pods = cluster
    assume(all(not c.selector.empty for c in plugin().constraints(pod, "DoNotSchedule")))
    target = data.draw(st.sampled_from(nodes)).metadata.name
    extra = [
        mk_pod(
            f"x{k}",
            target,
            data.draw(st.sampled_from([{}, {"app": "a"}])),
            data.draw(st.sampled_from(["default", "other"])),
        )
        for k in range(data.draw(st.integers(1, 4)))
    ]
    snap = make_snapshot(nodes, pods)
    pl = plugin(snap)
    state = CycleState()
    pl.pre_filter(state, pod, snap)
    ni = snap.get(target)
    assert ni is not None
    for p in extra:
        pl.add_pod(state, pod, p, ni)
    fresh_snap = make_snapshot(nodes, [*pods, *extra])
    fresh = CycleState()
    plugin(fresh_snap).pre_filter(fresh, pod, fresh_snap)
    got: PreFilterState = state.read(PRE_FILTER_KEY)
    want: PreFilterState = fresh.read(PRE_FILTER_KEY)
    assert [(d.as_dict(), d.domains, d.min) for d in got.domains] == [
        (d.as_dict(), d.domains, d.min) for d in want.domains
    ]
