"""A watch resumed after etcd compacted past its resourceVersion, as a real kube-apiserver
answers it (410 Gone / "too old resource version"): the informer relists and the pods
created while the daemon was cut off are scheduled, none lost.

The API server runs without its watch cache, so a watch's resourceVersion is checked
against etcd itself, and etcd is compacted through its own API: the exact path by which a
long disconnection expires a watch in production. A ``TCPProxy`` between the daemon and
the server drops its connections and keeps them down while the cluster moves on.
"""

from __future__ import annotations

import base64
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksched.testing.controlplane import ControlPlane, TCPProxy

from .conftest import E2E, Kube, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.kube]


@pytest.fixture(scope="module")
def uncached() -> Iterator[ControlPlane]:
    with ControlPlane(apiserver_args=["--watch-cache=false"], reaper=False) as cp:
        yield cp


def _etcd(cp: ControlPlane, path: str, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(cp.etcd_url + path, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        out: dict[str, object] = json.loads(r.read())
        return out


def _compact(cp: ControlPlane) -> int:
    header = _etcd(cp, "/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]
    rev = int(header["revision"])  # type: ignore[index]
    _etcd(cp, "/v3/kv/compaction", {"revision": str(rev), "physical": True})
    return rev


def test_watch_expired_by_compaction_relists_and_loses_no_pod(
    uncached: ControlPlane, tmp_path: Path
) -> None:
    cp = uncached
    run = uuid.uuid4().hex[:8]
    with TCPProxy(cp.port) as proxy:
        kubeconfig = cp.kubeconfig_for(
            cp.scheduler_identity, tmp_path / "via-proxy", server=f"https://127.0.0.1:{proxy.port}"
        )
        kube = Kube(cp.admin_kubeconfig)
        e2e = E2E(
            "kube",
            kubeconfig,
            kube,
            run,
            f"expiry-{run}",
            f"ksched-{run}",
            tmp_path,
            controlplane=cp,
        )
        kube.ok("POST", "/api/v1/namespaces", {"metadata": {"name": e2e.namespace}})
        e2e.create_node("n1")
        with e2e.daemon() as d:
            pods = d.daemon.informers.pods
            e2e.create_pod("before")
            e2e.wait_bound("before")
            wait_for(lambda: e2e.events("before", "Scheduled"), what="its event, before the cut")
            lists = pods.lists
            assert proxy.cut(hold=True) > 0
            later = [f"during-{i}" for i in range(5)]
            for name in later:
                e2e.create_pod(name)
            rev = _compact(cp)
            proxy.release()
            for name in later:
                e2e.wait_bound(name, timeout=30)
            # the resumed watch was refused (410) and the informer listed again
            assert pods.lists > lists
            # the relist may read exactly the compacted revision (nothing written since);
            # the watch opened after it (its retry backing off) then carries the bindings
            wait_for(
                lambda: d.call(lambda: int(pods.last_sync_resource_version)) > rev,
                what="the pod informer past the compacted revision",
            )
        for name in ["before", *later]:
            assert len(e2e.events(name, "Scheduled")) == 1
        kube.close()
