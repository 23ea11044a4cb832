"""The secure port's authentication and authorization, delegated to the API server as
kube-scheduler's (k8s.io/apiserver's delegating authenticator and authorizer).

Authentication, in kube's order:

* a client certificate verified against ``--client-ca-file`` (during the TLS handshake: a
  certificate that CA did not sign fails it, where kube-scheduler completes the handshake
  and answers 401) is the user of its subject's CommonName, in the groups of its
  Organizations;
* else ``Authorization: Bearer <token>`` is sent to the API server as a TokenReview; a
  token it does not authenticate (or a review that fails) gets 401;
* else the request is ``system:anonymous`` (group ``system:unauthenticated``): kube-scheduler
  lets anonymous requests through to authorization too, so a request without credentials
  to ``/metrics`` gets 403, not 401, unless RBAC grants ``system:anonymous`` that path.

Every authenticated user is also in ``system:authenticated``.

Authorization: members of ``system:masters`` may do everything (kube's delegating
authorizer skips the review for them, as the API server would allow them anyway); the
``--authorization-always-allow-paths`` (``/healthz,/readyz,/livez`` by default; a trailing
``*`` matches a prefix) are allowed for everyone; anything else is a SubjectAccessReview of
the non-resource URL (the request's path, the HTTP method in lower case as the verb: GET is
``get``). Denied: 403 ``forbidden: User "alice" cannot get path "/metrics"``; a review that
fails: 500.

Decisions are cached as kube's (``--authentication-token-webhook-cache-ttl``,
``--authorization-webhook-cache-authorized-ttl`` and ``-unauthorized-ttl``, 10 s each;
a review that failed is not cached), concurrent lookups of one key share one review, and
the reviews go through an API client of their own with kube's limits for it (200 QPS,
burst 400), so a flood of made-up tokens cannot spend the scheduler's request budget.

Answers are kube's ``Status`` JSON, never a traceback.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import ssl
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import msgspec
from aiohttp import web

from ..logging import get_logger
from ..util.errors import KschedError
from ..util.throttle import LogThrottle
from ..util.tls import cert_identity, self_signed_ssl_context, server_ssl_context

__all__ = [
    "ANONYMOUS",
    "DEFAULT_ALWAYS_ALLOW_PATHS",
    "DEFAULT_SECURE_BIND_ADDRESS",
    "DEFAULT_SECURE_PORT",
    "DelegatingAuth",
    "ReviewError",
    "SecureServing",
    "User",
]

log = get_logger("ksched.daemon.auth")

V = TypeVar("V")

DEFAULT_SECURE_PORT = 10259
DEFAULT_SECURE_BIND_ADDRESS = "0.0.0.0"
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
#: kube's DelegatingAuthorizationOptions.AlwaysAllowGroups
ALWAYS_ALLOW_GROUPS = frozenset({"system:masters"})
DEFAULT_CACHE_TTL = 10.0
#: kube's TokenRequestTimeout / ClientTimeout for the reviews
REVIEW_TIMEOUT = 10.0
#: the reviews' API client: kube's delegating authn/authz client limits
REVIEW_QPS = 200.0
REVIEW_BURST = 400
CACHE_SIZE = 4096

AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True, slots=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def with_authenticated_group(self) -> User:
        if AUTHENTICATED in self.groups:
            return self
        return User(self.name, self.uid, (*self.groups, AUTHENTICATED), self.extra)


ANONYMOUS = User("system:anonymous", groups=("system:unauthenticated",))


@dataclass(frozen=True)
class SecureServing:
    """What the secure port serves with (``ksched run``'s flags of the same names)."""

    bind_address: str = DEFAULT_SECURE_BIND_ADDRESS
    #: 0: any free port (``ksched run --secure-port 0`` instead turns the port off)
    port: int = DEFAULT_SECURE_PORT
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    token_cache_ttl: float = DEFAULT_CACHE_TTL
    authorized_ttl: float = DEFAULT_CACHE_TTL
    unauthorized_ttl: float = DEFAULT_CACHE_TTL

    def problems(self) -> list[str]:
        out = []
        if not 0 <= self.port <= 65535:
            out.append(f"--secure-port {self.port} must be between 0 and 65535")
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            out.append("--tls-cert-file and --tls-private-key-file must be given together")
        for p in self.always_allow_paths:
            if "*" in p[:-1]:
                out.append(f"--authorization-always-allow-paths: only a trailing * in {p!r}")
        return out

    def describe_files(self) -> str:
        files = [
            f"{flag} {v}"
            for flag, v in (
                ("--tls-cert-file", self.tls_cert_file),
                ("--tls-private-key-file", self.tls_private_key_file),
                ("--client-ca-file", self.client_ca_file),
            )
            if v
        ]
        return "the serving certificate" + (f" ({', '.join(files)})" if files else "")

    def ssl_context(self) -> ssl.SSLContext:
        """From the certificate files, else a self-signed certificate made now.
        ``OSError``/``ssl.SSLError`` when a file cannot be read or does not fit."""
        if self.tls_cert_file and self.tls_private_key_file:
            return server_ssl_context(
                self.tls_cert_file, self.tls_private_key_file, self.client_ca_file
            )
        return self_signed_ssl_context(self.bind_address, self.client_ca_file)

    def path_allowed(self, path: str) -> bool:
        """kube's path authorizer: a leading / is optional on both sides."""
        path = path.removeprefix("/")
        for p in self.always_allow_paths:
            p = p.removeprefix("/")
            if (p.endswith("*") and path.startswith(p[:-1])) or path == p:
                return True
        return False


class ReviewClient(Protocol):
    """What the reviews need of an ``APIClient``."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> tuple[int, bytes]: ...


class ReviewError(KschedError):
    """A TokenReview or SubjectAccessReview got no usable answer."""


class _Unauthenticated(Exception):
    pass


# -- the reviews' wire types ----------------------------------------------------------------


class _ReviewUser(msgspec.Struct, omit_defaults=True):
    username: str = ""
    uid: str = ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}


class _TokenReviewStatus(msgspec.Struct, omit_defaults=True):
    authenticated: bool = False
    user: _ReviewUser = msgspec.field(default_factory=_ReviewUser)
    error: str = ""


class _TokenReview(msgspec.Struct):
    status: _TokenReviewStatus = msgspec.field(default_factory=_TokenReviewStatus)


class _SARStatus(msgspec.Struct, rename="camel"):
    allowed: bool = False
    denied: bool = False
    reason: str = ""
    evaluation_error: str = ""


class _SAR(msgspec.Struct):
    status: _SARStatus = msgspec.field(default_factory=_SARStatus)


_TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


# -- the cache ------------------------------------------------------------------------------


class _TTLCache:
    """Answers kept for a time the answer decides, at most ``size`` of them (the least
    recently used go first); concurrent lookups of one key share one fetch, which runs to
    its end even when the requests waiting for it go away."""

    def __init__(self, size: int = CACHE_SIZE, clock: Callable[[], float] = time.monotonic):
        self.size = size
        self.clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._inflight: dict[Hashable, asyncio.Task[Any]] = {}

    async def get(
        self, key: Hashable, fetch: Callable[[], Awaitable[V]], ttl: Callable[[V], float]
    ) -> V:
        hit = self._entries.get(key)
        if hit is not None:
            if hit[0] > self.clock():
                self._entries.move_to_end(key)
                result: V = hit[1]
                return result
            del self._entries[key]
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(fetch())
            self._inflight[key] = task
            task.add_done_callback(functools.partial(self._done, key, ttl))
        return await asyncio.shield(task)

    def _done(self, key: Hashable, ttl: Callable[[Any], float], task: asyncio.Task[Any]) -> None:
        self._inflight.pop(key, None)
        if task.cancelled() or task.exception() is not None:
            return
        value = task.result()
        seconds = ttl(value)
        if seconds <= 0:
            return
        self._entries[key] = (self.clock() + seconds, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def close(self) -> None:
        for task in list(self._inflight.values()):
            task.cancel()
        self._inflight.clear()
        self._entries.clear()


# -- authentication and authorization -------------------------------------------------------


def bearer_token(header: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>``, as kube's bearer authenticator reads
    it; None when the header is absent or another scheme (then the request is anonymous)."""
    auth = (header or "").strip()
    if not auth:
        return None
    parts = auth.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class DelegatingAuth:
    """Authenticates and authorizes the secure port's requests through ``client``."""

    def __init__(self, client: ReviewClient, options: SecureServing) -> None:
        self.client = client
        self.options = options
        self._tokens = _TTLCache()
        self._decisions = _TTLCache()
        self._throttle = LogThrottle(10.0)
        self.reviews = 0  # TokenReviews and SubjectAccessReviews sent

    def close(self) -> None:
        self._tokens.close()
        self._decisions.close()

    # -- authentication ------------------------------------------------------------------
    async def authenticate(self, request: web.Request) -> User:
        """The request's user (``ANONYMOUS`` without credentials); ``_Unauthenticated``
        for credentials that do not authenticate."""
        if self.options.client_ca_file and request.transport is not None:
            ident = cert_identity(request.transport.get_extra_info("peercert"))
            if ident is not None:
                return User(ident[0], groups=tuple(ident[1])).with_authenticated_group()
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            return ANONYMOUS
        if not token.isascii():
            # RFC 6750's b64token is ASCII, and bytes that are not UTF-8 reach us as lone
            # surrogates no review could carry: no API server token looks like this.
            self._log("authentication failed: a bearer token that is not ASCII")
            raise _Unauthenticated
        key = hashlib.sha256(token.encode()).digest()
        ttl = self.options.token_cache_ttl
        try:
            user = await self._tokens.get(key, lambda: self._review_token(token), lambda _: ttl)
        except ReviewError as e:
            self._log("authentication failed: the TokenReview got no answer", str(e))
            raise _Unauthenticated from None
        if user is None:
            self._log("authentication failed: the API server did not accept a bearer token")
            raise _Unauthenticated
        return user

    async def _review_token(self, token: str) -> User | None:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = (await self._review(_TOKEN_REVIEWS, body, _TokenReview)).status
        if not status.authenticated:
            return None
        u = status.user
        extra = tuple(sorted((k, tuple(v)) for k, v in u.extra.items()))
        return User(u.username, u.uid, tuple(u.groups), extra).with_authenticated_group()

    # -- authorization ---------------------------------------------------------------------
    async def authorize(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, the reviewer's reason); ``ReviewError`` when the review failed."""
        if ALWAYS_ALLOW_GROUPS.intersection(user.groups) or self.options.path_allowed(path):
            return True, ""
        opts = self.options

        def ttl(decision: tuple[bool, str]) -> float:
            return opts.authorized_ttl if decision[0] else opts.unauthorized_ttl

        return await self._decisions.get(
            (user, verb, path), lambda: self._review_access(user, verb, path), ttl
        )

    async def _review_access(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        spec: dict[str, Any] = {
            "nonResourceAttributes": {"path": path, "verb": verb},
            "user": user.name,
            "groups": list(user.groups),
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        status = (await self._review(_ACCESS_REVIEWS, body, _SAR)).status
        return status.allowed and not status.denied, status.reason

    async def _review(self, path: str, body: Mapping[str, Any], kind: type[V]) -> V:
        self.reviews += 1
        try:
            _, raw = await self.client.request("POST", path, body=body, timeout=REVIEW_TIMEOUT)
            return msgspec.json.decode(raw, type=kind)
        except msgspec.DecodeError as e:
            raise ReviewError(f"POST {path}: undecodable answer: {e}") from None
        except Exception as e:  # APIError, APIConnectionError
            raise ReviewError(str(e) or type(e).__name__) from None

    def _log(self, message: str, error: str | None = None) -> None:
        n = self._throttle.allow(message)
        if n is not None:
            log.warning(message, error=error, repeats_since_last=n)

    # -- the middleware ----------------------------------------------------------------------
    def middleware(self) -> Any:
        @web.middleware
        async def delegated(
            request: web.Request,
            handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
        ) -> web.StreamResponse:
            try:
                user = await self.authenticate(request)
            except _Unauthenticated:
                return status_response(401, "Unauthorized", "Unauthorized")
            verb, path = request.method.lower(), request.path
            try:
                allowed, reason = await self.authorize(user, verb, path)
            except ReviewError as e:
                self._log("authorization failed: the SubjectAccessReview got no answer", str(e))
                return status_response(
                    500, "Internal error occurred: the authorization review failed", "InternalError"
                )
            if not allowed:
                msg = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
                return status_response(403, f"{msg}: {reason}" if reason else msg, "Forbidden", {})
            return await handler(request)

        return delegated


def status_response(
    code: int, message: str, reason: str, details: dict[str, Any] | None = None
) -> web.Response:
    """kube's ``Status`` answer (as kube-scheduler's 401/403 bodies are)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return web.Response(
        body=msgspec.json.encode(body) + b"\n",
        status=code,
        content_type="application/json",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def parse_paths(text: str) -> tuple[str, ...]:
    """``--authorization-always-allow-paths``: comma-separated, blanks dropped."""
    return tuple(p.strip() for p in text.split(",") if p.strip())
