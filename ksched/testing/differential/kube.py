"""Replay a scenario against the real kube-scheduler on a ControlPlane.

One pending pod at a time, so each sees exactly the state the previous ones left. The
facts this relies on (kube-scheduler v1.36 and v1.37):

* per-plugin weighted scores and final scores appear in its log at
  ``--vmodule=schedule_one=10,schedule_one_podgroup=10`` ("Plugin scored node for pod",
  "Calculated node's final score for pod"), only when more than one node is feasible;
* OpportunisticBatching reuses a pod's scores for the next alike pod for 500 ms, so pods
  are at least ``gap`` (0.7 s) apart, unless the replay turns the feature gate off
  (``batching=False``: the scores are then computed for every pod, and no gap is needed);
* it retries an unschedulable pod on later cluster events, so that pod is deleted before
  the next is created;
* the API server refuses some generated combinations and defaults the rest: each pod is
  created with ``dryRun=All`` first and the defaulted object is what ksched gets;
* a claim provisioned for the pod (VolumeBinding's PreBind annotates it with the selected
  node, then waits for it to be bound) gets its PV from ``_provision``, playing the CSI
  driver's external provisioner, and the controller manager's PV controller binds it;
* preemption depends on how victims go: the control plane's PodReaper finishes each
  deleted pod ``TERMINATION_DELAY`` after its deletion, one at a time, as kubelets would
  (ksched's simulator assumes the same), and ksched gets the state in kube-scheduler's
  cache order (``_NodeOrder``), which decides ties among victims;
* a claim allocated to devices with binding conditions keeps the pod in PreBind until a
  DRA driver reports them: ``_BindingDriver`` plays that driver (``driver.py``'s policy,
  which ksched's simulator plays too).
"""

from __future__ import annotations

import contextlib
import copy
import http.client
import itertools
import json
import re
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...api.kinds import REGISTRY
from ..controlplane import ControlPlane, KubeScheduler
from .driver import DRIVER_DELAY, driver_status
from .generator import HOST, JSON, SPREAD_GAP, GangBatch, PendingPod, Scenario
from .outcome import (
    HELD_AT_PRE_ENQUEUE,
    POD_GROUP_CONDITION,
    Outcome,
    ReplayHints,
    gated_outcome,
    group_outcome,
    victim_units,
)

__all__ = [
    "BATCHING_GAP",
    "GANG_QUIET",
    "GATED_WAIT",
    "KubeReplay",
    "PodRun",
    "api_path",
    "parse_scores",
]

#: Seconds between pods while OpportunisticBatching is on (it reuses scores for 500 ms).
BATCHING_GAP = 0.7
#: Seconds a deleted bound pod stays Terminating (a kubelet's part, played by PodReaper):
#: ``ksched.sim.simulator.TERMINATION_SECONDS``, what ksched's simulator assumes.
TERMINATION_DELAY = 1.5
#: Seconds between two such pods finishing, so the scheduler sees them go one by one.
TERMINATION_SPACING = 0.25
#: A pod group's victims: ``ksched.sim.simulator.GROUP_VICTIM_TERMINATION_SECONDS``,
#: spaced so that ten of them are gone within the second before the group's retry.
GROUP_VICTIM_DELAY = 0.5
GROUP_VICTIM_SPACING = 0.04


def _kind_paths() -> dict[str, tuple[str, str, bool]]:
    """kind -> (group/version path, resource, namespaced): the kind registry's rows, the
    first of a kind's name (the core Event), built-in kinds only (not scheduler-plugins'
    PodGroup CRD: a scenario's PodGroups are scheduling.k8s.io's)."""
    out: dict[str, tuple[str, str, bool]] = {}
    for row in REGISTRY:
        if row.serve is None or not row.serve.crd:
            out.setdefault(row.kind, (row.path.rpartition("/")[0], row.resource, row.namespaced))
    return out


_PATHS = _kind_paths()
# What the scheduler's informers hold that pods can change while the replay runs.
_LIVE = ("Pod", "PersistentVolumeClaim", "PersistentVolume", "ResourceClaim")
# ... and for a scenario with PodGroups (served only with scheduling.k8s.io/v1beta1 on),
# whose status the scheduler writes.
_LIVE_GANG = (*_LIVE, "PodGroup")
#: Seconds a gated pod is left alone: before its gates' removal (kube-scheduler's
#: informer has delivered it, PreEnqueue has held it), and after, when one stays (nothing
#: may happen to it).
GATED_WAIT = 1.0
#: Seconds a member of a PodGroup may stay without a PodScheduled condition, after the
#: last event of its group, before it counts as held at PreEnqueue (``Pending``: no
#: condition is written for that).
GANG_QUIET = 4.0
#: Seconds a member whose first PodScheduled=False condition is a SchedulerError waits for
#: kube-scheduler's retry (an error sends a pod to the backoff queue: 1 s at first, at most
#: kube-scheduler's default podMaxBackoffSeconds of 10 s) before the error counts as its
#: outcome. A race upstream makes such errors: when members come before their PodGroup,
#: kube-scheduler may pop part of the group; PlacementFeasible fails that cycle before
#: any PreFilter, and DynamicResources' PodGroupPostFilter then errs on its missing state
#: (the generator avoids that order for groups of several; the goldens used it once).
ERROR_RETRY = 10.0

# A PodGroup's member's lines name its group first (podGroupType="podgroup" podGroup=...).
_GROUP_KEYS = r'(?:\w+="[^"]*" )*'
_SCORED = re.compile(
    r'"Plugin scored node for pod" ' + _GROUP_KEYS + r'pod="([^"]+)" plugin="([^"]+)" '
    r'node="([^"]+)" score=(-?\d+)'
)
_FINAL = re.compile(
    r'"Calculated node\'s final score for pod" ' + _GROUP_KEYS + r'pod="([^"]+)" '
    r'node="([^"]+)" score=(-?\d+)'
)
_ATTEMPT = re.compile(
    r'"Attempting to schedule (?:pod|a pod belonging to a pod group)" '
    + _GROUP_KEYS
    + r'pod="([^"]+)"'
)


