"""NodeDeclaredFeatures: the inference of component-helpers' nodedeclaredfeatures (v0.36.3
for 1.36, v0.37.2 for 1.37),
the plugin's PreFilter/Filter (per node and batch), its queueing hints, and the default
profile keeping such pods off nodes that do not declare what they need."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.nodefeatures import (
    FEATURE_NAMES,
    FEATURES,
    feature_names,
    infer_for_pod_scheduling,
    try_map,
)
from ksched.api.objects import DecodeError, Node, Pod, decode
from ksched.config import DEFAULT_MULTI_POINT
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource
from ksched.framework.handle import Handle
from ksched.framework.interface import QueueingHint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins import BUILTIN_PLUGINS
from ksched.plugins.nodedeclaredfeatures import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    NodeDeclaredFeatures,
)
from ksched.queue.events import node_update_events
from ksched.testing import make_node, make_pod
from ksched.testing.harness import node_info, run_filter, schedule

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOSTNET = "UserNamespacesHostNetworkSupport"
BIND_MOUNT = "VolumeBindMountOptions"
DEFAULT_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
}


def rule(action: str) -> dict[str, Any]:
    return {"action": action, "exitCodes": {"operator": "In", "values": [42]}}


def restart_all_container(name: str = "c") -> dict[str, Any]:
    return {
        "name": name,
        "restartPolicy": "Never",
        "restartPolicyRules": [rule("RestartAllContainers")],
    }


def pod(uid: str = "u1", **spec: Any) -> PodInfo:
    m = make_pod("p", uid=uid, **spec)
    return PodInfo(decode(m, Pod), m)


def node(name: str, features: list[str] | None = None) -> Node:
    return decode(make_node(name, declared_features=features), Node)


def names(p: PodInfo) -> list[str]:
    return feature_names(infer_for_pod_scheduling(p.pod.spec))


# --- inference ------------------------------------------------------------------------------


def test_the_registry_is_upstreams_sorted_by_name() -> None:
    """The union of v0.36.3's and v0.37.2's registries; ``since`` says which has each."""
    assert FEATURE_NAMES == (
        "DRANodeAllocatableResources",
        "DRAOptionalNodeOperations",
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "InPlacePodVerticalScalingMemoryBackedVolumes",
        RESTART_ALL,
        USERNS_HOSTNET,
        BIND_MOUNT,
    )
    v036 = [f.name for f in FEATURES if f.since == (1, 36)]
    assert v036 == [
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        RESTART_ALL,
        USERNS_HOSTNET,
    ]


def _mounts(*options: list[str]) -> list[dict[str, Any]]:
    return [
        {"name": f"v{i}", "mountPath": f"/m{i}", "bindMountOptions": o}
        for i, o in enumerate(options)
    ]


@pytest.mark.parametrize(
    ("spec", "v037"),
    [
        ({"containers": [{"name": "c", "volumeMounts": _mounts(["ro"])}]}, [BIND_MOUNT]),
        ({"initContainers": [{"name": "i", "volumeMounts": _mounts([], ["rbind"])}]}, [BIND_MOUNT]),
        ({"ephemeralContainers": [{"name": "e", "volumeMounts": _mounts(["ro"])}]}, [BIND_MOUNT]),
        ({"containers": [{"name": "c", "volumeMounts": _mounts([])}]}, []),
        ({"containers": [{"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/m"}]}]}, []),
        (
            {
                "hostNetwork": True,
                "hostUsers": False,
                "containers": [{"name": "c", "volumeMounts": _mounts(["ro"])}],
            },
            [USERNS_HOSTNET, BIND_MOUNT],
        ),
    ],
    ids=["container", "init container", "ephemeral container", "empty", "none", "with userns"],
)
def test_bind_mount_options_need_a_feature_from_v0_37(
    spec: dict[str, Any], v037: list[str]
) -> None:
    """v0.37.2's VolumeBindMountOptions; v0.36.3 has no such feature."""
    m = {"kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": spec}
    s = decode(m, Pod).spec
    assert feature_names(infer_for_pod_scheduling(s, release=(1, 37))) == v037
    assert feature_names(infer_for_pod_scheduling(s, release=(1, 36))) == [
        f for f in v037 if f != BIND_MOUNT
    ]


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_the_plugin_infers_with_its_releases_registry(version: str) -> None:
    p = pod(containers=[{"name": "c", "volumeMounts": _mounts(["ro"])}])
    bare = node_info(decode(make_node("bare"), Node))
    pl = NodeDeclaredFeatures(None, Handle(features=set_feature_gates([], [version])))
    state = CycleState()
    _, status = pl.pre_filter(state, p, Snapshot([bare]))
    if version == "1.36":
        assert status is not None and status.code == Code.SKIP
        return
    assert status is None
    got = pl.filter(state, p, bare)
    assert got is not None and got.reasons == (ERR_REASON_UNSATISFIED_REQUIREMENTS,)
    declaring = node_info(decode(make_node("ok", declared_features=[BIND_MOUNT]), Node))
    assert pl.filter(state, p, declaring) is None
    assert pl.filter_batch(state, p, Snapshot([bare, declaring])).tolist() == [False, True]


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({}, []),
        ({"containers": [restart_all_container()]}, [RESTART_ALL]),
        (
            {"containers": [{"name": "c"}], "initContainers": [restart_all_container("i")]},
            [RESTART_ALL],
        ),
        (
            {
                "containers": [
                    {"name": "c", "restartPolicy": "Never", "restartPolicyRules": [rule("Restart")]}
                ]
            },
            [],
        ),
        ({"hostNetwork": True, "hostUsers": False}, [USERNS_HOSTNET]),
        ({"hostNetwork": True}, []),
        ({"hostNetwork": True, "hostUsers": True}, []),
        ({"hostUsers": False}, []),
        (
            {"hostNetwork": True, "hostUsers": False, "containers": [restart_all_container()]},
            [RESTART_ALL, USERNS_HOSTNET],
        ),
        # pod-level resources and init containers' resources matter only to resizes
        ({"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}, []),
    ],
    ids=[
        "nothing",
        "restart-all rule in a container",
        "restart-all rule in an init container",
        "a plain Restart rule",
        "host network in a user namespace",
        "host network alone",
        "host network, host users",
        "user namespace alone",
        "both features",
        "pod-level resources",
    ],
)
def test_features_inferred_from_the_spec(spec: dict[str, Any], want: list[str]) -> None:
    m = {"kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": spec}
    assert feature_names(infer_for_pod_scheduling(decode(m, Pod).spec)) == want


