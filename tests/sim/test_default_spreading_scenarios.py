"""Simulate with PodTopologySpread's system default constraints: their selectors come from
the Services and controllers in the cluster file, as ``ksched run`` reads them from its
informers.

Every scenario has an ``old`` replica on n1 and a busy pod on n2, so the resource scores
alone put a new pod on n1; default spreading (hostname, maxSkew 3, soft) moves it to n2
when its selector counts ``old`` as a sibling.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import ReplicaSet, Service
from ksched.sim import parse_cluster
from ksched.sim.cluster_file import ClusterFileError
from tests.sim.test_scenarios import node, pod, run

WEB = {"app": "web", "pod-template-hash": "abc"}
RS_OWNER = ("apps/v1", "ReplicaSet", "web-abc")


def replica(name: str, node_name: str = "", owner: tuple[str, str, str] | None = RS_OWNER) -> Any:
    p = pod(name, node_name=node_name)
    p["metadata"]["labels"] = dict(WEB)
    if owner is not None:
        api_version, kind, owner_name = owner
        ref = {"apiVersion": api_version, "kind": kind, "name": owner_name, "controller": True}
        p["metadata"]["ownerReferences"] = [{**ref, "uid": "owner-uid"}]
    return p


def controller(kind: str, name: str, selector: Any, api_version: str = "apps/v1") -> Any:
    meta = {"name": name}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": meta,
        "spec": {"selector": selector},
    }


def service(selector: dict[str, str] | None) -> Any:
    spec = {} if selector is None else {"selector": selector}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": spec}


def placed(extra: list[Any], owner: tuple[str, str, str] | None = RS_OWNER) -> str:
    objs = [
        node("n1"),
        node("n2"),
        replica("old", "n1", owner),
        pod("busy", cpu="1", node_name="n2"),
        *extra,
        replica("new", owner=owner),
    ]
    res = run(objs)
    assert res["new"].status == "Scheduled"
    return str(res["new"].node)


def test_without_controllers_in_the_file_the_pods_own_labels_stand_in() -> None:
    """A ``kubectl get nodes,pods`` dump: ReplicaSets are unknown, not absent."""
    assert placed([]) == "n2"


def test_cluster_file_decodes_workloads_into_their_listers() -> None:
    text = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {name: web}, spec: {selector: {app: web}}}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: web-abc, namespace: team}
  spec: {selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}}
"""
    cf = parse_cluster(text, "c.yaml")
    (svc,) = cf.workloads["services"]
    assert isinstance(svc, Service) and svc.metadata.namespace == "default"
    (rs,) = cf.workloads["replicasets"]
    assert isinstance(rs, ReplicaSet) and rs.metadata.namespace == "team"
    assert rs.spec.selector is not None and rs.spec.selector.match_expressions[0].key == "app"
    assert "statefulsets" not in cf.workloads and cf.others == {}
    bad = "kind: StatefulSet\napiVersion: apps/v1\nmetadata: {name: db}\nspec: {selector: 3}"
    with pytest.raises(
        ClusterFileError, match=r"c.yaml: StatefulSet default/db: .*`spec.selector`"
    ):
        parse_cluster(bad, "c.yaml")
