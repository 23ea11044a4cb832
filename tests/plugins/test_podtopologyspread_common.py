"""PodTopologySpread: builders shared by its test modules, and the common helpers
(constraint parsing, matchLabelKeys, pod counting, default selectors)."""

from __future__ import annotations

from typing import Any

from ksched.api.objects import LabelSelector, Node, Pod, decode
from ksched.api.selectors import Selector, compile_label_selector
from ksched.framework.handle import Handle
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.plugins.podtopologyspread import PodTopologySpread
from ksched.plugins.podtopologyspread.common import (
    Constraint,
    PodCounter,
    changed_rows,
    count_pods,
    default_selector,
    filter_constraints,
)
from tests.factories import make_snapshot

HOSTNAME = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
EXISTS_FOO = {"key": "foo", "operator": "Exists"}
FOO = {"matchExpressions": [EXISTS_FOO]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
TOLERATE_UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}


# ---- builders (st.MakeNode / st.MakePod / SpreadConstraint) --------------------------------


def mk_node(
    name: str,
    taints: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    **kw: str,
) -> Node:
    """A node with exactly the given labels (no implicit hostname label, as st.MakeNode):
    ``mk_node("a", zone="z1", node="a")``; keys with "/" go in ``labels``."""
    alloc = {"cpu": "32", "memory": "64Gi", "pods": "110"}
    return decode(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {**(labels or {}), **kw}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": alloc, "capacity": alloc},
        },
        Node,
    )


