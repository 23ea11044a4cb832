"""The one place ksched talks HTTP to kube-apiserver.

kubernetes_asyncio supplies what is hard to get right — kubeconfig parsing (exec plugins,
token files, client certificates, proxies), in-cluster service accounts, TLS — and its
aiohttp session. Requests and responses bypass its generated models: bodies are raw JSON
bytes that callers decode straight into ksched's msgspec structs, which is an order of
magnitude cheaper for the pod and node volumes a scheduler sees.

Every request passes a client-side token bucket (``clientConnection.qps``/``burst``, like
client-go's ``flowcontrol`` limiter); a watch counts once, when it is opened.

Writes (bindings, patches, lease updates) skip aiohttp's per-request machinery: they go
over keep-alive connections of ksched's own (``pipeline.ConnectionPool``, same TLS
context, same headers) unless a proxy is configured. Reads and watches use aiohttp.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime as dt
import os
import socket
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlencode

import aiohttp
import anyio
import msgspec
import structlog
import yaml
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from ..util.clock import Clock, RealClock
from ..util.limits import BoundedLoaderMixin, clip
from .apierrors import APIConnectionError, APIError, retry_after_seconds
from .pipeline import ConnectionPool

__all__ = [
    "APIClient",
    "APIConnectionError",
    "APIError",
    "RateLimiter",
    "WatchEvent",
]

log = structlog.get_logger("ksched.cluster.client")

JSON_CT = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
DEFAULT_KUBECONFIG = "~/.kube/config"
# client-go's Request.maxRetries: how often a Retry-After answer (429, 5xx) is honoured.
MAX_RETRY_AFTER = 10
# client-go caches a kubeconfig tokenFile for this long before reading it again.
TOKEN_FILE_PERIOD = 60.0
# Refresh an exec credential this long before it expires (client-go: 10 s skew).
EXPIRY_SKEW = dt.timedelta(seconds=10)
# A watch silent this long has the server probed, and a probe unanswered this long fails
# (client-go's HTTP/2 ReadIdleTimeout 30 s and PingTimeout 15 s, shorter: see ``probe``).
READ_IDLE_TIMEOUT = 15.0
PING_TIMEOUT = 10.0
# What the probe lists: a collection every scheduler may list (kube-scheduler's role may).
PROBE_PATH = "/api/v1/namespaces"

WatchEvent = tuple[str, msgspec.Raw]
"""A watch event: its type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) and raw object JSON."""


class RateLimiter:
    """Token bucket (``qps`` refill, ``burst`` capacity) like client-go's default limiter.

    ``acquire`` reserves a token and sleeps until it is due, so waiters are served in
    arrival order and a burst never exceeds ``burst``. ``qps <= 0`` disables limiting.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self.clock: Clock = clock or RealClock()
        self._tokens = float(self.burst)
        self._last = self.clock.now()

    def _refill(self) -> None:
        now = self.clock.now()
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = max(self._last, now)

    def try_acquire(self) -> bool:
        if self.qps <= 0:
            return True
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        self._refill()
        self._tokens -= 1.0  # reserve now (no await in between), then wait until it is due
        if self._tokens >= 0.0:
            return
        wait = -self._tokens / self.qps
        try:
            await self.clock.sleep(wait)
        except BaseException:
            self._tokens = min(float(self.burst), self._tokens + 1.0)  # give the slot back
            raise

    @property
    def tokens(self) -> float:
        self._refill()
        return self._tokens


class _WatchLine(msgspec.Struct):
    type: str
    object: msgspec.Raw = msgspec.Raw(b"null")


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    # "continue" is a keyword
    continue_: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


_Item = TypeVar("_Item")


def _raw_item(raw: msgspec.Raw) -> msgspec.Raw:
    return raw


