"""PodTopologySpread's default selectors (upstream ``helper.DefaultSelector``) over the
typed objects the daemon's informers deliver, and how long constraints built from them
stay cached."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import ReplicaSet, ReplicationController, Service, StatefulSet, decode
from ksched.framework.listers import RevisionedStore
from ksched.plugins.podtopologyspread.common import default_selector
from tests.plugins.test_podtopologyspread_common import mk_pod, plugin, same_selector, sel

SA = "ScheduleAnyway"


def svc(name: str, selector: dict[str, str] | None, ns: str = "default") -> Service:
    spec = {} if selector is None else {"selector": selector}
    return decode({"metadata": {"name": name, "namespace": ns}, "spec": spec}, Service)


def workload(cls: type[Any], name: str, selector: Any, ns: str = "default") -> Any:
    spec = {} if selector is None else {"selector": selector}
    return decode({"metadata": {"name": name, "namespace": ns}, "spec": spec}, cls)


def keyed(*objs: Any) -> RevisionedStore[Any]:
    store: RevisionedStore[Any] = RevisionedStore()
    for o in objs:
        store[f"{o.metadata.namespace}/{o.metadata.name}"] = o
    return store


# ---- TestGetPodServices --------------------------------------------------------------------

SERVICES = {
    f"test/service-{i}": svc(f"service-{i}", {"app": f"test-{i}"}, "test") for i in range(3)
}


@pytest.mark.parametrize(
    ("i", "want"),
    [
        (0, {"app": "test-0"}),
        (1, {"app": "test-1"}),
        (2, {"app": "test-2"}),
        (3, None),
        (4, None),
    ],
)
def test_pod_services(i: int, want: dict[str, str] | None) -> None:
    pod = mk_pod(f"test-pod-{i}", labels={"app": f"test-{i}", "label": f"label-{i}"}, ns="test")
    got = default_selector(pod, {"services": SERVICES})
    if want is None:
        assert got.empty
    else:
        assert same_selector(got, sel({"matchLabels": want}))


# ---- DefaultSelector over typed objects ------------------------------------------------------


def test_services_and_replicaset_selectors_are_anded() -> None:
    pod = mk_pod(labels={"app": "web", "tier": "front"}, owner=("apps/v1", "ReplicaSet", "rs"))
    rs = workload(
        ReplicaSet,
        "rs",
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]},
    )
    listers = {
        "services": keyed(svc("web", {"app": "web"}), svc("none", None), svc("x", {"app": "x"})),
        "replicasets": keyed(rs),
    }
    got = default_selector(pod, listers)
    want = sel(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}],
        }
    )
    assert same_selector(got, want)


def test_statefulset_and_replication_controller_objects() -> None:
    ss_pod = mk_pod(labels={"app": "db"}, owner=("apps/v1", "StatefulSet", "db"))
    ss = workload(StatefulSet, "db", {"matchLabels": {"app": "db"}})
    got = default_selector(ss_pod, {"statefulsets": keyed(ss)})
    assert same_selector(got, sel({"matchLabels": {"app": "db"}}))
    rc_pod = mk_pod(labels={"a": "b", "c": "d"}, owner=("v1", "ReplicationController", "rc"))
    rc = workload(ReplicationController, "rc", {"a": "b"})
    got = default_selector(rc_pod, {"replicationcontrollers": keyed(rc)})
    assert same_selector(got, sel({"matchLabels": {"a": "b"}}))
    # An RC without a selector adds nothing: the services' selector alone (empty here).
    bare = workload(ReplicationController, "rc", None)
    assert default_selector(rc_pod, {"replicationcontrollers": keyed(bare)}).empty


@pytest.mark.parametrize(
    "selector",
    [None, {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}],
    ids=["nil selector", "unparsable selector"],
)
def test_replicaset_selectors_that_select_nothing_add_nothing(selector: Any) -> None:
    """``LabelSelectorAsSelector`` failing or giving Nothing leaves the services' selector."""
    pod = mk_pod(labels={"app": "web"}, owner=("apps/v1", "ReplicaSet", "rs"))
    listers = {
        "services": keyed(svc("web", {"app": "web"})),
        "replicasets": keyed(workload(ReplicaSet, "rs", selector)),
    }
    assert same_selector(default_selector(pod, listers), sel({"matchLabels": {"app": "web"}}))


def test_a_known_lister_without_the_controller_gives_no_fallback() -> None:
    pod = mk_pod(labels={"app": "web"}, owner=("apps/v1", "ReplicaSet", "gone"))
    assert default_selector(pod, {"replicasets": keyed()}).empty
    assert same_selector(default_selector(pod, {}), sel({"matchLabels": {"app": "web"}}))


# ---- caching of default constraints -----------------------------------------------------------


def _selector_of(p: Any, pod: Any) -> Any:
    (c, *_) = p.constraints(pod, SA)
    return c.selector


