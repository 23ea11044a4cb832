"""``ksched extender`` behind a real kube-scheduler (``ksched.testing.controlplane``).

One kube-scheduler, shared by the module, runs as ``system:kube-scheduler`` with four
``extenders:``, each told apart by ``managedResources`` (so a pod picks the extenders it
meets by the extended resources it requests, and kube-scheduler, ``ignoredByScheduler``,
leaves those resources to the extender):

* ``ksched.test/cached``: a stateful ``ksched extender --kubeconfig`` (the
  ``system:kube-scheduler`` kubeconfig: the stock role must be enough for its informers),
  ``nodeCacheCapable: true``, verbs filter, prioritize, preempt and bind, served over HTTPS
  with ``--client-ca-file``: every request, ``/bind`` included, needs a client certificate
  that CA signed, whatever the address (127.0.0.1 here), and kube-scheduler's ``tlsConfig``
  carries its client certificate, key and CA inline (``certData``/``keyData``/``caData``);
* ``ksched.test/uncached``: a stateless ``ksched extender`` (nodes in the request, no pods),
  ``nodeCacheCapable: false``, verbs filter, prioritize and preempt;
* ``ksched.test/down-ignorable`` and ``ksched.test/down-required``: an extender URL nobody
  listens on, ``ignorable`` true and false.

The ksched extenders serve the plugins ``deploy/extender`` enables (NodeResourcesFit,
InterPodAffinity, PodTopologySpread), and only those, NodeResourcesFit scoring the extended
resources, so each placement or FailedScheduling text asserted here is one kube-scheduler
could not have come to by itself (each test's docstring says why). Each test has its own profile (schedulerName), nodes and label;
its pods and nodes are deleted when it ends.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.testing import make_node, make_pod, make_priority_class
from ksched.testing.controlplane import ControlPlane, KubeScheduler
from ksched.testing.controlplane._process import Component, free_port, wait_until

from ..extender.conftest import PKI, make_pki
from .conftest import JSON, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.kube]

CACHED = "ksched.test/cached"
UNCACHED = "ksched.test/uncached"
DOWN_IGNORABLE = "ksched.test/down-ignorable"
DOWN_REQUIRED = "ksched.test/down-required"

#: one kube-scheduler profile per scenario (a test, or one parameter of it)
SCENARIOS = (
    "filter-cached",
    "filter-uncached",
    "prioritize-cached",
    "prioritize-uncached",
    "bind",
    "bind-unauthenticated",
    "preempt-cached",
    "preempt-uncached",
    "preempt-veto",
    "ignorable",
    "required",
    "unmanaged",
)

#: the profile both ksched extenders serve: deploy/extender's plugins, NodeResourcesFit
#: scoring the extended resources (LeastAllocated: the emptier node scores higher)
EXTENDER_CONFIG: JSON = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "ksched-extender",
            "plugins": {
                "multiPoint": {
                    "enabled": [
                        {"name": n}
                        for n in (
                            "PrioritySort",
                            "NodeResourcesFit",
                            "InterPodAffinity",
                            "PodTopologySpread",
                            "DefaultBinder",
                        )
                    ],
                    "disabled": [{"name": "*"}],
                }
            },
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "LeastAllocated",
                            "resources": [
                                {"name": CACHED, "weight": 1},
                                {"name": UNCACHED, "weight": 1},
                            ],
                        }
                    },
                }
            ],
        }
    ],
}


def _get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return str(r.read().decode())


def _ready(url: str) -> bool:
    try:
        return _get(url, 2.0) == "ok"
    except (urllib.error.URLError, OSError):
        return False


class ExtenderProcess:
    """``python -m ksched extender`` on loopback, its own process group; with ``pki``,
    HTTPS requiring client certificates of its CA (``--client-ca-file``)."""

    def __init__(
        self, cp: ControlPlane, name: str, kubeconfig: Path | None, pki: PKI | None = None
    ) -> None:
        self.port, self.health = free_port(), free_port()
        self.pki = pki
        cfg = cp.dir / f"{name}.yaml"
        cfg.write_text(yaml.safe_dump(EXTENDER_CONFIG))
        argv = [
            sys.executable,
            "-m",
            "ksched",
            "extender",
            f"--config={cfg}",
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            f"--health-port={self.health}",
            f"--emulated-version={cp.emulated_version}",
        ]
        if kubeconfig is not None:
            argv.append(f"--kubeconfig={kubeconfig}")
        if pki is not None:
            argv += [
                f"--tls-cert-file={pki.path('server.pem')}",
                f"--tls-private-key-file={pki.path('server-key.pem')}",
                f"--client-ca-file={pki.path('ca.pem')}",
            ]
        self.component = Component(name, argv, cp.dir / "logs" / f"{name}.log")

    @property
    def url(self) -> str:
        return f"{'https' if self.pki else 'http'}://127.0.0.1:{self.port}"

    def client_tls(self, cert: PKI | None = None) -> ssl.SSLContext | None:
        """A client context trusting the server, presenting ``cert``'s client certificate
        (this extender's own CA's when None)."""
        if self.pki is None:
            return None
        ctx = ssl.create_default_context(cafile=self.pki.path("ca.pem"))
        signer = cert or self.pki
        ctx.load_cert_chain(signer.path("client.pem"), signer.path("client-key.pem"))
        return ctx

    def tls_config(self) -> JSON:
        """kube-scheduler's ``extenders[].tlsConfig``: certificate, key and CA inline."""
        assert self.pki is not None

        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        return {
            "certData": b64(self.pki.client_cert),
            "keyData": b64(self.pki.client_key),
            "caData": b64(self.pki.ca),
        }

    def start(self) -> None:
        self.component.start()
        # ready = informer caches synced (at once when stateless)
        wait_until(
            lambda: _ready(f"http://127.0.0.1:{self.health}/readyz"),
            30.0,
            self.component,
            "ready",
        )

    def stop(self) -> None:
        self.component.stop()

    def requests(self, verb: str) -> float:
        """How many ``verb`` requests it answered (any code)."""
        from prometheus_client.parser import text_string_to_metric_families

        text = _get(f"http://127.0.0.1:{self.health}/metrics")
        return sum(
            s.value
            for fam in text_string_to_metric_families(text)
            for s in fam.samples
            if s.name == "ksched_extender_server_requests_total" and s.labels["verb"] == verb
        )

    def counts(self) -> dict[str, float]:
        return {v: self.requests(v) for v in ("filter", "prioritize", "preempt", "bind")}

    def filter(self, pod: JSON, nodes: list[str]) -> JSON:
        """A /filter call of our own (NodeNames): what the extender's cache says now."""
        body = json.dumps({"Pod": pod, "NodeNames": nodes}).encode()
        req = urllib.request.Request(f"{self.url}/filter", data=body, method="POST")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=5, context=self.client_tls()) as r:
            out: JSON = json.loads(r.read())
        assert not out.get("Error"), out
        return out

    def log(self) -> str:
        return self.component.log.read_text(errors="replace")


