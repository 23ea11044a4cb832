"""Gang scheduling in ``ksched run``: ksched-contrib's Coscheduling against a live API server.

The daemon watches PodGroups because the plugin declares them in ``watch_resources``; the
plugin is found through its entry point, with ksched-contrib installed for the test as a
user would (``tests/contrib/_install.py``).
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..contrib._install import Installed, install
from .conftest import E2E, JSON, wait_for

pytestmark = pytest.mark.e2e

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1"


@pytest.fixture(scope="module")
def contrib_install(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(tmp_path_factory.mktemp("ksched-contrib"))


def _contrib_modules() -> list[str]:
    return [m for m in sys.modules if m.split(".")[0] == "ksched_contrib"]


@pytest.fixture
def contrib(contrib_install: Installed, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """ksched-contrib discoverable through entry points for one test, then forgotten."""
    saved = {m: sys.modules.pop(m) for m in _contrib_modules()}
    if contrib_install.path is not None:
        monkeypatch.syspath_prepend(str(contrib_install.path))
    importlib.invalidate_caches()
    yield
    for m in _contrib_modules():
        del sys.modules[m]
    sys.modules.update(saved)
    importlib.invalidate_caches()


PODGROUP_CRD = Path(__file__).parent / "podgroup-crd.yaml"
# deploy/'s contrib overlay: the ClusterRole ksched-podgroups (list, watch)
PODGROUP_RBAC = Path(__file__).parents[2] / "deploy/overlays/contrib/podgroups-rbac.yaml"


@pytest.fixture
def gang(e2e: E2E, contrib: None) -> E2E:
    cp = e2e.controlplane
    if cp is not None:
        # the CRD, and deploy/'s PodGroup reader role bound to the daemon's identity: the
        # stock system:kube-scheduler role cannot read PodGroups
        cp.kubectl("apply", "-f", str(PODGROUP_CRD), "-f", str(PODGROUP_RBAC))
        cp.kubectl("wait", "--for=condition=Established", "crd/podgroups.scheduling.x-k8s.io")
        binding = f"ksched-e2e-{e2e.run_id}-podgroups"
        cp.kubectl(
            "create",
            "clusterrolebinding",
            binding,
            "--clusterrole=ksched-podgroups",
            "--user=system:kube-scheduler",
        )
        e2e.cluster_objects.append(
            f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{binding}"
        )
    status, _ = e2e.kube.request("GET", f"{PODGROUPS}/podgroups")
    if status == 404:
        pytest.skip("the PodGroup CRD (scheduling.x-k8s.io/v1alpha1) is not installed")
    return e2e


def gang_config(e2e: E2E) -> JSON:
    return e2e.config(
        profiles=[
            {
                "schedulerName": e2e.scheduler_name,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                },
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}
                ],
            }
        ]
    )


def create_podgroup(e2e: E2E, name: str, min_member: int, timeout: int) -> None:
    e2e.kube.ok(
        "POST",
        f"{PODGROUPS}/namespaces/{e2e.namespace}/podgroups",
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": e2e.namespace},
            "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout},
        },
    )


def create_pod(e2e: E2E, name: str, cpu: str, group: str | None = None) -> None:
    labels = {GROUP_LABEL: group} if group else {}
    e2e.kube.ok(
        "POST",
        f"/api/v1/namespaces/{e2e.namespace}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": e2e.namespace, "labels": labels},
            "spec": {
                "schedulerName": e2e.scheduler_name,
                "nodeSelector": {"ksched-e2e": e2e.run_id},
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                    }
                ],
            },
        },
    )


def bound(e2e: E2E, names: list[str]) -> dict[str, str | None]:
    return {n: e2e.node_of(n) for n in names}


def binding_counts(e2e: E2E, names: list[str]) -> dict[str, int] | None:
    if e2e.server is None:
        return None
    return {
        n: e2e.server.count_requests(verb="create", resource="pods", subresource="binding", name=n)
        for n in names
    }


def assumed_pods(d: Any) -> list[str]:
    """Pods the scheduler's cache holds as assumed or parked at Permit (the reservations)."""
    sched = d.daemon.scheduler
    parked = [wp.pod.name for wp in sched.waiting_pods if not wp.done]
    return parked + sorted(sched.cache.assumed)