def test_default_constraints_follow_revisioned_listers() -> None:
    services = keyed(svc("web", {"app": "web"}))
    p = plugin(args={}, listers={"services": services})
    pod = mk_pod(labels={"app": "web", "tier": "front"})
    first = p.constraints(pod, SA)
    assert same_selector(_selector_of(p, pod), sel({"matchLabels": {"app": "web"}}))
    assert p.constraints(pod, SA) is first  # cached while nothing changed

    services["default/front"] = svc("front", {"tier": "front"})
    services.bump()
    want = sel({"matchLabels": {"app": "web", "tier": "front"}})
    assert same_selector(_selector_of(p, pod), want)

    del services["default/web"], services["default/front"]
    services.bump()
    assert p.constraints(pod, SA) == ()

    # A lister that appears later counts as a change too.
    rs = workload(ReplicaSet, "rs", {"matchLabels": {"tier": "front"}})
    owned = mk_pod(labels={"app": "web", "tier": "front"}, owner=("apps/v1", "ReplicaSet", "rs"))
    assert same_selector(_selector_of(p, owned), want)  # the pod's labels stand in for it
    assert p.handle is not None
    p.handle.listers["replicasets"] = keyed(rs)
    assert same_selector(_selector_of(p, owned), sel({"matchLabels": {"tier": "front"}}))


def test_plain_mapping_listers_are_read_every_time() -> None:
    services = {"default/web": svc("web", {"app": "web"})}
    p = plugin(args={}, listers={"services": services})
    pod = mk_pod(labels={"app": "web", "tier": "front"})
    assert same_selector(_selector_of(p, pod), sel({"matchLabels": {"app": "web"}}))
    services["default/web"] = svc("web", {"tier": "front"})
    assert same_selector(_selector_of(p, pod), sel({"matchLabels": {"tier": "front"}}))


def test_own_constraints_are_cached_whatever_the_listers() -> None:
    services: dict[str, Any] = {}
    p = plugin(args={}, listers={"services": services})
    own = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": SA}]
    pod = mk_pod(labels={"app": "web"}, constraints=own)
    first = p.constraints(pod, SA)
    services["default/web"] = svc("web", {"app": "web"})
    assert p.constraints(pod, SA) is first


def test_services_of_other_namespaces_never_select_the_pod() -> None:
    services = keyed(svc("web", {"app": "web"}, ns="other"), svc("nil", None))
    p = plugin(args={}, listers={"services": services})
    pod = mk_pod(labels={"app": "web"})
    assert p.constraints(pod, SA) == ()  # nothing in its namespace selects it
    services["default/web"] = svc("web", {"app": "web"})
    services.bump()
    assert same_selector(_selector_of(p, pod), sel({"matchLabels": {"app": "web"}}))


# ---- constraints shared across pods ------------------------------------------------------


def test_default_constraints_are_shared_only_by_pods_default_selector_treats_alike() -> None:
    """Pods of one namespace with equal labels and controller share the defaulted
    constraints; any difference default_selector reads, or a lister change, does not."""
    services = keyed(svc("web", {"app": "web"}))
    rs = workload(ReplicaSet, "rs", {"matchLabels": {"rs": "1"}})
    p = plugin(args={}, listers={"services": services, "replicasets": keyed(rs)})
    labels = {"app": "web", "tier": "x"}
    a = p.constraints(mk_pod("a", labels=labels), SA)
    assert p.constraints(mk_pod("b", labels=dict(labels)), SA) is a
    assert same_selector(a[0].selector, sel({"matchLabels": {"app": "web"}}))
    # another namespace, other labels, a controller: their own selectors
    assert p.constraints(mk_pod("c", labels=labels, ns="other"), SA) == ()
    assert p.constraints(mk_pod("d", labels={"app": "db"}), SA) == ()
    owned = mk_pod("e", labels=labels, owner=("apps/v1", "ReplicaSet", "rs"))
    want = sel({"matchLabels": {"app": "web", "rs": "1"}})
    assert same_selector(p.constraints(owned, SA)[0].selector, want)
    # a new Service selecting them: a new pod with the labels seen before gets it too
    services["default/front"] = svc("front", {"tier": "x"})
    services.bump()
    want = sel({"matchLabels": {"app": "web", "tier": "x"}})
    assert same_selector(p.constraints(mk_pod("f", labels=labels), SA)[0].selector, want)


def test_own_constraints_are_shared_by_equal_specs_but_match_label_keys_per_pod() -> None:
    own = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": SA,
            "labelSelector": {"matchLabels": {"app": "web"}}}]  # fmt: skip
    p = plugin(args={})
    a = p.constraints(mk_pod("a", labels={"app": "web"}, constraints=own), SA)
    assert p.constraints(mk_pod("b", labels={"app": "x"}, constraints=own), SA) is a
    other = [{**own[0], "maxSkew": 2}]
    assert p.constraints(mk_pod("c", constraints=other), SA)[0].max_skew == 2
    keyed_own = [{**own[0], "matchLabelKeys": ["rev"]}]
    r1 = p.constraints(mk_pod("d", labels={"app": "web", "rev": "1"}, constraints=keyed_own), SA)
    r2 = p.constraints(mk_pod("e", labels={"app": "web", "rev": "2"}, constraints=keyed_own), SA)
    assert r1[0].selector.matches({"app": "web", "rev": "1"})
    assert not r2[0].selector.matches({"app": "web", "rev": "1"})
    assert r2[0].selector.matches({"app": "web", "rev": "2"})
