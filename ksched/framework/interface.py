"""Every extension point of the scheduling framework, in one place.

A plugin is any object with a ``name`` and some of the methods below; which
extension points it serves is decided by which methods it has (as Go decides by
interface), so third-party plugins need not inherit from anything. The base classes
here exist for type checking and documentation.

CPU-bound points (PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Permit)
are plain methods; I/O points (PreBind, Bind, PostBind) are coroutines. Filter and
Score may additionally have a batch form (``filter_batch``/``score_batch``) that
evaluates every node at once over the snapshot's numpy columns; the runtime prefers
it when present and keeps the per-node form for explanations and diagnosis.

A plugin at PreFilter/Filter/PreScore/Score may also sign pods (``sign_pod``, upstream's
SignPlugin): it returns a hashable fragment such that two pods with equal fragments get
equal PreFilter/PreScore state from it and equal Filter/Score results on any node, those
results depending only on the fragment and that node's NodeInfo (not on other nodes, nor
on the node list PreScore gets), or ``NOT_SIGNABLE``. When every such plugin of a profile
signs a pod, the scheduler reuses per-node verdicts and scores across pods with equal
signatures (``ksched.scheduler.cycle_cache``); the outcome is the same either way. A
PreFilter plugin that narrows some pods' nodes whatever the cluster holds may say so
(``NarrowsNodes``), sparing those pods the signing.

A plugin whose results reach beyond one node (inter-pod affinity, topology spread) may
answer ``PER_CYCLE`` instead of ``NOT_SIGNABLE``: the cache then answers the other plugins
and runs this one every cycle, as the full cycle does (PreFilter and ``filter_batch`` over
every row, PreScore on the chosen nodes, Score). Such a plugin's PreFilter never narrows
the node set, it has ``filter_batch``, and whenever its PreFilter or PreScore does not
Skip it writes its state afresh (the cycle's state starts from the cached plugins').
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, runtime_checkable

import numpy as np
from typing_extensions import TypeVar

from .args import PluginArgs
from .cycle_state import CycleState
from .podgroup import (
    GeneratePlacementsResult,
    Placement,
    PlacementProgress,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
)
from .preemption import Victims
from .snapshot import BoolArray, IntArray, Snapshot
from .status import Code, Status
from .types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from .handle import Handle

__all__ = [
    "EXTENSION_POINTS",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NOT_SIGNABLE",
    "PER_CYCLE",
    "POINTS",
    "ArgsT",
    "BindPlugin",
    "ClusterEvent",
    "ClusterEventWithHint",
    "EnqueueExtensions",
    "ExtensionPoint",
    "FilterPlugin",
    "NarrowsNodes",
    "NodeOnlyFilter",
    "NodeToStatus",
    "PermitPlugin",
    "PlacementFeasiblePlugin",
    "PlacementGeneratePlugin",
    "PlacementScorePlugin",
    "Plugin",
    "PodGroupPostFilterPlugin",
    "PodGroupSchedulingFunc",
    "PostBindPlugin",
    "PostFilterOutcome",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueueingHint",
    "ReservePlugin",
    "ScorePlugin",
    "Victims",
    "WatchedResource",
    "extension_points_of",
]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1
# ``sign_pod``'s answer when a pod's results depend on more than the pod and the node.
NOT_SIGNABLE: Any = object()
# ``sign_pod``'s answer when a pod's results reach beyond its node, but the plugin can be
# run every cycle beside the equivalence cache's answer (see the module docstring).
PER_CYCLE: Any = object()


@dataclass(frozen=True, slots=True)
class WatchedResource:
    """A collection a plugin reads synchronously through ``handle.listers``.

    For every enabled plugin declaring it (``watch_resources``), ``ksched run`` lists and
    watches ``path`` (all namespaces) and keeps the raw objects (dicts) in
    ``handle.listers[lister]``, keyed ``namespace/name`` (``name`` if cluster-scoped).
    Each add, update and delete is then reported to the scheduling queue as
    ``ClusterEvent(event_resource, "Add" | "Update" | "Delete")``, so pods a plugin
    rejected come back when an event it registered in ``events_to_register`` happens. A
    collection the API server does not serve (404: its CRD is not installed) is an empty
    store, listed again with backoff, and does not hold up readiness.
    """

    # The collection's API path, e.g. "/apis/scheduling.x-k8s.io/v1alpha1/podgroups".
    path: str
    # The ``handle.listers`` key, e.g. "podgroups".
    lister: str
    # ``ClusterEvent.resource`` of its events, e.g. "podgroups.v1alpha1.scheduling.x-k8s.io".
    event_resource: str


# A plugin's args type: ``self.args`` of a ``Plugin[MyArgs]`` is a ``MyArgs``; a bare
# ``Plugin`` (any plugin written before the parameter existed) has Any.
ArgsT = TypeVar("ArgsT", default=Any)


class Plugin(Generic[ArgsT]):
    """Base of all plugins. ``Args`` (optional, a ``PluginArgs``) declares the plugin's args,
    which it finds decoded and validated in ``self.args``. The extension-point bases take
    that class as their type argument (``class Mine(FilterPlugin[MineArgs],
    ScorePlugin[MineArgs])`` with ``Args = MineArgs``), so ``self.args`` has its type and
    mypy catches a misspelt field; a bare base means Any. A plugin without args takes
    ``NoArgs``.

    ``watch_resources``: custom collections the daemon must watch into ``handle.listers``
    for this plugin (see ``WatchedResource``).

    ``reads_listers``: built-in listers the daemon watches only on request, as
    kube-scheduler's informer factory starts only the informers plugins asked for
    (``services``, ``replicationcontrollers``, ``replicasets``, ``statefulsets``,
    ``persistentvolumeclaims``: typed objects keyed ``namespace/name``;
    ``persistentvolumes``, ``storageclasses``, ``csinodes``, ``csidrivers``,
    ``volumeattachments``: keyed by name; ``csistoragecapacities``: ``namespace/name``;
    all in ``RevisionedStore``s). Changes to the storage kinds also reach the queue as
    cluster events (``PersistentVolumeClaim``/Add and so on), so a plugin registering them
    gets its rejected pods retried.
    """

    name: ClassVar[str] = ""
    watch_resources: ClassVar[Sequence[WatchedResource]] = ()
    reads_listers: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        """``args``: with an ``Args(PluginArgs)`` class, its instance (as the framework
        passes it), a dict (decoded and validated here) or None (the defaults); a plugin
        with args needs no ``__init__`` of its own."""
        args_type = getattr(type(self), "Args", None)
        if isinstance(args_type, type) and issubclass(args_type, PluginArgs):
            args = args_type.resolve(self.name or type(self).__name__, args)
        self.args: ArgsT = args
        self.handle = handle


@dataclass(slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin narrows the cycle to; ``None`` means all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""
    # Filled by preemption so simulate/daemon can report and delete victims.
    victims: list[PodInfo] = field(default_factory=list)
    # Set when the plugin's decision needs I/O (preemption asking HTTP extenders): PostFilter
    # stays synchronous, and the scheduling cycle awaits ``resume()`` for the plugin's
    # actual (result, status) before the runtime judges it. Only returned when an extender
    # is interested in the pod, i.e. when the cycle runs asynchronously.
    resume: Callable[[], Awaitable[PostFilterOutcome]] | None = field(
        default=None, compare=False, repr=False
    )


# What a deferred PostFilter decision resolves to: the plugin's (result, status).
PostFilterOutcome = tuple[PostFilterResult | None, Status | None]


class NodeToStatus:
    """Per-node rejection statuses plus one status for nodes absent from the map."""

    __slots__ = ("absent", "statuses")

    def __init__(self, absent: Status | None = None) -> None:
        self.statuses: dict[str, Status] = {}
        self.absent = absent

    def set(self, node: str, status: Status) -> None:
        self.statuses[node] = status

    def get(self, node: str) -> Status | None:
        s = self.statuses.get(node)
        return s if s is not None else self.absent

    def __len__(self) -> int:
        return len(self.statuses)


class PreEnqueuePlugin(Plugin[ArgsT]):
    #: True when the verdict is the same for every member of one pod group (it reads the
    #: group's state, not the pod's): gating a group then asks the plugin once, not once
    #: per member, which keeps a 500-member gang's arrival linear (each member's arrival
    #: re-gates the group).
    pre_enqueue_per_pod_group: ClassVar[bool] = False

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        raise NotImplementedError


class QueueSortPlugin(Plugin[ArgsT]):
    """Implement ``sort_key`` (fast: a heap key) or ``less`` (upstream style)."""

    def less(self, a: Any, b: Any) -> bool:
        raise NotImplementedError


class PreFilterExtensions(Protocol):
    def add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None: ...
    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...


class PreFilterPlugin(Plugin[ArgsT]):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


@runtime_checkable
class NarrowsNodes(Protocol):
    """Optional on a PreFilter plugin: ``narrows_nodes(pod)`` True promises that the
    plugin's PreFilter narrows ``pod``'s nodes (a ``PreFilterResult`` naming them) or
    rejects it, whatever the cluster holds (NodeAffinity: a metadata.name term). The cycle
    cache keeps results for every node, so it could never answer such a pod: it does not
    sign it (the signing is wasted work). False is always safe, and the plugin's PreFilter
    decides either way; the cache asks only the profile's PreFilter plugins."""

    def narrows_nodes(self, pod: PodInfo) -> bool: ...