def rejected_at_permit(e2e: E2E, names: list[str]) -> list[str]:
    """Members whose reservation was taken back: parked at Permit, then rejected."""
    notes = [str(ev.get("note", "")) for n in names for ev in e2e.events(n, "FailedScheduling")]
    return [
        m
        for m in notes
        if "optimistic rejection in PostFilter" in m
        or "rejection in Unreserve" in m
        or "rejected due to timeout" in m
    ]


def test_gang_that_cannot_fit_binds_nothing_and_frees_its_room(gang: E2E) -> None:
    e2e = gang
    e2e.create_node("a", cpu="1")
    e2e.create_node("b", cpu="1")
    # Room for two of the three members only (one 600m pod per 1-CPU node).
    timeout = 2
    create_podgroup(e2e, "big", 3, timeout=timeout)
    members = ["big-0", "big-1", "big-2"]
    with e2e.daemon(gang_config(e2e)) as d:
        for m in members:
            create_pod(e2e, m, "600m", group="big")
        # Members did reach Permit (holding reservations) and were rejected...
        wait_for(lambda: rejected_at_permit(e2e, members), what="gang members rejected at Permit")
        # ...and past the permit timeout none is bound, nothing stays reserved.
        time.sleep(timeout + 1)
        assert bound(e2e, members) == dict.fromkeys(members)
        assert binding_counts(e2e, members) in (None, dict.fromkeys(members, 0))
        assert d.call(lambda: assumed_pods(d)) == []
        # The room the gang gave back is usable: a pod filling each node is bound.
        create_pod(e2e, "solo-a", "900m")
        create_pod(e2e, "solo-b", "900m")
        nodes = {e2e.wait_bound("solo-a"), e2e.wait_bound("solo-b")}
        assert nodes == set(e2e.nodes)
        assert bound(e2e, members) == dict.fromkeys(members)


def test_gang_that_fits_is_bound_together_once_each(gang: E2E) -> None:
    e2e = gang
    for n in ("a", "b", "c"):
        e2e.create_node(n, cpu="1")
    create_podgroup(e2e, "trio", 3, timeout=10)
    members = ["trio-0", "trio-1", "trio-2"]
    with e2e.daemon(gang_config(e2e)) as d:
        listers = d.call(lambda: d.daemon.scheduler.frameworks[e2e.scheduler_name].handle.listers)
        wait_for(lambda: f"{e2e.namespace}/trio" in listers["podgroups"], what="the PodGroup")
        for m in members:
            create_pod(e2e, m, "600m", group="trio")
        nodes = [e2e.wait_bound(m, timeout=20) for m in members]
        assert sorted(nodes) == sorted(e2e.nodes)  # one member per node
        time.sleep(0.5)  # a second binding would come right after the first
        assert binding_counts(e2e, members) in (None, dict.fromkeys(members, 1))
        for m in members:
            assert len(e2e.events(m, "Scheduled")) == 1


@pytest.mark.kube
@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_without_podgroup_rbac_the_daemon_says_which_permission(e2e: E2E, contrib: None) -> None:
    """The stock system:kube-scheduler role cannot list PodGroups: the daemon stays
    unready and /readyz names the collection and the API server's refusal."""
    cp = e2e.controlplane
    assert cp is not None
    cp.kubectl("apply", "-f", str(PODGROUP_CRD))
    cp.kubectl("wait", "--for=condition=Established", "crd/podgroups.scheduling.x-k8s.io")
    with e2e.daemon(gang_config(e2e), wait_ready=False) as d:

        def readyz() -> str | None:
            status, body = d.get("/readyz?verbose")
            # Other collections may still be listing on a loaded machine: wait until
            # PodGroups is the only one left, so the message is the steady one.
            wanted = "informers have not synced yet: podgroups ("
            return body if status == 503 and wanted in body else None

        body = wait_for(readyz, 15, what="/readyz naming the refusal")
        assert "[-]informer-sync failed: informers have not synced yet: podgroups (" in body
        assert (
            "/apis/scheduling.x-k8s.io/v1alpha1/podgroups: 403 Forbidden: podgroups."
            'scheduling.x-k8s.io is forbidden: User "system:kube-scheduler" cannot list '
            'resource "podgroups"' in body
        ), body
