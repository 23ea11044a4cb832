"""The package root is the public API: a plugin author or embedder imports from ``ksched``
(and ``ksched.testing``) only, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import ksched
import ksched.testing

# What the issue (#17) names, plus what the example package and contrib need.
PLUGIN_API = {
    "Plugin", "PreEnqueuePlugin", "QueueSortPlugin", "PreFilterPlugin", "FilterPlugin",
    "PostFilterPlugin", "PreScorePlugin", "ScorePlugin", "ReservePlugin", "PermitPlugin",
    "PreBindPlugin", "BindPlugin", "PostBindPlugin", "Status", "Code", "SUCCESS",
    "CycleState", "StateData", "MAX_NODE_SCORE", "MIN_NODE_SCORE", "NOT_SIGNABLE", "NodeInfo",
    "PodInfo", "Snapshot", "IntArray", "BoolArray", "ClusterEvent", "ClusterEventWithHint",
    "QueueingHint", "NODE_ADD", "ASSIGNED_POD_DELETE", "PreFilterResult", "PostFilterResult",
    "NodeToStatus", "PluginArgsError", "Handle", "WatchedResource", "extension_points_of",
}  # fmt: skip
EMBEDDING_API = {"SchedulerDaemon", "APIClient", "load_config", "load_config_data", "Registry",
                 "default_registry"}  # fmt: skip
TESTING_API = {"make_node", "make_pod", "pod_info", "node_info", "run_filter", "run_score",
               "schedule", "ScheduleResult", "TestAPIServer"}  # fmt: skip


def test_root_exports_the_plugin_and_embedding_api() -> None:
    assert not (PLUGIN_API | EMBEDDING_API) - set(ksched.__all__)
    assert not TESTING_API - set(ksched.testing.__all__)
    for name in ksched.__all__:
        assert getattr(ksched, name) is not None, name
    for name in ksched.testing.__all__:
        assert getattr(ksched.testing, name) is not None, name
    from ksched.daemon import SchedulerDaemon
    from ksched.framework.interface import NOT_SIGNABLE

    assert ksched.SchedulerDaemon is SchedulerDaemon and ksched.NOT_SIGNABLE is NOT_SIGNABLE


def test_heavy_parts_load_on_first_use() -> None:
    """``import ksched`` (every plugin package does) and the test API server's process skip
    the daemon and the scheduler; the names that need them load them when used."""
    code = (
        "import sys, ksched, ksched.testing\n"
        "heavy = ('ksched.daemon', 'ksched.cluster', 'ksched.scheduler', 'ksched.sim')\n"
        "assert not [m for m in heavy if m in sys.modules], sorted(sys.modules)\n"
        "ksched.testing.run_filter, ksched.SchedulerDaemon\n"
        "assert all(m in sys.modules for m in heavy)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