def test_a_feature_past_its_max_version_is_no_longer_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ksched.api import nodefeatures

    spec = pod(hostNetwork=True, hostUsers=False).pod.spec
    i = FEATURE_NAMES.index(USERNS_HOSTNET)
    capped = nodefeatures.NodeFeature(
        USERNS_HOSTNET, nodefeatures.FEATURES[i].infer_for_scheduling, (1, 36)
    )
    features = (*nodefeatures.FEATURES[:i], capped, *nodefeatures.FEATURES[i + 1 :])
    monkeypatch.setattr(nodefeatures, "FEATURES", features)
    assert feature_names(infer_for_pod_scheduling(spec, (1, 36))) == [USERNS_HOSTNET]
    assert infer_for_pod_scheduling(spec, (1, 37)) == 0


@pytest.mark.parametrize(
    ("declared", "want"),
    [
        ([], []),
        ([RESTART_ALL], [RESTART_ALL]),
        (
            ["AFeature", RESTART_ALL, "Mystery/sub", USERNS_HOSTNET, "Zed"],
            [RESTART_ALL, USERNS_HOSTNET],
        ),
        # unsorted (the API server refuses it): upstream's merge walk passes RESTART_ALL by
        ([USERNS_HOSTNET, RESTART_ALL], [USERNS_HOSTNET]),
        ([RESTART_ALL, RESTART_ALL], [RESTART_ALL]),
    ],
    ids=["none", "one", "unknown names dropped", "unsorted as upstream", "duplicate"],
)
def test_try_map_reads_declared_features_as_upstream(declared: list[str], want: list[str]) -> None:
    assert feature_names(try_map(declared)) == want


def test_declared_features_of_a_wrong_type_name_the_field() -> None:
    bad = make_node("n")
    bad["status"]["declaredFeatures"] = "RestartAllContainersOnContainerExits"
    with pytest.raises(DecodeError, match=r"status\.declaredFeatures"):
        decode(bad, Node)
    bad_pod = make_pod("p", hostUsers="no")
    with pytest.raises(DecodeError, match=r"spec\.hostUsers"):
        decode(bad_pod, Pod)


