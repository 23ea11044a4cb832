"""RBAC: the roles in deploy/ (and systemd/rbac.yaml) grant exactly the (resource, verb)
pairs ksched uses — no more (least privilege), no less (a forbidden request would stall
scheduling in production only).

Two derivations from the code:

* static: every API path the daemon's modules can build (module constants, f-strings,
  ``pod_path`` subresources), so a resource added on a rarely taken path is noticed;
* dynamic: the requests the daemon actually sends to the test API server while it lists,
  watches, binds, retries a failed binding (an event series), reports an unschedulable pod
  and preempts — recorded by the server as kube-apiserver's RequestInfo (verb, resource,
  subresource) and compared with the rules as a set. Collections watched only on a
  plugin's request (``reads_listers``) that no plugin of the default profile reads are the
  one exception: their list/watch rules are granted for the profiles that do enable one.
"""

from __future__ import annotations

import ast
import re
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import yaml

from ksched.cluster import APIClient
from ksched.cluster.wiring import ON_REQUEST_PATHS, requested_listers
from ksched.config import load_config_data
from ksched.daemon import SchedulerDaemon, SecureServing
from ksched.testing import (
    TestAPIServer,
    make_node,
    make_pod,
    make_priority_class,
    make_pv,
    make_pvc,
    make_storage_class,
)
from ksched.testing.objects import (
    device_requests,
    make_device_class,
    make_resource_claim,
    make_resource_slice,
)

from ._manifests import DEPLOY, JSON, ROOT, Rule, find, kustomize, load, rules_of

# Roles the deploy/ base grants to ksched's service account (the contrib overlay adds
# podgroups, checked below); the extender's own RBAC lives in deploy/extender.
LEASES = ("coordination.k8s.io", "leases")
ESCALATING_VERBS = {"*", "escalate", "bind", "impersonate"}

Pair = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)


# The stock ClusterRole the base binds for the secure port's delegated authentication and
# authorization (kube's bootstrap policy; kube-scheduler's and kube-controller-manager's
# own roles carry the same two rules).
AUTH_DELEGATOR = "system:auth-delegator"
AUTH_DELEGATOR_RULES: set[Rule] = {
    ("authentication.k8s.io", "tokenreviews", "create", ""),
    ("authorization.k8s.io", "subjectaccessreviews", "create", ""),
}


def ksched_rules(objs: list[JSON]) -> set[Rule]:
    """The rules ksched's ServiceAccount holds: its ClusterRole and Role, and
    system:auth-delegator's when a ClusterRoleBinding gives it that role."""
    rules = rules_of(find(objs, "ClusterRole", "ksched"))
    for role in (o for o in objs if o["kind"] == "Role"):  # none in the shadow overlay
        rules |= rules_of(role)
    sa = find(objs, "ServiceAccount")["metadata"]
    me = {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}
    if any(
        o["kind"] == "ClusterRoleBinding"
        and o["roleRef"]["name"] == AUTH_DELEGATOR
        and me in o["subjects"]
        for o in objs
    ):
        rules |= AUTH_DELEGATOR_RULES
    return rules


def granted() -> set[Pair]:
    return {(g, r, v) for g, r, v, _ in ksched_rules(kustomize(DEPLOY))}


# ---- no wildcards, nothing escalating ---------------------------------------------------


def _all_roles() -> list[JSON]:
    objs = [
        *kustomize(DEPLOY),
        *kustomize(DEPLOY / "overlays" / "contrib"),
        *kustomize(DEPLOY / "overlays" / "extender"),
        *load(DEPLOY / "extender" / "bind-rbac.yaml"),
        *load(ROOT / "systemd" / "rbac.yaml"),
    ]
    return [o for o in objs if o["kind"] in ("Role", "ClusterRole")]