def api_path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
    group, resource, namespaced = _PATHS[kind]
    path = f"{group}/namespaces/{namespace}/{resource}" if namespaced else f"{group}/{resource}"
    return f"{path}/{name}" if name else path


Scores = tuple[dict[str, dict[str, int]], dict[str, int]]


def score_attempts(log: str, pod_key: str) -> list[Scores]:
    """Per-plugin and final scores of each of ``pod_key``'s attempts in ``log``, in order
    (a pod-group member's attempts: one per placement tried, per cycle)."""
    attempts: list[Scores] = [({}, {})]
    for line in log.splitlines():
        m = _ATTEMPT.search(line)
        if m and m.group(1) == pod_key:
            attempts.append(({}, {}))
            continue
        scores, totals = attempts[-1]
        m = _SCORED.search(line)
        if m and m.group(1) == pod_key:
            scores.setdefault(m.group(2), {})[m.group(3)] = int(m.group(4))
            continue
        m = _FINAL.search(line)
        if m and m.group(1) == pod_key:
            totals[m.group(2)] = int(m.group(3))
    return attempts


def parse_scores(log: str, pod_key: str) -> Scores:
    """Per-plugin and final scores of ``pod_key``'s last attempt in ``log``."""
    return score_attempts(log, pod_key)[-1]


_GROUP_CYCLE = re.compile(r'"Attempting to schedule pod group" ' + _GROUP_KEYS)


_ASSUMED_PLACEMENT = re.compile(
    r'"Assuming placement in snapshot" ' + _GROUP_KEYS + r'placement="([^"]*)"'
)


def _group_condition(group: JSON) -> JSON | None:
    """The PodGroup's scheduling condition, if written."""
    conds = (group.get("status") or {}).get("conditions") or []
    return next((c for c in conds if c.get("type") == POD_GROUP_CONDITION), None)


def placement_orders(log: str, group_key: str) -> list[list[str]]:
    """The placements kube-scheduler tried for the group, in order, one list per run of
    its placement algorithm (each cycle's, then PodGroupPostFilter's reruns), in every
    cycle it had: a run ends where a placement comes round again."""
    marker = f'podGroup="{group_key}"'
    runs: list[list[str]] = []
    for line in log.splitlines():
        if marker in line and (m := _ASSUMED_PLACEMENT.search(line)):
            if not runs or m.group(1) in runs[-1]:
                runs.append([])
            runs[-1].append(m.group(1))
    return runs


def placing_scores(log: str, pod_key: str, group_key: str, node: str | None) -> Scores:
    """A pod-group member's scores in the attempt that placed it on ``node``: in the
    group's last cycle, the last attempt that scored that node (the chosen placement's);
    none when none did (the only feasible node there, or its nominated node: nothing is
    logged). Unplaced: its last attempt."""
    lines = log.splitlines()
    marker = f'podGroup="{group_key}"'
    last = max(
        (i for i, line in enumerate(lines) if marker in line and _GROUP_CYCLE.search(line)),
        default=0,
    )
    attempts = score_attempts("\n".join(lines[last:]), pod_key)
    if node is None:
        return attempts[-1]
    return next((a for a in reversed(attempts) if node in a[1]), ({}, {}))


def _watch_events(
    cp: ControlPlane, path: str, params: dict[str, str], read_timeout: float
) -> Iterator[JSON]:
    """The events of one watch request on ``path``; they end, without an error, when the
    stream ends or breaks, or is silent ``read_timeout`` seconds."""
    query = urllib.parse.urlencode({"watch": "1", **params})
    req = urllib.request.Request(f"{cp.url}{path}?{query}")
    req.add_header("Authorization", f"Bearer {cp.admin.token}")
    try:
        with urllib.request.urlopen(req, timeout=read_timeout, context=cp.ssl_context) as st:
            for line in st:
                yield json.loads(line)
    except (OSError, ValueError):
        return


def _watch(
    cp: ControlPlane,
    path: str,
    stop: threading.Event,
    resource_version: Callable[[], str],
    handle: Callable[[JSON], None],
) -> None:
    """Watch ``path`` from ``resource_version()`` until ``stop``, handing each event to
    ``handle`` (which moves the version on); a broken or timed-out watch is reopened."""
    while not stop.is_set():
        params = {"resourceVersion": resource_version(), "timeoutSeconds": "30"}
        for event in _watch_events(cp, path, params, read_timeout=40):
            if stop.is_set():
                return
            handle(event)
        time.sleep(0.1)


@dataclass
class PodRun:
    """One pending pod's replay: the state both schedulers saw, the defaulted pod and
    what each did; for a PodGroup's member, ``batch``: the PodGroup and every member
    (created objects), what ksched got besides the state."""

    pending: PendingPod
    state: list[JSON]
    pod: JSON | None
    kube: Outcome
    ksched: Outcome | None = None
    batch: list[JSON] = field(default_factory=list)
    # the pod after the ``schedgates`` group's gate removal (``KubeReplay._ungate``)
    update: JSON | None = None


#: ksched's side of a pod's replay: (state, the created pod, the states before the earlier
#: pods, the pod after its gates' removal or None) to its outcome.
PodReplay = Callable[[list[JSON], JSON, list[list[JSON]], JSON | None], Outcome]

#: ksched's side of a PodGroup's replay: (state, [the PodGroup], its created members) to
#: one outcome per member.
# (state, PodGroups, members, what kube-scheduler drew) -> ksched's outcomes
BatchReplay = Callable[[list[JSON], list[JSON], list[JSON], ReplayHints], list[Outcome]]


