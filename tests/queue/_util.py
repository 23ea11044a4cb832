"""Fake plugins and builders for queue tests: real frameworks, a FakeClock, no sleeping."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ksched.config import load_config_data
from ksched.features import FeatureGates
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PreEnqueuePlugin,
    QueueingHint,
)
from ksched.framework.registry import Registry
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins import register_builtins
from ksched.profile import build_frameworks
from ksched.queue import SchedulingQueue
from ksched.queue.scheduling_queue import QueuedPodInfo
from ksched.util.clock import FakeClock

NODE_ADD = ClusterEvent("Node", "Add")


def _hint_from_label(pod: PodInfo, old: Any, new: Any) -> str:
    """Queue only when the added node carries label good=yes."""
    labels = new.metadata.labels if new is not None else {}
    return QueueingHint.QUEUE if labels.get("good") == "yes" else QueueingHint.SKIP


def _raising_hint(pod: PodInfo, old: Any, new: Any) -> str:
    raise RuntimeError("hint bug")


def _own_label_change(pod: PodInfo, old: Any, new: Any) -> str:
    same = isinstance(new, PodInfo) and new.uid == pod.uid
    return QueueingHint.QUEUE if same else QueueingHint.SKIP


class _Filter(FilterPlugin):
    """A filter that always passes; tests set rejectors on the QueuedPodInfo themselves."""

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class NodeAddOnly(_Filter):
    name = "NodeAddOnly"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(NODE_ADD)]


class Hinted(_Filter):
    name = "Hinted"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(NODE_ADD, _hint_from_label)]


class RaisingHint(_Filter):
    name = "RaisingHint"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(NODE_ADD, _raising_hint)]


class NoExt(_Filter):
    """No events_to_register at all: every event may help."""

    name = "NoExt"


class NothingHelps(_Filter):
    """Registers no event: only the periodic flush retries its pods."""

    name = "NothingHelps"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return []


class PodDelete(_Filter):
    """Registers resource Pod, which also covers assigned-pod events."""

    name = "PodDelete"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Pod", "Delete"))]


class OwnLabels(_Filter):
    name = "OwnLabels"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Pod", "UpdatePodLabel"), _own_label_change)]


class TargetLabels(_Filter):
    """v1.37's own-update resource: hears the queued pod's label change only."""

    name = "TargetLabels"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("TargetPod", "UpdatePodLabel"))]


class OthersLabels(_Filter):
    """v1.37's other-pending-pods resource: never hears the queued pod's own update."""

    name = "OthersLabels"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("UnscheduledPod", "UpdatePodLabel"))]


class ScaleUp(_Filter):
    name = "ScaleUp"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Pod", "UpdatePodScaleUp"))]


class LabelGate(PreEnqueuePlugin):
    """Gates pods labelled hold=yes; registers nothing, so only PreEnqueue re-runs free them."""

    name = "LabelGate"
    open_all = False

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if pod.labels.get("hold") == "yes" and not LabelGate.open_all:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "held")
        return None


def _skip(pod: PodInfo, old: Any, new: Any) -> str:
    return QueueingHint.SKIP


class Waiting(PreEnqueuePlugin):
    """Gates the pods named in ``held`` (as DefaultPreemption gates a preemptor while its
    victims go); hears assigned pods' deletions, with a hint that always skips."""

    name = "Waiting"
    held: frozenset[str] = frozenset()

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if pod.name in Waiting.held:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting")
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("AssignedPod", "Delete"), _skip)]


class InverseSort:
    """A QueueSort with only ``less`` (upstream style): lower priority first."""

    name = "InverseSort"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.priority < b.priority or (a.priority == b.priority and a.timestamp < b.timestamp)


FILTERS = [
    "NodeAddOnly",
    "Hinted",
    "RaisingHint",
    "NoExt",
    "NothingHelps",
    "PodDelete",
    "OwnLabels",
    "TargetLabels",
    "OthersLabels",
    "ScaleUp",
]


def registry() -> Registry:
    reg = Registry()
    register_builtins(reg)
    for cls in (
        NodeAddOnly,
        Hinted,
        RaisingHint,
        NoExt,
        NothingHelps,
        PodDelete,
        OwnLabels,
        TargetLabels,
        OthersLabels,
        ScaleUp,
        LabelGate,
        Waiting,
        InverseSort,
    ):
        reg.register(cls.name, cls, "tests")
    return reg


def config(
    points: dict[str, list[str]] | None = None,
    version: str | None = None,
    gates: dict[str, bool] | None = None,
    **top: Any,
) -> Any:
    """A profile "ksched" with every default disabled and only the named plugins;
    ``version``: the emulated version (the default one if None), ``gates`` set on it."""
    plugins: dict[str, Any] = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
    }
    for point, names in (points or {}).items():
        plugins[point] = {"enabled": [{"name": n} for n in names]}
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "ksched", "plugins": plugins}],
        **top,
    }
    features = None
    if version is not None or gates:
        features = FeatureGates(version or FeatureGates().emulated_version, dict(gates or {}))
    cfg, _ = load_config_data(data, "test", None, features)
    return cfg


def frameworks(
    clock: FakeClock,
    points: dict[str, list[str]] | None = None,
    version: str | None = None,
    gates: dict[str, bool] | None = None,
) -> dict[str, Framework]:
    pts = {"filter": FILTERS, "preEnqueue": ["SchedulingGates", "LabelGate"], **(points or {})}
    return build_frameworks(config(pts, version, gates), registry(), clock=clock)


def make_queue(
    clock: FakeClock | None = None,
    points: dict[str, list[str]] | None = None,
    on_move: Callable[[str, str], None] | None = None,
    version: str | None = None,
    gates: dict[str, bool] | None = None,
) -> SchedulingQueue:
    clock = clock or FakeClock()
    return SchedulingQueue(
        frameworks(clock, points, version, gates),
        clock=clock,
        initial_backoff=1.0,
        max_backoff=10.0,
        on_move=on_move,
    )


def fail(
    q: SchedulingQueue,
    qpi: QueuedPodInfo,
    *plugins: str,
    pending: tuple[str, ...] = (),
    error: bool = False,
) -> None:
    """What the scheduler's failure handler does after a rejected attempt."""
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    q.add_unschedulable_if_not_present(qpi, error=error)


def pop(q: SchedulingQueue) -> QueuedPodInfo:
    qpi = q.pop_nowait()
    assert qpi is not None
    return qpi
