"""The daemon's HTTP endpoints, as kube-scheduler serves them.

Two listeners share the handlers: the secure port (``SecureServing``: HTTPS, kube-
scheduler's 10259), whose requests are authenticated and authorized through the API
server (``auth``), and an optional plain-HTTP port without authentication for local use
(loopback by default; kube-scheduler removed its insecure port, ksched keeps one opt-in).
Both serve through ``ksched.util.httpserver.start_app`` (read timeouts, a connection
limit).

``/healthz``, ``/livez`` and ``/readyz`` answer like Kubernetes' healthz handlers: ``ok``,
or with ``?verbose`` one ``[+]check ok`` / ``[-]check failed`` line per check. ``/readyz``
is 503 until the informers have synced (and while shutting down). ``/metrics`` is the
Prometheus text format, ``/configz`` the effective configuration as
``{"componentconfig": ...}`` with key material, tokens and URL userinfo replaced by ``REDACTED``
(kube-scheduler prints an extender's ``tlsConfig.keyData`` in full), and beside it the
feature gates in effect; ``/flagz`` and ``/statusz`` (ComponentFlagz, ComponentStatusz: on
in v1.36) the command line's flags, and the start time, versions and paths. The
``/debug/*`` endpoints expose scheduler internals.

Anything unknown or malformed gets a 4xx JSON body ``{"error": "..."}``; a failing handler
gets a 500 with the same shape and is logged, never a traceback on the wire. The secure
port's 401/403 are kube's ``Status`` objects.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from aiohttp import web

from ..config import to_dict
from ..features.versions import KUBERNETES_VERSION
from ..logging import get_logger
from ..metrics import CONTENT_TYPE, SchedulerMetrics
from ..queue.scheduling_queue import plugin_names
from ..util.errors import KschedError
from ..util.httpserver import http_error_message, start_app
from .auth import DelegatingAuth, SecureServing
from .explain import Outcomes, explain_pending, find_pending

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration
    from ..scheduler.scheduler import Scheduler
    from .shadow import Shadow

__all__ = ["REDACTED", "DebugServer", "Served", "ServingError", "json_response", "redact"]

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
        return _error(e.status, http_error_message(e, request))
    except Exception as e:
        log.error("debug endpoint failed", path=request.path, error=f"{type(e).__name__}: {e}")
        return _error(500, f"internal error: {type(e).__name__}")


#: The top-level paths ``/statusz`` lists (upstream: the mux's listed paths, first segment).
ZPAGE_PATHS = ("/configz", "/debug", "/flagz", "/healthz", "/livez", "/metrics", "/readyz")


def _ksched_version() -> str:
    try:
        return importlib.metadata.version("ksched")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _zpage_header(page: str) -> str:
    """The header of apiserver's flagz and statusz text serializers (``headerFmt``)."""
    return (
        f"\nksched {page}\nWarning: This endpoint is not meant to be machine parseable, has "
        "no formatting compatibility guarantees and is for debugging purposes only.\n"
    )