class FilterPlugin(Plugin[ArgsT]):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        raise NotImplementedError

    # Optional batch form: a boolean mask over all snapshot rows (True = fits).
    filter_batch: ClassVar[Callable[..., BoolArray] | None] = None
    # Optional: ``filter_with_added(state, pod, node, added)``, the verdict as if the pods
    # ``added`` were on ``node`` too, without copying it (Filter's nominated-pods pass);
    # None: the runtime adds them to a copy of the node instead.
    filter_with_added: ClassVar[Callable[..., Status | None] | None] = None


class NodeOnlyFilter(FilterPlugin[ArgsT]):
    """A Filter plugin whose verdict reads the Node object alone, never the pods on it:
    pods added to or taken off a node (nominated pods, preemption's dry run) cannot
    change it. Only declare it where that holds."""

    def filter_with_added(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo]
    ) -> Status | None:
        return self.filter(state, pod, node)


class PostFilterPlugin(Plugin[ArgsT]):
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


class PreScorePlugin(Plugin[ArgsT]):
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Plugin[ArgsT]):
    """``score`` returns 0..100 after normalization; raise to fail the attempt."""

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    # Optional batch form: raw scores for the given snapshot rows.
    score_batch: ClassVar[Callable[..., IntArray] | None] = None
    # Optional: normalize the raw scores of the scored nodes in place.
    normalize_score: ClassVar[Callable[..., Status | None] | None] = None