def test_no_wildcards_no_escalation_no_secrets() -> None:
    roles = _all_roles()
    assert roles
    for role in roles:
        for rule in role["rules"]:
            where = f"{role['kind']} {role['metadata']['name']}: {rule}"
            if role["metadata"]["name"] == "ksched-metrics-reader":  # for Prometheus to bind
                assert rule == {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, where
                continue
            assert "nonResourceURLs" not in rule, where
            for field in ("apiGroups", "resources", "verbs"):
                assert not any("*" in x for x in rule[field]), where
            assert not ESCALATING_VERBS & set(rule["verbs"]), where
            assert not {"secrets", "configmaps", "serviceaccounts/token"} & set(
                rule["resources"]
            ), where
    bindings = [
        o
        for o in (*kustomize(DEPLOY), *kustomize(DEPLOY / "overlays" / "contrib"))
        if o["kind"].endswith("Binding")
    ]
    assert all(b["roleRef"]["name"] not in ("cluster-admin", "admin", "edit") for b in bindings)


def test_systemd_role_matches_the_in_cluster_one() -> None:
    """Host installs bind the same ClusterRole, plus the same Lease Role in kube-system."""
    host = load(ROOT / "systemd" / "rbac.yaml")
    base = kustomize(DEPLOY)
    assert rules_of(find(host, "Role")) == rules_of(find(base, "Role"))
    assert (
        find(host, "ClusterRoleBinding")["roleRef"]["name"]
        == find(base, "ClusterRole", "ksched")["metadata"]["name"]
    )
    # system:kube-scheduler's stock role already has system:auth-delegator's rules (its
    # own secure port needs them), so the host needs no binding for them
    cfg = yaml.safe_load((ROOT / "systemd" / "config.yaml").read_text())
    assert find(host, "Role")["metadata"]["namespace"] == cfg["leaderElection"]["resourceNamespace"]
    assert {n for *_, n in rules_of(find(host, "Role")) if n} == {
        cfg["leaderElection"]["resourceName"]
    }


# ---- static: the API paths in the code --------------------------------------------------

_CORE = re.compile(r"^/api/v1/(?:namespaces/\{\}/)?([a-z]+)")
_GROUP = re.compile(
    r"^/apis/([a-z0-9.-]+)/v[0-9a-z]+/(?:namespaces/\{\}/)?([a-z]+)(?:/\{\}/([a-z]+)$)?"
)


def _sources() -> list[Path]:
    pkg = ROOT / "ksched"
    files = [*sorted((pkg / "cluster").glob("*.py")), *sorted((pkg / "daemon").glob("*.py"))]
    # leader election, wherever it lives
    files += [
        p
        for p in sorted(pkg.rglob("*.py"))
        if "leader" in p.name and p.parent.name not in ("cluster", "daemon", "testing")
    ]
    return files


def _templates(tree: ast.Module) -> list[str]:
    """Every string literal and f-string, with module constants substituted and other
    placeholders as ``{}``."""
    consts: dict[str, str] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            consts[stmt.targets[0].id] = stmt.value.value
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif (
                    isinstance(v, ast.FormattedValue)
                    and isinstance(v.value, ast.Name)
                    and v.value.id in consts
                ):
                    parts.append(consts[v.value.id])
                else:
                    parts.append("{}")
            out.append("".join(parts))
    return out


def referenced_resources() -> set[tuple[str, str]]:
    """What the daemon's code names: string paths in cluster/ and daemon/, and the
    collections the kind registry has the informers watch always, on a plugin's request or
    behind a feature gate (GenericWorkload's PodGroups: a cluster turns the gate on without
    touching the RBAC)."""
    from ksched.api.kinds import REGISTRY, Watch
    from ksched.cluster.status import pod_group_status_path

    watched = (Watch.ALWAYS, Watch.ON_REQUEST, Watch.GATED)
    found: set[tuple[str, str]] = {(r.group, r.resource) for r in REGISTRY if r.watch in watched}
    # paths built from a constant the scan below cannot read
    built = [pod_group_status_path("{}", "{}")]
    for path in _sources():
        tree = ast.parse(path.read_text())
        for t in [*_templates(tree), *built]:
            if m := _CORE.match(t):
                found.add(("", m.group(1)))
            elif m := _GROUP.match(t):  # a subresource too (resourceclaims/{}/status)
                found.add((m.group(1), m.group(2)))
                if m.group(3):
                    found.add((m.group(1), f"{m.group(2)}/{m.group(3)}"))
        for node in ast.walk(tree):  # pod_path(ns, name, "binding")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "pod_path"
                and len(node.args) == 3
                and isinstance(node.args[2], ast.Constant)
                and isinstance(node.args[2].value, str)
            ):
                found.add(("", "pods/" + node.args[2].value))
    return found