@dataclass
class _Member:
    """What the watch saw of one member of a PodGroup."""

    node: str | None = None
    first: dict[str, Any] | None = None  # the first PodScheduled=False condition
    nominated: str = ""  # now
    ever: str = ""  # the nominated node, once seen (cleared by its binding)
    errors: int = 0  # SchedulerError conditions seen
    error_at: float = 0.0  # when the first was seen (time.monotonic)

    @property
    def awaiting_retry(self) -> bool:
        """The first condition is an error, and neither its retry's verdict, a second
        error, nor ``ERROR_RETRY`` seconds have come since."""
        return (
            self.node is None
            and self.errors == 1
            and self.first is not None
            and self.first.get("reason") == "SchedulerError"
            and time.monotonic() < self.error_at + ERROR_RETRY
        )

    @property
    def settled(self) -> bool:
        if self.node is not None:
            return True
        return self.first is not None and not self.nominated and not self.awaiting_retry

    def outcome(self) -> Outcome:
        first = self.first
        message = str(first.get("message", "")) if first else ""
        if self.node:
            out = Outcome("Scheduled", node=self.node, condition=first, message=message)
            out.nominated = self.ever or self.nominated
            return out
        if first is None:
            return Outcome("Pending", message=HELD_AT_PRE_ENQUEUE)
        reason = first.get("reason", "")
        status = "Error" if reason == "SchedulerError" and not self.nominated else "Unschedulable"
        out = Outcome(status, message=message, condition=first)
        out.nominated = self.nominated
        return out


def _running(objs: list[JSON]) -> set[str]:
    """The pods among ``objs`` that are not being deleted."""
    return {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in objs
        if p["kind"] == "Pod" and not p["metadata"].get("deletionTimestamp")
    }


class _NodeOrder:
    """kube-scheduler's order of each node's pods (``NodeInfo.Pods``), rebuilt from the
    pod watch stream its informer sees: a pod is appended when it lands on the node and
    again on every later update (``cache.updatePod`` removes, then adds), and a deleted
    pod's place goes to the node's last pod (``removeFromSlice``).

    The order matters where upstream's comparisons are not a strict order: preemption
    sorts victims with ``time.Now()`` for pods without ``startTime``, so which of two
    unstarted pods is reprieved first follows their order on the node. ksched is given
    the state in this order.
    """

    def __init__(self, cp: ControlPlane, namespaces: list[str]) -> None:
        self.cp = cp
        self.namespaces = set(namespaces)
        self.nodes: dict[str, list[str]] = {}  # node -> pod keys, in cache order
        self.seen: dict[str, tuple[str, str]] = {}  # pod key -> (node, resourceVersion)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.rv = ""
        self.thread = threading.Thread(target=self._run, name="node-order", daemon=True)

    def start(self, resource_version: str) -> None:
        self.rv = resource_version
        self.thread.start()

    def close(self) -> None:
        self.stop.set()

    def _run(self) -> None:
        _watch(self.cp, "/api/v1/pods", self.stop, lambda: self.rv, self._apply)

    def _apply(self, event: JSON) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        if event.get("type") == "ERROR" or not meta:
            return
        self.rv = meta.get("resourceVersion", self.rv)
        if meta.get("namespace") not in self.namespaces:
            return
        key = f"{meta['namespace']}/{meta['name']}"
        node = (obj.get("spec") or {}).get("nodeName") or ""
        with self.lock:
            if key in self.seen:
                self._remove(key, self.seen.pop(key)[0])
            if event.get("type") != "DELETED" and node:
                self.nodes.setdefault(node, []).append(key)
                self.seen[key] = (node, meta.get("resourceVersion", ""))

    def _remove(self, key: str, node: str) -> None:
        pods = self.nodes.get(node, [])
        if key in pods:
            i = pods.index(key)
            pods[i] = pods[-1]
            pods.pop()

    def rank(self, pods: list[JSON], timeout: float = 5.0) -> dict[str, int] | None:
        """Each listed pod's place on its node, once the watch has caught up with the
        list (every bound pod seen at its listed version, nothing else); None if it does
        not within ``timeout``."""
        want = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": (
                p["spec"].get("nodeName") or "",
                p["metadata"].get("resourceVersion", ""),
            )
            for p in pods
            if (p.get("spec") or {}).get("nodeName")
        }
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                if self.seen == want:
                    return {k: i for keys in self.nodes.values() for i, k in enumerate(keys)}
            if time.monotonic() > deadline:
                return None
            time.sleep(0.02)


class _BindingDriver:
    """The DRA driver of devices with binding conditions: watches the scenario's
    ResourceClaims and, ``DRIVER_DELAY`` seconds after one is allocated such a device,
    writes the device's status conditions (``driver_status``), retrying on conflicts."""

    def __init__(self, cp: ControlPlane, namespaces: list[str]) -> None:
        self.cp = cp
        self.namespaces = set(namespaces)
        self.stop = threading.Event()
        self.rv = ""
        self.pending: set[str] = set()  # claims with a write scheduled
        self.lock = threading.Lock()
        self.writes = 0
        self.thread = threading.Thread(target=self._run, name="dra-driver", daemon=True)

    def start(self, resource_version: str) -> None:
        self.rv = resource_version
        self.thread.start()

    def close(self) -> None:
        self.stop.set()

    def _run(self) -> None:
        group, resource, _ = _PATHS["ResourceClaim"]
        path = f"{group}/{resource}"  # in every namespace
        _watch(self.cp, path, self.stop, lambda: self.rv, self._seen)

    def _seen(self, event: JSON) -> None:
        claim = event.get("object") or {}
        meta = claim.get("metadata") or {}
        if event.get("type") not in ("ADDED", "MODIFIED") or not meta:
            return
        self.rv = meta.get("resourceVersion", self.rv)
        if meta.get("namespace") not in self.namespaces or driver_status(claim, "") is None:
            return
        key = f"{meta['namespace']}/{meta['name']}"
        with self.lock:
            if key in self.pending:
                return
            self.pending.add(key)
        timer = threading.Timer(DRIVER_DELAY, self._write, (meta["namespace"], meta["name"]))
        timer.daemon = True
        timer.start()

    def _write(self, namespace: str, name: str) -> None:
        api = _Api(self.cp)
        path = api_path("ResourceClaim", namespace, name)
        try:
            for _ in range(5):
                if self.stop.is_set():
                    return
                st, claim = api.request("GET", path)
                if st != 200:
                    return
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                devices = driver_status(claim, now)
                if devices is None:
                    return
                claim["status"]["devices"] = devices
                st, _ = api.request("PUT", path + "/status", claim)
                if st < 300:
                    self.writes += 1
                    return
                if st != 409:
                    return
        finally:
            with self.lock:
                self.pending.discard(f"{namespace}/{name}")
            api.close()