class ReservePlugin(Plugin[ArgsT]):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin[ArgsT]):
    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        """Allow (Success), reject, or Wait with a timeout in seconds."""
        raise NotImplementedError


class PreBindPlugin(Plugin[ArgsT]):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """``PreBindPreFlight``: whether ``pre_bind`` will do any work for this pod (None or
        Success: yes; Skip: no). When any plugin will, the binding cycle first writes the
        node to ``status.nominatedNodeName`` so others see where the pod is going
        (NominatedNodeNameForExpectation, on in v1.36). The default answers Skip."""
        return Status(Code.SKIP)


class BindPlugin(Plugin[ArgsT]):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Return Skip to let the next bind plugin bind."""
        raise NotImplementedError


class PostBindPlugin(Plugin[ArgsT]):
    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


# ---- queueing hints (EnqueueExtensions) ----------------------------------------------


# ---- pod groups (GenericWorkload) ---------------------------------------------------
# A whole pod group's cycle: PlacementGenerate proposes node sets, every member is tried
# on each (PlacementFeasible judging the group after each member), PlacementScore ranks the
# feasible ones, PodGroupPostFilter (preemption) runs when none is feasible.

# What a PodGroupPostFilter plugin calls to retry the group's cycle (after its dry-run
# evictions): the assignments it found and the group's status.
PodGroupSchedulingFunc = Callable[[], tuple[PodGroupAssignments, Status | None]]


class PlacementGeneratePlugin(Plugin[ArgsT]):
    def generate_placements(
        self, state: CycleState, group: PodGroupInfo, parent: Placement
    ) -> tuple[GeneratePlacementsResult | None, Status | None]:
        """Candidate node sets for ``group`` within ``parent`` (all nodes at the root)."""
        raise NotImplementedError


class PlacementFeasiblePlugin(Plugin[ArgsT]):
    def placement_feasible(
        self, state: CycleState, group: PodGroupInfo, progress: PlacementProgress
    ) -> Status | None:
        """Success: the group may still be placed (and is, if nothing remains); Wait: not
        yet decided; Unschedulable: it cannot be, however the remaining members fare."""
        raise NotImplementedError


class PlacementScorePlugin(Plugin[ArgsT]):
    """``score_placement`` returns 0..100 after normalization (like Score); higher wins."""

    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> int:
        raise NotImplementedError

    # Optional: ``normalize_placement_score(state, group, scores: list[PlacementScore])``
    # normalizes this plugin's scores of every feasible placement in place. (Typed loosely,
    # as ``normalize_score``: a ClassVar with a full Callable type cannot be overridden by a
    # method.)
    normalize_placement_score: ClassVar[Callable[..., Status | None] | None] = None


class PodGroupPostFilterPlugin(Plugin[ArgsT]):
    def pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        raise NotImplementedError


class QueueingHint:
    QUEUE = "Queue"
    SKIP = "QueueSkip"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of cluster change: resource (Node, Pod, AssignedPod, ...) and action flags."""

    resource: str
    action: str  # Add, Delete, Update, UpdateNodeLabel, UpdateNodeTaint, UpdateNodeAllocatable, ...
    label: str = ""