@dataclass
class Rig:
    """The module's kube-scheduler, its extenders, namespace and priority classes."""

    cp: ControlPlane
    run: str
    namespace: str
    cached: ExtenderProcess
    uncached: ExtenderProcess
    dead_url: str
    low: str
    high: str
    scheduler: KubeScheduler | None = None

    def scheduler_name(self, scenario: str) -> str:
        assert scenario in SCENARIOS, scenario
        return f"ext-{self.run}-{scenario}"

    def config(self) -> JSON:
        def extender(url: str, resource: str, verbs: str, **kw: Any) -> JSON:
            entry: JSON = {f"{v}Verb": v for v in verbs.split()}
            if "prioritize" in verbs:
                entry["weight"] = 1
            entry.update(urlPrefix=url, httpTimeout="5s", **kw)
            entry["managedResources"] = [{"name": resource, "ignoredByScheduler": True}]
            return entry

        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": self.scheduler_name(s)} for s in SCENARIOS],
            "extenders": [
                extender(
                    self.cached.url,
                    CACHED,
                    "filter prioritize preempt bind",
                    nodeCacheCapable=True,
                    ignorable=False,
                    enableHTTPS=True,
                    tlsConfig=self.cached.tls_config(),
                ),
                extender(
                    self.uncached.url,
                    UNCACHED,
                    "filter prioritize preempt",
                    nodeCacheCapable=False,
                    ignorable=False,
                ),
                extender(self.dead_url, DOWN_IGNORABLE, "filter prioritize", ignorable=True),
                extender(self.dead_url, DOWN_REQUIRED, "filter", ignorable=False),
            ],
        }

    def log(self) -> str:
        assert self.scheduler is not None
        return self.scheduler.log()


