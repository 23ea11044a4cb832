"""Nominator: per-node nominated pods, as upstream's add/delete/UpdateNominatedPod."""

from __future__ import annotations

import msgspec

from ksched.framework.types import PodInfo
from ksched.queue import Nominator
from tests.factories import make_pod


def with_nominated(pi: PodInfo, node: str) -> PodInfo:
    status = msgspec.structs.replace(pi.pod.status, nominated_node_name=node)
    return pi.with_pod(msgspec.structs.replace(pi.pod, status=status))


def test_add_override_or_from_status_and_readd_moves_the_pod() -> None:
    n = Nominator()
    a = make_pod("a")
    n.add(a)  # no status.nominatedNodeName and no override: nothing
    assert len(n) == 0
    n.add(a, "n1")
    b = with_nominated(make_pod("b"), "n1")
    n.add(b)
    assert [p.name for p in n.pods_for_node("n1")] == ["a", "b"]
    n.add(a, "n2")  # one entry per pod
    assert [p.name for p in n.pods_for_node("n1")] == ["b"]
    assert n.nominated_node(a) == "n2" and len(n) == 2
    n.delete(b)
    assert "n1" not in n.nodes() and n.pods_for_node("n1") == []
    n.delete(b)  # deleting twice is harmless
    assert len(n) == 1


def test_update_keeps_an_in_memory_nomination_the_api_has_not_caught_up_with() -> None:
    n = Nominator()
    old = make_pod("p", labels={"v": "1"})
    n.add(old, "n1")
    new = old.with_pod(
        msgspec.structs.replace(
            old.pod, metadata=msgspec.structs.replace(old.pod.metadata, labels={"v": "2"})
        )
    )
    n.update(old, new)
    assert n.nominated_node(new) == "n1"
    assert n.pods_for_node("n1")[0] is new  # Filter sees the latest version


def test_update_that_sets_changes_or_clears_the_nomination_wins() -> None:
    n = Nominator()
    p = make_pod("p")
    n.add(p, "n1")
    moved = with_nominated(p, "n2")
    n.update(p, moved)
    assert n.nominated_node(moved) == "n2"
    cleared = with_nominated(moved, "")
    n.update(moved, cleared)
    assert n.nominated_node(cleared) == "" and len(n) == 0