class _CredentialRefresher:
    """Keeps the bearer token of a kubeconfig user fresh, as client-go's transport does.

    exec plugins run again once their credential nears ``expirationTimestamp`` (or after
    a 401 when they gave none); a ``tokenFile`` is re-read every minute (bound service
    account tokens rotate). kubernetes_asyncio reads both only once at load time.
    """

    def __init__(self, loader: Any, configuration: Configuration, clock: Clock) -> None:
        self.loader = loader
        self.configuration = configuration
        self.clock = clock
        user = getattr(loader, "_user", None)
        self.exec = user is not None and "exec" in user
        self.token_file: Path | None = None
        if (
            user is not None
            and not self.exec
            and "tokenFile" in user
            and not user.safe_get("token")
        ):
            path = Path(os.path.expanduser(str(user["tokenFile"])))
            if not path.is_absolute() and getattr(user, "path", None):
                path = Path(os.path.dirname(os.path.abspath(user.path))) / path
            self.token_file = path
        self._token_read_at = clock.now()
        self._force = False
        self._lock = anyio.Lock()

    def invalidate(self) -> None:
        """A 401: the server no longer accepts the credential."""
        self._force = True

    def due(self) -> bool:
        """Whether ``__call__`` would do anything now (else the current token stands)."""
        if self.exec:
            return self._exec_due()
        if self.token_file is not None:
            return self._force or self.clock.now() - self._token_read_at >= TOKEN_FILE_PERIOD
        return False

    def _exec_due(self) -> bool:
        if self._force:
            return True
        expiry = getattr(self.loader, "exec_plugin_expiry", None)
        if expiry is None:
            return False
        return bool(expiry - EXPIRY_SKEW <= dt.datetime.now(dt.UTC))

    async def __call__(self, configuration: Configuration) -> None:
        if self.exec:
            if not self._exec_due():
                return
            async with self._lock:
                if not self._exec_due():
                    return
                self._force = False
                if hasattr(self.loader, "exec_plugin_expiry"):
                    del self.loader.exec_plugin_expiry
                await self.loader.load_from_exec_plugin()
                token = getattr(self.loader, "token", None)
                if token:
                    configuration.api_key["BearerToken"] = token
        elif self.token_file is not None:
            if not self._force and self.clock.now() - self._token_read_at < TOKEN_FILE_PERIOD:
                return
            self._force = False
            self._token_read_at = self.clock.now()
            try:
                token = self.token_file.read_text().strip()
            except OSError as e:
                log.warning("reading token file failed", path=str(self.token_file), error=str(e))
                return
            if token:
                configuration.api_key["BearerToken"] = f"Bearer {token}"


class _KubeconfigLoader(BoundedLoaderMixin, yaml.SafeLoader):
    """Safe YAML, nesting and aliases bounded."""


def check_kubeconfig(paths: str, context: str | None = None) -> None:
    """One line naming the file and what is wrong with it (ConfigException), before
    kubernetes_asyncio's loader turns a missing file into "Expected key current-context"
    and a binary one into a traceback. ``paths`` may be a ``:``-separated list."""
    files = [os.path.expanduser(p) for p in str(paths).split(os.pathsep) if p]
    docs: list[tuple[str, dict[str, Any]]] = []
    for f in files:
        try:
            with open(f, "rb") as fh:
                raw = fh.read(4 * 1024 * 1024 + 1)
        except OSError as e:
            if len(files) > 1 and isinstance(e, FileNotFoundError):
                continue  # client-go skips missing entries of a list
            raise k8s_config.ConfigException(f"kubeconfig {f}: {e.strerror or e}") from None
        if len(raw) > 4 * 1024 * 1024:
            raise k8s_config.ConfigException(f"kubeconfig {f}: larger than 4 MiB")
        try:
            doc = yaml.load(raw.decode("utf-8"), Loader=_KubeconfigLoader)
        except UnicodeDecodeError as e:
            raise k8s_config.ConfigException(
                f"kubeconfig {f}: not UTF-8 text (byte {e.start})"
            ) from None
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            raise k8s_config.ConfigException(
                f"kubeconfig {f}: not valid YAML: {where}{clip(str(e.problem))}"
            ) from None
        except yaml.YAMLError as e:
            first = clip(str(e).splitlines()[0] if str(e) else type(e).__name__)
            raise k8s_config.ConfigException(f"kubeconfig {f}: not valid YAML: {first}") from None
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise k8s_config.ConfigException(
                f"kubeconfig {f}: expected a mapping (kind: Config), got {type(doc).__name__}"
            )
        docs.append((f, doc))
    if not docs:
        raise k8s_config.ConfigException(f"kubeconfig {paths}: no such file")
    if context is None and not any(d.get("current-context") for _, d in docs):
        raise k8s_config.ConfigException(
            f"kubeconfig {docs[0][0]}: no current-context set (and no context chosen)"
        )


