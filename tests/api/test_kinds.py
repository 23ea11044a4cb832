"""The kind registry, and the tables still written out beside it held equal to its
projections, so a row added or changed without them fails here."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.kinds import REGISTRY, Kind, Older, SimOwner, Watch, guess_resource
from ksched.framework.events import EventResource
from ksched.framework.listers import Listers
from ksched.queue import events as ev

# EventResources that name no kind: upstream's finer pod resources and the wildcard.
_NOT_KINDS = {
    EventResource.ASSIGNED_POD,
    EventResource.UNSCHEDULED_POD,
    EventResource.TARGET_POD,
    EventResource.WILDCARD,
}


def test_event_resources_are_the_rows_events() -> None:
    """``EventResource`` stays an enum written out (mypy knows its members): one member per
    kind whose changes reach the queue, no more."""
    assert {str(e) for e in EventResource} - _NOT_KINDS == REGISTRY.event_resources()


def test_listers_constants_are_the_watched_rows_listers() -> None:
    constants = {v for k, v in vars(Listers).items() if k.isupper() and isinstance(v, str)}
    watched = {r.lister for r in REGISTRY if r.lister and r.watch is not Watch.NEVER}
    assert constants == watched


def test_storage_events_are_the_pv_controllers_kinds() -> None:
    """The storage EventResources (VolumeBinding's and NodeVolumeLimits' events) are those
    of the kinds the simulated PV controller holds."""
    pv = {r.events for r in REGISTRY if r.sim_owner is SimOwner.PV_CONTROLLER}
    assert set(ev.STORAGE_RESOURCES) == pv


def test_rows_are_unique_and_consistent() -> None:
    rows = REGISTRY.rows
    assert len({(r.group, r.resource) for r in rows}) == len(rows)
    listers = [r.lister for r in rows if r.lister]
    assert len(set(listers)) == len(listers)
    for r in rows:
        if r.watch is not Watch.NEVER or r.cluster_file:
            assert r.struct is not None, r.kind
        if r.watch in (Watch.ON_REQUEST, Watch.GATED):
            assert r.lister, r.kind
        if r.watch is Watch.GATED:
            assert r.gates, r.kind
        if r.discover:
            assert r.snapshot, r.kind
        if r.snapshot and r.kind not in ("Node", "Pod"):
            assert r.lacks, r.kind


def test_register_refuses_a_taken_resource_or_lister() -> None:
    pods = REGISTRY.row("", "pods")
    with pytest.raises(ValueError, match="pods: already registered"):
        REGISTRY.register(Kind("Other", "", "v1", "pods", True))
    with pytest.raises(ValueError, match="lister 'pods': already Pod's"):
        REGISTRY.register(Kind("Other", "example.com", "v1", "others", True, lister="pods"))
    assert REGISTRY.row("", "pods") is pods


def test_registered_is_undone_and_projections_follow() -> None:
    before = REGISTRY.generation
    row = Kind("Gadget", "example.com", "v1", "gadgets", False, dict, lister="gadgets")
    with REGISTRY.registered(row):
        assert REGISTRY.by_lister()["gadgets"] is row
        assert REGISTRY.generation == before + 1
    assert "gadgets" not in REGISTRY.by_lister()
    assert row not in REGISTRY.rows


@pytest.mark.parametrize(
    ("kind", "resource"),
    [
        ("PodGroup", "podgroups"),
        ("Ingress", "ingresses"),
        ("NetworkPolicy", "networkpolicies"),
        ("Gateway", "gateways"),
        ("", ""),
    ],
)
def test_guess_resource_as_apimachinery(kind: str, resource: str) -> None:
    assert guess_resource(kind) == resource


def test_older_versions() -> None:
    class Old:
        pass

    row = Kind(
        "Thing", "example.com", "v1", "things", True, dict, older=Older("1.37", "v1beta1", Old)
    )

    def at_least(v: str) -> Any:
        return lambda want: tuple(map(int, v.split("."))) >= tuple(map(int, want.split(".")))

    assert row.version_for(at_least("1.36")) == "v1beta1"
    assert row.version_for(at_least("1.37")) == "v1"
    assert row.version_for(None) == "v1"
    assert row.path_for("v1beta1") == "/apis/example.com/v1beta1/things"
    assert row.struct_for("v1beta1") is Old and row.struct_for("v1") is dict
    assert Kind("Core", "", "v1", "cores", False).path == "/api/v1/cores"
