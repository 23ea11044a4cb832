"""ksched: a Kubernetes scheduler with kube-scheduler's framework and Python plugins.

The package root is the public API: everything a plugin author or an embedder needs is
importable from ``ksched`` (plugin base classes, statuses, cycle state, score constants,
node/pod info and the numpy array types of batch methods, cluster events and their
names, the handle, its listers and its feature gates, ``PluginArgs`` for declarative args,
``KschedError`` (the root of every error ksched raises), the daemon). Tests of plugins need only
``ksched.testing`` besides. Low-level pieces (``api``, ``util``) never import the
scheduler core.

The embedding names (``SchedulerDaemon``, ``APIClient``, ``load_config``,
``load_config_data``) load on first use: they pull in the HTTP server, the API client,
metrics and the config loader, which a plugin package importing ``ksched`` does not need.
"""

from typing import TYPE_CHECKING, Any

from ._compiled import is_compiled
from .api.objects import InvalidObjectError, Node, Pod
from .api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resource
from .features import FeatureGateError, FeatureGates, resolve_feature_gates
from .features.versions import KUBERNETES_VERSION
from .framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SUCCESS,
    ActionType,
    ArgsErrors,
    BindPlugin,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Duration,
    EventResource,
    FilterPlugin,
    FitError,
    GeneratePlacementsResult,
    Handle,
    Int32,
    NoArgs,
    NodeInfo,
    NodeToStatus,
    PermitPlugin,
    Placement,
    PlacementFeasiblePlugin,
    PlacementGeneratePlugin,
    PlacementScore,
    PlacementScorePlugin,
    Plugin,
    PluginArgs,
    PluginArgsError,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterPlugin,
    PodInfo,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ProposedAssignment,
    QueueingHint,
    QueueSortPlugin,
    Registry,
    ReservePlugin,
    ScorePlugin,
    Snapshot,
    StateData,
    Status,
    WatchedResource,
    extension_points_of,
)
from .framework.handle import PodActivator
from .framework.interface import (
    NOT_SIGNABLE,
    PER_CYCLE,
    EnqueueExtensions,
    NarrowsNodes,
    PostFilterOutcome,
    PreFilterExtensions,
    Victims,
)
from .framework.listers import Listers, RevisionedStore
from .framework.snapshot import BoolArray, IntArray
from .framework.waiting_pods import WaitingPod
from .plugins import default_registry
from .queue.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    ASSIGNED_POD_UPDATE,
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE_ADD,
    NODE_DELETE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_DELETE,
    UNSCHEDULED_POD_UPDATE,
    VOLUME_ATTACHMENT,
    WILDCARD,
)
from .util.clock import Clock
from .util.errors import KschedError
from .util.version import __version__

# True in the opt-in compiled build (ksched/_compiled.py lists the mypyc-compiled modules).
COMPILED = is_compiled()

if TYPE_CHECKING:
    from .cluster import APIClient
    from .config import load_config, load_config_data
    from .daemon import SchedulerDaemon


# name -> the module it is loaded from on first use (see the module docstring)
_LAZY = {
    "APIClient": "ksched.cluster",
    "SchedulerDaemon": "ksched.daemon",
    "load_config": "ksched.config",
    "load_config_data": "ksched.config",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "ASSIGNED_POD_UPDATE",
    "COMPILED",
    "CPU",
    "CSI_DRIVER",
    "CSI_NODE",
    "CSI_STORAGE_CAPACITY",
    "EPHEMERAL_STORAGE",
    "KUBERNETES_VERSION",
    "MAX_NODE_SCORE",
    "MEMORY",
    "MIN_NODE_SCORE",
    "NODE_ADD",
    "NODE_DELETE",
    "NOT_SIGNABLE",
    "PERSISTENT_VOLUME",
    "PERSISTENT_VOLUME_CLAIM",
    "PER_CYCLE",
    "PODS",
    "STORAGE_CLASS",
    "SUCCESS",
    "UNSCHEDULED_POD_ADD",
    "UNSCHEDULED_POD_DELETE",
    "UNSCHEDULED_POD_UPDATE",
    "VOLUME_ATTACHMENT",
    "WILDCARD",
    "APIClient",
    "ActionType",
    "ArgsErrors",
    "BindPlugin",
    "BoolArray",
    "Clock",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "Duration",
    "EnqueueExtensions",
    "EventResource",
    "FeatureGateError",
    "FeatureGates",
    "FilterPlugin",
    "FitError",
    "GeneratePlacementsResult",
    "Handle",
    "Int32",
    "IntArray",
    "InvalidObjectError",
    "KschedError",
    "Listers",
    "NarrowsNodes",
    "NoArgs",
    "Node",
    "NodeInfo",
    "NodeToStatus",
    "PermitPlugin",
    "Placement",
    "PlacementFeasiblePlugin",
    "PlacementGeneratePlugin",
    "PlacementScore",
    "PlacementScorePlugin",
    "Plugin",
    "PluginArgs",
    "PluginArgsError",
    "Pod",
    "PodActivator",
    "PodGroupAssignments",
    "PodGroupInfo",
    "PodGroupPostFilterPlugin",
    "PodInfo",
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
    "ProposedAssignment",
    "QueueSortPlugin",
    "QueueingHint",
    "Registry",
    "ReservePlugin",
    "Resource",
    "RevisionedStore",
    "SchedulerDaemon",
    "ScorePlugin",
    "Snapshot",
    "StateData",
    "Status",
    "Victims",
    "WaitingPod",
    "WatchedResource",
    "__version__",
    "default_registry",
    "extension_points_of",
    "load_config",
    "load_config_data",
    "resolve_feature_gates",
]