# --- PreFilter / Filter -----------------------------------------------------------------------

NODES = [
    node("none"),
    node("restart", [RESTART_ALL]),
    node("userns", [USERNS_HOSTNET]),
    node("both", ["Other", RESTART_ALL, USERNS_HOSTNET]),
]


@pytest.mark.parametrize(
    ("spec", "fits"),
    [
        ({"containers": [restart_all_container()]}, {"restart", "both"}),
        ({"hostNetwork": True, "hostUsers": False}, {"userns", "both"}),
        (
            {"hostNetwork": True, "hostUsers": False, "containers": [restart_all_container()]},
            {"both"},
        ),
    ],
    ids=["restart-all", "userns-hostnet", "both"],
)
def test_filter_per_node_and_batch_agree(spec: dict[str, Any], fits: set[str]) -> None:
    pl, state, p = NodeDeclaredFeatures(), CycleState(), pod(**spec)
    snap = Snapshot([node_info(n) for n in NODES])
    _, st = pl.pre_filter(state, p, snap)
    assert st is None
    for ni in snap.node_infos:
        got = pl.filter(state, p, ni)
        if ni.name in fits:
            assert got is None, ni.name
        else:
            assert got is not None and got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert got.reasons == ("node(s) didn't match Pod's required features",)
    mask = pl.filter_batch(state, p, snap)
    assert {ni.name for ni, ok in zip(snap.node_infos, mask.tolist(), strict=True) if ok} == fits
    assert ERR_REASON_UNSATISFIED_REQUIREMENTS == "node(s) didn't match Pod's required features"


def test_prefilter_skips_a_pod_that_needs_nothing() -> None:
    state = CycleState()
    _, st = NodeDeclaredFeatures().pre_filter(state, pod(), Snapshot([node_info(NODES[0])]))
    assert st is not None and st.code == Code.SKIP
    # through the framework: a skipped plugin rejects no node
    got = run_filter("NodeDeclaredFeatures", make_pod("p"), [make_node("bare")])
    assert got == {"bare": None}


def test_a_changed_node_refreshes_the_snapshot_column() -> None:
    pl, state, p = NodeDeclaredFeatures(), CycleState(), pod(containers=[restart_all_container()])
    snap = Snapshot([node_info(node("n"))])
    pl.pre_filter(state, p, snap)
    assert pl.filter_batch(state, p, snap).tolist() == [False]
    snap.replace(0, node_info(node("n", [RESTART_ALL])))
    assert pl.filter_batch(state, p, snap).tolist() == [True]
    assert pl.filter(state, p, snap.node_infos[0]) is None


def test_sign_is_the_requirements() -> None:
    pl = NodeDeclaredFeatures()
    a = pl.sign_pod(pod(containers=[restart_all_container()]))
    b = pl.sign_pod(pod(uid="u2", containers=[restart_all_container("other")]))
    assert a == b != pl.sign_pod(pod(hostNetwork=True, hostUsers=False))
    assert pl.sign_pod(pod()) == 0


# --- the default profile ---------------------------------------------------------------------


def test_the_default_profile_ends_with_it_and_the_registry_has_it() -> None:
    assert DEFAULT_MULTI_POINT[-1].name == "NodeDeclaredFeatures"
    assert DEFAULT_MULTI_POINT[-1].weight is None
    assert "NodeDeclaredFeatures" in BUILTIN_PLUGINS


def test_the_default_scheduler_keeps_the_pod_off_nodes_without_the_feature() -> None:
    nodes = [
        make_node("big", cpu="64"),
        make_node("small", cpu="2", declared_features=[RESTART_ALL]),
    ]
    needs = make_pod("p", cpu="1", containers=[restart_all_container()])
    assert schedule(DEFAULT_CONFIG, needs, nodes) == ("small", "")
    plain = make_pod("q", cpu="1")
    assert schedule(DEFAULT_CONFIG, plain, nodes).node == "big"  # least allocated wins
    userns = make_pod("u", hostNetwork=True, hostUsers=False)
    assert schedule(DEFAULT_CONFIG, userns, nodes) == (
        None,
        "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    )


# --- queueing hints ---------------------------------------------------------------------------


def test_events_to_register() -> None:
    events = [
        (e.event.resource, e.event.action) for e in NodeDeclaredFeatures().events_to_register()
    ]
    assert events == [
        (EventResource.NODE, ActionType.ADD),
        (EventResource.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE),
        (EventResource.POD, ActionType.UPDATE),
    ]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, node("n", [RESTART_ALL]), QueueingHint.QUEUE),
        (None, node("n"), QueueingHint.QUEUE),  # upstream queues any new node
        (node("n"), node("n", [RESTART_ALL]), QueueingHint.QUEUE),
        (node("n", [RESTART_ALL]), node("n"), QueueingHint.QUEUE),  # changed, even if removed
        (node("n", [RESTART_ALL]), node("n", [RESTART_ALL]), QueueingHint.SKIP),
    ],
    ids=["add with", "add without", "features added", "features removed", "unchanged"],
)
def test_node_hint(old: Node | None, new: Node, want: str) -> None:
    p = pod(containers=[restart_all_container()])
    assert NodeDeclaredFeatures().is_schedulable_after_node_change(p, old, new) == want


