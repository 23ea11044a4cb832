"""kwok's one job that the tests need: finish deleting pods no kubelet will finish.

A pod bound to a node is deleted gracefully: kube-apiserver sets its deletionTimestamp and
waits for the node's kubelet to confirm. Here no kubelet runs, so preemption victims (and
every bound pod a test deletes) would stay Terminating; the reaper watches pods and
force-deletes (grace period 0, preconditioned on the UID) each one that is terminating on a
node.

Deletions go out from a small thread pool, so a burst of victims (a preemption workload
evicts three pods per preemptor) is finished about as fast as kwok would, not one
round trip at a time.
"""

from __future__ import annotations

import collections
import contextlib
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol


class _Identity(Protocol):
    @property
    def token(self) -> str: ...


class APIServer(Protocol):
    """What the reaper uses of the ``ControlPlane`` that starts it: declared here, so the
    control plane imports the reaper and not the other way round."""

    @property
    def url(self) -> str: ...

    @property
    def admin(self) -> _Identity: ...

    @property
    def ssl_context(self) -> ssl.SSLContext: ...

    def request(
        self, method: str, path: str, body: Any = None, *, timeout: float = 30.0
    ) -> tuple[int, Any]: ...


class PodReaper:
    """A daemon thread; ``stop()`` ends it within about a second.

    ``delay``: seconds a pod stays Terminating before it is finished, as a kubelet takes
    a while to stop containers. With none, a victim can vanish while kube-scheduler's
    preemption goroutine is still deleting the others: its deletion event then finds the
    preemptor held at PreEnqueue and is lost, and if the last victim's deletion interests
    none of the plugins that rejected the pod, the pod waits for the five-minute flush —
    a race no real cluster runs (the differential harness waits 1.5 s). ``spacing``: at
    least that many seconds between two pods finishing, as kubelets never finish two
    victims in the same instant (the scheduler reacts to each); pods are then finished
    one at a time in the order they were deleted, so a replay does not depend on which
    thread wakes first. ``group_delay`` and ``group_spacing`` (when set) replace both for
    the victims of a pod group's preemption (their DisruptionTarget condition says so):
    see ``ksched.sim.simulator.GROUP_VICTIM_TERMINATION_SECONDS``.
    """

    def __init__(
        self, cp: APIServer, workers: int = 8, delay: float = 0.0, spacing: float = 0.0
    ) -> None:
        self.cp = cp
        self.delay = delay
        self.spacing = spacing
        self.group_delay: float | None = None
        self.group_spacing: float | None = None
        self._fifo: collections.deque[tuple[float, str, str, float]] = collections.deque()
        self._fifo_ready = threading.Condition()
        self._fifo_thread = threading.Thread(
            target=self._run_fifo, name="pod-reaper-fifo", daemon=True
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-reaper", daemon=True)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="pod-reaper")
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self.reaped = 0

    def start(self) -> None:
        self._thread.start()
        self._fifo_thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._fifo_thread.join(5)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._list_and_watch()
            except Exception:
                self._stop.wait(0.5)

    def _list_and_watch(self) -> None:
        """List, then watch from the list's version. A read that times out (every second
        while idle, so ``stop`` is prompt) leaves the response unusable: the watch is
        opened again from the last version seen, not re-listed, so pods are still taken
        in the order they were deleted (a list is in name order)."""
        status, data = self.cp.request("GET", "/api/v1/pods", timeout=30)
        if status != 200:
            raise RuntimeError(status)
        items = data.get("items") or []
        items.sort(key=lambda p: int((p.get("metadata") or {}).get("resourceVersion") or 0))
        for pod in items:  # by last write: terminating ones in the order they were deleted
            self._maybe_reap(pod)
        rv = data["metadata"]["resourceVersion"]
        while not self._stop.is_set():
            req = urllib.request.Request(
                f"{self.cp.url}/api/v1/pods?watch=1&allowWatchBookmarks=true"
                f"&resourceVersion={rv}&timeoutSeconds=60"
            )
            req.add_header("Authorization", f"Bearer {self.cp.admin.token}")
            try:
                with urllib.request.urlopen(req, timeout=1.0, context=self.cp.ssl_context) as r:
                    buf = b""
                    while not self._stop.is_set():
                        chunk = r.read1(65536)
                        if not chunk:
                            break  # the server ended the watch: open it again
                        buf += chunk
                        while b"\n" in buf:
                            line, buf = buf.split(b"\n", 1)
                            ev = json.loads(line)
                            if ev.get("type") == "ERROR":
                                return  # e.g. 410 Gone: list again
                            obj = ev.get("object") or {}
                            rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                            if ev.get("type") in ("ADDED", "MODIFIED"):
                                self._maybe_reap(obj)
            except TimeoutError:
                continue  # idle for a second: reopen from ``rv``

    def _maybe_reap(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        if not meta.get("deletionTimestamp") or not (pod.get("spec") or {}).get("nodeName"):
            return
        uid = str(meta.get("uid"))
        with self._lock:
            if uid in self._pending:
                return  # a worker is on it already
            self._pending.add(uid)
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        delay, spacing = self.delay, self.spacing
        if self.group_delay is not None and _group_victim(pod):
            delay, spacing = self.group_delay, self.group_spacing or 0.0
        if self.spacing:
            with self._fifo_ready:
                self._fifo.append((time.monotonic() + delay, path, uid, spacing))
                self._fifo_ready.notify()
            return
        with contextlib.suppress(RuntimeError):  # the pool is shut down: stopping
            self._pool.submit(self._reap, path, uid)

    def _reap(self, path: str, uid: str) -> None:
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        try:
            if self.delay and self._stop.wait(self.delay):
                return
            self._finish(path, body)  # in parallel: a burst goes as fast as kwok's
        except Exception:
            pass  # the next list (after a watch ends) finds it again
        finally:
            with self._lock:
                self._pending.discard(uid)

    def _run_fifo(self) -> None:
        """With ``spacing``: one pod at a time, in deletion order, ``spacing`` apart."""
        while not self._stop.is_set():
            with self._fifo_ready:
                if not self._fifo:
                    self._fifo_ready.wait(0.2)
                    continue
                due, path, uid, spacing = self._fifo.popleft()
            try:
                if self._stop.wait(max(0.0, due - time.monotonic())):
                    return
                self._finish(path, {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
            except Exception:
                pass  # the next list (after a watch ends) finds it again
            finally:
                with self._lock:
                    self._pending.discard(uid)
            if self._stop.wait(spacing):
                return

    def _finish(self, path: str, body: dict[str, Any]) -> None:
        for _ in range(3):
            status, _data = self.cp.request("DELETE", path, body, timeout=10)
            if status in (200, 202, 404, 409):
                if status in (200, 202):
                    with self._lock:
                        self.reaped += 1
                return
            time.sleep(0.2)


def _group_victim(pod: dict[str, Any]) -> bool:
    """A pod a pod group's preemption evicts (its DisruptionTarget condition's message, as
    ``ksched.framework.preemption.preempted_for_pod_group`` reads it)."""
    return any(
        c.get("type") == "DisruptionTarget"
        and c.get("status") == "True"
        and str(c.get("message") or "").endswith("a higher priority podgroup")
        for c in (pod.get("status") or {}).get("conditions") or []
    )