@dataclass
class Scenario:
    """One test's profile, nodes (run-unique names and label) and pods."""

    rig: Rig
    name: str
    nodes: list[str] = field(default_factory=list)
    # name -> uid: names repeat across scenarios (one namespace), events are told apart
    pods: dict[str, str] = field(default_factory=dict)

    @property
    def cp(self) -> ControlPlane:
        return self.rig.cp

    @property
    def label(self) -> str:
        return f"{self.rig.run}-{self.name}"

    @property
    def pods_path(self) -> str:
        return f"/api/v1/namespaces/{self.rig.namespace}/pods"

    def node(self, name: str, cpu: str, extended: Mapping[str, int] | None = None) -> str:
        full = f"ext-{self.label}-{name}"
        body = make_node(full, cpu=cpu, labels={"ksched-ext-e2e": self.label})
        for key in ("capacity", "allocatable"):
            body["status"][key].update({k: str(v) for k, v in (extended or {}).items()})
        self.cp.ok("POST", "/api/v1/nodes", body)
        self.nodes.append(full)
        return full

    def pod_body(
        self,
        name: str,
        *,
        cpu: str = "100m",
        extended: Mapping[str, int] | None = None,
        priority_class: str | None = None,
        node: str | None = None,
    ) -> JSON:
        body = make_pod(
            name,
            self.rig.namespace,
            cpu=cpu,
            memory="64Mi",
            node_name=node,
            scheduler_name=self.rig.scheduler_name(self.name),
            priority_class_name=priority_class,
            nodeSelector={"ksched-ext-e2e": self.label},
        )
        if extended:
            # extended resources cannot be overcommitted: limits = requests
            ext = {k: str(v) for k, v in extended.items()}
            resources = body["spec"]["containers"][0]["resources"]
            resources["requests"].update(ext)
            resources["limits"] = ext
        return body

    def pod(self, name: str, **kw: Any) -> JSON:
        data: JSON = self.cp.ok("POST", self.pods_path, self.pod_body(name, **kw))
        self.pods[name] = data["metadata"]["uid"]
        return data

    def get(self, pod: str) -> JSON | None:
        status, data = self.cp.request("GET", f"{self.pods_path}/{pod}")
        if status == 404:
            return None
        assert status == 200, (status, data)
        out: JSON = data
        return out

    def node_of(self, pod: str) -> str | None:
        p = self.get(pod)
        return None if p is None else p["spec"].get("nodeName")

    def wait_bound(self, pod: str, timeout: float = 15.0) -> str:
        return wait_for(lambda: self.node_of(pod), timeout, 0.1, f"pod {pod} to be bound")

    def events(self, pod: str, reason: str) -> list[JSON]:
        data = self.cp.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{self.rig.namespace}/events")
        return [
            e
            for e in data["items"]
            if (e.get("regarding") or {}).get("uid") == self.pods[pod] and e.get("reason") == reason
        ]

    def event_note(self, pod: str, reason: str, timeout: float = 15.0) -> str:
        """The note of ``pod``'s latest ``reason`` event (waits for one)."""
        evs = wait_for(lambda: self.events(pod, reason), timeout, 0.1, f"{reason} event of {pod}")
        latest = max(evs, key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"])
        return str(latest["note"])

    def wait_cached(
        self,
        pod: JSON,
        nodes: list[str],
        fails: str | None = None,
        ext: ExtenderProcess | None = None,
    ) -> None:
        """Wait until a stateful extender's cache (``ext``, the cached one by default)
        agrees with the cluster: all ``nodes`` known, and ``pod`` rejected with ``fails`` (a
        reason) on them or accepted (None). Its informers are as quick as kube-scheduler's,
        but not synchronised with them."""
        ext = ext or self.rig.cached

        def agrees() -> bool:
            failed = ext.filter(pod, nodes)["FailedNodes"]
            if fails is None:
                return not failed
            return all(fails in failed.get(n, "") for n in nodes)

        wait_for(agrees, what=f"the stateful extender's cache ({fails or 'nodes'})")

    def cleanup(self) -> None:
        for p in self.pods:
            self.cp.request("DELETE", f"{self.pods_path}/{p}", {"gracePeriodSeconds": 0})
        for n in self.nodes:
            self.cp.request("DELETE", f"/api/v1/nodes/{n}")


@pytest.fixture(scope="module")
def rig(e2e_controlplane: ControlPlane) -> Iterator[Rig]:
    cp = e2e_controlplane
    run = uuid.uuid4().hex[:6]
    ns = f"ext-{run}"
    cp.ok("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    # the extenders that are down: a port bound (so nobody else takes it) but not listening
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    low, high = f"ext-{run}-low", f"ext-{run}-high"
    for name, value in ((low, 10), (high, 1000)):
        cp.ok(
            "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", make_priority_class(name, value)
        )
    r = Rig(
        cp,
        run,
        ns,
        # the stateful one under kube-scheduler's own identity and stock role
        cached=ExtenderProcess(
            cp,
            f"ksched-extender-{run}-cached",
            cp.scheduler_kubeconfig,
            _pki(cp.dir / f"ksched-extender-{run}-pki"),
        ),
        uncached=ExtenderProcess(cp, f"ksched-extender-{run}-uncached", None),
        dead_url=f"http://127.0.0.1:{dead.getsockname()[1]}",
        low=low,
        high=high,
    )
    try:
        with contextlib.ExitStack() as stack:
            for ext in (r.cached, r.uncached):
                stack.callback(ext.stop)
                ext.start()
            r.scheduler = cp.kube_scheduler(r.config(), name=f"kube-scheduler-ext-{run}")
            stack.enter_context(r.scheduler)
            yield r
            # no request the extenders could not answer, no traceback
            for ext in (r.cached, r.uncached):
                log = ext.log()
                assert "Traceback" not in log, log[-4000:]
                assert "informer caches are not synced" not in log, log[-4000:]
    finally:
        dead.close()
        cp.request("DELETE", f"/api/v1/namespaces/{ns}")
        for name in (low, high):
            cp.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def _pki(directory: Path) -> PKI:
    directory.mkdir(parents=True, exist_ok=True)
    return make_pki(directory)


@pytest.fixture
def make(rig: Rig) -> Iterator[Callable[[str], Scenario]]:
    """Makes the test's scenarios (by name, one of SCENARIOS); cleans them up after it."""
    made: list[Scenario] = []

    def new(name: str) -> Scenario:
        made.append(Scenario(rig, name))
        return made[-1]

    yield new
    for s in made:
        s.cleanup()


MODES = pytest.mark.parametrize("mode", ["cached", "uncached"])


def _setup(
    make: Callable[[str], Scenario], verb: str, mode: str, *nodes: tuple[str, str, int]
) -> tuple[Scenario, str, ExtenderProcess, list[str]]:
    """The scenario ``<verb>-<mode>``, the mode's resource and extender, and ``nodes``
    (name, cpu, how much of the resource), known to the extender's cache (when it has one)."""
    scenario = make(f"{verb}-{mode}")
    res = {"cached": CACHED, "uncached": UNCACHED}[mode]
    ext = {"cached": scenario.rig.cached, "uncached": scenario.rig.uncached}[mode]
    names = [scenario.node(name, cpu, {res: amount}) for name, cpu, amount in nodes]
    if mode == "cached":
        scenario.wait_cached(scenario.pod_body("probe"), names)
    return scenario, res, ext, names


def test_stateful_extender_under_stock_role(rig: Rig) -> None:
    """``ksched extender --kubeconfig`` with kube-scheduler's own identity and the stock
    ``system:kube-scheduler`` role: its informers sync (ready) and nothing is forbidden."""
    assert _get(f"http://127.0.0.1:{rig.cached.health}/readyz") == "ok"
    log = rig.cached.log()
    assert "extender informer caches synced" in log, log
    assert "forbidden" not in log.lower(), log


@MODES
def test_filter(make: Callable[[str], Scenario], mode: str) -> None:
    """The extender's Filter decides: kube-scheduler ignores the resource and prefers the
    bigger node, the extender fails it ("Insufficient <resource>" in FailedNodes)."""
    scenario, res, ext, (_big, small) = _setup(
        make, "filter", mode, ("big", "8", 1), ("small", "2", 4)
    )
    before = ext.requests("filter")
    scenario.pod("fits", extended={res: 2})
    assert scenario.wait_bound("fits") == small
    scenario.pod("too-big", extended={res: 5})
    note = scenario.event_note("too-big", "FailedScheduling")
    assert note.startswith("0/"), note
    assert f"2 Insufficient {res}" in note, note
    assert scenario.node_of("too-big") is None
    assert ext.requests("filter") >= before + 2
    if mode == "cached":
        # stateful: the bound pod counts (4 - 2 left on small; kube-scheduler counts nothing)
        scenario.wait_cached(scenario.pod_body("probe", extended={res: 3}), [small], "Insufficient")
        scenario.pod("after", extended={res: 3})
        note = scenario.event_note("after", "FailedScheduling")
        assert f"2 Insufficient {res}" in note, note


@MODES
def test_prioritize(make: Callable[[str], Scenario], mode: str) -> None:
    """The extender's scores decide: kube-scheduler prefers the node with more cpu (a few
    points), the extender the one with more of its resource (10 vs 5, x weight 1 x 10)."""
    scenario, res, ext, (roomy, _tight) = _setup(
        make, "prioritize", mode, ("roomy", "2", 1000), ("tight", "8", 2)
    )
    before = ext.requests("prioritize")
    for i in range(3):
        scenario.pod(f"p{i}", extended={res: 1})
    assert [scenario.wait_bound(f"p{i}") for i in range(3)] == [roomy] * 3
    assert ext.requests("prioritize") >= before + 3


def test_bind(make: Callable[[str], Scenario]) -> None:
    """Pods that request the cached extender's resource are bound by it (bindVerb), over
    HTTPS with the client certificate of kube-scheduler's ``tlsConfig`` (the extender
    requires one: ``--client-ca-file``), with kube-scheduler's Scheduled event as usual;
    other pods by kube-scheduler."""
    scenario = make("bind")
    ext = scenario.rig.cached
    node = scenario.node("n", "4", {CACHED: 10})
    scenario.wait_cached(scenario.pod_body("probe"), [node])
    before = ext.counts()
    scenario.pod("by-extender-0", extended={CACHED: 1})
    scenario.pod("by-extender-1", extended={CACHED: 1})
    scenario.pod("by-kube-scheduler")
    for p in ("by-extender-0", "by-extender-1", "by-kube-scheduler"):
        assert scenario.wait_bound(p) == node
        note = scenario.event_note(p, "Scheduled")
        assert note == f"Successfully assigned {scenario.rig.namespace}/{p} to {node}", note
    after = ext.counts()
    assert after["bind"] == before["bind"] + 2, (before, after)
    assert after["filter"] == before["filter"] + 2, (before, after)


def test_bind_without_a_client_certificate_is_refused(
    make: Callable[[str], Scenario], tmp_path: Path
) -> None:
    """kube-scheduler binds through the extender with the client certificate of its
    ``tlsConfig`` (test_bind); a curl-style /bind of the same pod without a certificate gets
    401 with a JSON body, one with another CA's certificate fails the TLS handshake, and
    neither binds anything."""
    scenario = make("bind-unauthenticated")
    ext = scenario.rig.cached
    assert ext.pki is not None
    node = scenario.node("n", "4", {CACHED: 1})
    victim = scenario.pod("victim", extended={CACHED: 100})  # fits nowhere
    scenario.event_note("victim", "FailedScheduling")
    before = ext.counts()["bind"]
    body = json.dumps(
        {
            "PodName": "victim",
            "PodNamespace": scenario.rig.namespace,
            "PodUID": victim["metadata"]["uid"],
            "Node": node,
        }
    ).encode()
    req = urllib.request.Request(f"{ext.url}/bind", data=body, method="POST")
    anonymous = ssl.create_default_context(cafile=ext.pki.path("ca.pem"))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=5, context=anonymous)
    assert refused.value.code == 401
    assert refused.value.headers["Content-Type"].startswith("application/json")
    assert json.loads(refused.value.read())["Error"].startswith("Unauthorized: ")
    foreign = ext.client_tls(_pki(tmp_path / "foreign"))
    # TLS 1.3: the client may already be sending when the server's alert arrives, so the
    # refusal shows as an SSL error or a connection closed without a response
    with pytest.raises(OSError) as handshake:
        urllib.request.urlopen(req, timeout=5, context=foreign)
    assert not isinstance(handshake.value, urllib.error.HTTPError), handshake.value
    assert scenario.node_of("victim") is None
    assert ext.counts()["bind"] == before + 1  # the 401; the handshake never got to HTTP


@MODES
def test_preempt(make: Callable[[str], Scenario], mode: str) -> None:
    """kube-scheduler's preemption asks the extender (ProcessPreemption: victims by UID when
    nodeCacheCapable, whole pods otherwise); the extender keeps the node, the victim goes."""
    scenario, res, ext, (node,) = _setup(make, "preempt", mode, ("n", "1", 2))
    scenario.pod(
        "victim", cpu="800m", extended={res: 1}, priority_class=scenario.rig.low, node=node
    )
    preemptor = scenario.pod_body(
        "preemptor", cpu="800m", extended={res: 1}, priority_class=scenario.rig.high
    )
    if mode == "cached":
        # the extender has seen the victim: the preemptor does not fit beside it
        scenario.wait_cached(preemptor, [node], "Insufficient cpu")
    before = ext.requests("preempt")
    scenario.pod("preemptor", cpu="800m", extended={res: 1}, priority_class=scenario.rig.high)
    assert scenario.wait_bound("preemptor", 20.0) == node
    assert scenario.get("victim") is None
    note = scenario.event_note("victim", "Preempted")
    assert note.startswith("Preempted by pod "), note
    assert ext.requests("preempt") == before + 1


def test_preempt_veto(make: Callable[[str], Scenario]) -> None:
    """kube-scheduler would evict the cpu hog; the stateful extender sees that the pod
    holding its resource stays, so the pod would still not fit: it drops the node, no
    candidate is left, nobody is evicted."""
    scenario = make("preempt-veto")
    ext, rig = scenario.rig.cached, scenario.rig
    node = scenario.node("n", "1", {CACHED: 1})
    scenario.pod("hog", cpu="600m", priority_class=rig.low, node=node)
    scenario.pod("holder", cpu="100m", extended={CACHED: 1}, priority_class=rig.low, node=node)
    preemptor = scenario.pod_body(
        "preemptor", cpu="500m", extended={CACHED: 1}, priority_class=rig.high
    )
    scenario.wait_cached(preemptor, [node], f"Insufficient {CACHED}")
    before = ext.requests("preempt")
    scenario.pod("preemptor", cpu="500m", extended={CACHED: 1}, priority_class=rig.high)
    note = scenario.event_note("preemptor", "FailedScheduling")
    assert note.startswith("0/"), note
    assert "1 Insufficient cpu" in note, note
    assert "preemption: no candidate node for preemption" in note, note
    assert ext.requests("preempt") == before + 1
    for p in ("hog", "holder"):
        pod = scenario.get(p)
        assert pod is not None and not pod["metadata"].get("deletionTimestamp"), p
    assert scenario.node_of("preemptor") is None


def test_ignorable_extender_down(make: Callable[[str], Scenario]) -> None:
    """An ignorable extender that cannot be reached is skipped: the pod is scheduled."""
    scenario = make("ignorable")
    skipped = "Skipping extender as it returned error and has ignorable flag set"
    before = scenario.rig.log().count(skipped)
    node = scenario.node("n", "4")
    scenario.pod("p", extended={DOWN_IGNORABLE: 1})
    assert scenario.wait_bound("p") == node
    assert scenario.rig.log().count(skipped) > before
    assert not scenario.events("p", "FailedScheduling")


def test_required_extender_down(make: Callable[[str], Scenario]) -> None:
    """A non-ignorable extender that cannot be reached fails the scheduling attempt."""
    scenario = make("required")
    scenario.node("n", "4")
    scenario.pod("p", extended={DOWN_REQUIRED: 1})
    note = scenario.event_note("p", "FailedScheduling")
    assert note.startswith(f'Post "{scenario.rig.dead_url}/filter": '), note
    assert note.endswith("connection refused"), note
    # an error, not a verdict: kube-scheduler retries with backoff
    pod = scenario.get("p")
    assert pod is not None and not pod["spec"].get("nodeName")
    (cond,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "SchedulerError", note)


def test_managed_resources(make: Callable[[str], Scenario]) -> None:
    """A pod that requests none of an extender's managed resources never reaches it: no
    call to either ksched extender, and the down non-ignorable one does not fail it."""
    scenario = make("unmanaged")
    rig = scenario.rig
    node = scenario.node("n", "4", {CACHED: 1, UNCACHED: 1})
    before = (rig.cached.counts(), rig.uncached.counts())
    scenario.pod("plain")
    assert scenario.wait_bound("plain") == node
    assert (rig.cached.counts(), rig.uncached.counts()) == before