class APIClient:
    """Raw-bytes Kubernetes API access over kubernetes_asyncio's configured aiohttp session.

    Create it inside the event loop (the session binds to it), preferably with
    ``from_kubeconfig``/``in_cluster``/``auto``; close it with ``close`` or ``async with``.
    """

    def __init__(
        self,
        configuration: Configuration,
        *,
        qps: float = 50.0,
        burst: int = 100,
        clock: Clock | None = None,
        request_timeout: float = 60.0,
        user_agent: str = "ksched",
        credential_refresher: Any = None,
        read_idle_timeout: float = READ_IDLE_TIMEOUT,
        ping_timeout: float = PING_TIMEOUT,
        probe_path: str = PROBE_PATH,
    ) -> None:
        self.configuration = configuration
        # Watch health (``probe``); read_idle_timeout <= 0 turns probing off.
        self.read_idle_timeout = read_idle_timeout
        self.ping_timeout = ping_timeout
        self.probe_path = probe_path
        self.probes = 0
        self._probe_done: anyio.Event | None = None  # a probe in flight
        self._probe_at: float | None = None  # when the last probe ended
        self._probe_error: str | None = None  # why it failed
        self._host_of: tuple[object, str] = (None, "")  # (configuration.host, host)
        self.clock: Clock = clock or RealClock()
        self.limiter = RateLimiter(qps, burst, clock=self.clock)
        self.request_timeout = request_timeout
        self.user_agent = user_agent
        self._refresher: _CredentialRefresher | None = credential_refresher
        if credential_refresher is not None:
            configuration.refresh_api_key_hook = credential_refresher
        self.api_client = ApiClient(configuration)
        # kubernetes_asyncio's session has trust_env=True, which makes aiohttp look up
        # netrc and proxy variables in a thread for every request (2 thread hops/request,
        # doubling per-request CPU). Use a session over the same connector without it,
        # reading the proxy environment once here instead.
        rc = self.api_client.rest_client
        self._kube_session: aiohttp.ClientSession = rc.pool_manager
        rc.pool_manager = aiohttp.ClientSession(
            connector=self._kube_session.connector,
            connector_owner=False,
            trust_env=False,
            read_bufsize=2**21,
        )
        self._env_proxy = _env_proxy_for(self.host) if not getattr(rc, "proxy", None) else None
        self.requests_sent = 0
        # Where the configuration came from (``connection_settings``, ``/configz``): set by
        # the constructors below.
        self.kubeconfig = ""
        self.source = "configuration"
        # Per-request constants: headers per (content type, bearer), timeouts per value.
        self._header_cache: dict[tuple[str | None, str | None], dict[str, str]] = {}
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}
        # Writes go over ksched's own keep-alive connections (``pipeline.ConnectionPool``)
        # when the transport allows; reads and watches over aiohttp. False: not yet known.
        self._write_pool: Any = False

    # -- construction ---------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The server URL without a trailing slash (worked out once per configured value:
        every request asks)."""
        raw = self.configuration.host
        seen, host = self._host_of
        if raw is not seen:
            host = str(raw).rstrip("/")
            self._host_of = (raw, host)
        return host

    def connection_settings(self) -> dict[str, Any]:
        """What this client really uses: the server URL, the kubeconfig it was loaded from
        (``source``: kubeconfig, in-cluster, master or configuration), its rate limits and
        content types (JSON only: ksched speaks no protobuf)."""
        return {
            "server": self.host,
            "kubeconfig": self.kubeconfig,
            "source": self.source,
            "qps": self.limiter.qps,
            "burst": self.limiter.burst,
            "contentType": JSON_CT,
            "acceptContentTypes": JSON_CT,
            "userAgent": self.user_agent,
        }

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        master: str | None = None,
        qps: float = 50.0,
        burst: int = 100,
        **kwargs: Any,
    ) -> APIClient:
        """Load a kubeconfig (``path`` may be a ``:``-separated list like $KUBECONFIG);
        ``master`` overrides the cluster's server URL like ``--master`` does."""
        cfg = Configuration()
        file = os.path.expanduser(str(path)) if path is not None else None
        check_kubeconfig(file or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG, context)
        loader = await k8s_config.load_kube_config(
            config_file=file, context=context, client_configuration=cfg, persist_config=False
        )
        if master:
            cfg.host = master.rstrip("/")
        clock = kwargs.get("clock") or RealClock()
        kwargs["clock"] = clock
        refresher = _CredentialRefresher(loader, cfg, clock)
        client = cls(cfg, qps=qps, burst=burst, credential_refresher=refresher, **kwargs)
        client.source = "kubeconfig"
        client.kubeconfig = (
            file or os.environ.get("KUBECONFIG") or os.path.expanduser(DEFAULT_KUBECONFIG)
        )
        return client

    @classmethod
    async def in_cluster(
        cls,
        *,
        master: str | None = None,
        qps: float = 50.0,
        burst: int = 100,
        loader_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> APIClient:
        """The pod's service account; kubernetes_asyncio re-reads the rotating token."""
        cfg = Configuration()
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=cfg, **dict(loader_kwargs or {})
        )
        if master:
            cfg.host = master.rstrip("/")
        client = cls(cfg, qps=qps, burst=burst, **kwargs)
        client.source = "in-cluster"
        return client

    @classmethod
    async def for_master(
        cls, master: str, *, qps: float = 50.0, burst: int = 100, **kwargs: Any
    ) -> APIClient:
        """Only ``--master`` given and no kubeconfig found: no credentials."""
        cfg = Configuration()
        cfg.host = master.rstrip("/")
        client = cls(cfg, qps=qps, burst=burst, **kwargs)
        client.source = "master"
        return client

    @classmethod
    async def auto(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        master: str | None = None,
        *,
        context: str | None = None,
        qps: float = 50.0,
        burst: int = 100,
        environ: Mapping[str, str] | None = None,
        loader_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> APIClient:
        """``--kubeconfig`` if given; else $KUBECONFIG; else the service account when running
        in a pod (KUBERNETES_SERVICE_HOST); else ~/.kube/config; ``master`` wins over any
        server URL found. ``loader_kwargs`` go to kubernetes_asyncio's in-cluster loader
        (token_filename, cert_filename, environ)."""
        env = os.environ if environ is None else environ
        if kubeconfig:
            return await cls.from_kubeconfig(
                kubeconfig, context=context, master=master, qps=qps, burst=burst, **kwargs
            )
        if env.get("KUBECONFIG"):
            return await cls.from_kubeconfig(
                env["KUBECONFIG"], context=context, master=master, qps=qps, burst=burst, **kwargs
            )
        if env.get("KUBERNETES_SERVICE_HOST"):
            return await cls.in_cluster(
                master=master, qps=qps, burst=burst, loader_kwargs=loader_kwargs, **kwargs
            )
        default = os.path.expanduser(DEFAULT_KUBECONFIG)
        if os.path.exists(default):
            return await cls.from_kubeconfig(
                default, context=context, master=master, qps=qps, burst=burst, **kwargs
            )
        if master:
            return await cls.for_master(master, qps=qps, burst=burst, **kwargs)
        raise k8s_config.ConfigException(
            "no cluster configuration: pass --kubeconfig or --master, set $KUBECONFIG, "
            "run in a pod, or create ~/.kube/config"
        )

    # -- lifecycle ------------------------------------------------------------------------------

    async def close(self) -> None:
        if self._write_pool:
            self._write_pool.close()
        await self.api_client.close()
        await self._kube_session.close()

    def _writes(self) -> Any:
        """The ConnectionPool for writes, or None when aiohttp must do them (a proxy...)."""
        pool = self._write_pool
        if pool is False:
            pool = ConnectionPool.for_client(self)
            if pool is not None:
                pool.limit = getattr(self._kube_session.connector, "limit", 0) or pool.limit
            self._write_pool = pool
        return pool

    async def __aenter__(self) -> APIClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- transport ------------------------------------------------------------------------------

    @property
    def _session(self) -> aiohttp.ClientSession:
        session: aiohttp.ClientSession = self.api_client.rest_client.pool_manager
        return session

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        """The request headers (shared: callers must not modify them)."""
        cfg = self.configuration
        hook = cfg.refresh_api_key_hook
        ref = self._refresher
        if hook is None or (ref is not None and not ref.due() and hook is ref):
            # What auth_settings() would return, without awaiting a hook with nothing to do.
            token = cfg.api_key.get("BearerToken")
            if token:
                prefix = cfg.api_key_prefix.get("BearerToken")
                value: Any = f"{prefix} {token}" if prefix else token
            else:
                value = None
        else:
            # auth_settings() runs refresh_api_key_hook (exec / token file / service account).
            auth = await cfg.auth_settings()
            bearer = auth.get("BearerToken")
            value = bearer.get("value") if bearer else None
        bearer_value = str(value).strip() if value else None  # token files end in \n
        key = (content_type, bearer_value)
        headers = self._header_cache.get(key)
        if headers is None:
            headers = {"Accept": JSON_CT, "User-Agent": self.user_agent}
            if content_type is not None:
                headers["Content-Type"] = content_type
            if bearer_value:
                headers["Authorization"] = bearer_value
            if len(self._header_cache) >= 16:
                self._header_cache.clear()
            self._header_cache[key] = headers
        return headers

    def credentials_rejected(self) -> None:
        """A 401 answer: have the credential refreshed before the next request."""
        if self._refresher is not None:
            self._refresher.invalidate()

    def _timeout(self, seconds: float) -> aiohttp.ClientTimeout:
        t = self._timeouts.get(seconds)
        if t is None:
            if len(self._timeouts) >= 16:
                self._timeouts.clear()
            t = self._timeouts[seconds] = aiohttp.ClientTimeout(total=seconds)
        return t

    def _url(self, path: str, params: Mapping[str, Any] | None) -> str:
        return self.host + _target(path, params)

    def _request_kwargs(self) -> dict[str, Any]:
        rc = self.api_client.rest_client
        kw: dict[str, Any] = {}
        if getattr(rc, "proxy", None):
            kw["proxy"] = rc.proxy
            if getattr(rc, "proxy_headers", None):
                kw["proxy_headers"] = rc.proxy_headers
        elif self._env_proxy:
            kw["proxy"] = self._env_proxy
        if getattr(rc, "server_hostname", None):
            kw["server_hostname"] = rc.server_hostname
        return kw

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON_CT,
        timeout: float | None = None,
        check: bool = True,
        guard: Callable[[], None] | None = None,
    ) -> tuple[int, bytes]:
        """One rate-limited request; ``body`` may be bytes or anything msgspec encodes.

        Raises ``APIError`` on a non-2xx answer when ``check`` (else returns it), and
        ``APIConnectionError`` when there is no answer. A 429/5xx with Retry-After is
        retried up to 10 times, like client-go. ``guard`` is called just before each
        attempt goes out, after any wait for the rate limiter or a connection, and may
        raise to stop it (fencing: a pause during those waits must not let a write out).
        """
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else msgspec.json.encode(body)
        target = _target(path, params)
        seconds = timeout if timeout is not None else self.request_timeout
        pool = self._writes() if method != "GET" else None
        retries = 0
        limiter = self.limiter
        while True:
            if limiter.qps > 0:
                await limiter.acquire()
            ctype = content_type if data is not None else None
            self.requests_sent += 1
            if pool is not None:
                status, raw, retry_after = await pool.request(
                    method, target, data, ctype, seconds, guard
                )
            else:
                headers = await self._headers(ctype)
                if guard is not None:
                    guard()
                try:
                    async with self._session.request(
                        method,
                        self.host + target,
                        data=data,
                        headers=headers,
                        timeout=self._timeout(seconds),
                        **self._request_kwargs(),
                    ) as resp:
                        raw = await resp.read()
                        status = resp.status
                        retry_after = retry_after_seconds(resp.headers.get("Retry-After"))
                except (aiohttp.ClientError, OSError) as e:
                    raise APIConnectionError(f"{method} {path}: {_describe(e)}") from e
                except TimeoutError as e:
                    raise APIConnectionError(f"{method} {path}: timed out", reason="Timeout") from e
            if 200 <= status < 300:
                return status, raw
            if status == 401 and self._refresher is not None:
                self._refresher.invalidate()
            if (
                retry_after is not None
                and (status == 429 or status >= 500)
                and retries < MAX_RETRY_AFTER
            ):
                retries += 1
                await self.clock.sleep(retry_after)
                continue
            if check:
                raise APIError.from_response(status, raw, retry_after)
            return status, raw

    @property
    def probe_failing(self) -> bool:
        """The last probe failed: a watch that opens now is no proof the server can serve
        (during an etcd outage the watch cache still accepts watches)."""
        return self._probe_error is not None

    async def probe(self) -> str | None:
        """Whether the server can serve a list now: None, or why not.

        client-go finds a silently dead watch by pinging its HTTP/2 connection; over
        HTTP/1.1 a watch has no ping, so a silent one asks this instead: a one-item
        consistent list of ``probe_path`` (it needs etcd, unlike a watch served from the
        cache), which must answer below 500 within ``ping_timeout``. Always the same
        collection: one that fails on its own (a CRD's broken conversion webhook) must not
        put every informer out of step. One probe per client at a time: callers
        meanwhile share its result, and a result stands for ``read_idle_timeout`` (a failure
        for a second, to see the server back soon). Cheap enough to probe twice as often
        as client-go pings: a quiet cluster costs one tiny list per 15 s per client.
        """
        done = self._probe_done
        if done is not None:
            await done.wait()
            return self._probe_error
        fresh = self.read_idle_timeout
        if self._probe_error is not None:
            fresh = min(1.0, fresh)
        at = self._probe_at
        if at is not None and self.clock.now() - at < fresh:
            return self._probe_error
        done = self._probe_done = anyio.Event()
        try:
            self._probe_error = await self._probe_once(self.probe_path)
            self._probe_at = self.clock.now()
        finally:
            self._probe_done = None
            done.set()
        return self._probe_error

    async def _probe_once(self, path: str) -> str | None:
        self.probes += 1
        why = f"probe GET {path}: no answer within {self.ping_timeout:g}s"
        with anyio.move_on_after(self.ping_timeout):
            try:
                # (the request's own deadline later: the answer is "no answer" either way)
                status, raw = await self.request(
                    "GET", path, params={"limit": 1}, timeout=2 * self.ping_timeout, check=False
                )
            except APIConnectionError as e:
                return f"probe {e.message}"
            except APIError as e:
                return f"probe GET {path}: {e}"
            if status < 500:
                return None
            return f"probe GET {path}: {APIError.from_response(status, raw)}"
        return why

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> bytes:
        """GET returning the raw body (decode with ``ksched.api.objects.decode_json``)."""
        return (await self.request("GET", path, params=params))[1]

    async def get_json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return msgspec.json.decode(await self.get(path, params))

    async def list(
        self, path: str, params: Mapping[str, Any] | None = None, *, page_size: int = 500
    ) -> tuple[list[msgspec.Raw], str]:
        """All items of a collection (paged by ``page_size``, 0 = one request) as raw JSON,
        and the list's resourceVersion.

        Like client-go's pager, an expired continue token falls back to one full list.
        """
        return await self.list_as(path, _raw_item, params, page_size=page_size)

    async def list_as(
        self,
        path: str,
        convert: Callable[[msgspec.Raw], _Item],
        params: Mapping[str, Any] | None = None,
        *,
        page_size: int = 500,
    ) -> tuple[builtins.list[_Item], str]:
        """``list`` with each item converted as its page arrives, so a page's bytes are
        freed before the next one comes (at 50,000 pods, hundreds of MB never held at
        once). ``convert`` must not have side effects: a fallback to a full list converts
        every item again."""
        items, rv, _ = await self.list_paged(path, convert, params, page_size=page_size)
        return items, rv

    async def list_paged(
        self,
        path: str,
        convert: Callable[[msgspec.Raw], _Item],
        params: Mapping[str, Any] | None = None,
        *,
        page_size: int = 500,
    ) -> tuple[builtins.list[_Item], str, bool]:
        """``list_as``, also saying whether the server answered in more than one page
        (client-go's pager's paginatedResult: the reflector keeps paging only then)."""
        base = dict(params or {})
        paginated = False
        items: list[_Item] = []
        cont = ""
        while True:
            q = dict(base)
            if page_size > 0:
                q["limit"] = page_size
            if cont:
                q["continue"] = cont
            try:
                raw = await self.get(path, q)
            except APIError as e:
                if not (cont and e.is_expired):
                    raise
                log.info("list continue token expired, listing in full", path=path)
                raw = await self.get(path, base)
                items.clear()
                cont = ""
            lst = msgspec.json.decode(raw, type=_List)
            del raw
            items.extend(map(convert, lst.items or ()))
            cont = lst.metadata.continue_
            if not cont:
                return items, lst.metadata.resource_version, paginated
            paginated = True

    async def watch(
        self,
        path: str,
        resource_version: str,
        *,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        params: Mapping[str, Any] | None = None,
        on_open: Callable[[], None] | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream a watch's events (newline-delimited JSON) until the server ends it.

        Raises ``APIError`` if the watch cannot be opened (e.g. 410 for an expired
        resourceVersion) and ``APIConnectionError`` if the stream breaks; an ERROR event
        is yielded as is for the caller to interpret. ``on_open`` is called once the
        server has accepted the watch (200), before any event: a quiet collection may
        send none for minutes.
        """
        q: dict[str, Any] = dict(params or {})
        q["watch"] = "true"
        if resource_version:
            q["resourceVersion"] = resource_version
        q["timeoutSeconds"] = int(timeout_seconds)
        if allow_bookmarks:
            q["allowWatchBookmarks"] = "true"
        url = self._url(path, q)
        # the server ends the watch at timeoutSeconds; the client deadline only catches a
        # connection that died silently
        tmo = aiohttp.ClientTimeout(total=timeout_seconds + 30, sock_connect=30)
        await self.limiter.acquire()
        headers = await self._headers(None)
        self.requests_sent += 1
        try:
            resp = await self._session.request(
                "GET", url, headers=headers, timeout=tmo, **self._request_kwargs()
            )
        except (aiohttp.ClientError, OSError) as e:
            raise APIConnectionError(f"watch {path}: {_describe(e)}") from e
        except TimeoutError as e:
            raise APIConnectionError(f"watch {path}: timed out", reason="Timeout") from e
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(resp.release)
            if resp.status != 200:
                raw = await _read_quietly(resp)
                if resp.status == 401 and self._refresher is not None:
                    self._refresher.invalidate()
                raise APIError.from_response(resp.status, raw)
            if on_open is not None:
                on_open()
            buf = bytearray()
            try:
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    start = 0
                    while True:
                        nl = buf.find(b"\n", start)
                        if nl < 0:
                            break
                        line = bytes(buf[start:nl])
                        start = nl + 1
                        if line.strip():
                            yield _decode_line(line)
                    if start:
                        del buf[:start]
            except (aiohttp.ClientError, OSError) as e:
                raise APIConnectionError(f"watch {path}: {_describe(e)}") from e
            except TimeoutError as e:
                raise APIConnectionError(f"watch {path}: timed out", reason="Timeout") from e
            if buf.strip():
                yield _decode_line(bytes(buf))


def _decode_line(line: bytes) -> WatchEvent:
    try:
        ev = msgspec.json.decode(line, type=_WatchLine)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise APIError(
            500, "InternalError", f"unable to decode an event from the watch stream: {e}"
        ) from None
    return ev.type, ev.object


def _env_proxy_for(url: str) -> str | None:
    """HTTPS_PROXY/HTTP_PROXY for ``url`` unless NO_PROXY excludes its host (read once)."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme or "https")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


async def _read_quietly(resp: aiohttp.ClientResponse) -> bytes:
    try:
        return await resp.read()
    except (aiohttp.ClientError, OSError, TimeoutError):
        return b""


def _target(path: str, params: Mapping[str, Any] | None) -> str:
    """A request's path and query, without the server."""
    target = path if path.startswith("/") else "/" + path
    if params:
        q = {k: _param(v) for k, v in params.items() if v is not None}
        if q:
            target += "?" + urlencode(q)
    return target


def _param(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _describe(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def hostname() -> str:
    """This machine's name for reportingInstance (the pod name when in a pod)."""
    return os.environ.get("HOSTNAME") or socket.gethostname()