def spread(
    max_skew: int,
    key: str,
    when: str = "DoNotSchedule",
    selector: dict[str, Any] | None = None,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: list[str] | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy is not None:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = match_label_keys
    return c


def mk_pod(
    name: str = "p",
    node: str = "",
    labels: dict[str, str] | None = None,
    ns: str = "default",
    constraints: list[dict[str, Any]] | None = None,
    *,
    terminating: bool = False,
    owner: tuple[str, str, str] | None = None,
    uid: str | None = None,
    **spec: Any,
) -> PodInfo:
    """``owner`` is (apiVersion, kind, name) of a controller owner reference."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "uid": uid or f"uid-{ns}-{name}",
        "labels": labels or {},
    }
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner[0],
                "kind": owner[1],
                "name": owner[2],
                "uid": "owner-uid",
                "controller": True,
            }
        ]
    s: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}], **spec}
    if node:
        s["nodeName"] = node
    if constraints:
        s["topologySpreadConstraints"] = constraints
    m = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}
    return PodInfo(decode(m, Pod), m)


def placed(spec: str, ns: str = "default", **labels: str) -> PodInfo:
    """An existing pod ``"name@node"``; label values default to ""."""
    name, _, node = spec.partition("@")
    return mk_pod(name, node, dict(labels), ns)


def node_affinity_in(key: str, values: list[str]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
                ]
            }
        }
    }


def node_affinity_not_in(key: str, values: list[str]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "NotIn", "values": values}]}
                ]
            }
        }
    }


def plugin(
    snap: Snapshot | None = None,
    args: dict[str, Any] | None = None,
    listers: dict[str, Any] | None = None,
) -> PodTopologySpread:
    handle = Handle(snapshot=snap if snap is not None else Snapshot())
    if listers:
        handle.listers.update(listers)
    return PodTopologySpread(args if args is not None else {"defaultingType": "List"}, handle)


def sel(raw: dict[str, Any] | None) -> Selector:
    return compile_label_selector(None if raw is None else decode(raw, LabelSelector))


def same_selector(a: Selector, b: Selector) -> bool:
    return a.nothing == b.nothing and set(a.requirements) == set(b.requirements)


# ---- constraints ----------------------------------------------------------------------------


def test_filter_constraints_applies_defaults_and_keeps_only_the_action() -> None:
    p = mk_pod(
        labels={"foo": ""},
        constraints=[
            spread(1, "zone", "ScheduleAnyway", FOO),
            spread(2, "node", "DoNotSchedule", BAR, 3, "Ignore", "Honor"),
        ],
    )
    got = filter_constraints(p.pod.spec.topology_spread_constraints, p.labels, "DoNotSchedule", "x")
    assert got == (Constraint(2, "node", sel(BAR), 3, "Ignore", "Honor"),)
    soft = filter_constraints(
        p.pod.spec.topology_spread_constraints, p.labels, "ScheduleAnyway", "x"
    )
    assert soft == (Constraint(1, "zone", sel(FOO), 1, "Honor", "Ignore"),)


def test_match_label_keys_are_anded_into_the_selector() -> None:
    p = mk_pod(
        labels={"foo": "", "bar": "a"},
        constraints=[spread(1, "zone", selector=FOO, match_label_keys=["bar", "missing"])],
    )
    (c,) = filter_constraints(
        p.pod.spec.topology_spread_constraints, p.labels, "DoNotSchedule", "x"
    )
    assert same_selector(
        c.selector, sel({"matchLabels": {"bar": "a"}, "matchExpressions": FOO["matchExpressions"]})
    )


def test_match_label_keys_on_empty_selector_and_nil_selector() -> None:
    p = mk_pod(
        labels={"foo": "a"},
        constraints=[
            spread(1, "zone", selector={}, match_label_keys=["foo"]),
            spread(1, "rack", selector=None, match_label_keys=["foo"]),
        ],
    )
    empty, nil = filter_constraints(
        p.pod.spec.topology_spread_constraints, p.labels, "DoNotSchedule", "x"
    )
    assert same_selector(empty.selector, sel({"matchLabels": {"foo": "a"}}))
    assert nil.selector.nothing  # a nil selector stays "nothing"


# ---- counting ---------------------------------------------------------------------------------


def test_count_pods_skips_other_namespaces_terminating_and_empty_selectors() -> None:
    pods = [
        placed("a@n", foo=""),
        placed("b@n", ns="other", foo=""),
        mk_pod("c", "n", {"foo": ""}, terminating=True),
        placed("d@n", bar=""),
    ]
    assert count_pods(pods, sel(FOO), "default") == 1
    assert count_pods(pods, sel({}), "default") == 0  # Empty() selectors count nothing
    assert count_pods(pods, sel(None), "default") == 0


def test_pod_counter_recounts_only_replaced_rows() -> None:
    from ksched.cache import Cache

    cache = Cache()
    for n in ("a", "b", "c"):
        cache.add_node(mk_node(n, node=n))
    cache.add_pod(placed("p1@a", foo=""))
    snap = Snapshot()
    cache.update_snapshot(snap)
    counter = PodCounter("default", sel(FOO))
    first = counter.counts(snap)
    assert dict(zip((ni.name for ni in snap.node_infos), first.tolist(), strict=True)) == {
        "a": 1,
        "b": 0,
        "c": 0,
    }
    untouched = {ni.name: ni for ni in snap.node_infos}
    cache.add_pod(placed("p2@b", foo=""))
    cache.add_pod(placed("p3@b", foo=""))
    cache.update_snapshot(snap)
    assert snap.get("a") is untouched["a"]
    got = counter.counts(snap)
    assert dict(zip((ni.name for ni in snap.node_infos), got.tolist(), strict=True)) == {
        "a": 1,
        "b": 2,
        "c": 0,
    }
    assert got is not first and first.tolist() != got.tolist()  # earlier result not mutated


def test_pod_counter_agrees_with_a_recount_through_random_changes() -> None:
    """The change-log path (the snapshot it counted last) and the identity path (another
    snapshot over the same NodeInfos, or one rebuilt) against counting every row."""
    import random

    from ksched.cache import Cache

    rng = random.Random(7)
    cache = Cache()
    names = [f"n{i}" for i in range(40)]
    for n in names:
        cache.add_node(mk_node(n, node=n))
    snap, other = Snapshot(), Snapshot()
    cache.update_snapshot(snap)
    selectors = [
        sel(FOO),
        sel({"matchLabels": {"foo": ""}}),
        sel({"matchLabels": {"foo": "", "bar": "1"}}),
        sel({"matchLabels": {"bar": "1"}, "matchExpressions": [EXISTS_FOO]}),
        sel({"matchExpressions": [{"key": "bar", "operator": "In", "values": ["1", "2"]}]}),
        sel({}),
        sel(None),
    ]
    counters = [PodCounter("default", s) for s in selectors]
    live: list[PodInfo] = []
    made = 0
    for step in range(300):
        for _ in range(rng.randint(0, 3)):
            if live and rng.random() < 0.3:
                cache.remove_pod(live.pop(rng.randrange(len(live))))
            else:
                labels = rng.choice(
                    [{"foo": ""}, {"bar": "1"}, {"foo": "", "bar": "1"}, {"foo": "x"}, {}]
                )
                ns = rng.choice(["default", "default", "other"])
                made += 1
                p = mk_pod(f"p{made}", rng.choice(names), labels, ns)
                cache.add_pod(p)
                live.append(p)
        if rng.random() < 0.05:
            cache.add_node(mk_node(f"x{step}", node=f"x{step}"))  # a rebuild
            names.append(f"x{step}")
        target = snap if rng.random() < 0.8 else other
        cache.update_snapshot(target)
        for s, counter in zip(selectors, counters, strict=True):
            want = [count_pods(ni.pods, s, "default") for ni in target.node_infos]
            assert counter.counts(target).tolist() == want


def test_counts_follow_label_changes_of_existing_pods() -> None:
    nodes = [mk_node("a", zone="z1"), mk_node("b", zone="z2")]
    p = plugin()
    pod = mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO)])
    from ksched.framework.cycle_state import CycleState
    from ksched.plugins.podtopologyspread.filtering import PRE_FILTER_KEY

    snap1 = make_snapshot(nodes, [placed("x@a", foo="")])
    st = CycleState()
    p.pre_filter(st, pod, snap1)
    assert st.read(PRE_FILTER_KEY).domains[0].as_dict() == {"z1": 1, "z2": 0}
    snap2 = make_snapshot(nodes, [placed("x@a", other="")])
    st = CycleState()
    p.pre_filter(st, pod, snap2)
    assert st.read(PRE_FILTER_KEY).domains[0].as_dict() == {"z1": 0, "z2": 0}


# ---- default selector ---------------------------------------------------------------------------


def _svc(name: str, selector: dict[str, str] | None, ns: str = "default") -> dict[str, Any]:
    spec = {} if selector is None else {"selector": selector}
    return {"kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_default_selector_merges_matching_services() -> None:
    pod = mk_pod(labels={"foo": "bar", "baz": "kar"})
    services = {
        "default/a": _svc("a", {"foo": "bar"}),
        "default/b": _svc("b", {"baz": "kep"}),
        "default/c": _svc("c", None),
        "other/d": _svc("d", {"baz": "kar"}, "other"),
    }
    got = default_selector(pod, {"services": services})
    assert same_selector(got, sel({"matchLabels": {"foo": "bar"}}))


def test_default_selector_adds_replicaset_and_statefulset_selectors_from_listers() -> None:
    rs = {"metadata": {"name": "rs1", "namespace": "default"}, "spec": {"selector": FOO}}
    pod = mk_pod(labels={"foo": "tar"}, owner=("apps/v1", "ReplicaSet", "rs1"))
    assert same_selector(default_selector(pod, {"replicasets": {"default/rs1": rs}}), sel(FOO))
    other = mk_pod(labels={"foo": "tar"}, owner=("apps/v1", "ReplicaSet", "rs2"))
    assert default_selector(other, {"replicasets": {"default/rs1": rs}}).empty
    ss = mk_pod(labels={"foo": "tar"}, owner=("apps/v1", "StatefulSet", "s"))
    assert same_selector(default_selector(ss, {"statefulsets": {"default/s": rs}}), sel(FOO))


def test_default_selector_replication_controller_from_lister() -> None:
    rc = {"metadata": {"name": "rc", "namespace": "default"}, "spec": {"selector": {"a": "b"}}}
    pod = mk_pod(labels={"a": "b", "c": "d"}, owner=("v1", "ReplicationController", "rc"))
    got = default_selector(pod, {"replicationcontrollers": {"default/rc": rc}})
    assert same_selector(got, sel({"matchLabels": {"a": "b"}}))


def test_default_selector_without_listers_uses_the_pods_own_labels() -> None:
    labels = {
        "app": "web",
        "pod-template-hash": "abc",
        "controller-revision-hash": "r1",
        "statefulset.kubernetes.io/pod-name": "web-0",
    }
    rs_pod = mk_pod(labels=labels, owner=("apps/v1", "ReplicaSet", "web-abc"))
    assert same_selector(
        default_selector(rs_pod, {}),
        sel({"matchLabels": {"app": "web", "pod-template-hash": "abc"}}),
    )
    # Not owned by a supported controller, or a malformed apiVersion: nothing to spread by.
    assert default_selector(mk_pod(labels=labels), {}).empty
    assert default_selector(mk_pod(labels=labels, owner=("batch/v1", "Job", "j")), {}).empty
    assert default_selector(mk_pod(labels=labels, owner=("a/b/c", "ReplicaSet", "x")), {}).empty


def test_system_defaulting_gives_soft_constraints_only_to_controlled_pods() -> None:
    p = plugin(args={})
    assert p.system_defaulted
    bare = mk_pod(labels={"app": "web"})
    assert p.constraints(bare, "ScheduleAnyway") == ()
    owned = mk_pod(labels={"app": "web"}, owner=("apps/v1", "ReplicaSet", "web-1"))
    got = p.constraints(owned, "ScheduleAnyway")
    assert [(c.topology_key, c.max_skew) for c in got] == [(HOSTNAME, 3), (ZONE_KEY, 5)]
    assert all(same_selector(c.selector, sel({"matchLabels": {"app": "web"}})) for c in got)
    assert p.constraints(owned, "DoNotSchedule") == ()


def test_own_constraints_win_over_defaults() -> None:
    p = plugin(
        args={
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}
            ],
        },
        listers={"services": {"default/s": _svc("s", {"foo": "bar"})}},
    )
    pod = mk_pod(
        labels={"foo": "bar", "baz": "tar"},
        constraints=[
            spread(1, "zone", selector={"matchLabels": {"baz": "tar"}}),
            spread(2, "planet", "ScheduleAnyway", {"matchLabels": {"fot": "rok"}}),
        ],
    )
    (c,) = p.constraints(pod, "DoNotSchedule")
    assert (c.topology_key, c.max_skew, c.min_domains) == ("zone", 1, 1)


def test_changed_rows_finds_replaced_node_infos_across_chunks() -> None:
    from ksched.framework.types import NodeInfo

    cur = [NodeInfo() for _ in range(300)]
    prev = list(cur)
    for r in (0, 127, 128, 299):
        prev[r] = cur[r].clone()
        prev[r].generation = -1
    assert changed_rows(cur, prev) == [0, 127, 128, 299]
    assert changed_rows(cur, list(cur)) == []


def test_label_matcher_agrees_with_the_selector() -> None:
    """The key-lookup form of equality-only selectors against Selector.matches on every
    combination of present, absent and other values."""
    import itertools

    from ksched.plugins.podtopologyspread.common import label_matcher

    raws: list[Any] = [
        {"matchLabels": {"a": "1"}},
        {"matchLabels": {"a": "1", "b": ""}},
        {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]},
        {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
        {},
        None,
    ]
    values = [None, "", "1", "2"]
    for raw in raws:
        s = sel(raw)
        match = label_matcher(s)
        for va, vb in itertools.product(values, values):
            labels = {k: v for k, v in (("a", va), ("b", vb)) if v is not None}
            assert match(labels) == s.matches(labels), (raw, labels)