class ServingError(KschedError, OSError):
    """An HTTP listener could not start; the message names the address or the files."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno
        self.message = message

    def __str__(self) -> str:
        return self.message


class Served(Protocol):
    """What the endpoints read of the daemon they serve (``SchedulerDaemon``, which builds
    this server: declared here so this module does not import it back)."""

    @property
    def config(self) -> KubeSchedulerConfiguration: ...

    @property
    def flags(self) -> Mapping[str, str]: ...

    @property
    def metrics(self) -> SchedulerMetrics: ...

    @property
    def outcomes(self) -> Outcomes: ...

    @property
    def shadow(self) -> Shadow | None: ...

    @property
    def scheduler_if_started(self) -> Scheduler | None: ...

    def client_settings(self) -> dict[str, Any] | None: ...

    def liveness_checks(self) -> list[tuple[str, str | None]]: ...

    def readiness_checks(self) -> list[tuple[str, str | None]]: ...


class DebugServer:
    """The health, metrics, configz and debug endpoints of one daemon: plain HTTP on
    ``host:port`` (``port`` None: none; 0: any free port) and, with ``secure`` and
    ``auth``, HTTPS with delegated authentication and authorization."""

    def __init__(
        self,
        daemon: Served,
        host: str,
        port: int | None,
        *,
        secure: SecureServing | None = None,
        auth: DelegatingAuth | None = None,
    ) -> None:
        if (secure is None) != (auth is None):
            raise ValueError("secure serving needs both secure and auth")
        self.daemon = daemon
        self.host = host
        self.port = port
        self.secure = secure
        self.auth = auth
        self.secure_port: int | None = None
        self._runners: list[web.AppRunner] = []
        self.started = time.time()  # /statusz

    @staticmethod
    def _url(scheme: str, host: str, port: int | None) -> str:
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{port}"

    @property
    def url(self) -> str:
        """The plain port's URL, else the secure port's."""
        if self.port is None:
            return self.secure_url
        return self._url("http", self.host, self.port)

    @property
    def secure_url(self) -> str:
        if self.secure is None:
            raise RuntimeError("no secure port")
        return self._url("https", self.secure.bind_address or "0.0.0.0", self.secure_port)

    @property
    def urls(self) -> list[str]:
        out = [] if self.port is None else [self.url]
        return out + ([] if self.secure is None else [self.secure_url])

    def app(self, *, authenticated: bool = False) -> web.Application:
        middlewares = [_errors]
        if authenticated:  # inside _errors: a failure of its own is a JSON 500 too
            assert self.auth is not None
            middlewares.append(self.auth.middleware())
        app = web.Application(middlewares=middlewares)
        r = app.router
        for path in ("/healthz", "/livez"):
            r.add_get(path, self._live)
            r.add_get(path + "/ping", self._ping)
        r.add_get("/readyz", self._ready)
        r.add_get("/readyz/ping", self._ping)
        r.add_get("/metrics", self._metrics)
        r.add_get("/configz", self._configz)
        r.add_get("/flagz", self._flagz)
        r.add_get("/statusz", self._statusz)
        r.add_get("/debug/queue", self._queue)
        r.add_get("/debug/cache", self._cache)
        r.add_get("/debug/explain", self._explain)
        r.add_get("/debug/shadow", self._shadow)
        return app

    async def start(self) -> None:
        """Listen. ``ServingError`` when an address cannot be listened on or, secure, a
        certificate cannot be loaded (nothing is left running then)."""
        try:
            if self.port is not None:
                self.port = await self._listen(self.app(), self.host, self.port, None)
            if self.secure is not None:
                sec = self.secure
                try:
                    ctx = sec.ssl_context()
                except (OSError, ValueError) as e:
                    raise ServingError(f"cannot load {sec.describe_files()}: {e}") from None
                app = self.app(authenticated=True)
                self.secure_port = await self._listen(app, sec.bind_address, sec.port, ctx)
        except BaseException:
            await self.stop()
            raise

    async def _listen(
        self, app: web.Application, host: str, port: int, ctx: ssl.SSLContext | None
    ) -> int:
        try:
            runner, bound = await start_app(app, host, port, ssl_context=ctx, shutdown_timeout=1.0)
        except OSError as e:
            where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise ServingError(f"cannot listen on {where}: {e.strerror or e}", e.errno) from None
        self._runners.append(runner)
        return bound

    async def stop(self) -> None:
        runners, self._runners = self._runners, []
        for runner in runners:
            await runner.cleanup()
        if self.auth is not None:
            self.auth.close()

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
        cfg = redact(to_dict(self.daemon.config))
        out: dict[str, Any] = {"componentconfig": cfg}
        client = self.daemon.client_settings()
        if client is not None:
            cc = cfg.setdefault("clientConnection", {})
            for key in ("kubeconfig", "qps", "burst", "contentType", "acceptContentTypes"):
                cc[key] = client[key]
            out["client"] = client
        # The gates the configuration was defaulted and runs under (upstream's /configz has
        # the component config only; its gates show on /flagz and /statusz).
        gates = self.daemon.config.features
        out["emulatedVersion"] = gates.emulated_version
        out["featureGates"] = gates.effective()
        return json_response(out)

    async def _flagz(self, request: web.Request) -> web.Response:
        """kube-scheduler's ``/flagz`` (ComponentFlagz) as text: each flag of the command
        line, sorted by name, with its value (upstream picks its separator at random so
        no one parses it; here always ``=``). Not there (404) with the gate off."""
        if not self.daemon.config.features.enabled("ComponentFlagz"):
            raise web.HTTPNotFound()
        lines = [f"{k}={v}" for k, v in sorted(self.daemon.flags.items())]
        return web.Response(text=_zpage_header("flagz") + "\n".join(lines) + "\n")

    async def _statusz(self, request: web.Request) -> web.Response:
        """kube-scheduler's ``/statusz`` (ComponentStatusz) as text: start time, uptime, the
        runtime's version (Python's, where upstream's says Go's), ksched's binary version
        (the newest release it follows), the emulated version and the top-level paths. 404
        with the gate off."""
        gates = self.daemon.config.features
        if not gates.enabled("ComponentStatusz"):
            raise web.HTTPNotFound()
        up = int(time.time() - self.started)
        # the binary's release whatever the emulated version, as kube-scheduler's
        kube = KUBERNETES_VERSION
        rows = [
            ("Started", time.strftime("%a %b %e %H:%M:%S UTC %Y", time.gmtime(self.started))),
            ("Up", f"{up // 3600} hr {up // 60 % 60:02d} min {up % 60:02d} sec"),
            ("Python version", platform.python_version()),
            ("Binary version", f"{kube.lstrip('v')} (ksched {_ksched_version()})"),
            ("Emulation version", gates.emulated_version),
            ("Paths", " ".join(ZPAGE_PATHS)),
        ]
        body = "\n" + "".join(f"{k}  {v}\n" for k, v in rows)
        return web.Response(text=_zpage_header("statusz") + body)

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

    async def _shadow(self, request: web.Request) -> web.Response:
        if request.query:
            return _error(400, f"unknown query parameter(s): {', '.join(sorted(request.query))}")
        shadow = self.daemon.shadow
        if shadow is None:
            return _error(404, "not in shadow mode (ksched run --shadow-of SCHEDULER_NAME)")
        return json_response(shadow.to_dict())

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
            pre = last.get("preemption") if last is not None else None
            out["explain"] = explain_pending(sched, qpi, pre)
        else:
            out["explain"] = None
        return json_response(out)


class _Unavailable(Exception):
    pass


REDACTED = "REDACTED"  # kubectl config view's word for key data and tokens
#: keys whose (non-empty) string values are secrets: an extender's tlsConfig.keyData, and
#: any token, password or secret a plugin's args may carry (but not a path to one)
_SECRET_KEYS = ("keydata", "token", "password", "secret", "bearer", "privatekey")
_NOT_SECRET_SUFFIXES = ("file", "path")


def _secret(key: Any) -> bool:
    k = str(key).lower()
    return any(s in k for s in _SECRET_KEYS) and not k.endswith(_NOT_SECRET_SUFFIXES)


#: the userinfo of a URL (``https://user:password@host``): credentials wherever they are
_URL_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@]*@")


def _redact_url(v: str) -> str:
    return _URL_USERINFO.sub(rf"\g<1>{REDACTED}@", v, count=1)


def redact(obj: Any) -> Any:
    """``obj`` with key material, tokens and the userinfo of URLs (an extender's
    ``urlPrefix`` of ``https://user:password@host``) replaced by ``REDACTED`` (in place)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, str) and v and _secret(k):
                obj[k] = REDACTED
            elif isinstance(v, str):
                obj[k] = _redact_url(v)
            else:
                redact(v)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, str):
                obj[i] = _redact_url(v)
            else:
                redact(v)
    return obj