def test_node_update_event_of_declared_features() -> None:
    old, new = node("n"), node("n", [RESTART_ALL])
    assert [e.action for e in node_update_events(old, new)] == ["UpdateNodeDeclaredFeature"]
    assert [e.label for e in node_update_events(old, new)] == ["NodeUpdateNodeDeclaredFeature"]
    assert node_update_events(new, node("n", [RESTART_ALL])) == []


def test_pod_hint() -> None:
    pl = NodeDeclaredFeatures()
    target = pod("u1", containers=[restart_all_container()])
    same = pod("u1", containers=[restart_all_container()], labels={"x": "y"})
    fewer = pod("u1")
    other = pod("u2")
    assert pl.is_schedulable_after_pod_update(target, target, fewer) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_update(target, target, same) == QueueingHint.SKIP
    assert (
        pl.is_schedulable_after_pod_update(
            target, pod("u2", containers=[restart_all_container()]), other
        )
        == QueueingHint.SKIP
    )


@pytest.mark.parametrize(("old", "new"), [(None, "not-a-node"), ("not-a-node", node("n"))])
def test_hints_refuse_wrong_objects(old: Any, new: Any) -> None:
    pl = NodeDeclaredFeatures()
    with pytest.raises(TypeError):
        pl.is_schedulable_after_node_change(pod(), old, new)
    with pytest.raises(TypeError):
        pl.is_schedulable_after_pod_update(pod(), old, new)


def test_a_node_declaring_the_feature_requeues_the_rejected_pod() -> None:
    """Through the scheduler: the pod rejected by NodeDeclaredFeatures waits in the
    unschedulable pool; a label change leaves it there, the node declaring the feature
    (UpdateNodeDeclaredFeature) moves it out, and it is then placed on that node."""
    from ksched.config.load import load_config_data
    from ksched.plugins import default_registry
    from ksched.scheduler.schedule_one import handle_scheduling_failure, scheduling_cycle
    from ksched.testing.harness import _simulation

    reg = default_registry(entry_points=False)
    config, _ = load_config_data(dict(DEFAULT_CONFIG), "test", reg.names())
    bare = make_node("n1")
    needs = make_pod("p", uid="p-uid", containers=[restart_all_container()])
    needs["spec"]["schedulerName"] = config.profiles[0].scheduler_name
    sim = _simulation(config, reg, [bare], [needs], [])
    sched = sim.sched
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    fw = sched.frameworks[qpi.profile]
    res = scheduling_cycle(sched, fw, CycleState(), qpi)
    assert not res.status.is_success()
    handle_scheduling_failure(sched, fw, qpi, res.status, res)
    assert [q.pod_info.key for q in sched.queue.unschedulable_pods()] == ["default/p"]

    relabelled = make_node("n1", labels={"x": "y"})
    sched.on_node_update(decode(bare, Node), decode(relabelled, Node))
    assert [q.pod_info.key for q in sched.queue.unschedulable_pods()] == ["default/p"]

    declared = make_node("n1", labels={"x": "y"}, declared_features=[RESTART_ALL])
    sched.on_node_update(decode(relabelled, Node), decode(declared, Node))
    assert sched.queue.unschedulable_pods() == []
    moved = [*sched.queue.active_pods(), *sched.queue.backoff_pods()]
    assert [q.pod_info.key for q in moved] == ["default/p"]
    sched.cache.update_snapshot(sched.snapshot)
    again = scheduling_cycle(sched, fw, CycleState(), moved[0])
    assert again.status.is_success() and again.node == "n1"
