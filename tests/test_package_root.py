"""The package root is the public API: a plugin author or embedder imports from ``ksched``
(and ``ksched.testing``) only, and importing it stays light."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import ksched
import ksched.testing

# What the issue (#17) names, plus what the example package and contrib need.
PLUGIN_API = {
    "Plugin", "PreEnqueuePlugin", "QueueSortPlugin", "PreFilterPlugin", "FilterPlugin",
    "PostFilterPlugin", "PreScorePlugin", "ScorePlugin", "ReservePlugin", "PermitPlugin",
    "PreBindPlugin", "BindPlugin", "PostBindPlugin", "Status", "Code", "SUCCESS",
    "CycleState", "StateData", "MAX_NODE_SCORE", "MIN_NODE_SCORE", "NOT_SIGNABLE", "PER_CYCLE",
    "NodeInfo", "NarrowsNodes",
    "PodInfo", "Snapshot", "IntArray", "BoolArray", "ClusterEvent", "ClusterEventWithHint",
    "QueueingHint", "NODE_ADD", "ASSIGNED_POD_DELETE", "PreFilterResult", "PostFilterResult",
    "NodeToStatus", "PluginArgsError", "Handle", "WatchedResource", "extension_points_of",
    # workload-aware scheduling's extension points and their vocabulary
    "PlacementGeneratePlugin", "PlacementScorePlugin", "PodGroupPostFilterPlugin",
    "PlacementFeasiblePlugin", "PodGroupInfo", "Placement", "PodGroupAssignments",
    "ProposedAssignment", "PlacementScore", "GeneratePlacementsResult",
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


# What a plugin author or embedder reads and copies: docs, examples, contrib, the README.
_PUBLIC_TEXT = ("docs", "examples", "contrib_plugins", "README.md")
_DEEP_IMPORT = re.compile(r"^\s*(?:from\s+ksched\.(?!testing\b)[\w.]+\s+import|import\s+ksched\.)")


def _public_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for entry in _PUBLIC_TEXT:
        path = root / entry
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        out += [f for f in files if f.suffix in (".py", ".md") and "egg-info" not in str(f)]
    return out


def deep_imports(root: Path) -> list[str]:
    """Lines importing ksched deeper than the package root (``ksched.testing`` aside)."""
    return [
        f"{f.relative_to(root)}:{n}: {line.strip()}"
        for f in _public_files(root)
        for n, line in enumerate(f.read_text().splitlines(), 1)
        if _DEEP_IMPORT.match(line) and not line.lstrip().startswith("import ksched.testing")
    ]


def test_docs_examples_contrib_and_readme_import_only_the_root_and_testing() -> None:
    root = Path(__file__).resolve().parents[1]
    assert len(_public_files(root)) > 20  # the scan found the trees
    assert deep_imports(root) == []


def test_the_import_scan_catches_deep_imports(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "```python\nfrom ksched.framework.handle import Handle\nfrom ksched import Status\n"
        "from ksched.testing import make_pod\n    import ksched.api.objects\n```\n"
    )
    assert deep_imports(tmp_path) == [
        "docs/a.md:2: from ksched.framework.handle import Handle",
        "docs/a.md:5: import ksched.api.objects",
    ]
