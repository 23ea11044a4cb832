"""NodeResourcesFit with extended resources backed by DRA (KEP-5004), after upstream's
fit_test.go "extended resource backed by DRA" cases: a request some DeviceClass backs is
not checked on a node whose allocatable has none of it (DynamicResources allocates it
there), and is checked as usual on a node advertising it (device plugin first). Every
batch form (filter_batch, filter_statuses) agrees with Filter."""

from __future__ import annotations

from typing import Any

from ksched.api.objects import decode
from ksched.api.resource import DeviceClass
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.listers import RevisionedStore
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.plugins.noderesources import Fit, FitArgs
from tests.factories import make_node, make_pod, make_snapshot

GPU = "example.com/gpu"
IMPLICIT = "deviceclass.resource.kubernetes.io/gpu-class"


def _class(name: str, ext: str | None = None) -> DeviceClass:
    spec: dict[str, Any] = {"extendedResourceName": ext} if ext else {}
    return decode({"metadata": {"name": name}, "spec": spec}, DeviceClass)


def fit(classes: list[DeviceClass]) -> Fit:
    handle = Handle()
    store: RevisionedStore[DeviceClass] = RevisionedStore()
    for c in classes:
        store[c.metadata.name] = c
        store.bump(c)
    handle.listers["deviceclasses"] = store
    return Fit(FitArgs.parse("NodeResourcesFit", {}), handle)


def verdicts(f: Fit, pod: PodInfo, snap: Snapshot) -> list[tuple[str, ...] | None]:
    """Fit's reasons per row (None: fits), checked against the batch forms."""
    state = CycleState()
    f.pre_filter(state, pod, snap)
    per_node = [f.filter(state, pod, ni) for ni in snap.node_infos]
    assert f.filter_batch(state, pod, snap).tolist() == [s is None for s in per_node]
    statuses = f.filter_statuses(state, pod, snap, snap.all_rows)
    for got, want in zip(statuses, per_node, strict=True):
        assert (got and (got.code, got.reasons)) == (want and (want.code, want.reasons))
    return [None if s is None else tuple(s.reasons) for s in per_node]


NODES = [
    make_node("dra"),  # no example.com/gpu: DRA devices may provide it
    make_node("plugin-1", allocatable={GPU: "1"}),  # a device plugin's one GPU
    make_node("plugin-4", allocatable={GPU: "4"}),
    make_node("zero", allocatable={GPU: "0"}),  # advertised as none: DRA's
]


def _pod(res: dict[str, str]) -> PodInfo:
    return make_pod("p", requests={"cpu": "100m", **res}, limits=dict(res))


def test_backed_request_is_left_to_dra_where_not_advertised() -> None:
    f = fit([_class("gpu-class", GPU)])
    got = verdicts(f, _pod({GPU: "2"}), make_snapshot(NODES))
    assert got == [None, ("Insufficient example.com/gpu",), None, None]


def test_without_a_backing_class_every_node_is_checked() -> None:
    got = verdicts(fit([_class("gpu-class")]), _pod({GPU: "2"}), make_snapshot(NODES))
    insufficient = ("Insufficient example.com/gpu",)
    assert got == [insufficient, insufficient, None, insufficient]


def test_implicit_class_name_is_backed_too() -> None:
    f = fit([_class("gpu-class")])
    got = verdicts(f, _pod({IMPLICIT: "1"}), make_snapshot(NODES))
    assert got == [None, None, None, None]  # no node advertises the implicit name


def test_other_requests_are_still_checked_with_a_backed_one() -> None:
    f = fit([_class("gpu-class", GPU)])
    pod = _pod({GPU: "1", "example.com/fpga": "1"})
    got = verdicts(f, pod, make_snapshot(NODES))
    assert all(g == ("Insufficient example.com/fpga",) for g in got), got
    big = make_pod("big", requests={"cpu": "64", GPU: "1"}, limits={GPU: "1"})
    assert verdicts(f, big, make_snapshot(NODES)) == [("Insufficient cpu",)] * 4


def test_used_devices_do_not_count_on_a_node_that_does_not_advertise() -> None:
    """Pods already on the node with DRA-backed requests add to its requested amount;
    Fit still leaves the resource to DRA there (the devices say what is left)."""
    f = fit([_class("gpu-class", GPU)])
    running = make_pod("running", requests={GPU: "3"}, limits={GPU: "3"}, node_name="dra")
    snap = make_snapshot([NODES[0]], [running])
    assert verdicts(f, _pod({GPU: "1"}), snap) == [None]


def test_a_class_created_later_applies_from_the_next_cycle() -> None:
    f = fit([])
    pod = _pod({GPU: "1"})
    assert verdicts(f, pod, make_snapshot(NODES[:1])) == [("Insufficient example.com/gpu",)]
    store = f.handle.listers["deviceclasses"]  # type: ignore[union-attr]
    cls = _class("gpu-class", GPU)
    store["gpu-class"] = cls
    store.bump(cls)
    assert verdicts(f, pod, make_snapshot(NODES[:1])) == [None]


# ---- queueing hints (isSchedulableAfterDeviceClassEvent, isSchedulableAfterNodeChange) ----


def _hint(f: Fit, resource: str, event: str) -> Any:
    for h in f.events_to_register():
        if (h.event.resource, h.event.action) == (resource, event):
            return h.hint
    raise AssertionError(f"{resource}/{event} not registered")


def test_device_class_hint() -> None:
    hint = _hint(fit([]), "DeviceClass", "Add")
    assert _hint(fit([]), "DeviceClass", "Update") is hint
    gpu_pod = _pod({GPU: "1"})
    implicit_pod = _pod({IMPLICIT: "1"})
    assert hint(gpu_pod, None, _class("x", GPU)) == "Queue"  # explicit name it asks for
    assert hint(gpu_pod, None, _class("x", "example.com/other")) == "QueueSkip"
    assert hint(gpu_pod, None, _class("x")) == "QueueSkip"
    assert hint(implicit_pod, None, _class("gpu-class")) == "Queue"  # its implicit name
    assert hint(implicit_pod, None, _class("other")) == "QueueSkip"
    # updates: only a changed extendedResourceName the pod asks for
    assert hint(gpu_pod, _class("x"), _class("x", GPU)) == "Queue"
    assert hint(gpu_pod, _class("x", GPU), _class("x", GPU)) == "QueueSkip"
    assert hint(implicit_pod, _class("gpu-class"), _class("gpu-class", GPU)) == "QueueSkip"


def test_node_hint_counts_what_dra_may_provide() -> None:
    f = fit([_class("gpu-class", GPU)])
    hint = _hint(f, "Node", "UpdateNodeAllocatable")
    pod = _pod({GPU: "1"})
    plugin_node = make_node("n", allocatable={GPU: "1"})
    no_gpu = make_node("n", cpu="8")
    assert hint(pod, None, make_node("n")) == "Queue"  # DRA may provide the GPU there
    # more cpu on a node without the resource: DRA might fit it now
    assert hint(pod, make_node("n"), no_gpu) == "Queue"
    # the device plugin's GPU taken away: DRA's turn
    assert hint(pod, plugin_node, make_node("n")) == "Queue"
    # without a backing class, a node lacking the resource never fits
    assert _hint(fit([]), "Node", "Add")(pod, None, make_node("n")) == "QueueSkip"
    # a node advertising too few is checked as before
    assert hint(_pod({GPU: "2"}), None, plugin_node) == "QueueSkip"