def _read_by_no_builtin_plugin() -> set[tuple[str, str]]:
    """On-request collections (``reads_listers``) no built-in plugin reads: watched only
    for a third-party plugin that asks, whose docs name the extra RBAC."""
    from ksched.plugins import default_registry

    read: set[str] = set()
    for spec in default_registry(entry_points=False):
        read |= set(getattr(spec.cls or spec.factory, "reads_listers", ()) or ())
    return {
        (_group(path), path.rsplit("/", 1)[1])
        for key, path in ON_REQUEST_PATHS.items()
        if key not in read
    }


def test_static_paths_are_exactly_the_granted_resources() -> None:
    code = referenced_resources()
    assert {("", "pods/binding"), ("events.k8s.io", "events"), LEASES} <= code  # sanity
    rbac = {(g, r) for g, r, _ in granted()}
    # not granted: only collections no built-in plugin reads (priorityclasses, which
    # kube-scheduler's stock role does not grant either)
    ungranted = code - rbac
    assert ungranted <= _read_by_no_builtin_plugin(), "ksched builds API paths not granted"
    assert ("scheduling.k8s.io", "priorityclasses") in ungranted
    assert rbac - code == set(), "the roles grant resources no code path uses"


# ---- dynamic: what the daemon sends -------------------------------------------------------


def _group(path: str) -> str:
    parts = path.strip("/").split("/")
    return "" if parts[0] == "api" else parts[1]


def _config() -> Any:
    return load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            # the base's Lease name; short periods so the leader renews during the scenario
            "leaderElection": {
                "leaderElect": True,
                "resourceName": "ksched",
                "leaseDuration": "4s",
                "renewDeadline": "3s",
                "retryPeriod": "500ms",
            },
        }
    )[0]


async def _bound(srv: TestAPIServer, name: str) -> str:
    with anyio.fail_after(15):
        while not (node := srv.get("pods", "default", name)["spec"].get("nodeName")):
            await anyio.sleep(0.02)
    return str(node)


def _unrequested_rules(requested: list[str]) -> set[tuple[str, str, str, str]]:
    """list/watch of the on-request collections no enabled plugin asked for (and that the
    roles grant: not those no built-in plugin reads)."""
    out: set[tuple[str, str, str, str]] = set()
    unread = _read_by_no_builtin_plugin() - {(g, r) for g, r, _ in granted()}
    for key, path in ON_REQUEST_PATHS.items():
        if key in requested or (_group(path), path.rsplit("/", 1)[1]) in unread:
            continue
        out |= {(_group(path), path.rsplit("/", 1)[1], verb, "") for verb in ("list", "watch")}
    # the collections behind a feature gate the scenario leaves off (GenericWorkload's
    # PodGroups), and the PodGroup status patch that comes with them
    from ksched.api.kinds import REGISTRY, Watch
    from ksched.cluster.status import pod_group_status_path

    for row in REGISTRY:
        if row.watch == Watch.GATED:
            out |= {(row.group, row.resource, verb, "") for verb in ("list", "watch")}
    m = _GROUP.match(pod_group_status_path("{}", "{}"))
    assert m is not None
    out.add((m.group(1), f"{m.group(2)}/{m.group(3)}", "patch", ""))
    return out