HintFn = Callable[[PodInfo, Any, Any], str]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: HintFn | None = None


class EnqueueExtensions(Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]: ...


# ---- discovery -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExtensionPoint:
    """One extension point, as each room names it.

    ``key``: its KubeSchedulerConfiguration key (``preFilter``), also how
    ``extension_points_of`` and ``ksched plugins`` name it; ``attr``: the ``config.Plugins``
    field and the framework's plugin-list name (``pre_filter``); ``label``: the
    ``extension_point`` label of the metrics (``PreFilter``); ``methods``: the plugin
    methods that mark a plugin as serving it (any one of them). ``since``: the first
    emulated version whose config has the point ("" for every one); ``configured``: False
    for a point no config key names (PlacementFeasible: upstream's framework takes the
    GangScheduling plugin for it). ``in_tree``: for workload-aware scheduling's points, the
    in-tree plugins that extend it upstream (configuring another in-tree plugin there is
    refused; one of these that ksched does not extend it with yet is left out of it).
    """

    key: str
    attr: str
    label: str
    methods: tuple[str, ...]
    since: str = ""
    configured: bool = True
    in_tree: frozenset[str] = frozenset()


# THE table: every extension point in framework order (that of upstream's v1 ``Plugins``
# struct, whose workload-aware scheduling sets follow multiPoint), PlacementFeasible last.
# Config, the runtime, metrics, bench and ``extension_points_of`` derive from it.
EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("preEnqueue", "pre_enqueue", "PreEnqueue", ("pre_enqueue",)),
    ExtensionPoint("queueSort", "queue_sort", "QueueSort", ("less", "sort_key")),
    ExtensionPoint("preFilter", "pre_filter", "PreFilter", ("pre_filter",)),
    ExtensionPoint("filter", "filter", "Filter", ("filter",)),
    ExtensionPoint("postFilter", "post_filter", "PostFilter", ("post_filter",)),
    ExtensionPoint("preScore", "pre_score", "PreScore", ("pre_score",)),
    ExtensionPoint("score", "score", "Score", ("score",)),
    ExtensionPoint("reserve", "reserve", "Reserve", ("reserve",)),
    ExtensionPoint("permit", "permit", "Permit", ("permit",)),
    ExtensionPoint("preBind", "pre_bind", "PreBind", ("pre_bind",)),
    ExtensionPoint("bind", "bind", "Bind", ("bind",)),
    ExtensionPoint("postBind", "post_bind", "PostBind", ("post_bind",)),
    ExtensionPoint(
        "placementGenerate",
        "placement_generate",
        "PlacementGenerate",
        ("generate_placements",),
        since="1.36",
        in_tree=frozenset({"TopologyPlacementGenerator"}),
    ),
    ExtensionPoint(
        "placementScore",
        "placement_score",
        "PlacementScore",
        ("score_placement",),
        since="1.36",
        # NodeResourcesFit implements ScorePlacement in both releases (gate or not)
        in_tree=frozenset({"PodGroupPodsCount", "NodeResourcesFit"}),
    ),
    ExtensionPoint(
        "podGroupPostFilter",
        "pod_group_post_filter",
        "PodGroupPostFilter",
        ("pod_group_post_filter",),
        since="1.37",
        in_tree=frozenset({"DefaultPreemption", "DynamicResources"}),
    ),
    ExtensionPoint(
        "placementFeasible",
        "placement_feasible",
        "PlacementFeasible",
        ("placement_feasible",),
        since="1.37",
        configured=False,
    ),
)
# key -> its ExtensionPoint
POINTS: dict[str, ExtensionPoint] = {p.key: p for p in EXTENSION_POINTS}

