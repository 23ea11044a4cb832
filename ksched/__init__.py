"""ksched: a Kubernetes scheduler with kube-scheduler's framework and Python plugins.

The public API for plugin authors is re-exported here; low-level pieces (``api``,
``util``) never import the scheduler core.
"""

from .framework import (
    BindPlugin,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    PermitPlugin,
    Plugin,
    PluginArgsError,
    PodInfo,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Snapshot,
    Status,
)

__version__ = "0.1.0"

__all__ = [
    "BindPlugin",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "FilterPlugin",
    "Handle",
    "NodeInfo",
    "PermitPlugin",
    "Plugin",
    "PluginArgsError",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueueingHint",
    "ReservePlugin",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "__version__",
]
