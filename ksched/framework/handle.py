"""What a plugin may reach beyond its arguments (``ksched.Handle``).

Plugins touch the cluster only through this: the snapshot of the current cycle,
the pods waiting at Permit, an event recorder, the clock, the configured extenders, the
informer-backed ``listers``, ``activate`` (pods back to the active queue), the scheduler's
random source, nominated pods and preemptions in flight, and a ``ClusterClient`` that the
daemon, the extender server and ``ksched simulate`` each implement — so one plugin runs
unchanged in all three.

The framework declares here what it needs of the rest of ksched as protocols (the
extenders, the core pod writes, the framework running plugins), so it imports nothing
above it: ``extender``, ``scheduler`` and ``queue`` satisfy them structurally. Writes only
one plugin makes (VolumeBinding's PersistentVolume updates, DynamicResources' claims) are
declared by that plugin's package; the client a scheduler is given offers them too
(``ksched.profile.SchedulerCluster``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..api.objects import PersistentVolume, PersistentVolumeClaim, PodCondition
from ..api.resource import ResourceClaim
from ..features import FeatureGates, default_feature_gates
from ..util.clock import Clock, RealClock
from ..util.errors import KschedError
from .cycle_state import CycleState
from .listers import Listers
from .podgroup import PodGroupManager
from .preemption import PreemptionInFlight, Victims
from .recorder import FrameworkRecorder
from .snapshot import Snapshot
from .status import Status
from .types import NodeInfo, PodInfo
from .waiting_pods import WaitingPods

__all__ = [
    "BindError",
    "ClusterClient",
    "ConflictError",
    "EventRecorder",
    "Extenders",
    "Handle",
    "NominatedPods",
    "NullCluster",
    "PluginsRunner",
    "PodActivator",
    "RecordedEvent",
    "RecordingEventRecorder",
]


class BindError(KschedError):
    """A failed bind. ``retry`` says whether requeueing can help (5xx, timeouts)."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


class ConflictError(BindError):
    """A write whose resourceVersion is no longer the stored one (409): read and retry."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retry=True)


class ClusterClient(Protocol):
    """The core pod writes (and reads) the scheduler makes: bind, preempt, nominate.

    The writes of one plugin are that plugin's protocol (``VolumeBinding``'s
    ``VolumeWriter``, ``DynamicResources``' ``ClaimWriter``), which the daemon's, the
    simulator's and ``NullCluster`` implement as well."""

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        """Assign ``pod`` to ``node_name``; raise ``BindError``."""

    async def delete_pod(self, pod: PodInfo) -> None: ...

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None: ...

    async def set_pod_condition(self, pod: PodInfo, condition: PodCondition) -> bool:
        """Merge ``condition`` into the pod's ``status.conditions``, replacing the one of
        its type (preemption marks victims DisruptionTarget); False when the pod is gone."""

    async def get_object(self, api_path: str) -> dict[str, Any] | None:
        """GET an arbitrary object by API path (e.g. a PodGroup); None when absent."""


class NullCluster:
    """A cluster that accepts everything (the extender server with no API)."""

    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        self.bound.append((pod.key, node_name))

    async def delete_pod(self, pod: PodInfo) -> None:
        return None

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        return None

    async def set_pod_condition(self, pod: PodInfo, condition: PodCondition) -> bool:
        return True

    async def get_object(self, api_path: str) -> dict[str, Any] | None:
        return None

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        return pv

    async def update_persistent_volume_claim(
        self, pvc: PersistentVolumeClaim
    ) -> PersistentVolumeClaim:
        return pvc

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return None

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return claim

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        return claim

    async def patch_resource_claim_status(
        self, namespace: str, name: str, patch: dict[str, Any]
    ) -> None:
        return None

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return claim

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        return None

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        return None


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    pod: str
    type: str
    reason: str
    action: str
    note: str


class EventRecorder(Protocol):
    def event(self, pod: PodInfo, type_: str, reason: str, action: str, note: str) -> None: ...


class RecordingEventRecorder:
    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []

    def event(self, pod: PodInfo, type_: str, reason: str, action: str, note: str) -> None:
        self.events.append(RecordedEvent(pod.key, type_, reason, action, note))


class PodActivator(Protocol):
    """What ``Handle.activate`` hands pods to: the scheduling queue."""

    def activate(self, pods: Iterable[PodInfo]) -> None: ...


class NominatedPods(Protocol):
    """What preemption reads of the queue's nominator (``queue.nominator.Nominator``)."""

    def pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def __len__(self) -> int: ...


class Extenders(Protocol):
    """The configured HTTP extenders as plugins use them (upstream ``Handle.Extenders``;
    ``extender.client.ExtenderSet``): preemption passes its candidates through those with
    a preemptVerb."""

    def preempts_for(self, pod: PodInfo) -> bool:
        """Whether ``process_preemption`` would call any extender for ``pod``."""
        ...

    async def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, Victims], snapshot: Snapshot
    ) -> tuple[dict[str, Victims], Status]:
        """The candidates (and victims) every interested extender agrees with, in turn;
        an Error status when a non-ignorable one fails."""
        ...


