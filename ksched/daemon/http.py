"""The daemon's HTTP endpoints, as kube-scheduler serves them (plain HTTP, no authn).

``/healthz``, ``/livez`` and ``/readyz`` answer like Kubernetes' healthz handlers: ``ok``,
or with ``?verbose`` one ``[+]check ok`` / ``[-]check failed`` line per check. ``/readyz``
is 503 until the informers have synced (and while shutting down). ``/metrics`` is the
Prometheus text format, ``/configz`` the effective configuration as
``{"componentconfig": ...}``. The ``/debug/*`` endpoints expose scheduler internals, which is
why the server listens on loopback unless told otherwise.

Anything unknown or malformed gets a 4xx JSON body ``{"error": "..."}``; a failing handler
gets a 500 with the same shape and is logged, never a traceback on the wire.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web

from ..config import to_dict
from ..logging import get_logger
from ..metrics import CONTENT_TYPE
from ..queue.scheduling_queue import plugin_names
from .explain import explain_pending, find_pending

if TYPE_CHECKING:
    from .daemon import SchedulerDaemon

__all__ = ["DebugServer", "json_response"]

log = get_logger("ksched.daemon.http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    return str(obj)


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=_encoder.encode(obj), status=status, content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return json_response({"error": message}, status)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        msg = {
            404: f"not found: {request.path}",
            405: f"method {request.method} not allowed on {request.path}",
        }.get(e.status, e.reason)
        return _error(e.status, msg)
    except Exception as e:
        log.error("debug endpoint failed", path=request.path, error=f"{type(e).__name__}: {e}")
        return _error(500, f"internal error: {type(e).__name__}")


class DebugServer:
    """aiohttp server for health, metrics, configz and debug endpoints of one daemon."""

    def __init__(self, daemon: SchedulerDaemon, host: str, port: int) -> None:
        self.daemon = daemon
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_errors])
        r = app.router
        for path in ("/healthz", "/livez"):
            r.add_get(path, self._live)
            r.add_get(path + "/ping", self._ping)
        r.add_get("/readyz", self._ready)
        r.add_get("/readyz/ping", self._ping)
        r.add_get("/metrics", self._metrics)
        r.add_get("/configz", self._configz)
        r.add_get("/debug/queue", self._queue)
        r.add_get("/debug/cache", self._cache)
        r.add_get("/debug/explain", self._explain)
        return app

    async def start(self) -> None:
        runner = web.AppRunner(
            self.app(), access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        if runner.addresses:  # the real port when 0 asked for any free one
            self.port = int(runner.addresses[0][1])
        self._runner = runner

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- health -----------------------------------------------------------------------------
    @staticmethod
    def _health(
        request: web.Request, name: str, checks: list[tuple[str, str | None]]
    ) -> web.Response:
        """checks: (name, None when healthy else the reason)."""
        failed = [c for c, why in checks if why is not None]
        verbose = "verbose" in request.query
        if not failed and not verbose:
            return web.Response(text="ok", content_type="text/plain")
        exclude = set(request.query.getall("exclude", []))
        lines = []
        for c, why in checks:
            if c in exclude:
                lines.append(f"[+]{c} excluded: ok")
            elif why is None:
                lines.append(f"[+]{c} ok")
            else:
                lines.append(f"[-]{c} failed: {why}")
        failed = [c for c in failed if c not in exclude]
        lines.append(f"{name} check {'failed' if failed else 'passed'}")
        return web.Response(
            text="\n".join(lines) + "\n", status=503 if failed else 200, content_type="text/plain"
        )

    async def _ping(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def _live(self, request: web.Request) -> web.Response:
        name = request.path.strip("/").split("/")[0]
        return self._health(request, name, self.daemon.liveness_checks())

    async def _ready(self, request: web.Request) -> web.Response:
        return self._health(request, "readyz", self.daemon.readiness_checks())

    # -- metrics / configz --------------------------------------------------------------------
    async def _metrics(self, request: web.Request) -> web.Response:
        body = self.daemon.metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def _configz(self, request: web.Request) -> web.Response:
        """The configuration in effect: ``clientConnection`` as the API client really uses
        it (the kubeconfig a flag named, rate limits, JSON), and beside ``componentconfig``
        (which has no place for it) the client's settings with the server URL."""
        cfg = to_dict(self.daemon.config)
        out: dict[str, Any] = {"componentconfig": cfg}
        client = self.daemon.client_settings()
        if client is not None:
            cc = cfg.setdefault("clientConnection", {})
            for key in ("kubeconfig", "qps", "burst", "contentType", "acceptContentTypes"):
                cc[key] = client[key]
            out["client"] = client
        return json_response(out)

    # -- debug --------------------------------------------------------------------------------
    def _scheduler_or_503(self) -> Any:
        sched = self.daemon.scheduler_if_started
        if sched is None:
            raise _Unavailable
        return sched

    async def _queue(self, request: web.Request) -> web.Response:
        if request.query:
            return _error(400, f"unknown query parameter(s): {', '.join(sorted(request.query))}")
        try:
            sched = self._scheduler_or_503()
        except _Unavailable:
            return _error(503, "the scheduler has not started yet")
        return json_response(sched.queue.dump())

    async def _cache(self, request: web.Request) -> web.Response:
        if request.query:
            return _error(400, f"unknown query parameter(s): {', '.join(sorted(request.query))}")
        try:
            sched = self._scheduler_or_503()
        except _Unavailable:
            return _error(503, "the scheduler has not started yet")
        return json_response(sched.cache.dump())

    async def _explain(self, request: web.Request) -> web.Response:
        unknown = set(request.query) - {"pod"}
        if unknown:
            return _error(400, f"unknown query parameter(s): {', '.join(sorted(unknown))}")
        pods = request.query.getall("pod", [])
        if len(pods) != 1:
            return _error(400, "exactly one pod=namespace/name parameter is required")
        key = pods[0]
        ns, sep, name = key.partition("/")
        if not sep or not ns or not name or "/" in name:
            return _error(400, f"pod must be namespace/name, got {key!r}")
        try:
            sched = self._scheduler_or_503()
        except _Unavailable:
            return _error(503, "the scheduler has not started yet")
        last = self.daemon.outcomes.get(key)
        qpi = find_pending(sched, key)
        recorded = sched.explanations.get(key)
        if qpi is None and last is None and recorded is None:
            return _error(
                404, f"pod {key} is neither pending in the scheduling queue nor recently attempted"
            )
        out: dict[str, Any] = {"pod": key, "lastAttempt": last}
        if recorded is not None:
            out["recorded"] = recorded
        if qpi is not None:
            out.update(
                profile=qpi.profile,
                queue=sched.queue.location(qpi.pod_info),
                attempts=qpi.attempts,
                unschedulablePlugins=plugin_names(qpi.unschedulable_plugins),
            )
            out["explain"] = explain_pending(sched, qpi)
        else:
            out["explain"] = None
        return json_response(out)


class _Unavailable(Exception):
    pass
