"""End-to-end fixtures: the daemon against an API server over real HTTP.

Every test gets an ``E2E`` environment for a target:

* ``apiserver``: a fresh in-process test API server (``ksched.testing``), with fault
  injection and request recording;
* ``kube``: the real etcd + kube-apiserver of ``ksched.testing.controlplane`` (the version
  ``KSCHED_KUBE_VERSION`` selects; ksched emulates the same one), shared by the session
  (marker ``kube``). The daemon runs as ``system:kube-scheduler`` with only
  the stock RBAC role; test objects are made as admin, isolated as for ``cluster``;
* ``cluster``: the real cluster of ``$KSCHED_E2E_KUBECONFIG`` (only when it is set). Objects
  are namespaced and uniquely named — a fresh namespace, fake nodes labelled with the run
  id, pods selecting those nodes and using a run-unique schedulerName, so the cluster's own
  scheduler and workloads are never touched — and removed afterwards.

Tests that need the test API server's fault injection or request log are marked
``fake_apiserver`` and run on that target only (on a real cluster they are deselected,
not skipped).

Tests are synchronous; the daemon runs on an event loop in a helper thread (an anyio
blocking portal), exactly as it would embedded in another program.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from anyio.from_thread import BlockingPortal, start_blocking_portal

from ksched.features import FeatureGates
from ksched.testing import Faults, TestAPIServer
from ksched.testing.controlplane import ControlPlane

T = TypeVar("T")
JSON = dict[str, Any]

REAL_KUBECONFIG = os.environ.get("KSCHED_E2E_KUBECONFIG")
TARGETS: list[Any] = ["apiserver", pytest.param("kube", marks=pytest.mark.kube)]
if REAL_KUBECONFIG:
    TARGETS.append("cluster")


def wait_for(
    cond: Callable[[], T | None],
    timeout: float = 15.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """Poll ``cond`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Kube:
    """Minimal raw-JSON API access through the official client's transport and auth."""

    def __init__(self, kubeconfig: Path) -> None:
        from kubernetes import config

        self.client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig)
        )
        self.cfg = self.client.configuration

    def close(self) -> None:
        self.client.close()

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        auth = self.cfg.auth_settings().get("BearerToken")
        if auth and auth.get("value"):
            headers["Authorization"] = auth["value"]
        from kubernetes.client.exceptions import ApiException

        try:
            resp = self.client.rest_client.request(
                method, self.cfg.host + path, headers=headers, body=body, _request_timeout=30
            )
            resp.read()
        except ApiException as e:
            return int(e.status or 0), _body(e.body)
        return resp.status, _body(resp.data)

    def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        status, data = self.request(method, path, body, **kw)
        if status >= 300:
            raise AssertionError(f"{method} {path}: {status} {data}")
        return data


def _body(data: bytes | str | None) -> Any:
    """JSON, or the text of a plain body ("404 page not found" from a real server)."""
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode(errors="replace") if isinstance(data, bytes) else data


_NAMESPACED_KINDS = frozenset(
    {"PersistentVolumeClaim", "CSIStorageCapacity", "ResourceClaim", "ResourceClaimTemplate"}
)


@dataclass
class E2E:
    """One test's view of its target."""

    target: str
    # the daemon's identity: on ``kube``, system:kube-scheduler with the stock role
    kubeconfig: Path
    # the test's own client (admin where the target has one)
    kube: Kube
    run_id: str
    namespace: str
    scheduler_name: str
    tmp: Path
    server: TestAPIServer | None = None
    controlplane: ControlPlane | None = None
    nodes: list[str] = field(default_factory=list)
    # API paths of the cluster-scoped objects created besides nodes (deleted afterwards)
    cluster_objects: list[str] = field(default_factory=list)

    # -- capabilities ----------------------------------------------------------------------
    @property
    def features(self) -> FeatureGates | None:
        """The gates ksched runs with: on ``kube``, the control plane's kube-scheduler's
        version (``ControlPlane.features``); elsewhere ksched's default (None)."""
        return self.controlplane.features if self.controlplane is not None else None

    def emulation_args(self) -> list[str]:
        """``ksched run`` arguments for ``features``: ``--emulated-version`` on ``kube``."""
        cp = self.controlplane
        return [] if cp is None else ["--emulated-version", cp.emulated_version]

    @property
    def faults(self) -> Faults:
        return self.need_server().faults

    def need_server(self) -> TestAPIServer:
        """The test API server; a test that calls this must be marked ``fake_apiserver``."""
        if self.server is None:
            raise AssertionError("mark this test fake_apiserver: it needs the test API server")
        return self.server

    # -- objects -----------------------------------------------------------------------------
    def node_name(self, name: str) -> str:
        """A run-unique name: for nodes and every other cluster-scoped object."""
        return f"e2e-{self.run_id}-{name}"

    def create_node(
        self,
        name: str,
        *,
        cpu: str = "4",
        memory: str = "16Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
    ) -> str:
        full = self.node_name(name)
        alloc = {"cpu": cpu, "memory": memory, "pods": pods}
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": full,
                "labels": {
                    **(labels or {}),
                    "ksched-e2e": self.run_id,
                    "kubernetes.io/hostname": full,
                },
            },
            "status": {
                "capacity": alloc,
                "allocatable": alloc,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        self.kube.ok("POST", "/api/v1/nodes", body)
        self.nodes.append(full)
        return full

    def create_pod(
        self,
        name: str,
        *,
        cpu: str = "100m",
        memory: str = "64Mi",
        scheduler_name: str | None = None,
        labels: dict[str, str] | None = None,
        owner: JSON | None = None,
        volumes: list[JSON] | None = None,
        resource_claims: list[JSON] | None = None,
        extended: dict[str, str] | None = None,
    ) -> JSON:
        """``owner``: a created controller object the pod names as its controller;
        ``volumes``: the pod's ``spec.volumes``; ``resource_claims``: its
        ``spec.resourceClaims`` (DRA); ``extended``: extended resources the container
        requests (and limits to the same)."""
        meta: JSON = {"name": name, "namespace": self.namespace}
        if labels:
            meta["labels"] = dict(labels)
        if owner is not None:
            from ksched.testing import controller_ref

            meta["ownerReferences"] = [controller_ref(owner)]
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {
                "schedulerName": scheduler_name or self.scheduler_name,
                "nodeSelector": {"ksched-e2e": self.run_id},
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {
                            "requests": {"cpu": cpu, "memory": memory, **(extended or {})},
                            **({"limits": dict(extended)} if extended else {}),
                        },
                    }
                ],
            },
        }
        if volumes is not None:
            body["spec"]["volumes"] = volumes
        if resource_claims is not None:
            body["spec"]["resourceClaims"] = resource_claims
        data: JSON = self.kube.ok("POST", f"/api/v1/namespaces/{self.namespace}/pods", body)
        return data

    def object_path(self, kind: str, name: str = "") -> str:
        """The API path of a storage or DRA object (its collection without ``name``);
        claims and claim templates live in the test's namespace."""
        ns = self.namespace
        base = {
            "PersistentVolumeClaim": f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
            "PersistentVolume": "/api/v1/persistentvolumes",
            "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
            "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
            "CSIStorageCapacity": (f"/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities"),
            "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
            "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
            "ResourceClaim": f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
            "ResourceClaimTemplate": (
                f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates"
            ),
        }[kind]
        return f"{base}/{name}" if name else base

    def create_object(self, obj: JSON) -> JSON:
        """Create a builder's object (``ksched.testing.make_pvc`` ...). A claim goes into the
        test's namespace; a cluster-scoped object must be named with ``node_name`` and is
        deleted afterwards on a real cluster."""
        kind, meta = obj["kind"], obj["metadata"]
        namespaced = kind in _NAMESPACED_KINDS
        if namespaced:
            meta["namespace"] = self.namespace
        else:
            assert meta["name"].startswith(self.node_name("")), meta["name"]
        data: JSON = self.kube.ok("POST", self.object_path(kind), obj)
        if not namespaced:
            self.cluster_objects.append(self.object_path(kind, meta["name"]))
        return data

    def get_object(self, kind: str, name: str) -> JSON:
        data: JSON = self.kube.ok("GET", self.object_path(kind, name))
        return data

    def pod(self, name: str) -> JSON:
        data: JSON = self.kube.ok("GET", f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        return data

    def node_of(self, name: str) -> str | None:
        node: str | None = self.pod(name)["spec"].get("nodeName")
        return node

    def wait_bound(self, name: str, timeout: float = 15.0) -> str:
        return wait_for(lambda: self.node_of(name), timeout, what=f"pod {name} to be bound")

    def events(self, pod: str, reason: str | None = None) -> list[JSON]:
        data = self.kube.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
        out = [e for e in data["items"] if (e.get("regarding") or {}).get("name") == pod]
        return [e for e in out if reason is None or e.get("reason") == reason]

    def condition(self, pod: str, type_: str = "PodScheduled") -> JSON | None:
        for c in self.pod(pod).get("status", {}).get("conditions") or []:
            if c.get("type") == type_:
                return dict(c)
        return None

    def wait_unschedulable(self, pod: str) -> JSON:
        """Wait for ``pod``'s PodScheduled=False (Unschedulable) condition and check it was
        reported once: one FailedScheduling event, with the condition's message, and no
        retry within a while (nothing in the cluster changes meanwhile). The condition."""
        cond = wait_for(lambda: self.condition(pod), what="PodScheduled condition")
        assert cond["status"] == "False"
        assert cond["reason"] == "Unschedulable"
        # a real cluster has more nodes, which the pod's nodeSelector rules out
        assert cond["message"].startswith("0/")
        wait_for(lambda: self.events(pod, "FailedScheduling"), what="FailedScheduling event")
        time.sleep(1.5)  # a retry now would be a bug
        events = self.events(pod, "FailedScheduling")
        assert len(events) == 1, events
        assert events[0]["type"] == "Warning"
        assert events[0]["note"] == cond["message"]
        return cond

    # -- the scheduler -----------------------------------------------------------------------
    def config(self, **top: Any) -> JSON:
        cfg: JSON = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"qps": 500, "burst": 1000},
            "profiles": [{"schedulerName": self.scheduler_name}],
        }
        cfg.update(top)
        return cfg

    def write_config(self, cfg: JSON | None = None, name: str = "config.yaml") -> Path:
        path = self.tmp / name
        path.write_text(yaml.safe_dump(cfg if cfg is not None else self.config()))
        return path

    @contextlib.contextmanager
    def daemon(
        self,
        cfg: JSON | None = None,
        *,
        wait_ready: bool = True,
        plugins: dict[str, type] | None = None,
        client_kw: dict[str, Any] | None = None,
        features: Any = None,
        **kw: Any,
    ) -> Iterator[DaemonHandle]:
        """A SchedulerDaemon on its own event loop thread; stopped (gracefully) on exit.
        ``plugins``: extra plugin classes by name, for ``cfg`` to enable; ``client_kw``:
        APIClient arguments (its watch probe's timings, say); ``features``: the gates (and
        emulated version) to load ``cfg`` under, the control plane's if None."""
        from ksched.cluster import APIClient
        from ksched.config import load_config_data
        from ksched.daemon import SchedulerDaemon
        from ksched.plugins import default_registry

        registry = default_registry()
        for name, cls in (plugins or {}).items():
            registry.register(name, cls, "tests")
        config, _ = load_config_data(
            cfg if cfg is not None else self.config(),
            features=features if features is not None else self.features,
        )
        with start_blocking_portal() as portal:
            client = portal.call(
                lambda: APIClient.from_kubeconfig(self.kubeconfig, qps=0, **(client_kw or {}))
            )
            try:
                d = SchedulerDaemon(
                    config, registry=registry, client=client, port=0, shutdown_timeout=5.0, **kw
                )
                with portal.wrap_async_context_manager(d):
                    h = DaemonHandle(d, portal)
                    if wait_ready:
                        portal.call(d.wait_ready, 20.0)
                    yield h
            finally:
                portal.call(client.close)


@dataclass
class DaemonHandle:
    daemon: Any
    portal: BlockingPortal

    @property
    def url(self) -> str:
        return str(self.daemon.url)

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the daemon's loop (a consistent read of scheduler state)."""

        async def run() -> T:
            return fn()

        return self.portal.call(run)

    def get(self, path: str) -> tuple[int, str]:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


class KschedProcess:
    """One ``ksched run`` process (``--port 0 --secure-port 0 --log-format json`` added,
    unless ``args`` name a secure port); its JSON log
    lines are collected by a reader thread."""

    def __init__(self, args: list[str], *, name: str = "ksched", **env: str) -> None:

        self.name = name
        self.p = subprocess.Popen(
            [sys.executable, "-m", "ksched", "run", *args, "--port", "0"]
            + ([] if any(a.startswith("--secure-port") for a in args) else ["--secure-port", "0"])
            + ["--log-format", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1", **env),
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.log: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = ""

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                self.lines.put({"msg": line.rstrip()})

    def _drain(self) -> None:
        while True:
            try:
                self.log.append(self.lines.get_nowait())
            except queue.Empty:
                return

    def logged(self, msg: str) -> dict[str, Any] | None:
        """The first log entry whose message is ``msg``."""
        self._drain()
        return next((e for e in self.log if e.get("msg") == msg), None)

    def count(self, msg: str) -> int:
        self._drain()
        return sum(e.get("msg") == msg for e in self.log)

    def wait_log(self, msg: str, timeout: float = 20.0) -> dict[str, Any]:
        return wait_for(lambda: self.logged(msg), timeout, what=f"{self.name}: log {msg!r}")

    def serving(self, timeout: float = 20.0) -> str:
        """The URL of its health/metrics/debug endpoints, once it serves them."""
        self.url = str(self.wait_log("serving health, metrics and debug endpoints", timeout)["url"])
        return self.url

    def get(self, path: str) -> tuple[int, str]:

        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode()
        except OSError:
            return 0, ""

    @property
    def alive(self) -> bool:
        return self.p.poll() is None

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then SIGKILL after ``timeout``; the exit status."""

        if self.alive:
            self.p.terminate()
            try:
                return self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        return int(self.p.returncode)

    def kill(self) -> None:
        if self.alive:
            self.p.kill()
            self.p.wait(10)


def metric(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in Prometheus text output (None when absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fault-injection tests exist for the test API server only: deselect their real-cluster
    variants instead of skipping them."""
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        target = callspec.params.get("e2e") if callspec is not None else None
        if target not in (None, "apiserver") and item.get_closest_marker("fake_apiserver"):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def e2e_controlplane() -> Iterator[ControlPlane]:
    """The session's real control plane for the ``kube`` target, with kube-controller-
    manager (PV binder, namespace and garbage collectors, resourceclaim controller)."""
    with ControlPlane(with_controller_manager=True) as cp:
        yield cp


@pytest.fixture(params=TARGETS)
def e2e(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[E2E]:
    run_id = uuid.uuid4().hex[:8]
    if request.param == "apiserver":
        with TestAPIServer(bookmark_interval=1.0).run_in_thread() as srv:
            kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
            kube = Kube(kubeconfig)
            env = E2E(
                "apiserver",
                kubeconfig,
                kube,
                run_id,
                f"e2e-{run_id}",
                f"ksched-e2e-{run_id}",
                tmp_path,
                server=srv,
            )
            kube.ok("POST", "/api/v1/namespaces", {"metadata": {"name": env.namespace}})
            try:
                yield env
            finally:
                kube.close()
        return
    cp: ControlPlane | None = None
    if request.param == "kube":
        cp = request.getfixturevalue("e2e_controlplane")
        kubeconfig, admin = cp.scheduler_kubeconfig, cp.admin_kubeconfig
    else:
        assert REAL_KUBECONFIG
        kubeconfig = admin = Path(REAL_KUBECONFIG)
    kube = Kube(admin)
    env = E2E(
        request.param,
        kubeconfig,
        kube,
        run_id,
        f"ksched-e2e-{run_id}",
        f"ksched-e2e-{run_id}",
        tmp_path,
        controlplane=cp,
    )
    kube.ok("POST", "/api/v1/namespaces", {"metadata": {"name": env.namespace}})
    try:
        yield env
    finally:
        _cleanup_real(env)
        kube.close()


@pytest.fixture
def kube_name(e2e: E2E) -> Iterator[str]:
    """A real kube-scheduler serving the profile ``kube-<run id>``."""
    assert e2e.controlplane is not None
    name = f"kube-{e2e.run_id}"
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": name}],
    }
    with e2e.controlplane.kube_scheduler(cfg, name=f"kube-scheduler-{e2e.run_id}"):
        yield name


def _cleanup_real(env: E2E) -> None:
    """Pods on fake nodes never get a kubelet to finish deletion: force them, then the rest."""
    ns = env.namespace
    status, data = env.kube.request("GET", f"/api/v1/namespaces/{ns}/pods")
    for p in (data or {}).get("items", []) if status == 200 else []:
        env.kube.request(
            "DELETE",
            f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}",
            {"gracePeriodSeconds": 0},
        )
    for n in env.nodes:
        env.kube.request("DELETE", f"/api/v1/nodes/{n}")
    # the namespace takes the claims along; their PVs' protection finalizers go once they
    # are released
    env.kube.request("DELETE", f"/api/v1/namespaces/{ns}")
    for path in reversed(env.cluster_objects):
        env.kube.request("DELETE", path)
