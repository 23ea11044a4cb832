"""deploy/extender's RBAC grants exactly what ``ksched extender`` uses, derived as
test_rbac.py derives the daemon's: a stateful extender with the shipped profile (its
ConfigMap) and kubeconfig runs against the test API server, answers /filter,
/prioritize, /preempt and /bind, and the requests it sent (kube-apiserver's RequestInfo:
verb, resource, subresource) are compared with the rules as a set — none forbidden, no rule
unused. ``ksched-extender`` is read-only; ``bind-rbac.yaml`` adds the Binding that /bind
posts, and only that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import anyio
import yaml

from ksched.config import load_config_data
from ksched.extender.server import serve
from ksched.plugins import default_registry
from ksched.testing import TestAPIServer, make_node, make_pod

from ..extender.conftest import wait_ready
from ._manifests import DEPLOY, find, load, rules_of
from .test_rbac import _allowed

EXTENDER = DEPLOY / "extender"


def _manifests() -> list[dict[str, Any]]:
    return load(EXTENDER / "ksched-extender.yaml")


def _shipped_config() -> tuple[Any, Any]:
    reg = default_registry()
    text = find(_manifests(), "ConfigMap", "ksched-extender")["data"]["config.yaml"]
    cfg, _ = load_config_data(yaml.safe_load(text), "config.yaml", set(reg.names()))
    return cfg, reg


async def _post(s: aiohttp.ClientSession, url: str, body: Any) -> Any:
    async with s.post(url, json=body) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def _scenario(srv: TestAPIServer, kubeconfig: Path) -> tuple[list[Any], list[Any]]:
    """The extender's requests before /bind (filter, prioritize, preempt included), and
    those of /bind."""
    srv.create(make_node("n1", cpu="4"))
    srv.create(make_node("n2", cpu="4"))
    busy = srv.create(make_pod("busy", cpu="3500m", node_name="n1"))
    web = srv.create(make_pod("web", cpu="1"))
    cfg, reg = _shipped_config()
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            lambda task_status: serve(
                cfg,
                reg,
                profile="ksched-extender",
                host="127.0.0.1",
                port=0,
                kubeconfig=str(kubeconfig),
                task_status=task_status,
            )
        )
        url = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as s:
            await wait_ready(s, url)
            args = {"Pod": web, "NodeNames": ["n1", "n2"]}
            out = await _post(s, f"{url}/filter", args)
            assert out["NodeNames"] == ["n2"], out  # the cache knows the bound pod
            await _post(s, f"{url}/prioritize", args)
            victims = {"n1": {"Pods": [{"UID": busy["metadata"]["uid"]}], "NumPDBViolations": 0}}
            out = await _post(s, f"{url}/preempt", {"Pod": web, "NodeNameToMetaVictims": victims})
            assert list(out["NodeNameToMetaVictims"]) == ["n1"]
            before = len(srv.requests)
            out = await _post(
                s,
                f"{url}/bind",
                {
                    "PodName": "web",
                    "PodNamespace": "default",
                    "PodUID": web["metadata"]["uid"],
                    "Node": "n2",
                },
            )
            assert out == {"Error": ""}
            assert srv.get("pods", "default", "web")["spec"]["nodeName"] == "n2"
            requests = [r for r in srv.requests if r.resource and r.verb]
            binds = [r for r in srv.requests[before:] if r.resource and r.verb]
        tg.cancel_scope.cancel()
    return [r for r in requests if r not in binds], binds


def test_extender_requests_are_exactly_the_granted_rules(tmp_path: Path) -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        async with TestAPIServer() as srv:
            return await _scenario(srv, srv.write_kubeconfig(tmp_path / "kubeconfig"))

    reads, binds = anyio.run(main)
    role = rules_of(find(_manifests(), "ClusterRole", "ksched-extender"))
    bind_role = rules_of(find(load(EXTENDER / "bind-rbac.yaml"), "ClusterRole"))
    used = {(f"{r.verb} {r.path}", _allowed(r, role)) for r in reads}
    assert [k for k, rule in used if rule is None] == [], "requests the role would forbid"
    assert role - {rule for _, rule in used} == set(), "rules no request needed"
    assert {v for _, _, v, _ in role} == {"list", "watch"}  # read-only, no get
    # /bind: one Binding, which only bind-rbac.yaml grants
    assert [(r.verb, r.resource, r.subresource) for r in binds] == [("create", "pods", "binding")]
    assert _allowed(binds[0], role) is None
    assert {_allowed(binds[0], bind_role)} == bind_role == {("", "pods/binding", "create", "")}


def test_bind_role_is_bound_to_the_extenders_service_account() -> None:
    objs = _manifests()
    sa = find(objs, "ServiceAccount", "ksched-extender")["metadata"]
    pod = find(objs, "Deployment", "ksched-extender")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == sa["name"]
    me = [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]
    extra = load(EXTENDER / "bind-rbac.yaml")
    for objects, role in ((objs, "ksched-extender"), (extra, "ksched-extender-bind")):
        binding = find(objects, "ClusterRoleBinding")
        assert binding["subjects"] == me
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role,
        }
        find(objects, "ClusterRole", role)
