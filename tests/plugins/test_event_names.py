"""Plugins name the cluster events they register (``EventResource``/``ActionType``)."""

from __future__ import annotations

import re
from pathlib import Path

from ksched import ActionType, ClusterEvent, EventResource
from ksched.queue import events as queue_events

ROOT = Path(__file__).resolve().parents[2]


def test_no_plugin_builds_a_cluster_event_from_string_literals() -> None:
    sources = [*(ROOT / "ksched" / "plugins").rglob("*.py")]
    sources += (ROOT / "contrib_plugins" / "ksched_contrib").glob("*.py")
    literal = re.compile(r"ClusterEvent\(\s*(\"|'|[^,()]+,\s*[\"'])")
    offenders = [
        f"{p.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        for p in sources
        for text in [p.read_text()]
        for m in literal.finditer(text)
    ]
    assert offenders == []


def test_names_equal_the_strings_upstream_uses() -> None:
    assert ClusterEvent(EventResource.NODE, ActionType.ADD) == ClusterEvent("Node", "Add")
    assert f"{EventResource.ASSIGNED_POD}{ActionType.UPDATE_POD_LABEL}" == (
        "AssignedPodUpdatePodLabel"
    )
    # the queue's storage and DRA resources are the same names
    assert queue_events.PERSISTENT_VOLUME_CLAIM is EventResource.PERSISTENT_VOLUME_CLAIM
    assert queue_events.RESOURCE_CLAIM == "ResourceClaim"