class PluginsRunner(Protocol):
    """What plugins run of their own profile's framework (upstream's ``PluginsRunner`` that
    ``Handle`` embeds; ``runtime.Framework``): preemption's dry runs and a pod group's
    reservations."""

    @property
    def profile_name(self) -> str: ...

    @property
    def recorder(self) -> FrameworkRecorder: ...

    @property
    def pre_filter_plugins(self) -> Sequence[Any]: ...

    @property
    def filter_plugins(self) -> Sequence[Any]: ...

    def run_filter_plugins(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo] = ()
    ) -> Status: ...

    def run_filter_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, nominated: Sequence[PodInfo]
    ) -> Status: ...

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


def _fixed_seed() -> random.Random:
    return random.Random(0)


@dataclass
class Handle:
    """Built once per profile (``ksched.profile.build_frameworks``) with the scheduler's
    cache, random source, nominator and preemptions in flight and the extenders. Three
    fields follow later: ``framework``, the profile's framework that receives it;
    ``activator``, the queue, itself built on the frameworks (upstream's
    ``SetPodActivator``); ``spawn``, the scheduler's task group while it runs."""

    cluster: ClusterClient = field(default_factory=NullCluster)
    recorder: EventRecorder = field(default_factory=RecordingEventRecorder)
    clock: Clock = field(default_factory=RealClock)
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    # Binding cycles asleep on ``clock`` for something outside the scheduler (a PreBind
    # polling for DRA binding conditions): a simulation may move time on for them
    # (``park``). ``on_park`` is told when one parks (the scheduler's loop progress).
    parked: int = 0
    on_park: Callable[[], None] | None = None
    snapshot: Snapshot = field(default_factory=Snapshot)
    parallelism: int = 16
    # Set by the runtime once the profile's framework exists (PluginsRunner role).
    framework: PluginsRunner | None = None
    # Informer-backed stores by named key (``Listers.SERVICES``, ``listers.services``);
    # a plain dict given here is wrapped.
    listers: Listers = field(default_factory=Listers)
    # The configured HTTP extenders (upstream ``Handle.Extenders``); None without any.
    # Preemption passes its candidates through those with a preemptVerb.
    extenders: Extenders | None = None
    # Starts async work in the scheduler's task group (set while it runs): API calls of
    # synchronous extension points (DynamicResources' Unreserve and PostFilter). None:
    # such calls run at once and must not suspend (simulate's in-memory cluster).
    spawn: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None] | None = None
    # The scheduling queue ``activate`` hands pods to (the Scheduler's, in the daemon and
    # in ``ksched simulate``); None behind the extender server, see ``activate``.
    activator: PodActivator | None = None
    # The effective feature gates (upstream's ``feature.Features`` handed to every plugin
    # factory): ``handle.features.enabled("SchedulerQueueingHints")``. Frozen; one per
    # scheduler, never a process global.
    features: FeatureGates = field(default_factory=default_feature_gates)
    # Pod groups' live states and PodGroups (upstream's ``Handle.PodGroupManager()``): the
    # scheduler's cache; None without one. A cycle's view is ``snapshot.pod_group_state``.
    pod_group_manager: PodGroupManager | None = None
    # The scheduler's seeded random source (preemption's candidate offset, as the
    # scheduler's tie-breaks draw from it); a fixed seed without a scheduler.
    rng: random.Random = field(default_factory=_fixed_seed)
    # The queue's nominated pods (upstream's ``PodNominator``); None without a queue.
    nominator: NominatedPods | None = None
    # Preemptor key (uid, else ns/name; a PodGroup's uid) -> its evictions in flight,
    # the scheduler's: DefaultPreemption's PreEnqueue holds those preemptors back.
    preempting: Mapping[str, PreemptionInFlight] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.listers, Listers):
            self.listers = Listers(self.listers)

    async def park(self, seconds: float) -> None:
        """Sleep ``seconds`` on the clock as a parked binding cycle (counted in
        ``parked``), waiting on something only the world outside can change."""
        self.parked += 1
        try:
            if self.on_park is not None:
                self.on_park()
            await self.clock.sleep(seconds)
        finally:
            self.parked -= 1

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move ``pods`` to the active queue now (upstream's PodsToActivate): those in the
        unschedulable pool or in backoff are retried at once, one being scheduled is
        retried as soon as its attempt fails; pods not pending are ignored. Coscheduling
        calls it for a gang's siblings once one member waits at Permit.

        Behind the extender server this does nothing, on purpose: kube-scheduler owns the
        queue there and ksched only answers its filter/prioritize calls, so there is no
        queue to move pods in.
        """
        if self.activator is not None:
            self.activator.activate(list(pods))
