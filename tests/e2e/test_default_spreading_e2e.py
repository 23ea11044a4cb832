"""PodTopologySpread's system default constraints in the daemon: their selectors come
from the ReplicaSets and Services it watches.

Both tests have a big and a small node, so the resource scores alone put every pod on
the big one (as they do the uncontrolled, unselected ``solo`` pods); a second pod the
default hostname spreading counts as a sibling of the first goes to the small one.
"""

from __future__ import annotations

import pytest

from ksched.testing import make_controller, make_service

from .conftest import E2E

pytestmark = pytest.mark.e2e


def _nodes(e2e: E2E) -> tuple[str, str]:
    big = e2e.create_node("big", cpu="64", memory="256Gi")
    small = e2e.create_node("small", cpu="4", memory="16Gi")
    return big, small


@pytest.mark.fake_apiserver
def test_replicas_of_a_replicaset_spread_over_nodes_by_default(e2e: E2E) -> None:
    # A real cluster's ReplicaSet controller would manage (and replace) these pods itself.
    e2e.need_server()
    big, small = _nodes(e2e)
    labels = {"app": "web", "pod-template-hash": "abc"}
    rs = e2e.kube.ok(
        "POST",
        f"/apis/apps/v1/namespaces/{e2e.namespace}/replicasets",
        make_controller("ReplicaSet", "web-abc", labels, e2e.namespace, replicas=2),
    )
    for i in range(2):
        # a label outside the selector: the pod's own labels would not make them siblings
        e2e.create_pod(f"web-abc-{i}", labels={**labels, "instance": str(i)}, owner=rs)
        e2e.create_pod(f"solo-{i}", labels={"app": "solo"})
    with e2e.daemon():
        assert {e2e.wait_bound(f"web-abc-{i}") for i in range(2)} == {big, small}
        assert [e2e.wait_bound(f"solo-{i}") for i in range(2)] == [big, big]


def test_a_service_selecting_pods_gives_them_default_spreading(e2e: E2E) -> None:
    big, small = _nodes(e2e)
    e2e.kube.ok(
        "POST",
        f"/api/v1/namespaces/{e2e.namespace}/services",
        make_service("api", {"app": "api"}, e2e.namespace),
    )
    with e2e.daemon():
        # created one by one after the sync, so the order (and the first pick) is fixed
        for name, app in (("api-0", "api"), ("solo-0", "solo"), ("api-1", "api")):
            e2e.create_pod(name, labels={"app": app})
            e2e.wait_bound(name)
        assert [e2e.node_of(n) for n in ("api-0", "solo-0", "api-1")] == [big, big, small]