async def _scenario(srv: TestAPIServer) -> list[str]:
    """Runs the daemon through its requests; the on-request listers it watched."""
    srv.create(make_node("big", cpu="4"))
    srv.create(make_node("small", cpu="1", labels={"size": "small"}))
    srv.create(make_priority_class("high", 1000))
    srv.create(make_pod("victim", cpu="1", node_name="small"))
    client = await APIClient.for_master(srv.url, qps=0)
    secure = SecureServing(bind_address="127.0.0.1", port=0)
    try:
        async with SchedulerDaemon(_config(), client=client, secure_serving=secure) as d:
            await d.wait_leading(15)
            await d.wait_ready(15)
            # the secure port: a TokenReview (a bearer token), a SubjectAccessReview
            # (anonymous, a path not always allowed)
            await _secure_get(d.secure_url + "/metrics", token="some-token")
            await _secure_get(d.secure_url + "/metrics")
            assert d.reporter is not None
            d.reporter.series_interval = 0.0  # write every repeat of an event at once
            # a binding that fails twice the same way: FailedScheduling, then its series
            srv.faults.fail_next(
                2, verb="create", resource="pods/binding", code=500, message="injected"
            )
            srv.create(make_pod("retried", cpu="100m", scheduler_name="ksched"))
            assert await _bound(srv, "retried") == "big"
            # fits nowhere: FailedScheduling and the PodScheduled=False condition
            srv.create(make_pod("nowhere", scheduler_name="ksched", nodeSelector={"size": "huge"}))
            # preemption: the victim is deleted, the preemptor nominated and bound
            srv.create(
                make_pod(
                    "urgent",
                    cpu="1",
                    scheduler_name="ksched",
                    priority_class_name="high",
                    nodeSelector={"size": "small"},
                )
            )
            assert await _bound(srv, "urgent") == "small"
            # VolumeBinding: a static binding (PV claimRef) and a provisioning (the claim's
            # selected-node annotation), completed here as the PV controller would
            await _volume_binding(srv)
            await _dynamic_resources(srv)
            with anyio.fail_after(10):
                while not any(
                    c.get("type") == "PodScheduled"
                    for c in srv.get("pods", "default", "nowhere")
                    .get("status", {})
                    .get("conditions", [])
                ):
                    await anyio.sleep(0.02)
            await d.reporter.drain(10)
            await anyio.sleep(1.2)  # a renewal or two
            return requested_listers(d.scheduler.frameworks.values())
    finally:
        await client.close()


async def _secure_get(url: str, token: str | None = None) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as s, s.get(url, ssl=ctx, headers=headers) as r:
        return r.status


async def _dynamic_resources(srv: TestAPIServer) -> None:
    """DynamicResources: the claim's finalizer, a status update that meets a conflict (read
    again, retried), then a failed binding whose Unreserve patches reservedFor away."""
    srv.create(make_device_class("gpu", 'device.driver == "gpu.example.com"'))
    srv.create(make_resource_slice("big", "gpu.example.com", [{"name": "gpu-0"}]))
    srv.create(make_resource_claim("gpu", device_requests("gpu")))
    srv.faults.fail_next(1, verb="patch", resource="resourceclaims", subresource="status", code=409)
    srv.faults.fail_next(
        1, verb="create", resource="pods/binding", name="with-gpu", code=500, message="injected"
    )
    claims = [{"name": "gpu", "resourceClaimName": "gpu"}]
    srv.create(make_pod("with-gpu", scheduler_name="ksched", resourceClaims=claims))
    assert await _bound(srv, "with-gpu") == "big"
    status = srv.get("resourceclaims", "default", "gpu")["status"]
    assert [r["name"] for r in status["reservedFor"]] == ["with-gpu"]
    # a DRA-backed extended resource: the claim is created, and deleted again (finalizer
    # removed first) by the Unreserve of each failed binding cycle (the second one's
    # FailedScheduling event repeats the first: a patch); the retry creates another
    ext = make_device_class("ext-gpu", 'device.driver == "ext.example.com"')
    ext["spec"]["extendedResourceName"] = "example.com/gpu"
    srv.create(ext)
    srv.create(make_resource_slice("big", "ext.example.com", [{"name": "e-0"}], name="ext"))
    srv.faults.fail_next(  # every try of two binding cycles (1.37 tries a 500 four times)
        8, verb="create", resource="pods/binding", name="with-ext", code=500, message="injected"
    )
    gpu = {"example.com/gpu": "1"}
    srv.create(make_pod("with-ext", scheduler_name="ksched", requests=gpu, limits=gpu))
    assert await _bound(srv, "with-ext") == "big"
    assert srv.count_requests(verb="delete", resource="resourceclaims") == 2  # one per cycle
    st = srv.get("pods", "default", "with-ext")["status"]["extendedResourceClaimStatus"]
    assert srv.get("resourceclaims", "default", st["resourceClaimName"])["status"]["allocation"]


