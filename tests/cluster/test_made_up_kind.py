"""Adding a kind is one registry row plus its struct: a made-up ``Widget`` row, registered
at run time, is watched by the informer wiring, read from cluster files into the
simulator's listers, listed by ``ksched snapshot`` and served by the test API server,
with no other change. Unregistered, it is nothing again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import yaml

from ksched.api.kinds import REGISTRY, Kind, Serving, Watch
from ksched.api.objects import ObjectMeta
from ksched.cli import main
from ksched.cluster import APIClient, connect_scheduler
from ksched.cluster.wiring import ON_REQUEST_PATHS, requested_listers
from ksched.framework import ClusterEvent
from ksched.framework.listers import RevisionedStore
from ksched.plugins import default_registry
from ksched.sim import Simulation, load_cluster, parse_cluster
from ksched.testing import TestAPIServer, make_node
from tests.queue._util import config

from .conftest import eventually
from .test_watch_resources import WatchingScheduler, fast_backoff

pytestmark = pytest.mark.anyio


class WidgetSpec(msgspec.Struct, rename="camel"):
    size: int = 0


class Widget(msgspec.Struct, rename="camel"):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WidgetSpec = msgspec.field(default_factory=WidgetSpec)
    kind: str = "Widget"
    api_version: str = "example.com/v1"


def widget_row() -> Kind:
    return Kind(
        "Widget",
        "example.com",
        "v1",
        "widgets",
        True,
        Widget,
        lister="widgets",
        events="Widget",
        watch=Watch.ON_REQUEST,
        cluster_file=True,
        snapshot=True,
        lacks="widgets (made up)",
        serve=Serving(short_names=("wg",)),
    )


def widget(name: str, size: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": size},
    }


class WidgetReader:
    name = "WidgetReader"
    reads_listers = frozenset({"widgets"})


async def test_the_wiring_watches_a_registered_kind_from_the_test_api_server(
    tmp_path: Path,
) -> None:
    with REGISTRY.registered(widget_row()), TestAPIServer().run_in_thread() as srv:
        assert ON_REQUEST_PATHS["widgets"] == "/apis/example.com/v1/widgets"
        srv.create(widget("w1", 3))
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        async with await APIClient.from_kubeconfig(kubeconfig, qps=0) as client:
            # served: discovery lists it, and its short name resolves
            discovery = json.loads(await client.get("/apis/example.com/v1"))
            assert [r["name"] for r in discovery["resources"]] == ["widgets"]
            assert srv.get("wg", "default", "w1")["spec"] == {"size": 3}
            sched = WatchingScheduler({"a": [WidgetReader()]})
            assert requested_listers(sched.frameworks.values()) == ["widgets"]
            informers = connect_scheduler(sched, client, backoff=fast_backoff())
            assert informers.requested["widgets"].path == "/apis/example.com/v1/widgets"
            async with anyio.create_task_group() as tg:
                with anyio.fail_after(5):
                    await tg.start(informers.run)
                store = sched.frameworks["a"].handle.listers["widgets"]
                assert isinstance(store, RevisionedStore)
                w1 = store["default/w1"]
                assert isinstance(w1, Widget)
                assert (w1.metadata.namespace, w1.metadata.name, w1.spec.size) == (
                    "default",
                    "w1",
                    3,
                )
                await eventually(lambda: srv.watcher_count("widgets") == 1)
                srv.patch("widgets", "default", "w1", {"spec": {"size": 5}})
                await eventually(lambda: store["default/w1"].spec.size == 5)
                tg.cancel_scope.cancel()
    events = [(e, type(old).__name__, type(new).__name__) for e, old, new in sched.other]
    assert events == [
        (ClusterEvent("Widget", "Add", "WidgetAdd"), "NoneType", "Widget"),
        (ClusterEvent("Widget", "Update", "WidgetUpdate"), "Widget", "Widget"),
    ]
    # gone with its row: no longer a lister ksched knows, nor a kind the server serves
    with pytest.raises(ValueError, match="unknown lister 'widgets'"):
        requested_listers(sched.frameworks.values())
    with TestAPIServer().run_in_thread() as srv, pytest.raises(ValueError, match="unsupported"):
        srv.create(widget("w1", 3))


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
CLUSTER = yaml.safe_dump_all([NODE, widget("w1", 3), widget("w2", 4, namespace="team")])


def test_cluster_files_and_the_simulator_read_a_registered_kind() -> None:
    registry = default_registry(entry_points=False)
    with REGISTRY.registered(widget_row()):
        cf = parse_cluster(CLUSTER, "c.yaml")
        assert [(w.metadata.namespace, w.spec.size) for w in cf.listed["widgets"]] == [
            ("default", 3),
            ("team", 4),
        ]
        assert cf.others == {}
        listers = Simulation(cf, config(), registry).sched.frameworks["ksched"].handle.listers
        assert sorted(listers["widgets"]) == ["default/w1", "team/w2"]
        assert isinstance(listers["widgets"]["team/w2"], Widget)
        # a file without any: an empty lister, as the daemon's informer would hold
        empty = parse_cluster(yaml.safe_dump(NODE), "c.yaml")
        assert empty.listed == {}
        sim = Simulation(empty, config(), registry)
        assert sim.sched.frameworks["ksched"].handle.listers["widgets"] == {}
    cf = parse_cluster(CLUSTER, "c.yaml")
    assert "widgets" not in cf.listed and len(cf.others["Widget"]) == 2


def test_snapshot_lists_a_registered_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cluster.json"
    with REGISTRY.registered(widget_row()):
        with TestAPIServer().run_in_thread() as srv:
            srv.create(make_node("n1"))
            srv.create(widget("w1", 3))
            kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
            assert main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out)]) == 0
        items = json.loads(out.read_text())["items"]
        assert [
            (o["apiVersion"], o["metadata"]["name"]) for o in items if o["kind"] == "Widget"
        ] == [("example.com/v1", "w1")]
        assert [w.spec.size for w in load_cluster(str(out)).listed["widgets"]] == [3]
