"""deploy/overlays/shadow: ksched in shadow mode with read-only RBAC. Its roles grant
exactly the requests a shadow daemon makes (list/watch, and the secure port's reviews
through system:auth-delegator), not one write; its Deployment runs ``--shadow-of``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import yaml

from ksched.cli import build_parser, main
from ksched.cluster import APIClient
from ksched.config import load_config_data
from ksched.daemon import SchedulerDaemon, SecureServing
from ksched.testing import TestAPIServer, make_node, make_pod

from ._manifests import DEPLOY, find, kustomize
from .test_rbac import (
    AUTH_DELEGATOR_RULES,
    _allowed,
    _secure_get,
    _unrequested_rules,
    ksched_rules,
)

SHADOW = DEPLOY / "overlays" / "shadow"
READS = {"get", "list", "watch"}


def _args(objs: list[Any]) -> Any:
    container = find(objs, "Deployment", "ksched")["spec"]["template"]["spec"]["containers"][0]
    return build_parser().parse_args(container["args"])


def test_overlay_is_read_only_and_runs_a_shadow() -> None:
    objs = kustomize(SHADOW)
    rules = ksched_rules(objs)
    assert rules >= AUTH_DELEGATOR_RULES  # the secure port's reviews persist nothing
    assert {v for _, _, v, _ in rules - AUTH_DELEGATOR_RULES} <= READS
    assert not [o for o in objs if o["kind"] in ("Role", "RoleBinding")]  # no lease
    assert not [o for o in objs if o["kind"] == "PodDisruptionBudget"]
    assert find(objs, "Deployment", "ksched")["spec"]["replicas"] == 1
    args = _args(objs)
    assert args.shadow_of == "default-scheduler" and not args.leader_elect


def test_overlay_config_validates(tmp_path: Path) -> None:
    objs = kustomize(SHADOW)
    cm = find(objs, "ConfigMap")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(cm["data"]["config.yaml"])
    assert main(["config", "validate", str(cfg)]) == 0
    assert yaml.safe_load(cfg.read_text())["leaderElection"]["leaderElect"] is False


async def _shadow_scenario(srv: TestAPIServer) -> list[str]:
    """A shadow daemon through its requests: sync, a decision compared with a binding and
    one with an Unschedulable verdict, the secure port's two reviews; the on-request
    listers it watched."""
    srv.create(make_node("n1", cpu="4"))
    srv.create(make_node("n2", cpu="2"))
    for name in ("bound", "refused"):
        srv.create(make_pod(name, cpu="100m"))
    client = await APIClient.for_master(srv.url, qps=0)
    cfg = load_config_data(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    )[0]
    secure = SecureServing(bind_address="127.0.0.1", port=0)
    try:
        async with SchedulerDaemon(
            cfg, client=client, secure_serving=secure, shadow_of="default-scheduler"
        ) as d:
            await d.wait_ready(15)
            shadow = d.shadow
            assert shadow is not None and d.elector is None
            await _secure_get(d.secure_url + "/metrics", token="some-token")
            await _secure_get(d.secure_url + "/debug/shadow")
            with anyio.fail_after(10):
                while len(shadow.decisions) < 2:
                    await anyio.sleep(0.02)
            srv.bind("default", "bound", "n2")
            cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
            status = {"status": {"conditions": [cond]}}
            srv.patch("pods", "default", "refused", status, subresource="status")
            with anyio.fail_after(10):
                while sum(shadow.counts.values()) < 2:
                    await anyio.sleep(0.02)
            assert dict(shadow.counts) == {"disagree": 1, "unschedulable_there": 1}
            from ksched.cluster.wiring import requested_listers

            return requested_listers(d.scheduler.frameworks.values())
    finally:
        await client.close()


def test_shadow_requests_are_exactly_the_overlay_rules() -> None:
    async def main_() -> tuple[list[Any], list[str]]:
        async with TestAPIServer() as srv:
            requested = await _shadow_scenario(srv)
            return [r for r in srv.requests if r.resource and r.verb], requested

    requests, requested = anyio.run(main_)
    rules = ksched_rules(kustomize(SHADOW))
    used = [(f"{req.verb} {req.path}", _allowed(req, rules)) for req in requests]
    assert [k for k, rule in used if rule is None] == [], "requests RBAC would forbid"
    # (of the rules the daemon's role has but no request needed, those shadow mode keeps)
    assert rules - {rule for _, rule in used} == _unrequested_rules(requested) & rules
    writes = {(r.resource, r.verb) for r in requests if r.verb not in READS}
    assert writes == {("tokenreviews", "create"), ("subjectaccessreviews", "create")}
