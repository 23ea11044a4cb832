"""deploy/ and systemd/ against a real, fresh API server (each version CI runs): a
server-side dry run of ``deploy/`` needs the namespace first (deploy/README.md); what the
stock ``system:kube-scheduler`` identity may already do, and what systemd/rbac.yaml still adds
(docs/install-systemd.md, "Permissions"), asked of the API server with ``kubectl auth
can-i``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from ksched.testing.controlplane import ControlPlane

from ._manifests import DEPLOY, ROOT, Rule, find, load, rules_of

pytestmark = pytest.mark.kube

SCHEDULER = "system:kube-scheduler"
LEASES = "leases.coordination.k8s.io"


@pytest.fixture(scope="module")
def fresh() -> Iterator[ControlPlane]:
    """A control plane of its own: the first test needs a cluster without the namespace."""
    with ControlPlane() as cp:
        yield cp


def can_i(cp: ControlPlane, verb: str, what: str, *flags: str) -> bool:
    p = cp.kubectl("auth", "can-i", verb, what, f"--as={SCHEDULER}", *flags, check=False)
    answer = p.stdout.strip()
    assert answer in ("yes", "no"), (verb, what, flags, p.stderr)
    return answer == "yes"


def can_i_rule(cp: ControlPlane, rule: Rule, *flags: str) -> bool:
    group, resource, verb, name = rule
    base, _, sub = resource.partition("/")
    what = f"{base}.{group}" if group else base
    if name:
        what += f"/{name}"
    return can_i(cp, verb, what, *flags, *([f"--subresource={sub}"] if sub else []))


def test_server_dry_run_needs_the_namespace_first(fresh: ControlPlane) -> None:
    first = fresh.kubectl("apply", "--dry-run=server", "-k", str(DEPLOY), check=False)
    assert first.returncode == 1
    assert 'namespaces "ksched" not found' in first.stderr
    fresh.kubectl("apply", "-f", str(DEPLOY / "base" / "namespace.yaml"))
    second = fresh.kubectl("apply", "--dry-run=server", "-k", str(DEPLOY), check=False)
    assert second.returncode == 0, second.stderr
    assert "deployment.apps/ksched created (server dry run)" in second.stdout


def test_the_stock_identity_already_has_every_rule_of_kscheds_roles(fresh: ControlPlane) -> None:
    """The bootstrap roles cover ksched's ClusterRole cluster-wide, and the Lease
    kube-system/ksched by the leader-locking Role, which names no Lease."""
    cluster_rules = rules_of(find(load(DEPLOY / "base" / "clusterrole.yaml"), "ClusterRole"))
    assert len(cluster_rules) > 30
    denied = [r for r in sorted(cluster_rules) if not can_i_rule(fresh, r, "--all-namespaces")]
    # v1.36's bootstrap role has no DeviceTaintRules (its kube-scheduler reads them only
    # with DRADeviceTaintRules, off there; so does ksched at 1.36): the role is 1.37's
    gated = [("resource.k8s.io", "devicetaintrules", verb, "") for verb in ("list", "watch")]
    expected = [] if fresh.features.enabled("DRADeviceTaintRules") else gated
    # and PodGroups only with GenericWorkload (off by default), as ksched reads them
    if not fresh.features.enabled("GenericWorkload"):
        expected += [("scheduling.k8s.io", "podgroups", v, "") for v in ("list", "watch")]
        expected += [("scheduling.k8s.io", "podgroups/status", "patch", "")]
    assert denied == sorted(expected)
    role = find(load(ROOT / "systemd" / "rbac.yaml"), "Role")
    assert role["metadata"]["namespace"] == "kube-system"
    role_rules = rules_of(role)
    denied = [r for r in sorted(role_rules) if not can_i_rule(fresh, r, "-n", "kube-system")]
    assert denied == []
    # no name restriction in kube-system: a Lease named anything
    assert can_i(fresh, "update", f"{LEASES}/any-name", "-n", "kube-system")
    assert not can_i(fresh, "delete", f"{LEASES}/ksched", "-n", "kube-system")


def test_a_lease_outside_kube_system_needs_the_role(fresh: ControlPlane) -> None:
    """What rbac.yaml's Role is still for: moved (as the guide says) to the namespace of the
    Lease, it lets the stock identity read and renew it there, by name."""
    ns = "ksched-lease"
    fresh.kubectl("create", "namespace", ns)
    assert can_i(fresh, "create", LEASES, "-n", ns)  # the stock ClusterRole: create anywhere
    assert not can_i(fresh, "get", f"{LEASES}/ksched", "-n", ns)
    assert not can_i(fresh, "update", f"{LEASES}/ksched", "-n", ns)
    moved = []
    for obj in load(ROOT / "systemd" / "rbac.yaml"):
        if obj["kind"] in ("Role", "RoleBinding"):
            obj["metadata"]["namespace"] = ns
            moved.append(obj)
    fresh.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(moved))
    assert can_i(fresh, "get", f"{LEASES}/ksched", "-n", ns)
    assert can_i(fresh, "update", f"{LEASES}/ksched", "-n", ns)
    assert not can_i(fresh, "update", f"{LEASES}/another", "-n", ns)
