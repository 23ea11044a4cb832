"""An in-process HTTP server with kube-apiserver semantics, for testing against real clients.

There is no real kube-apiserver in the test environment, so this server is what the daemon,
kubectl and the official clients talk to. It works on plain JSON dicts and imports nothing from
ksched outside ksched.testing, so it can never share a bug with the code under test.

Where it knowingly differs from kube-apiserver (so tests stay simple, or because nothing here
plays kubelet or the namespace controller):

- Pod status given on create is kept (kube resets it), so tests can seed running pods; so is
  a PersistentVolume's or PersistentVolumeClaim's (bound ones), its phase defaulting to Pending.
- Deleting a pod removes it at once; with graceful_pod_deletion=True a bound pod instead gets
  a deletionTimestamp and stays until deleted with gracePeriodSeconds=0. Finalizers are honoured.
- Deleting a namespace removes it and everything in it at once (no Terminating phase).
- core/v1 and events.k8s.io/v1 Events are stored separately, without conversion between them.
- Lists always show the current state: resourceVersion/resourceVersionMatch on a list are
  ignored and continue tokens do not pin a snapshot. A watch from a resourceVersion newer than
  the server's starts from now.
- Authentication only with a token file (kube-apiserver's ``--token-auth-file`` format), and
  then a fixed policy: members of ``system:masters`` may do everything, anyone else nothing
  but the health and version paths (``_auth``); TokenReview and SubjectAccessReview answer
  by the same file and policy. The kubeconfig it writes carries the file's first token.
- No protobuf, managedFields or server-side apply (apply patches get 415), and
  validation is limited to names, pod containers, pod and PVC spec immutability and
  scheduling gates.
- /openapi/v3 is a stub holding only PATCH operations that advertise `fieldValidation`: that is
  what kubectl probes before `create`/`apply`, and with it kubectl leaves validation to the
  server instead of failing to download a schema (no `--validate=false` needed).
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import concurrent.futures
import contextlib
import functools
import logging
import platform
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import yaml

from . import _resources as R
from ._auth import TokenAuth, TokenUser, read_token_file
from ._http import HTTPServer, Request, Response, Result
from ._resources import ResourceInfo
from ._selectors import FieldSelector, LabelSelector, SelectorError
from ._store import (
    ABORT,
    BOOKMARK,
    CLOSE,
    EVENT,
    JSON,
    APIStatusError,
    DeleteOptions,
    Store,
    Watcher,
    bad_request,
    clone,
    encode,
    event_line,
    status_body,
)
from ._tables import table, wants_table
from .faults import Faults, RecordedRequest, RequestAttrs

__all__ = ["APIStatusError", "TestAPIServer"]

log = logging.getLogger(__name__)

T = TypeVar("T")
JSONList = list[JSON]
RequestList = list[RecordedRequest]
KeyList = list[tuple[str, str]]

VERSION_INFO: JSON = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-ksched-testing",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/"
    + {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine()),
}

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
}
_NOT_FOUND_TEXT = "404 page not found\n"
_TEXT = "text/plain; charset=utf-8"
_BODY_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))
_BIND_SUCCESS = encode(
    {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
)
_WATCH_HEADERS = {"Content-Type": "application/json", "Cache-Control": "no-cache, private"}

# a request as recorded on the loop thread, turned into a RecordedRequest when asked for:
# (method, path, query string, status, attrs, content type, body, time)
_RawRecord = tuple[str, str, str, int, RequestAttrs | None, str | None, bytes, float]


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(status, encode(obj), "application/json", headers)


def _decode_body(raw: bytes) -> Any:
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:  # msgspec: bad UTF-8 is the latter
        raise bad_request(f"couldn't get version/kind; json parse error: {e}") from None


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


class _Route:
    __slots__ = ("attrs", "doc", "name", "namespace", "res", "subresource")

    def __init__(
        self,
        attrs: RequestAttrs,
        res: ResourceInfo | None = None,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        doc: Any = None,  # a non-resource answer (discovery, version, ...)
    ) -> None:
        self.attrs = attrs
        self.res = res
        self.namespace = namespace
        self.name = name
        self.subresource = subresource
        self.doc = doc


class TestAPIServer:
    """kube-apiserver semantics over plain HTTP (no auth) on a local port.

    Use `async with TestAPIServer() as srv` inside an event loop, or
    `with TestAPIServer().run_in_thread() as srv` from synchronous code. The store helpers
    (`create`, `get`, `list`, ...) run the same code as HTTP requests, so watchers see their
    changes, and they may be called from any thread.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        history: int = 1000,
        bookmark_interval: float = 1.0,
        graceful_pod_deletion: bool = False,
        token_auth_file: str | Path | None = None,
        tokens: list[TokenUser] | None = None,
    ) -> None:
        """``token_auth_file`` (or ``tokens``): authenticate requests, and apply the policy,
        as described in the module doc (``_auth``)."""
        self.host = host
        self.port = port
        users = list(tokens or [])
        if token_auth_file is not None:
            users += read_token_file(token_auth_file)
        self.auth = TokenAuth(users)
        self.bookmark_interval = bookmark_interval
        self.store = Store(history=history, graceful_pod_deletion=graceful_pod_deletion)
        self.faults = Faults()
        self.faults.bind(self._drop_watches)
        self._requests: list[RecordedRequest | _RawRecord] = []
        self._requests_lock = threading.Lock()
        self._http: HTTPServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._bootstrap()

    def _bootstrap(self) -> None:
        for ns in DEFAULT_NAMESPACES:
            self.store.create(R.NAMESPACES, None, {"metadata": {"name": ns}})
        for name, value, text in (
            (
                "system-node-critical",
                2000001000,
                "Used for system critical pods that must not be moved from their current node.",
            ),
            (
                "system-cluster-critical",
                2000000000,
                "Used for system critical pods that must run in the cluster, but can be moved "
                "to another node if necessary.",
            ),
        ):
            self.store.create(
                R.PRIORITY_CLASSES,
                None,
                {
                    "metadata": {"name": name},
                    "value": value,
                    "description": text,
                    "preemptionPolicy": "PreemptLowerPriority",
                },
            )

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        server = HTTPServer(self._handle)
        self.port = await server.start(self.host, self.port)  # the real port when 0 was asked
        self._http = server
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    async def stop(self) -> None:
        self.store.drop_watches()
        server, self._http = self._http, None
        if server is not None:
            await server.stop()
        self._loop = None
        self._loop_thread = None

    async def __aenter__(self) -> TestAPIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @contextlib.contextmanager
    def run_in_thread(self) -> Iterator[TestAPIServer]:
        """Serve from a background thread with its own event loop (for sync tests and
        subprocess clients such as kubectl)."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as e:  # reported to the caller below
                failure.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            try:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in pending:
                    t.cancel()
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

        thread = threading.Thread(target=serve, name="ksched-test-apiserver", daemon=True)
        thread.start()
        ready.wait(30)
        if failure:
            thread.join(5)
            raise failure[0]
        try:
            yield self
        finally:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self.stop(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)

    def kubeconfig(self, *, namespace: str = "default") -> JSON:
        name = "ksched-testing"
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": self._kubeconfig_user()}],
            "contexts": [
                {"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
            ],
            "current-context": name,
            "preferences": {},
        }

    def _kubeconfig_user(self) -> JSON:
        token = self.auth.first_token
        return {"token": token} if token is not None else {}

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """Write a kubeconfig (plain HTTP; the token file's first token, if there is one)
        whose current context is this server."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(yaml.safe_dump(self.kubeconfig(namespace=namespace), sort_keys=False))
        return out

    # -- running store code on the loop thread --------------------------------------------------

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread or not loop.is_running():
            return fn(*args, **kwargs)
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as e:  # re-raised in the calling thread
                fut.set_exception(e)

        loop.call_soon_threadsafe(run)
        return fut.result(timeout=60)

    def _drop_watches(self, resource: str | None, abort: bool) -> int:
        res = R.lookup(resource) if resource else None
        return self._call(self.store.drop_watches, res, abort=abort)

    # -- store helpers for tests ----------------------------------------------------------------

    @staticmethod
    def resource(kind: str) -> ResourceInfo:
        """Resolve "pods", "Pod", "po", "leases.coordination.k8s.io", ... to a resource."""
        return R.lookup(kind)

    def create(self, obj: JSON, namespace: str | None = None) -> JSON:
        """Create like a POST would (defaults, admission, events); returns the stored object."""
        key = (obj.get("apiVersion", ""), obj.get("kind", ""))
        res = R.by_kind().get(key)
        if res is None:
            raise ValueError(f"unsupported apiVersion/kind {key}")
        ns = namespace or (obj.get("metadata") or {}).get("namespace")
        return clone(self._call(self.store.create, res, ns, obj))

    def get(self, kind: str, namespace: str | None, name: str) -> JSON:
        return clone(self._call(self.store.get, R.lookup(kind), namespace, name))

    def try_get(self, kind: str, namespace: str | None, name: str) -> JSON | None:
        try:
            return self.get(kind, namespace, name)
        except APIStatusError as e:
            if e.code == 404:
                return None
            raise

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> JSONList:
        res = R.lookup(kind)
        labels = LabelSelector.parse(label_selector)
        fields = FieldSelector.parse(field_selector, res.field_getters())
        items, _ = self._call(self.store.list, res, namespace, labels, fields)
        return [clone(o) for o in items]

    def update(self, obj: JSON) -> JSON:
        """PUT semantics: a metadata.resourceVersion in obj is a precondition."""
        res, ns, name = self._identify(obj)
        return clone(self._call(self.store.update, res, ns, name, obj))

    def update_status(self, obj: JSON) -> JSON:
        res, ns, name = self._identify(obj)
        return clone(self._call(self.store.update, res, ns, name, obj, subresource="status"))

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> JSON:
        """patch_type: "merge", "strategic" or "json"."""
        res = R.lookup(kind)
        return clone(
            self._call(
                self.store.patch, res, namespace, name, patch_type, patch, subresource=subresource
            )
        )

    def delete(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> JSON:
        opts = DeleteOptions(uid, resource_version, grace_period_seconds)
        return clone(self._call(self.store.delete, R.lookup(kind), namespace, name, opts))

    def bind(self, namespace: str, name: str, node: str, *, uid: str | None = None) -> None:
        """What a scheduler's POST pods/{name}/binding does."""
        meta: JSON = {"name": name, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        binding = {
            "kind": "Binding",
            "apiVersion": "v1",
            "metadata": meta,
            "target": {"kind": "Node", "name": node},
        }
        self._call(self.store.bind, namespace, name, binding)

    @property
    def objects(self) -> dict[str, JSONList]:
        """Snapshot of all stored objects by resource ("pods", "leases.coordination.k8s.io")."""

        def snap() -> dict[str, JSONList]:
            return {
                q: [clone(o) for _, o in sorted(bucket.items())]
                for q, bucket in self.store.objects.items()
            }

        return self._call(snap)

    @property
    def resource_version(self) -> int:
        """The newest resourceVersion handed out."""
        return self.store.rv

    def compact(self, kind: str | None = None) -> None:
        """Forget watch history so watches from any older resourceVersion get 410 Expired."""
        res = R.lookup(kind) if kind else None
        self._call(self.store.compact, res)

    def _identify(self, obj: JSON) -> tuple[ResourceInfo, str | None, str]:
        key = (obj.get("apiVersion", ""), obj.get("kind", ""))
        res = R.by_kind().get(key)
        if res is None:
            raise ValueError(f"unsupported apiVersion/kind {key}")
        meta = obj.get("metadata") or {}
        return res, meta.get("namespace"), meta.get("name", "")

    # -- watch inspection -----------------------------------------------------------------------

    def watcher_count(self, kind: str | None = None) -> int:
        """Open watch streams (on `kind`, or all)."""
        res = R.lookup(kind) if kind else None

        def count() -> int:
            if res is None:
                return len(self.store.all_watchers())
            return len(self.store.watchers[res.qualified])

        return self._call(count)

    def wait_for_watchers(
        self, count: int = 1, kind: str | None = None, timeout: float = 10.0
    ) -> None:
        """Block until `count` watches are open; for thread-mode servers (see run_in_thread)."""
        deadline = time.monotonic() + timeout
        while self.watcher_count(kind) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fewer than {count} watches on {kind or 'anything'} opened")
            time.sleep(0.01)

    async def wait_for_watchers_async(
        self, count: int = 1, kind: str | None = None, timeout: float = 10.0
    ) -> None:
        """Like wait_for_watchers, for tests running on the server's own loop."""
        async with asyncio.timeout(timeout):
            while self.watcher_count(kind) < count:
                await asyncio.sleep(0.01)

    # -- request recording ----------------------------------------------------------------------

    @property
    def requests(self) -> RequestList:
        with self._requests_lock:
            recorded = self._requests
            for i, r in enumerate(recorded):
                if isinstance(r, tuple):
                    recorded[i] = _recorded(r)
            return list(recorded)  # type: ignore[arg-type]  # all RecordedRequests now

    def clear_requests(self) -> None:
        with self._requests_lock:
            self._requests.clear()

    def find_requests(
        self,
        *,
        method: str | None = None,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        status: int | None = None,
    ) -> RequestList:
        """Recorded requests matching every given attribute (resource may be "pods/binding")."""
        if resource and "/" in resource and subresource is None:
            resource, subresource = resource.split("/", 1)
        want = {
            "method": method.upper() if method else None,
            "verb": verb,
            "resource": resource,
            "subresource": subresource,
            "namespace": namespace,
            "name": name,
            "status": status,
        }
        return [
            r
            for r in self.requests
            if all(v is None or getattr(r, k) == v for k, v in want.items())
        ]

    def count_requests(self, **match: Any) -> int:
        return len(self.find_requests(**match))

    def _record(self, request: Request, attrs: RequestAttrs | None, status: int) -> None:
        raw = request.body if request.method in _BODY_METHODS else b""
        ctype = request.headers.get("content-type") if raw else None
        rec = (request.method, request.path, request.qs, status, attrs, ctype, raw, time.time())
        with self._requests_lock:
            self._requests.append(rec)

    # -- HTTP -----------------------------------------------------------------------------------

    def _handle(self, request: Request) -> Result:
        path = request.path
        if path.startswith("/_testing") and (len(path) == 9 or path[9] == "/"):
            return self._handle_testing(request)
        attrs: RequestAttrs | None = None
        result: Result
        try:
            if self.auth.enabled:
                user, groups = self.auth.authenticate(request.headers.get("authorization"))
            route = self._route(request)
            attrs = route.attrs
            if self.auth.enabled and not self.auth.allowed(groups, request.path):
                raise _forbidden(user, request.path, route)
            delay = self.faults.latency(attrs)
            if delay > 0:
                return self._handle_later(request, route, delay)
            result = self._serve(request, route)
        except Exception as e:
            result = self._error(request, e)
        if isinstance(result, Response):
            self._record(request, attrs, result.status)
        return result

    async def _handle_later(self, request: Request, route: _Route, delay: float) -> Response | None:
        await asyncio.sleep(delay)
        result: Result
        try:
            result = self._serve(request, route)
        except Exception as e:
            result = self._error(request, e)
        if isinstance(result, Response):
            self._record(request, route.attrs, result.status)
            return result
        return await result

    def _error(self, request: Request, e: Exception) -> Response:
        """The Status answer for a failed request, like kube's (never a traceback)."""
        if isinstance(e, APIStatusError):
            return _json(e.status, e.code)
        if isinstance(e, SelectorError):
            return _json(status_body(400, str(e)), 400)
        log.exception("test apiserver: %s %s failed", request.method, request.path)
        return _json(status_body(500, f"Internal error occurred: {e}"), 500)

    def _serve(self, request: Request, route: _Route) -> Result:
        failure = self.faults.take_failure(route.attrs)
        if failure is not None:
            headers = {}
            if failure.retry_after is not None:
                headers["Retry-After"] = str(failure.retry_after)
            status = status_body(failure.code, failure.message, failure.reason)
            if failure.retry_after is not None:
                status["details"] = {"retryAfterSeconds": failure.retry_after}
            return _json(status, failure.code, headers)
        if route.res is None:
            return self._serve_doc(route)
        return self._serve_resource(request, route, request.body)

    def _serve_doc(self, route: _Route) -> Response:
        if isinstance(route.doc, str):
            status = 404 if route.doc == _NOT_FOUND_TEXT else 200
            return Response(status, route.doc.encode(), _TEXT)
        return _json(route.doc)

    def _route(self, request: Request) -> _Route:
        segs = [s for s in request.path.split("/") if s]
        method = request.method

        def doc(body: Any) -> _Route:
            return _Route(RequestAttrs("get"), doc=body)

        if not segs:
            return doc({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/version"]})
        head = segs[0]
        if head in ("healthz", "livez", "readyz") and len(segs) == 1:
            return doc("ok")
        if head == "version" and len(segs) == 1:
            return doc(VERSION_INFO)
        if head == "openapi" and segs[1:2] == ["v3"]:
            if len(segs) == 2:
                return doc(R.openapi_v3_root())
            if segs[2] == "api" and len(segs) == 4:
                spec = R.openapi_v3_group_version("", segs[3])
            elif segs[2] == "apis" and len(segs) == 5:
                spec = R.openapi_v3_group_version(segs[3], segs[4])
            else:
                spec = None
            return doc(spec if spec is not None else _NOT_FOUND_TEXT)
        if head == "api":
            if len(segs) == 1:
                return doc(
                    {
                        "kind": "APIVersions",
                        "versions": ["v1"],
                        "serverAddressByClientCIDRs": [
                            {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.host}:{self.port}"}
                        ],
                    }
                )
            group, version, rest = "", segs[1], segs[2:]
        elif head == "apis":
            if len(segs) == 1:
                return doc(R.api_group_list())
            if len(segs) == 2:
                g = R.api_group(segs[1])
                return doc(g if g is not None else _NOT_FOUND_TEXT)
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            return doc(_NOT_FOUND_TEXT)
        resources = R.by_group_version().get((group, version))
        if resources is None:
            return doc(_NOT_FOUND_TEXT)
        if not rest:
            return doc(R.resource_list(group, version))
        watch = bool(request.qs) and _flag(request.query.get("watch"))
        if rest[0] == "watch":
            watch, rest = True, rest[1:]
        namespace: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and rest[2] in resources
            and resources[rest[2]].namespaced
        ):
            namespace, rest = rest[1], rest[2:]
        res = resources.get(rest[0]) if rest else None
        if res is None or len(rest) > 3:
            raise APIStatusError.make(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in res.subresources:
            raise APIStatusError.make(404, "the server could not find the requested resource")
        if res.namespaced and namespace is None and name is not None:
            raise APIStatusError.make(404, "the server could not find the requested resource")
        verb = self._verb(method, res, name, sub, watch, namespace)
        attrs = RequestAttrs(verb, res.plural, res.qualified, sub, namespace, name)
        return _Route(attrs, res, namespace, name, sub)

    @staticmethod
    def _verb(
        method: str,
        res: ResourceInfo,
        name: str | None,
        sub: str | None,
        watch: bool,
        namespace: str | None,
    ) -> str:
        if res is R.BINDINGS:
            if method == "POST" and name is None and namespace is not None:
                return "create"
            raise _not_allowed()
        if res in R.REVIEWS:
            if method == "POST" and name is None and namespace is None:
                return "create"
            raise _not_allowed()
        if sub == "binding":
            if method == "POST":
                return "create"
            raise _not_allowed()
        if method == "GET":
            if name is None or (watch and sub is None):
                return "watch" if watch else "list"
            return "get"
        if sub == "status" and method not in ("PUT", "PATCH"):
            raise _not_allowed()
        if method == "POST" and name is None and (namespace is not None or not res.namespaced):
            return "create"
        if method == "PUT" and name is not None:
            return "update"
        if method == "PATCH" and name is not None:
            return "patch"
        if method == "DELETE":
            return "delete" if name is not None else "deletecollection"
        raise _not_allowed()

    def _serve_resource(self, request: Request, route: _Route, raw: bytes) -> Result:
        res = route.res
        assert res is not None
        q = request.query
        verb = route.attrs.verb
        ns, name, sub = route.namespace, route.name, route.subresource
        dry_run = bool(q) and "All" in request.query_values("dryRun")
        store = self.store
        if verb in ("list", "watch", "deletecollection"):
            labels = LabelSelector.parse(q.get("labelSelector"))
            fields = FieldSelector.parse(q.get("fieldSelector"), res.field_getters())
            if verb == "watch":
                return self._serve_watch(request, route, labels, fields)
            if verb == "list":
                texts = (q.get("labelSelector") or "", q.get("fieldSelector") or "")
                items, keys, rv = store.list_sorted(res, ns, labels, fields, texts)
                as_table = wants_table(request.headers.get("accept", ""))
                return self._list_response(res, items, keys, rv, q, as_table)
            items, rv = store.list(res, ns, labels, fields)
            if verb == "deletecollection":
                opts = DeleteOptions.from_body(_decode_body(raw) if raw.strip() else None, dict(q))
                gone = [
                    store.delete(
                        res,
                        o["metadata"].get("namespace"),
                        o["metadata"]["name"],
                        opts,
                        dry_run=dry_run,
                    )
                    for o in items
                ]
                return self._list_response(
                    res, gone, [_obj_key(o) for o in gone], store.rv, q, False
                )
        assert name is not None or verb == "create"
        if verb == "get":
            assert name is not None
            obj = store.get(res, ns, name)
            if sub is None and wants_table(request.headers.get("accept", "")):
                meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                return _json(table(res, [obj], meta, q.get("includeObject", "Metadata")))
            return _json(obj)
        if verb == "delete":
            assert name is not None
            opts = DeleteOptions.from_body(_decode_body(raw) if raw.strip() else None, dict(q))
            return _json(store.delete(res, ns, name, opts, dry_run=dry_run))
        if verb == "patch" and request.content_type not in _PATCH_TYPES:
            accepted = [t for t in _PATCH_TYPES if not (res.crd and "strategic" in t)]
            raise APIStatusError.make(
                415,
                "the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(accepted)}",
            )
        body = _decode_body(raw) if raw.strip() else None
        if body is None:
            raise bad_request("the request body is empty")
        if verb == "create":
            if res is R.TOKEN_REVIEWS:
                return _json(self.auth.token_review(body), 201)
            if res is R.SUBJECT_ACCESS_REVIEWS:
                return _json(self.auth.access_review(body), 201)
            if sub == "binding" or res is R.BINDINGS:
                assert ns is not None
                pod = name if name is not None else ((body.get("metadata") or {}).get("name") or "")
                store.bind(ns, pod, body, dry_run=dry_run)
                return Response(201, _BIND_SUCCESS)
            return _json(store.create(res, ns, body, dry_run=dry_run, fresh=True), 201)
        assert name is not None
        if verb == "update":
            return _json(store.update(res, ns, name, body, subresource=sub, dry_run=dry_run))
        patch_type = _PATCH_TYPES[request.content_type]
        obj = store.patch(res, ns, name, patch_type, body, subresource=sub, dry_run=dry_run)
        return _json(obj)

    def _list_response(
        self,
        res: ResourceInfo,
        items: JSONList,
        keys: KeyList,
        rv: int,
        q: Mapping[str, str],
        as_table: bool,
    ) -> Response:
        """keys: the items' (namespace, name), sorted like the items."""
        meta: JSON = {"resourceVersion": str(rv)}
        cont = q.get("continue")
        if cont:
            try:
                token = msgspec.json.decode(base64.urlsafe_b64decode(cont.encode()))
                start = (token["start"][0], token["start"][1])
                meta["resourceVersion"] = str(int(token["rv"]))
            except Exception:
                raise bad_request(f"continue key is not valid: {cont!r}") from None
            items = items[bisect.bisect_right(keys, start) :]
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise bad_request(f"invalid limit {q.get('limit')!r}") from None
        if 0 < limit < len(items):
            remaining = len(items) - limit
            items = items[:limit]
            token_rv = int(meta["resourceVersion"])
            token = {"rv": token_rv, "start": list(_obj_key(items[-1]))}
            meta["continue"] = base64.urlsafe_b64encode(encode(token)).decode()
            meta["remainingItemCount"] = remaining
        if as_table:
            return _json(table(res, items, meta, q.get("includeObject", "Metadata")))
        if not res.crd:  # typed lists omit kind/apiVersion in items; unstructured ones keep them
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        return _json(
            {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": meta,
                "items": items,
            }
        )

    def _serve_watch(
        self, request: Request, route: _Route, labels: LabelSelector, fields: FieldSelector
    ) -> Coroutine[Any, Any, Response | None]:
        res = route.res
        assert res is not None
        q = request.query
        timeout: float | None = None
        if q.get("timeoutSeconds"):
            try:
                timeout = float(q["timeoutSeconds"])
            except ValueError:
                raise bad_request(f"invalid timeoutSeconds {q['timeoutSeconds']!r}") from None
        bookmarks = _flag(q.get("allowWatchBookmarks"))
        render: Callable[[str, JSON], bytes] | None = None
        if wants_table(request.headers.get("accept", "")):
            include = q.get("includeObject", "Metadata")

            def render(kind: str, obj: JSON) -> bytes:
                return event_line(kind, table(res, [obj], {}, include))

        open_watch = functools.partial(
            self.store.open_watch,
            res,
            route.namespace,
            labels,
            fields,
            q.get("resourceVersion"),
            name=route.name,
            send_initial_events=_flag(q.get("sendInitialEvents")),
            render=render,
        )
        return self._stream_watch(request, route, open_watch, timeout, bookmarks)

    async def _stream_watch(
        self,
        request: Request,
        route: _Route,
        open_watch: Callable[[], Watcher],
        timeout: float | None,
        bookmarks: bool,
    ) -> Response | None:
        # opened only once this runs: a task cancelled before it starts (its client left)
        # never runs the cleanup below, so it must not have registered a watcher
        try:
            watcher = open_watch()
        except Exception as e:
            resp = self._error(request, e)
            self._record(request, route.attrs, resp.status)
            return resp
        request.conn.start_stream(request, 200, _WATCH_HEADERS)
        self._record(request, route.attrs, 200)
        interval = self.bookmark_interval if bookmarks and self.bookmark_interval > 0 else None
        stream = _WatchStream(self, request, route, watcher)
        try:
            abort = await stream.run(timeout or None, interval)
        finally:
            stream.stop()
            self.store.close_watch(watcher)
        if abort:
            request.conn.abort()
        else:
            request.conn.end_stream(request)
        return None

    def _handle_testing(self, request: Request) -> Response:
        """Control endpoints for out-of-process tests; never recorded or faulted."""
        path = request.path.rstrip("/")
        try:
            if path == "/_testing/requests":
                if request.method == "DELETE":
                    self.clear_requests()
                    return _json({"items": []})
                return _json({"items": [r.to_json() for r in self.requests]})
            if path == "/_testing/faults":
                if request.method == "DELETE":
                    self.faults.clear()
                    return _json(self.faults.snapshot())
                if request.method == "POST":
                    spec = _decode_body(request.body)
                    specs = spec if isinstance(spec, list) else [spec]
                    result: JSON = {}
                    for s in specs:
                        result = self.faults.apply(s)
                    return _json(result)
                return _json(self.faults.snapshot())
            if path == "/_testing/compact" and request.method == "POST":
                kind = request.query.get("resource")
                self.store.compact(R.lookup(kind) if kind else None)
                return _json({"resourceVersion": str(self.store.rv)})
            if path == "/_testing/watchers":
                return _json({"count": len(self.store.all_watchers())})
        except (ValueError, KeyError, TypeError) as e:
            return _json(status_body(400, str(e)), 400)
        except APIStatusError as e:
            return _json(e.status, e.code)
        return Response(404, _NOT_FOUND_TEXT.encode(), _TEXT)


class _WatchStream:
    """Sends a watcher's items to its HTTP stream from loop callbacks as they arrive: a burst
    of changes costs one write, and no task wakes up per event."""

    def __init__(
        self, server: TestAPIServer, request: Request, route: _Route, watcher: Watcher
    ) -> None:
        self.server = server
        self.request = request
        self.route = route
        self.watcher = watcher
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[bool] = self.loop.create_future()  # True: abort
        self.scheduled = False
        self.sent = 0
        self.deadline: asyncio.TimerHandle | None = None
        self.bookmark: asyncio.TimerHandle | None = None

    async def run(self, timeout: float | None, interval: float | None) -> bool:
        """Stream until closed, timed out or limited; True when the connection is to be cut."""
        if timeout is not None:
            self.deadline = self.loop.call_later(timeout, self._finish, False)
        if interval is not None:
            self.bookmark = self.loop.call_later(interval, self._bookmark, interval)
        self.watcher.wake = self._schedule
        self._schedule()  # the backlog queued when the watch opened
        return await self.done

    def stop(self) -> None:
        self.watcher.wake = None
        for timer in (self.deadline, self.bookmark):
            if timer is not None:
                timer.cancel()
        self._finish(False)

    def _finish(self, abort: bool) -> None:
        if not self.done.done():
            self.done.set_result(abort)

    def _schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._flush)

    def _bookmark(self, interval: float) -> None:
        self.bookmark = self.loop.call_later(interval, self._bookmark, interval)
        res = self.route.res
        assert res is not None
        # queued, so it can never overtake events it claims to cover
        self.watcher.put((BOOKMARK, self.server.store.bookmark_line(res)))

    def _flush(self) -> None:
        self.scheduled = False
        if self.done.done():
            return
        try:
            self._send_pending()
        except ConnectionError:
            self._finish(True)  # the client went away
        except Exception:
            log.exception("test apiserver: watch stream failed")
            self._finish(True)

    def _send_pending(self) -> None:
        conn = self.request.conn
        if conn.write_paused:
            conn.when_writable(self._schedule)
            return
        pending = self.watcher.pending
        limit = self.server.faults.watch_event_limit(self.route.attrs)
        batch: list[bytes] = []
        while pending:
            kind, line = pending.popleft()
            if kind in (CLOSE, ABORT):
                self._send(batch)
                self._finish(kind == ABORT)
                return
            batch.append(line)
            if kind == EVENT:
                self.sent += 1
                if limit is not None and self.sent >= limit:
                    self._send(batch)
                    self._finish(False)
                    return
            if len(batch) >= 512:
                self._send(batch)
                batch = []
                if conn.write_paused:  # let the client catch up before sending more
                    conn.when_writable(self._schedule)
                    return
        self._send(batch)

    def _send(self, batch: list[bytes]) -> None:
        if batch:
            self.request.conn.send(self.request, b"".join(batch))


def _forbidden(user: str, path: str, route: _Route) -> APIStatusError:
    """kube's 403 wording for a resource request, or a non-resource path."""
    a, res = route.attrs, route.res
    if res is None:
        return APIStatusError.make(403, f'forbidden: User "{user}" cannot {a.verb} path "{path}"')
    what = f"{res.plural}/{a.subresource}" if a.subresource else res.plural
    msg = f'User "{user}" cannot {a.verb} resource "{what}" in API group "{res.group}"'
    msg += f' in the namespace "{a.namespace}"' if a.namespace else " at the cluster scope"
    name = f' "{a.name}"' if a.name else ""
    details: JSON = {"kind": res.plural}
    if a.name:
        details["name"] = a.name
    if res.group:
        details["group"] = res.group
    return APIStatusError.make(403, f"{res.qualified}{name} is forbidden: {msg}", details=details)


def _not_allowed() -> APIStatusError:
    return APIStatusError.make(
        405, "the server does not allow this method on the requested resource"
    )


def _recorded(r: _RawRecord) -> RecordedRequest:
    method, path, qs, status, attrs, ctype, raw, when = r
    body: Any = None
    if raw:
        try:
            body = msgspec.json.decode(raw)
        except (msgspec.DecodeError, UnicodeDecodeError):
            body = raw.decode("utf-8", "replace")
    return RecordedRequest(
        method=method,
        path=path,
        query=dict(urllib.parse.parse_qsl(qs, keep_blank_values=True)[::-1]) if qs else {},
        status=status,
        verb=attrs.verb if attrs else None,
        resource=attrs.resource if attrs else None,
        subresource=attrs.subresource if attrs else None,
        namespace=attrs.namespace if attrs else None,
        name=attrs.name if attrs else None,
        content_type=ctype,
        body=body,
        time=when,
    )


def _obj_key(obj: JSON) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


@contextlib.asynccontextmanager
async def serving(**kwargs: Any) -> AsyncIterator[TestAPIServer]:
    """`async with serving(...) as srv`: a started server on the current loop."""
    async with TestAPIServer(**kwargs) as srv:
        yield srv