async def _volume_binding(srv: TestAPIServer) -> None:
    wffc = "WaitForFirstConsumer"
    srv.create(make_storage_class("local", "kubernetes.io/no-provisioner", binding_mode=wffc))
    srv.create(make_storage_class("fast", "csi.example.com", binding_mode=wffc))
    srv.create(make_pv("pv-local", storage_class="local", phase="Available"))
    srv.create(make_pvc("static", storage_class="local"))
    srv.create(make_pvc("dynamic", storage_class="fast"))
    for name in ("static", "dynamic"):
        vol = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
        srv.create(make_pod(f"with-{name}", cpu="100m", scheduler_name="ksched", volumes=vol))
    done = "pv.kubernetes.io/bind-completed"
    with anyio.fail_after(15):
        while not srv.get("persistentvolumes", None, "pv-local")["spec"].get("claimRef"):
            await anyio.sleep(0.02)
        ann = srv.get("persistentvolumeclaims", "default", "dynamic")["metadata"]
        while "volume.kubernetes.io/selected-node" not in ann.get("annotations", {}):
            await anyio.sleep(0.02)
            ann = srv.get("persistentvolumeclaims", "default", "dynamic")["metadata"]
    srv.create(make_pv("pv-dynamic", storage_class="fast", claim=("default", "dynamic")))
    for claim, pv in (("static", "pv-local"), ("dynamic", "pv-dynamic")):
        srv.patch(
            "persistentvolumeclaims",
            "default",
            claim,
            {"metadata": {"annotations": {done: "yes"}}, "spec": {"volumeName": pv}},
        )
        srv.patch(
            "persistentvolumeclaims",
            "default",
            claim,
            {"status": {"phase": "Bound"}},
            subresource="status",
        )
        srv.patch(
            "persistentvolumes", None, pv, {"status": {"phase": "Bound"}}, subresource="status"
        )
    for name in ("static", "dynamic"):
        await _bound(srv, f"with-{name}")


def _allowed(req: Any, rules: set[tuple[str, str, str, str]]) -> tuple[str, str, str, str] | None:
    """The rule that authorizes ``req`` as RBAC would (a named rule only for that name)."""
    resource = req.resource + (f"/{req.subresource}" if req.subresource else "")
    for rule in sorted(rules):
        g, r, v, name = rule
        if (g, r, v) == (_group(req.path), resource, req.verb) and name in ("", req.name):
            return rule
    return None


def test_requests_sent_are_exactly_the_granted_rules() -> None:
    async def main() -> tuple[list[Any], list[str]]:
        async with TestAPIServer() as srv:
            requested = await _scenario(srv)
            assert srv.count_requests(verb="delete", resource="pods", name="victim") == 1
            return [r for r in srv.requests if r.resource and r.verb], requested

    requests, requested = anyio.run(main)
    objs = kustomize(DEPLOY)
    rules = ksched_rules(objs)
    assert rules >= AUTH_DELEGATOR_RULES  # granted through system:auth-delegator
    used = [(f"{req.verb} {req.path}", _allowed(req, rules)) for req in requests]
    assert [k for k, rule in used if rule is None] == [], "requests RBAC would forbid"
    unused = rules - {rule for _, rule in used}
    assert unused == _unrequested_rules(requested), "rules no request needed"
    # the Role is namespaced: every lease and core event request stays in its namespace
    role_ns = find(objs, "Role")["metadata"]["namespace"]
    scoped = [r for r in requests if (_group(r.path), r.resource) in (LEASES, ("", "events"))]
    assert scoped and {r.namespace for r in scoped} == {"kube-system"}
    assert role_ns == "ksched"  # the base config names it; this test's config keeps the default


def test_contrib_podgroup_rules_are_read_only(contrib: Any) -> None:
    objs = kustomize(DEPLOY / "overlays" / "contrib")
    extra = rules_of(find(objs, "ClusterRole", "ksched-podgroups"))
    assert {v for *_, v, _ in extra} == {"list", "watch"}  # an informer, nothing else
    from ksched_contrib.coscheduling import PODGROUP_RESOURCE  # type: ignore[import-not-found]

    plural, _, version_group = PODGROUP_RESOURCE.partition(".")  # podgroups.v1alpha1.<group>
    assert {(g, r) for g, r, *_ in extra} == {(version_group.split(".", 1)[1], plural)}