class _Api:
    """Admin requests over one kept-alive connection: the replay makes ~20 per pod, and a
    TLS handshake each was a third of its wall time."""

    def __init__(self, cp: ControlPlane) -> None:
        parsed = urllib.parse.urlsplit(cp.url)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 443
        self.ctx = cp.ssl_context
        self.token = cp.admin.token
        self.conn: http.client.HTTPSConnection | None = None

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(
                    self.host, self.port, context=self.ctx, timeout=30
                )
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt:
                    raise
                continue  # the server closed an idle connection: once more on a new one
            try:
                return resp.status, json.loads(raw) if raw else None
            except ValueError:
                return resp.status, raw.decode(errors="replace")
        raise AssertionError("unreachable")

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self.request(method, path, body)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {data}")
        return data

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _fill_uids(obj: Any, uids: dict[str, str]) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"$uid"}:
            return uids.get(obj["$uid"], "00000000-0000-0000-0000-000000000000")
        return {k: _fill_uids(v, uids) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fill_uids(v, uids) for v in obj]
    return obj


def _message(body: Any) -> str:
    """The API server's reason for refusing a request."""
    return str(body.get("message", body)) if isinstance(body, dict) else str(body)


def _observe(member: _Member, pod: JSON) -> None:
    """A watch event of a member: its node, first PodScheduled=False condition and
    nomination. An error is not kube-scheduler's verdict but a retry's cause, so a first
    SchedulerError gives way to the retry's condition when that is not an error too."""
    status = pod.get("status") or {}
    member.node = (pod.get("spec") or {}).get("nodeName") or member.node
    cond = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None
    )
    if cond is not None and cond.get("status") == "False":
        seen = {k: cond[k] for k in ("reason", "message", "observedGeneration") if k in cond}
        error = seen.get("reason") == "SchedulerError"
        if error and seen != member.first:
            member.errors += 1
            member.error_at = member.error_at or time.monotonic()
        if member.first is None or (
            not error and member.first.get("reason") == "SchedulerError" and member.errors == 1
        ):
            member.first = seen
    member.nominated = status.get("nominatedNodeName", "") or ""
    member.ever = member.nominated or member.ever


def _ref(obj: JSON) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}"


def gate_values(feature_gates: Sequence[str], batching: bool) -> list[str]:
    """The ``--feature-gates`` values both schedulers run with: the given ones, and
    OpportunisticBatching off when ``batching`` is."""
    return [*feature_gates, *([] if batching else ["OpportunisticBatching=false"])]


