"""The e2e bench's `noplugins` baseline: the real daemon's config minus Filter/Score work."""

from __future__ import annotations

from ksched.bench.e2e import _no_plugins
from ksched.config import default_config
from ksched.plugins import default_registry
from ksched.profile import build_frameworks


def test_noplugins_baseline_keeps_only_queue_sort_and_binder() -> None:
    cfg = default_config()
    reduced = _no_plugins(cfg)
    fws = build_frameworks(reduced, default_registry(entry_points=False))
    fw = fws["ksched"]
    points = {p: names for p, names in fw.list_plugins().items() if names}
    assert points == {"queueSort": ["PrioritySort"], "bind": ["DefaultBinder"]}
    # The original configuration is untouched (the measured run uses it).
    full = build_frameworks(cfg, default_registry(entry_points=False))["ksched"]
    assert "NodeResourcesFit" in full.list_plugins()["filter"]
