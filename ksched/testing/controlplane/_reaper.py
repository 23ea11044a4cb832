"""kwok's one job that the tests need: finish deleting pods no kubelet will finish.

A pod bound to a node is deleted gracefully: kube-apiserver sets its deletionTimestamp and
waits for the node's kubelet to confirm. Here no kubelet runs, so preemption victims (and
every bound pod a test deletes) would stay Terminating; the reaper watches pods and
force-deletes (grace period 0, preconditioned on the UID) each one that is terminating on a
node.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import ControlPlane


class PodReaper:
    """A daemon thread; ``stop()`` ends it within about a second."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-reaper", daemon=True)
        self.reaped = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._list_and_watch()
            except Exception:
                self._stop.wait(0.5)

    def _list_and_watch(self) -> None:
        status, data = self.cp.request("GET", "/api/v1/pods", timeout=30)
        if status != 200:
            raise RuntimeError(status)
        for pod in data.get("items") or []:
            self._maybe_reap(pod)
        rv = data["metadata"]["resourceVersion"]
        req = urllib.request.Request(
            f"{self.cp.url}/api/v1/pods?watch=1&allowWatchBookmarks=true"
            f"&resourceVersion={rv}&timeoutSeconds=60"
        )
        req.add_header("Authorization", f"Bearer {self.cp.admin.token}")
        with urllib.request.urlopen(req, timeout=1.0, context=self.cp.ssl_context) as r:
            buf = b""
            while not self._stop.is_set():
                try:
                    chunk = r.read1(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    ev = json.loads(line)
                    if ev.get("type") == "ERROR":
                        return
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        self._maybe_reap(ev["object"])

    def _maybe_reap(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        if not meta.get("deletionTimestamp") or not (pod.get("spec") or {}).get("nodeName"):
            return
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta.get("uid")}}
        for _ in range(3):
            status, _data = self.cp.request("DELETE", path, body, timeout=10)
            if status in (200, 202, 404, 409):
                self.reaped += status in (200, 202)
                return
            time.sleep(0.2)