class KubeReplay:
    """A kube-scheduler (default profile, logging its cycles' scores: ``--vmodule``) on
    ``cp``."""

    def __init__(
        self,
        cp: ControlPlane,
        *,
        gap: float | None = None,
        batching: bool = True,
        timeout: float = 20.0,
        preemption_timeout: float = 20.0,
        feature_gates: Sequence[str] = (),
    ) -> None:
        self.cp = cp
        self.api = _Api(cp)
        self.batching = batching
        # --feature-gates values, as ksched's replay gets them (batching=False adds its own)
        self.feature_gates = list(feature_gates)
        self.gap = gap if gap is not None else (BATCHING_GAP if batching else 0.0)
        self.timeout = timeout
        self.preemption_timeout = preemption_timeout
        self.scheduler: KubeScheduler | None = None
        self._log_offset = 0
        self.refused: list[str] = []  # setup objects the API server refused
        self._uids: dict[str, str] = {}  # "Kind/namespace/name" -> uid, this scenario's
        self._nominated = ""  # the pod's nominated node, once seen (cleared by its binding)
        self._order: _NodeOrder | None = None
        self._driver: _BindingDriver | None = None
        self._reaper_delay = (0.0, 0.0)
        self.order_fallbacks = 0  # pods whose node order came from resourceVersions
        self._provisioned: list[str] = []  # PVs _provision made, deleted with the scenario
        self._pod_groups: list[str] = []  # PodGroups _batch made (paths), likewise
        self._created: list[JSON] = []  # the scenario's objects, deleted after it
        self._history: list[list[JSON]] = []  # the state before each pod of the scenario

    def __enter__(self) -> KubeReplay:
        reaper = self.cp.reaper
        if reaper is not None:
            # victims terminate as on a node with a kubelet, not faster than
            # kube-scheduler's preemption goroutine finishes (see PodReaper)
            self._reaper_delay = reaper.delay, reaper.spacing
            reaper.delay = max(reaper.delay, TERMINATION_DELAY)
            reaper.spacing = max(reaper.spacing, TERMINATION_SPACING)
            reaper.group_delay, reaper.group_spacing = GROUP_VICTIM_DELAY, GROUP_VICTIM_SPACING
        args = ["--vmodule=schedule_one=10,schedule_one_podgroup=10"]
        args += [f"--feature-gates={g}" for g in gate_values(self.feature_gates, self.batching)]
        self.scheduler = self.cp.kube_scheduler(None, name="kube-scheduler-differential", args=args)
        self.scheduler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.cp.reaper is not None:
            self.cp.reaper.delay, self.cp.reaper.spacing = self._reaper_delay
            self.cp.reaper.group_delay = self.cp.reaper.group_spacing = None
        self.api.close()
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None

    # -- one scenario ----------------------------------------------------------------------------

    def run(
        self,
        scenario: Scenario,
        ksched: PodReplay | None = None,
        ksched_batch: BatchReplay | None = None,
    ) -> Iterator[PodRun]:
        """Replay ``scenario``; ``ksched(state, pod, history, update)`` is called for each
        pod while the real scheduler works on it (``history``: the states before the
        earlier pods; ``update``: the pod after ``_ungate``, for a gated one),
        ``ksched_batch`` for each PodGroup's members (``_batch``). Everything the scenario
        created is deleted after."""
        created: list[JSON] = []
        self._created = created
        # the state before each pod so far: the snapshots kube-scheduler took
        self._history = []
        rv = self.api.ok("GET", "/api/v1/pods?limit=1")["metadata"]["resourceVersion"]
        self._order = _NodeOrder(self.cp, list(scenario.namespaces))
        self._order.start(rv)
        self._driver = _BindingDriver(self.cp, list(scenario.namespaces))
        self._driver.start(rv)
        try:
            static = self._setup(scenario, created)
            for key, step in itertools.groupby(scenario.pending, lambda p: p.batch):
                if key:
                    yield from self._batch(
                        scenario, scenario.batches[key], list(step), static, ksched_batch
                    )
                else:
                    for pending in step:
                        yield self._one(scenario, pending, static, ksched)
        finally:
            self._order.close()
            self._driver.close()
            self._teardown(scenario, created)

    def _in_cache_order(self, state: list[JSON]) -> list[JSON]:
        """``state`` with its pods in kube-scheduler's per-node order (``_NodeOrder``);
        by last write if the watch lags (what that order is when nothing was deleted)."""
        pods = [o for o in state if o["kind"] == "Pod"]
        rank = self._order.rank(pods) if self._order is not None else None
        if rank is None:
            self.order_fallbacks += 1
            pods.sort(key=lambda p: int(p["metadata"].get("resourceVersion") or 0))
        else:
            pods.sort(
                key=lambda p: rank.get(f"{p['metadata']['namespace']}/{p['metadata']['name']}", -1)
            )
        return [o for o in state if o["kind"] != "Pod"] + pods

    def _setup(self, scenario: Scenario, created: list[JSON]) -> list[JSON]:
        cp = self.api
        uids = self._uids = {}
        for raw in scenario.objects:
            obj = _fill_uids(copy.deepcopy(raw), uids)
            kind = obj["kind"]
            ns = obj["metadata"].get("namespace")
            if kind == "Namespace":
                self._await_gone(api_path("Namespace", name=obj["metadata"]["name"]), 120)
            st, out = cp.request("POST", api_path(kind, ns), obj)
            if st >= 300:
                # the generator should not make these; skip the object, keep the scenario
                self.refused.append(f"{_ref(obj)}: {out.get('message', out)}")
                continue
            out.setdefault("kind", kind)
            out.setdefault("apiVersion", obj["apiVersion"])
            uids[_ref(out)] = out["metadata"]["uid"]
            created.append(out)
        self._await_pv_binding(scenario)
        time.sleep(1.0)  # the scheduler's informers catch up
        return [o for o in created if o["kind"] not in _LIVE]

    def _await_pv_binding(self, scenario: Scenario, timeout: float = 30.0) -> None:
        """Pre-bound claims go Bound through the PV controller before any pod comes."""
        want = [
            o
            for o in scenario.objects
            if o["kind"] == "PersistentVolumeClaim" and o["spec"].get("volumeName")
        ]
        deadline = time.monotonic() + timeout
        for pvc in want:
            path = api_path(
                "PersistentVolumeClaim", pvc["metadata"]["namespace"], pvc["metadata"]["name"]
            )
            while time.monotonic() < deadline:
                st, cur = self.api.request("GET", path)
                if st == 200 and cur.get("status", {}).get("phase") == "Bound":
                    break
                time.sleep(0.1)

    def _live_state(self, scenario: Scenario) -> list[JSON]:
        out: list[JSON] = []
        names = set(scenario.namespaces)
        prefix = scenario.name_prefix
        for kind in _LIVE_GANG if scenario.batches else _LIVE:
            group, resource, namespaced = _PATHS[kind]
            items = self.api.ok("GET", f"{group}/{resource}")["items"]
            for it in items:
                meta = it["metadata"]
                if namespaced and meta.get("namespace") not in names:
                    continue
                if not namespaced and not meta["name"].startswith(prefix):
                    continue
                it.setdefault("kind", kind)
                it.setdefault("apiVersion", group.removeprefix("/apis/").removeprefix("/api/"))
                out.append(it)
        return out

    def _one(
        self,
        scenario: Scenario,
        pending: PendingPod,
        static: list[JSON],
        ksched: PodReplay | None,
    ) -> PodRun:
        cp = self.api
        if pending.before:
            self._create_before(pending, static)
        path = api_path("Pod", pending.namespace)
        body = _fill_uids(pending.pod, self._uids)
        st, dry = cp.request("POST", path + "?dryRun=All", body)
        if st >= 300:
            msg = dry.get("message", str(dry)) if isinstance(dry, dict) else str(dry)
            return PodRun(pending, [], None, Outcome("Rejected", message=msg))
        dry.setdefault("kind", "Pod")
        dry.setdefault("apiVersion", "v1")
        state = self._in_cache_order(static + self._live_state(scenario))
        before = _running(state)
        start = time.monotonic()
        created = cp.ok("POST", path, body)
        # kube-scheduler uses the created object; ksched gets the same (uid, generation)
        pod = {**created, "kind": "Pod", "apiVersion": "v1"}
        rv = created["metadata"]["resourceVersion"]
        update: JSON | None = None
        gates = {g["name"] for g in pod["spec"].get("schedulingGates") or []}
        if gates:
            update = self._ungate(pending)
            rv = update["metadata"]["resourceVersion"] if update is not None else rv
            # the state the pod meets once let in (the earlier pods' victims went meanwhile)
            state = [
                o
                for o in self._in_cache_order(static + self._live_state(scenario))
                if o["metadata"].get("uid") != pod["metadata"]["uid"]
            ]
            before = _running(state)
        ours = None
        if ksched is not None:
            ours = ksched(state, copy.deepcopy(pod), self._history, update)
        self._history.append(state)
        self._nominated = ""
        if gates - set(pending.ungate):
            time.sleep(GATED_WAIT)  # time to be let in, which must not happen
            kube = gated_outcome(cp.ok("GET", api_path("Pod", pending.namespace, pending.name)))
        else:
            kube = self._await_outcome(pending, rv)
        key = f"{pending.namespace}/{pending.name}"
        kube.scores, kube.totals = parse_scores(self._new_log(), key)
        if kube.scores:
            kube.feasible = sorted(next(iter(kube.scores.values())))
        elif kube.node:
            kube.feasible = [kube.node]
        # victims: gone, or still terminating (a kubelet, the reaper, finishes them one
        # at a time; the preemptor may bind before the last one is gone)
        kube.victims = sorted(before - _running(self._live_state(scenario)))
        if kube.node is None:
            cp.request(
                "DELETE",
                api_path("Pod", pending.namespace, pending.name),
                {"gracePeriodSeconds": 0},
            )
            self._await_gone(api_path("Pod", pending.namespace, pending.name), 30)
        rest = self.gap - (time.monotonic() - start)
        time.sleep(max(rest, self.gap / 2))
        return PodRun(pending, state, pod, kube, ours, update=update)

    def _ungate(self, pending: PendingPod) -> JSON | None:
        """The ``schedgates`` group's step: once kube-scheduler has seen the created pod
        gated (``GATED_WAIT``), one update removes ``pending.ungate`` from its gates
        (the API server allows removing gates, not adding them); the updated pod, None
        when no gate is removed (no update is made)."""
        time.sleep(GATED_WAIT)
        if not pending.ungate:
            return None
        path = api_path("Pod", pending.namespace, pending.name)
        for _ in range(5):
            cur = self.api.ok("GET", path)
            gates = cur["spec"].get("schedulingGates") or []
            cur["spec"]["schedulingGates"] = [g for g in gates if g["name"] not in pending.ungate]
            st, out = self.api.request("PUT", path, cur)
            if st < 300:
                return {**out, "kind": "Pod", "apiVersion": "v1"}
            if st != 409:
                raise RuntimeError(f"PUT {path}: {st} {_message(out)}")
        raise RuntimeError(f"PUT {path}: conflicts")

    def _create_before(self, pending: PendingPod, static: list[JSON]) -> None:
        """The objects the generator has join just before ``pending`` (new nodes), into
        the state of this pod and the next ones."""
        for raw in pending.before:
            obj = _fill_uids(copy.deepcopy(raw), self._uids)
            kind = obj["kind"]
            st, out = self.api.request(
                "POST", api_path(kind, obj["metadata"].get("namespace")), obj
            )
            if st >= 300:
                self.refused.append(f"{_ref(obj)}: {out.get('message', out)}")
                continue
            out.setdefault("kind", kind)
            out.setdefault("apiVersion", obj["apiVersion"])
            self._uids[_ref(out)] = out["metadata"]["uid"]
            self._created.append(out)
            static.append(out)
        time.sleep(1.0)  # the scheduler's informers catch up

    # -- a PodGroup ------------------------------------------------------------------------------

    def _batch(
        self,
        scenario: Scenario,
        batch: GangBatch,
        members: list[PendingPod],
        static: list[JSON],
        ksched: BatchReplay | None,
    ) -> list[PodRun]:
        """A PodGroup and its members, created as ``batch.timing`` says; every member's
        outcome once each bound, failed, or stayed without a condition ``GANG_QUIET``
        seconds (held at PreEnqueue: ``Pending``), and the group's (``group_outcome``)
        on each. Unbound members are deleted after, as a pod alone is; the PodGroup
        stays (its status is the record). ksched gets the state before the first
        member, the created PodGroup and members, all at once."""
        cp = self.api
        ns = batch.namespace
        path = api_path("Pod", ns)
        runs: list[PodRun] = []
        bodies: list[tuple[PendingPod, JSON]] = []
        for m in members:
            body = _fill_uids(m.pod, self._uids)
            st, dry = cp.request("POST", path + "?dryRun=All", body)
            if st >= 300:
                runs.append(PodRun(m, [], None, Outcome("Rejected", message=_message(dry))))
            else:
                bodies.append((m, body))
        group_path = api_path("PodGroup", ns)
        st, dry = cp.request("POST", group_path + "?dryRun=All", batch.pod_group)
        if st >= 300:
            self.refused.append(f"PodGroup/{ns}/{batch.name}: {_message(dry)}")
            rejected = Outcome("Rejected", message=f"its PodGroup: {_message(dry)}")
            return runs + [PodRun(m, [], None, rejected) for m, _ in bodies]
        if not bodies:
            return runs
        state = self._in_cache_order(static + self._live_state(scenario))
        before = _running(state)
        rv = cp.ok("GET", path + "?limit=1")["metadata"]["resourceVersion"]
        group: JSON = {}
        self._pod_groups.append(api_path("PodGroup", ns, batch.name))
        if batch.timing != "late":
            group = cp.ok("POST", group_path, batch.pod_group)
        pods: list[JSON] = []
        for i, (_, body) in enumerate(bodies):
            if i and batch.timing == "spread":
                time.sleep(SPREAD_GAP)
            pods.append({**cp.ok("POST", path, body), "kind": "Pod", "apiVersion": "v1"})
        if batch.timing == "late":
            group = cp.ok("POST", group_path, batch.pod_group)
        group = {**group, "kind": "PodGroup", "apiVersion": batch.pod_group["apiVersion"]}
        replayed = copy.deepcopy(pods)
        with self._provisioners([m for m, _ in bodies]):
            seen = self._watch_batch(ns, [m.name for m, _ in bodies], rv)
        log = self._new_log()
        kube = [seen[m.name].outcome() for m, _ in bodies]
        for (m, _), out in zip(bodies, kube, strict=True):
            out.scores, out.totals = placing_scores(
                log, f"{ns}/{m.name}", f"{ns}/{batch.name}", out.node
            )
            if out.scores:
                out.feasible = sorted(next(iter(out.scores.values())))
            elif out.node:
                out.feasible = [out.node]
        hints = ReplayHints(
            {f"{ns}/{m.name}": o.node for (m, _), o in zip(bodies, kube, strict=True) if o.node},
            {f"{ns}/{batch.name}": placement_orders(log, f"{ns}/{batch.name}")},
        )
        ours = ksched(state, [group], replayed, hints) if ksched is not None else None
        self._history.append(state)
        settled = any(o.status != "Pending" for o in kube)
        bound = any(o.node for o in kube)
        written = self._await_group_condition(ns, batch.name, settled, bound, rv)
        victims = victim_units(sorted(before - _running(self._live_state(scenario))), state)
        summary = group_outcome(written, kube, victims)
        for out in kube:
            out.group = summary
        for (m, _), out in zip(bodies, kube, strict=True):
            if out.node is None:
                cp.request("DELETE", api_path("Pod", ns, m.name), {"gracePeriodSeconds": 0})
        for (m, _), out in zip(bodies, kube, strict=True):
            if out.node is None:
                self._await_gone(api_path("Pod", ns, m.name), 30)
        time.sleep(self.gap)
        return runs + [
            PodRun(m, state, pod, k, None if ours is None else ours[i], [group, *pods])
            for i, ((m, _), pod, k) in enumerate(zip(bodies, pods, kube, strict=True))
        ]

    @contextlib.contextmanager
    def _provisioners(self, members: list[PendingPod]) -> Iterator[None]:
        """The external provisioner (``_provision``) for each member with claims, on a
        thread and a connection of its own, while the members are watched."""
        stop = threading.Event()
        wait = self.timeout + self.preemption_timeout
        workers: list[tuple[threading.Thread, _Api]] = []
        for m in members:
            if any("persistentVolumeClaim" in v for v in m.pod["spec"].get("volumes", [])):
                api = _Api(self.cp)
                args = (m, wait, stop, api)
                t = threading.Thread(target=self._provision, args=args, daemon=True)
                t.start()
                workers.append((t, api))
        try:
            yield
        finally:
            stop.set()
            for t, api in workers:
                t.join()
                api.close()

    def _watch_batch(
        self, namespace: str, names: list[str], resource_version: str
    ) -> dict[str, _Member]:
        """Watch the members from before the first was created until each is settled
        (bound, or failed without a nomination), nothing happened to any for
        ``GANG_QUIET`` seconds (and none waits on a preemption), or the timeout."""
        members = {n: _Member() for n in names}
        now = time.monotonic()
        deadline, quiet = now + self.timeout, now + GANG_QUIET
        version = resource_version
        path = api_path("Pod", namespace)

        def done() -> bool:
            t = time.monotonic()
            if all(m.settled for m in members.values()) or t > deadline:
                return True
            return t > quiet and not any(m.nominated or m.awaiting_retry for m in members.values())

        while not done():
            # a short read timeout: a quiet stream is reopened, so the clocks are read
            params = {"resourceVersion": version, "timeoutSeconds": "30"}
            for event in _watch_events(self.cp, path, params, read_timeout=1.0):
                cur = event.get("object") or {}
                meta = cur.get("metadata") or {}
                version = meta.get("resourceVersion", version)
                m = members.get(meta.get("name", ""))
                if m is not None and event.get("type") in ("ADDED", "MODIFIED"):
                    _observe(m, cur)
                    quiet = time.monotonic() + GANG_QUIET
                    if m.nominated:
                        deadline = max(deadline, time.monotonic() + self.preemption_timeout)
                if done():
                    break
        return members

    def _await_group_condition(
        self,
        namespace: str,
        name: str,
        settled: bool,
        bound: bool,
        resource_version: str,
        timeout: float = 3.0,
    ) -> JSON | None:
        """The PodGroup as the scheduler wrote its condition, which it does after the
        members' own updates: when a member ``bound``, as the cycle that placed it wrote
        it (True), read from the PodGroup's history since ``resource_version``: a later
        cycle for the members left over can write False over it, because kube-scheduler
        guards the True against its informer's copy, which may not have seen it yet;
        at once when no member was tried (no condition comes); else as it stands."""
        if bound and settled:
            placed = self._first_true_condition(namespace, name, resource_version, timeout)
            if placed is not None:
                return placed
        path = api_path("PodGroup", namespace, name)
        deadline = time.monotonic() + timeout
        while True:
            st, group = self.api.request("GET", path)
            if st != 200:
                return None
            if _group_condition(group) is not None or not settled:
                return dict(group)
            if time.monotonic() > deadline:
                return dict(group)
            time.sleep(0.1)

    def _first_true_condition(
        self, namespace: str, name: str, resource_version: str, timeout: float
    ) -> JSON | None:
        """The first version of the PodGroup, since ``resource_version``, whose condition
        is True; None if none came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        version = resource_version
        path = api_path("PodGroup", namespace)
        while time.monotonic() < deadline:
            params = {
                "resourceVersion": version,
                "fieldSelector": f"metadata.name={name}",
                "timeoutSeconds": "5",
            }
            for event in _watch_events(self.cp, path, params, read_timeout=0.5):
                cur = event.get("object") or {}
                if event.get("type") == "ERROR":  # too old a version: no history
                    return None
                version = (cur.get("metadata") or {}).get("resourceVersion", version)
                cond = _group_condition(cur)
                if cond is not None and cond.get("status") == "True":
                    return {**cur, "kind": "PodGroup"}
                if time.monotonic() > deadline:
                    break
        return None

    def _await_outcome(self, pending: PendingPod, resource_version: str) -> Outcome:
        """The pod's outcome, with the external provisioner at work meanwhile for a pod
        with claims: kube-scheduler waits in PreBind for the PVs of the claims it
        annotated, and says nothing about it on the pod (without
        NominatedNodeNameForExpectation not even a nomination), so the provisioner polls
        the claims on its own thread until the outcome is in. It is the only user of
        ``self.api`` until then (joined before this returns)."""
        if not any("persistentVolumeClaim" in v for v in pending.pod["spec"].get("volumes", [])):
            return self._watch_outcome(pending, resource_version)
        stop = threading.Event()
        wait = self.timeout + self.preemption_timeout
        worker = threading.Thread(
            target=self._provision, args=(pending, wait, stop), name="provisioner", daemon=True
        )
        worker.start()
        try:
            return self._watch_outcome(pending, resource_version)
        finally:
            stop.set()
            worker.join()

    def _watch_outcome(self, pending: PendingPod, resource_version: str) -> Outcome:
        """Watch the pod from its creation on: a preemptor's PodScheduled=False condition
        may last only ~100 ms before it binds, too short for polling."""
        path = api_path("Pod", pending.namespace)
        params = {
            "fieldSelector": f"metadata.name={pending.name}",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(int(self.timeout + self.preemption_timeout)),
        }
        deadline = time.monotonic() + self.timeout
        first: dict[str, Any] | None = None
        # the watch timing out or breaking: no outcome
        for event in _watch_events(self.cp, path, params, read_timeout=self.timeout):
            cur = event.get("object") or {}
            if event.get("type") not in ("ADDED", "MODIFIED"):
                continue
            node = cur.get("spec", {}).get("nodeName")
            status = cur.get("status", {})
            cond = next(
                (c for c in status.get("conditions", []) if c.get("type") == "PodScheduled"),
                None,
            )
            if (
                cond is not None
                and cond.get("status") == "False"
                and cond.get("reason") != "SchedulingGated"  # the API server's, at creation
                and first is None
            ):
                first = {
                    k: cond[k] for k in ("reason", "message", "observedGeneration") if k in cond
                }
            nominated = status.get("nominatedNodeName", "") or ""
            if node:
                out = Outcome("Scheduled", node=node, condition=first)
                out.message = str(first.get("message", "")) if first else ""
                out.nominated = self._nominated or nominated
                return out
            if nominated:
                self._nominated = nominated
                deadline = max(deadline, time.monotonic() + self.preemption_timeout)
            elif first is not None:
                reason = first.get("reason", "")
                return Outcome(
                    "Error" if reason == "SchedulerError" else "Unschedulable",
                    message=str(first.get("message", "")),
                    condition=first,
                )
            if time.monotonic() > deadline:
                break
        if self._nominated and first is not None:
            # Preempted for, and still pending a preemption_timeout later: an outcome
            # (ksched's simulator retries at once; a real queue may hold the pod longer).
            out = Outcome("Unschedulable", message=str(first.get("message", "")), condition=first)
            out.nominated = self._nominated
            return out
        return Outcome("Timeout", message="no outcome within the timeout", condition=first)

    def _provision(
        self, pending: PendingPod, wait: float, stop: threading.Event, api: _Api | None = None
    ) -> None:
        """The external provisioner's part for the pod's claims the scheduler selected a
        node for: a PV of the requested size on that node, pre-bound to the claim. Polls
        the still unbound claims for up to ``wait`` seconds, until ``stop``; over ``api``
        (default ``self.api``)."""
        api = api or self.api
        ns = pending.namespace
        names = [
            v["persistentVolumeClaim"]["claimName"]
            for v in pending.pod["spec"].get("volumes", [])
            if "persistentVolumeClaim" in v
        ]
        deadline = time.monotonic() + wait
        for name in names:
            while True:
                st, pvc = api.request("GET", api_path("PersistentVolumeClaim", ns, name))
                if st != 200 or pvc["spec"].get("volumeName"):
                    break
                node = (
                    pvc["metadata"].get("annotations", {}).get("volume.kubernetes.io/selected-node")
                )
                if node:
                    self._create_pv(pvc, node, api)
                    break
                if time.monotonic() > deadline or stop.wait(0.1):
                    return

    def _create_pv(self, pvc: JSON, node: str, api: _Api) -> None:
        spec = pvc["spec"]
        st, sc = api.request("GET", api_path("StorageClass", name=spec["storageClassName"]))
        if st != 200:
            return
        name = f"{sc['metadata']['name']}-{pvc['metadata']['uid'][:8]}"
        meta = pvc["metadata"]
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                "accessModes": spec["accessModes"],
                "storageClassName": spec["storageClassName"],
                "persistentVolumeReclaimPolicy": "Retain",
                "csi": {"driver": sc["provisioner"], "volumeHandle": name},
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": HOST, "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    }
                },
            },
        }
        st, _ = api.request("POST", api_path("PersistentVolume"), pv)
        if st < 300:
            self._provisioned.append(name)

    def _new_log(self) -> str:
        """The scheduler's log written since the last call."""
        assert self.scheduler is not None and self.scheduler.component is not None
        with self.scheduler.component.log.open("rb") as f:
            f.seek(self._log_offset)
            data = f.read()
        self._log_offset += len(data)
        return data.decode(errors="replace")

    # -- cleanup ---------------------------------------------------------------------------------

    def _await_gone(self, path: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.api.request("GET", path)[0] == 404:
                return
            time.sleep(0.02)

    def _delete_pod_group(self, path: str) -> None:
        """Delete a PodGroup, and drop the finalizer admission gave it: the controller
        manager's podgroup-protection controller, which would, does not run here."""
        self.api.request("DELETE", path)
        for _ in range(5):
            st, group = self.api.request("GET", path)
            if st != 200 or not group["metadata"].get("finalizers"):
                break
            group["metadata"]["finalizers"] = []
            if self.api.request("PUT", path, group)[0] < 300:
                break
        self._await_gone(path, 30)

    def _teardown(self, scenario: Scenario, created: list[JSON]) -> None:
        cp = self.api
        for ns in scenario.namespaces:
            for p in cp.request("GET", api_path("Pod", ns))[1].get("items", []):
                cp.request(
                    "DELETE",
                    api_path("Pod", ns, p["metadata"]["name"]),
                    {"gracePeriodSeconds": 0},
                )
        for obj in reversed(created):
            kind = obj["kind"]
            if kind in ("Pod", "Namespace"):
                continue
            meta = obj["metadata"]
            cp.request("DELETE", api_path(kind, meta.get("namespace"), meta["name"]))
        for name in self._provisioned:
            cp.request("DELETE", api_path("PersistentVolume", name=name))
        self._provisioned.clear()
        for path in self._pod_groups:
            self._delete_pod_group(path)
        self._pod_groups.clear()
        for ns in scenario.own_namespaces:
            cp.request("DELETE", api_path("Namespace", name=ns))
        time.sleep(0.2)