_BASE_METHODS = {
    "pre_enqueue": PreEnqueuePlugin.pre_enqueue,
    "less": QueueSortPlugin.less,
    "pre_filter": PreFilterPlugin.pre_filter,
    "filter": FilterPlugin.filter,
    "post_filter": PostFilterPlugin.post_filter,
    "pre_score": PreScorePlugin.pre_score,
    "score": ScorePlugin.score,
    "reserve": ReservePlugin.reserve,
    "permit": PermitPlugin.permit,
    "pre_bind": PreBindPlugin.pre_bind,
    "bind": BindPlugin.bind,
    "post_bind": PostBindPlugin.post_bind,
    "generate_placements": PlacementGeneratePlugin.generate_placements,
    "placement_feasible": PlacementFeasiblePlugin.placement_feasible,
    "score_placement": PlacementScorePlugin.score_placement,
    "pod_group_post_filter": PodGroupPostFilterPlugin.pod_group_post_filter,
}


def _implements(cls: type, method: str) -> bool:
    fn = getattr(cls, method, None)
    if fn is None or not callable(fn):
        return False
    # A method inherited unchanged from our abstract base does not count.
    return fn is not _BASE_METHODS.get(method)


def extension_points_of(plugin: object | type) -> list[str]:
    """Extension points a plugin (class or instance) implements, in framework order."""
    cls = plugin if isinstance(plugin, type) else type(plugin)
    return [p.key for p in EXTENSION_POINTS if any(_implements(cls, m) for m in p.methods)]


_ = np  # numpy is part of the batch-method contract (BoolArray/IntArray)
