"""Fault injection and request recording for the test API server.

Both are thread-safe because tests drive them from their own thread (or process, over HTTP)
while the server runs on its event loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class RequestMatch:
    """Which requests a fault applies to; None matches anything."""

    verb: str | None = None
    resource: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None

    @classmethod
    def build(
        cls,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
    ) -> RequestMatch:
        if resource and "/" in resource and subresource is None:
            resource, subresource = resource.split("/", 1)
        return cls(verb, resource, subresource, namespace, name)

    def matches(self, req: RequestAttrs) -> bool:
        if self.verb is not None and self.verb != req.verb:
            return False
        if self.resource is not None and self.resource not in (req.resource, req.qualified):
            return False
        if self.subresource is not None and self.subresource != (req.subresource or ""):
            return False
        if self.namespace is not None and self.namespace != (req.namespace or ""):
            return False
        return self.name is None or self.name == req.name


class RequestAttrs(NamedTuple):
    """What kube's RequestInfo would say about a request (verb is the API verb, not the method).

    A NamedTuple: one is made for every request, and that is cheaper than a frozen dataclass.
    """

    verb: str
    resource: str | None = None
    qualified: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None


@dataclass
class _Failure:
    match: RequestMatch
    remaining: int
    code: int
    reason: str | None
    message: str | None
    retry_after: int | None


@dataclass
class _Latency:
    match: RequestMatch
    seconds: float
    remaining: int | None


@dataclass
class _WatchLimit:
    match: RequestMatch
    events: int


@dataclass(frozen=True)
class Failure:
    """An injected error answer: HTTP code plus the Status fields to send."""

    code: int
    reason: str | None
    message: str
    retry_after: int | None


class Faults:
    """Misbehaviour to inject into the server, for testing a client's error handling."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: list[_Failure] = []
        self._latencies: list[_Latency] = []
        self._watch_limits: list[_WatchLimit] = []
        self._drop: Callable[[str | None, bool], int] | None = None

    # -- configuration --------------------------------------------------------------------------

    def fail_next(
        self,
        count: int = 1,
        *,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        code: int = 500,
        reason: str | None = None,
        message: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        """Answer the next `count` matching requests with `code` and a Status body.

        `resource` may be "pods/binding" as a shorthand for resource plus subresource; `verb` is
        the API verb (get, list, watch, create, update, patch, delete, deletecollection).
        """
        m = RequestMatch.build(verb, resource, subresource, namespace, name)
        with self._lock:
            self._failures.append(_Failure(m, count, code, reason, message, retry_after))

    def add_latency(
        self,
        seconds: float,
        *,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        count: int | None = None,
    ) -> None:
        """Delay matching requests by `seconds` (the next `count` of them, or all until cleared)."""
        m = RequestMatch.build(verb, resource, subresource, namespace, name)
        with self._lock:
            self._latencies.append(_Latency(m, seconds, count))

    def close_watches_after(self, events: int, *, resource: str | None = None) -> None:
        """End every matching watch stream once it has sent `events` events (bookmarks excluded)."""
        m = RequestMatch.build("watch", resource)
        with self._lock:
            self._watch_limits.append(_WatchLimit(m, events))

    def drop_watches(self, *, resource: str | None = None, abort: bool = False) -> int:
        """End open watch streams now: cleanly, or by cutting the connection if `abort`."""
        if self._drop is None:
            return 0
        return self._drop(resource, abort)

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._latencies.clear()
            self._watch_limits.clear()

    # -- used by the server ---------------------------------------------------------------------

    def bind(self, drop: Callable[[str | None, bool], int]) -> None:
        self._drop = drop

    def take_failure(self, req: RequestAttrs) -> Failure | None:
        if not self._failures:  # the usual case, without taking the lock
            return None
        with self._lock:
            for f in self._failures:
                if f.remaining > 0 and f.match.matches(req):
                    f.remaining -= 1
                    msg = f.message or f"injected fault: {f.code}"
                    self._failures = [x for x in self._failures if x.remaining > 0]
                    return Failure(f.code, f.reason, msg, f.retry_after)
        return None

    def latency(self, req: RequestAttrs) -> float:
        if not self._latencies:
            return 0.0
        total = 0.0
        with self._lock:
            for lat in self._latencies:
                if lat.match.matches(req) and (lat.remaining is None or lat.remaining > 0):
                    total += lat.seconds
                    if lat.remaining is not None:
                        lat.remaining -= 1
            self._latencies = [x for x in self._latencies if x.remaining is None or x.remaining > 0]
        return total

    def watch_event_limit(self, req: RequestAttrs) -> int | None:
        if not self._watch_limits:
            return None
        with self._lock:
            limits = [w.events for w in self._watch_limits if w.match.matches(req)]
        return min(limits) if limits else None

    # -- JSON control (for /_testing/faults) ----------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "failures": [asdict(f) for f in self._failures],
                "latencies": [asdict(x) for x in self._latencies],
                "watchLimits": [asdict(w) for w in self._watch_limits],
            }

    def apply(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Run one JSON action: {"action": "fail"|"latency"|"close_watches_after"|
        "drop_watches"|"clear", ...keyword arguments of the matching method}."""
        action = spec.get("action")
        sel = {k: spec.get(k) for k in ("verb", "resource", "subresource", "namespace", "name")}
        if action == "fail":
            self.fail_next(
                int(spec.get("count", 1)),
                code=int(spec.get("code", 500)),
                reason=spec.get("reason"),
                message=spec.get("message"),
                retry_after=spec.get("retryAfter", spec.get("retry_after")),
                **sel,
            )
        elif action == "latency":
            count = spec.get("count")
            self.add_latency(
                float(spec["seconds"]), count=None if count is None else int(count), **sel
            )
        elif action == "close_watches_after":
            self.close_watches_after(int(spec["events"]), resource=sel["resource"])
        elif action == "drop_watches":
            return {
                "dropped": self.drop_watches(
                    resource=sel["resource"], abort=bool(spec.get("abort"))
                )
            }
        elif action == "clear":
            self.clear()
        else:
            raise ValueError(f"unknown fault action {action!r}")
        return self.snapshot()


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server answered (the /_testing endpoints are not recorded)."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    verb: str | None = None
    resource: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None
    content_type: str | None = None
    body: Any = None
    time: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
