"""Object storage, resourceVersions, watch fan-out and the write semantics of kube-apiserver.

Everything here runs on the server's event loop thread; callers from other threads go through
`TestAPIServer`, which hops onto the loop. Stored objects are never mutated in place (every
write stores a fresh copy), so watch history and readers can share them without copying.
"""

from __future__ import annotations

import builtins
import math
import os
import random
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..api.quantity import QuantityError, parse_quantity
from . import _resources as R
from ._patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from ._resources import ResourceInfo
from ._selectors import FieldSelector, LabelSelector

JSON = dict[str, Any]

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()


def encode(obj: Any) -> bytes:
    return _ENCODER.encode(obj)


def clone(obj: JSON) -> JSON:
    """Deep copy through JSON: several times faster than copy.deepcopy for API objects."""
    out: JSON = _DECODER.decode(_ENCODER.encode(obj))
    return out


_last_stamp: tuple[int, str] = (0, "")


def now_rfc3339(delta: float = 0.0) -> str:
    """The time `delta` seconds from now, to the second (formatted once per second)."""
    global _last_stamp
    second = math.floor(time.time() + delta)
    if _last_stamp[0] != second:
        _last_stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _last_stamp[1]


# uids: random (version 4) UUIDs, from a generator of our own so that tests seeding the
# global `random` cannot make two servers hand out the same ones
_uid_random = random.Random(os.urandom(32))
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (4 << 76) | (0x8000 << 48)


def new_uid() -> str:
    """What str(uuid.uuid4()) gives, several times faster."""
    h = "%032x" % ((_uid_random.getrandbits(128) & _UUID4_CLEAR) | _UUID4_SET)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# --- Status errors -----------------------------------------------------------------------------

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_body(
    code: int, message: str, reason: str | None = None, details: JSON | None = None
) -> JSON:
    body: JSON = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    reason = _REASONS.get(code, "") if reason is None else reason
    if reason:
        body["reason"] = reason
    if details:
        body["details"] = details
    body["code"] = code
    return body


class APIStatusError(Exception):
    """A request kube-apiserver would refuse; `status` is the Status object it answers with."""

    def __init__(self, status: JSON) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.code: int = status["code"]

    @classmethod
    def make(
        cls, code: int, message: str, reason: str | None = None, details: JSON | None = None
    ) -> APIStatusError:
        return cls(status_body(code, message, reason, details))


def _details(res: ResourceInfo, name: str) -> JSON:
    d: JSON = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = res.plural
    return d


def not_found(res: ResourceInfo, name: str) -> APIStatusError:
    return APIStatusError.make(
        404, f'{res.qualified} "{name}" not found', details=_details(res, name)
    )


def already_exists(res: ResourceInfo, name: str) -> APIStatusError:
    return APIStatusError.make(
        409, f'{res.qualified} "{name}" already exists', "AlreadyExists", _details(res, name)
    )


def conflict(
    res: ResourceInfo, name: str, why: str, *, qualified: str | None = None
) -> APIStatusError:
    """`qualified` overrides the resource in the message ("pods/binding", or the Kind that
    BeforeDelete uses); details split it into kind and group like schema.GroupResource."""
    what = qualified or res.qualified
    kind, _, group = what.partition(".")
    details: JSON = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    return APIStatusError.make(
        409, f'Operation cannot be fulfilled on {what} "{name}": {why}', "Conflict", details
    )


def modified_conflict(res: ResourceInfo, name: str) -> APIStatusError:
    return conflict(
        res,
        name,
        "the object has been modified; please apply your changes to the latest version and "
        "try again",
    )


def bad_request(message: str) -> APIStatusError:
    return APIStatusError.make(400, message)


def forbidden(res: ResourceInfo, name: str, why: str) -> APIStatusError:
    return APIStatusError.make(
        403, f'{res.qualified} "{name}" is forbidden: {why}', details=_details(res, name)
    )


def invalid(res: ResourceInfo, name: str, errors: list[tuple[str, str, str]]) -> APIStatusError:
    """errors: (field, causeReason, message) like field.ErrorList."""
    texts = [f"{f}: {m}" for f, _, m in errors]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: JSON = {"name": name}
    if res.group:
        details["group"] = res.group
    details["kind"] = res.kind
    details["causes"] = [{"reason": r, "message": m, "field": f} for f, r, m in errors]
    return APIStatusError.make(422, f'{res.kind} "{name}" is invalid: {joined}', details=details)


def _precondition_storage_conflict(
    res: ResourceInfo, ns: str | None, name: str, what: str, want: str, have: str
) -> APIStatusError:
    key = f"/registry/{res.qualified}/{ns}/{name}" if ns else f"/registry/{res.qualified}/{name}"
    why = (
        f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: {what} in precondition: {want}, "
        f"{what} in object meta: {have}"
    )
    return conflict(res, name, why)


# --- validation helpers ------------------------------------------------------------------------

# [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)* without its backtracking:
# labels of [-a-z0-9] that start and end alphanumeric, joined by single dots
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?\Z")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _name_errors(res: ResourceInfo, name: str) -> list[tuple[str, str, str]]:
    if res is R.NAMESPACES:
        if len(name) > 63 or not _DNS1123_LABEL.match(name):
            return [
                (
                    "metadata.name",
                    "FieldValueInvalid",
                    f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower '
                    "case alphanumeric characters or '-', and must start and end with an "
                    "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                )
            ]
        return []
    if (
        len(name) > 253
        or not _DNS1123_SUBDOMAIN.match(name)
        or ".." in name
        or ".-" in name
        or "-." in name
    ):
        return [
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower '
                "case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )
        ]
    return []


_POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)"
)


def _pod_spec_defaults(spec: JSON) -> None:
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")


def _negative_quantity_errors(rl: Any, path: str, item: str) -> list[tuple[str, str, str]]:
    """``ValidateResourceQuantityValue``'s non-negative check over a resource list;
    ``item`` formats one entry's field (``[{}]`` for pods, ``.{}`` for node status)."""
    errs: list[tuple[str, str, str]] = []
    for name, q in (rl or {}).items() if isinstance(rl, dict) else ():
        try:
            negative = parse_quantity(q) < 0
        except QuantityError:
            continue  # not a quantity: kube-apiserver refuses it when decoding
        if negative:
            errs.append(
                (
                    path + item.format(name),
                    "FieldValueInvalid",
                    f'Invalid value: "{q}": must be greater than or equal to 0',
                )
            )
    return errs


def _pod_spec_errors(spec: Any) -> list[tuple[str, str, str]]:
    if not isinstance(spec, dict):
        return [("spec", "FieldValueRequired", "Required value")]
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [("spec.containers", "FieldValueRequired", "Required value")]
    errs: list[tuple[str, str, str]] = []
    for i, c in enumerate(containers):
        if not isinstance(c, dict) or not c.get("name"):
            errs.append((f"spec.containers[{i}].name", "FieldValueRequired", "Required value"))
        if not isinstance(c, dict) or not c.get("image"):
            errs.append((f"spec.containers[{i}].image", "FieldValueRequired", "Required value"))
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            res = c.get("resources") if isinstance(c, dict) else None
            if isinstance(res, dict):
                for part in ("limits", "requests"):
                    where = f"spec.{key}[{i}].resources.{part}"
                    errs += _negative_quantity_errors(res.get(part), where, "[{}]")
    return errs


def _node_status_errors(node: JSON) -> list[tuple[str, str, str]]:
    """Negative capacity or allocatable amounts (``ValidateNodeResources``)."""
    status = node.get("status")
    if not isinstance(status, dict):
        return []
    errs: list[tuple[str, str, str]] = []
    for part in ("capacity", "allocatable"):
        errs += _negative_quantity_errors(status.get(part), f"status.{part}", ".{}")
    return errs


def _normalized_pod_spec(spec: JSON) -> JSON:
    out = clone(spec)
    for key in ("containers", "initContainers"):
        for c in out.get(key) or []:
            if isinstance(c, dict):
                c.pop("image", None)
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
        out.pop(key, None)
    out.pop("schedulingGates", None)
    return out


def _pod_update_errors(old: JSON, new: JSON) -> list[tuple[str, str, str]]:
    old_spec = old.get("spec") or {}
    new_spec = new.get("spec") or {}
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or []]
    for gate in new_spec.get("schedulingGates") or []:
        if gate.get("name") not in old_gates:
            return [
                (
                    "spec.schedulingGates",
                    "FieldValueForbidden",
                    "Forbidden: only deletion is allowed, but found new scheduling gate "
                    f"'{gate.get('name')}'",
                )
            ]
    new_tols = new_spec.get("tolerations") or []
    tolerations_ok = all(t in new_tols for t in old_spec.get("tolerations") or [])
    if not tolerations_ok or _normalized_pod_spec(old_spec) != _normalized_pod_spec(new_spec):
        return [("spec", "FieldValueForbidden", _POD_UPDATE_FORBIDDEN)]
    return []


def _storage_defaults(res: ResourceInfo, obj: JSON) -> None:
    """kube's SetDefaults_* for the storage kinds (the fields plugins read unset as nil)."""
    spec = obj.get("spec")
    if res is R.STORAGE_CLASSES:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
    elif not isinstance(spec, dict):
        return
    elif res is R.PERSISTENT_VOLUMES:
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
    elif res is R.PERSISTENT_VOLUME_CLAIMS:
        spec.setdefault("volumeMode", "Filesystem")
    elif res is R.CSI_DRIVERS:
        spec.setdefault("attachRequired", True)
        spec.setdefault("podInfoOnMount", False)
        spec.setdefault("storageCapacity", False)
        spec.setdefault("requiresRepublish", False)
        spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
        spec.setdefault("volumeLifecycleModes", ["Persistent"])


# (qualified names: ResourceInfo holds a dict, so it does not hash)
_DEFAULTED = frozenset(
    r.qualified
    for r in (R.PERSISTENT_VOLUME_CLAIMS, R.PERSISTENT_VOLUMES, R.STORAGE_CLASSES, R.CSI_DRIVERS)
)
_PVC_SPEC_FORBIDDEN = (
    "Forbidden: spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)


def _pvc_update_errors(old: JSON, new: JSON) -> list[tuple[str, str, str]]:
    """ValidatePersistentVolumeClaimUpdate: the PV controller may set volumeName once;
    otherwise only requests (expansion) and the attributes class may change."""
    old_spec = clone(old.get("spec") or {})
    new_spec = clone(new.get("spec") or {})
    for spec in (old_spec, new_spec):
        spec.pop("volumeAttributesClassName", None)
        (spec.get("resources") or {}).pop("requests", None)
    if not old_spec.get("volumeName"):
        old_spec.pop("volumeName", None)
        new_spec.pop("volumeName", None)
    if old_spec != new_spec:
        return [("spec", "FieldValueForbidden", _PVC_SPEC_FORBIDDEN)]
    return []


# --- watch machinery ---------------------------------------------------------------------------

EVENT = 0
BOOKMARK = 1
CLOSE = 2
ABORT = 3
WatchItem = tuple[int, bytes]


class StoredEvent:
    __slots__ = ("_encoded", "obj", "prev", "rv", "type")

    def __init__(self, rv: int, type: str, obj: JSON | None, prev: JSON | None) -> None:
        self.rv = rv
        self.type = type  # ADDED, MODIFIED, DELETED
        self.obj = obj  # state after the change; None for deletions
        self.prev = prev  # state before the change
        self._encoded: dict[str, bytes] | None = None

    @property
    def namespace(self) -> str:
        src = self.obj if self.obj is not None else self.prev
        return ((src or {}).get("metadata") or {}).get("namespace") or ""

    def object_for(self, kind: str) -> JSON:
        if kind == "DELETED":
            # kube sends the last state it had, stamped with the RV of the change
            prev = self.prev or {}
            obj = dict(prev)
            obj["metadata"] = {**(prev.get("metadata") or {}), "resourceVersion": str(self.rv)}
            return obj
        return self.obj or {}

    def line(self, kind: str) -> bytes:
        """The JSON line for this change as seen by a watcher (encoded once, shared)."""
        if self._encoded is None:
            self._encoded = {}
        cached = self._encoded.get(kind)
        if cached is None:
            cached = event_line(kind, self.object_for(kind))
            self._encoded[kind] = cached
        return cached


def event_line(kind: str, obj: JSON) -> bytes:
    return encode({"type": kind, "object": obj}) + b"\n"


# Re-encodes an event's object for one watcher (server-side printing); None = plain JSON.
Renderer = Callable[[str, JSON], bytes]


class Watcher:
    """One open watch: its filter and the queue its HTTP stream drains."""

    def __init__(
        self,
        res: ResourceInfo,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        name: str | None = None,
        render: Renderer | None = None,
    ) -> None:
        self.res = res
        self.render = render
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.name = name
        # what is still to be sent; `wake` (set by whoever streams it) is called when an
        # item arrives, so the stream can send without a task waking per event
        self.pending: deque[WatchItem] = deque()
        self.wake: Callable[[], None] | None = None

    def put(self, item: WatchItem) -> None:
        self.pending.append(item)
        if self.wake is not None:
            self.wake()

    def matches(self, obj: JSON) -> bool:
        if self.name is not None and (obj.get("metadata") or {}).get("name") != self.name:
            return False
        return self.labels.matches(obj) and self.fields.matches(obj)

    def offer(self, ev: StoredEvent) -> None:
        if self.namespace is not None and ev.namespace != self.namespace:
            return
        cur = ev.obj is not None and self.matches(ev.obj)
        old = ev.prev is not None and self.matches(ev.prev)
        if cur and not old:
            kind = "ADDED"
        elif cur:
            kind = "MODIFIED"
        elif old:
            kind = "DELETED"
        else:
            return
        if self.render is None:
            self.put((EVENT, ev.line(kind)))
        else:
            self.put((EVENT, self.render(kind, ev.object_for(kind))))

    def close(self, abort: bool = False) -> None:
        self.put((ABORT if abort else CLOSE, b""))


# --- the store ---------------------------------------------------------------------------------


Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped


@dataclass
class DeleteOptions:
    uid: str | None = None
    resource_version: str | None = None
    grace_period_seconds: int | None = None

    @classmethod
    def from_body(cls, body: Any, query: dict[str, str]) -> DeleteOptions:
        opts = cls()
        if isinstance(body, dict):
            pre = body.get("preconditions") or {}
            opts.uid = pre.get("uid")
            opts.resource_version = pre.get("resourceVersion")
            if body.get("gracePeriodSeconds") is not None:
                opts.grace_period_seconds = int(body["gracePeriodSeconds"])
        if "gracePeriodSeconds" in query:
            try:
                opts.grace_period_seconds = int(query["gracePeriodSeconds"])
            except ValueError:
                raise bad_request(
                    f"invalid gracePeriodSeconds {query['gracePeriodSeconds']!r}"
                ) from None
        return opts


@dataclass(frozen=True)
class _CachedList:
    version: int
    items: list[JSON]
    keys: list[Key]


class Store:
    """All objects, the global resourceVersion counter, per-resource history and watchers."""

    def __init__(self, *, history: int = 1000, graceful_pod_deletion: bool = False) -> None:
        self.rv = 0
        self.graceful_pod_deletion = graceful_pod_deletion
        self.objects: dict[str, dict[Key, JSON]] = {r.qualified: {} for r in R.stored()}
        self.history: dict[str, deque[StoredEvent]] = {
            r.qualified: deque(maxlen=max(history, 1)) for r in R.stored()
        }
        # highest RV no longer replayable, per resource: watches from below it get 410
        self.compacted: dict[str, int] = {r.qualified: 0 for r in R.stored()}
        self.watchers: dict[str, set[Watcher]] = {r.qualified: set() for r in R.stored()}
        # writes per resource, so a cached list result can tell it is still current
        self.changes: dict[str, int] = {r.qualified: 0 for r in R.stored()}
        self._lists: dict[tuple[str, str | None, str, str], _CachedList] = {}

    # -- plumbing -------------------------------------------------------------------------------

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _emit(self, res: ResourceInfo, ev: StoredEvent) -> None:
        self.changes[res.qualified] += 1
        ring = self.history[res.qualified]
        if ring.maxlen is not None and len(ring) == ring.maxlen:
            self.compacted[res.qualified] = ring[0].rv
        ring.append(ev)
        for w in self.watchers[res.qualified]:
            w.offer(ev)

    def compact(self, resource: ResourceInfo | None = None) -> None:
        """Forget watch history, so watches from any older resourceVersion get 410 Expired."""
        for r in [resource] if resource else list(R.stored()):
            self.history[r.qualified].clear()
            self.compacted[r.qualified] = self.rv

    def _bucket(self, res: ResourceInfo) -> dict[Key, JSON]:
        return self.objects[res.qualified]

    @staticmethod
    def _key(res: ResourceInfo, ns: str | None, name: str) -> Key:
        return ((ns or "") if res.namespaced else "", name)

    def _require_namespace(self, ns: str) -> None:
        if ("", ns) not in self.objects[R.NAMESPACES.qualified]:
            raise not_found(R.NAMESPACES, ns)

    def _check_type(self, res: ResourceInfo, obj: Any, fresh: bool = False) -> JSON:
        """obj as a `res` object of our own; `fresh`: obj was just decoded for this request,
        so it is ours already (no copy)."""
        if not isinstance(obj, dict):
            raise bad_request("the object provided is unrecognized (must be a JSON object)")
        kind = obj.get("kind") or res.kind
        api_version = obj.get("apiVersion") or res.api_version
        if kind != res.kind or api_version != res.api_version:
            raise bad_request(
                f'{kind} in version "{api_version.rsplit("/", 1)[-1]}" cannot be handled as a '
                f"{res.kind}: the object provided is unrecognized"
            )
        out = obj if fresh else clone(obj)
        out["kind"] = res.kind
        out["apiVersion"] = res.api_version
        if not isinstance(out.get("metadata"), dict):
            out["metadata"] = {}
        return out

    # -- reads ----------------------------------------------------------------------------------

    def get(self, res: ResourceInfo, ns: str | None, name: str) -> JSON:
        obj = self._bucket(res).get(self._key(res, ns, name))
        if obj is None:
            raise not_found(res, name)
        return obj

    def list(
        self,
        res: ResourceInfo,
        ns: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
    ) -> tuple[builtins.list[JSON], int]:
        return self._select(res, ns, labels, fields)[1], self.rv

    def _select(
        self,
        res: ResourceInfo,
        ns: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
    ) -> tuple[builtins.list[Key], builtins.list[JSON]]:
        """The matching objects in key order, and their keys."""
        bucket = self._bucket(res)
        if labels is not None and labels.empty:
            labels = None
        if fields is not None and fields.empty:
            fields = None
        keys: builtins.list[Key] = []
        out: builtins.list[JSON] = []
        for key in sorted(bucket):
            if ns is not None and res.namespaced and key[0] != ns:
                continue
            obj = bucket[key]
            if labels is not None and not labels.matches(obj):
                continue
            if fields is not None and not fields.matches(obj):
                continue
            keys.append(key)
            out.append(obj)
        return keys, out

    def list_sorted(
        self,
        res: ResourceInfo,
        ns: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        selector_texts: tuple[str, str],
    ) -> tuple[builtins.list[JSON], builtins.list[Key], int]:
        """`list` plus the items' keys (for paging by bisection), reusing the last result for
        the same selectors while the resource has not changed: a client paging through a
        big collection then costs one filtering pass, not one per page. The lists returned
        are shared and must not be modified."""
        ns = ns if res.namespaced else None
        cache_key = (res.qualified, ns, *selector_texts)
        version = self.changes[res.qualified]
        cached = self._lists.get(cache_key)
        if cached is None or cached.version != version:
            keys, items = self._select(res, ns, labels, fields)
            cached = _CachedList(version, items, keys)
            if len(self._lists) >= 16:
                self._lists.pop(next(iter(self._lists)))
            self._lists[cache_key] = cached
        return cached.items, cached.keys, self.rv

    # -- create ---------------------------------------------------------------------------------

    def create(
        self,
        res: ResourceInfo,
        ns: str | None,
        body: Any,
        *,
        dry_run: bool = False,
        fresh: bool = False,
    ) -> JSON:
        """`fresh`: body was decoded for this call alone and may become the stored object."""
        obj = self._check_type(res, body, fresh)
        meta = obj["metadata"]
        if res.namespaced:
            body_ns = meta.get("namespace") or ""
            if ns is None:
                ns = body_ns or "default"
            if body_ns and body_ns != ns:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = ns
            self._require_namespace(ns)
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            why = "resourceVersion should not be set on objects to be created"
            raise APIStatusError.make(
                500, f"Internal error occurred: {why}", details={"causes": [{"message": why}]}
            )
        if res is R.PODS:
            self._admit_pod(obj)
        name = meta.get("name") or ""
        bucket = self._bucket(res)
        if not name:
            prefix = meta.get("generateName") or ""
            if not prefix:
                raise invalid(
                    res,
                    "",
                    [
                        (
                            "metadata.name",
                            "FieldValueRequired",
                            "Required value: name or generateName is required",
                        )
                    ],
                )
            for _ in range(16):
                candidate = prefix + "".join(random.choices(_GENERATE_ALPHABET, k=5))
                if self._key(res, ns, candidate) not in bucket:
                    break
            name = candidate
            meta["name"] = name
        errors = _name_errors(res, name)
        if res is R.PODS:
            errors += _pod_spec_errors(obj.get("spec"))
        if res is R.NODES:
            errors += _node_status_errors(obj)
        if res is R.PRIORITY_CLASSES and not isinstance(obj.get("value"), int):
            errors.append(("value", "FieldValueRequired", "Required value"))
        if errors:
            raise invalid(res, name, errors)
        key = self._key(res, ns, name)
        if key in bucket:
            raise already_exists(res, name)
        for server_owned in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(server_owned, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        if res.has_generation:
            meta["generation"] = 1
        if res is R.NAMESPACES:
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj.setdefault("status", {}).setdefault("phase", "Active")
        if res.qualified in _DEFAULTED:
            _storage_defaults(res, obj)
            status = obj.setdefault("status", {}) if res.status_subresource else None
            if isinstance(status, dict):  # PV and PVC: given status kept, like a pod's
                status.setdefault("phase", "Pending")
        if dry_run:
            meta["resourceVersion"] = str(self.rv)
            return obj
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        bucket[key] = obj
        self._emit(res, StoredEvent(rv, "ADDED", obj, None))
        return obj

    def _admit_pod(self, pod: JSON) -> None:
        """Defaulting plus the Priority admission plugin."""
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return
        _pod_spec_defaults(spec)
        name = pod["metadata"].get("name") or ""
        pc_name = spec.get("priorityClassName") or ""
        pcs = self._bucket(R.PRIORITY_CLASSES)
        preemption: Any = "PreemptLowerPriority"
        if pc_name:
            pc = pcs.get(("", pc_name))
            if pc is None:
                raise forbidden(R.PODS, name, f"no PriorityClass with name {pc_name} was found")
            priority = int(pc.get("value", 0))
            preemption = pc.get("preemptionPolicy") or preemption
        else:
            default = next((p for p in pcs.values() if p.get("globalDefault")), None)
            priority = int(default.get("value", 0)) if default else 0
            if default:
                spec["priorityClassName"] = default["metadata"]["name"]
                preemption = default.get("preemptionPolicy") or preemption
        given = spec.get("priority")
        if given is not None and given != priority:
            raise forbidden(
                R.PODS,
                name,
                f"the integer value of priority ({given}) must not be provided in pod spec; "
                f"priority admission controller computed {priority} from the given "
                "PriorityClass name",
            )
        spec["priority"] = priority
        spec.setdefault("preemptionPolicy", preemption)
        status = pod.setdefault("status", {})
        if isinstance(status, dict):
            status.setdefault("phase", "Pending")
            conds = status.setdefault("conditions", [])
            gated = spec.get("schedulingGates")
            if gated and not any(c.get("type") == "PodScheduled" for c in conds):
                conds.append(
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "lastProbeTime": None,
                        "lastTransitionTime": None,
                        "reason": "SchedulingGated",
                        "message": "Scheduling is blocked due to non-empty scheduling gates",
                    }
                )
            if not conds:
                del status["conditions"]

    # -- update / patch -------------------------------------------------------------------------

    def update(
        self,
        res: ResourceInfo,
        ns: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        new = self._check_type(res, body)
        meta = new["metadata"]
        if (meta.get("name") or name) != name:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        if res.namespaced and (meta.get("namespace") or ns) != ns:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        current = self.get(res, ns, name)
        uid = meta.get("uid")
        cur_meta = current["metadata"]
        if uid and uid != cur_meta["uid"]:
            raise _precondition_storage_conflict(res, ns, name, "UID", uid, cur_meta["uid"])
        want_rv = meta.get("resourceVersion")
        if want_rv and want_rv != cur_meta["resourceVersion"]:
            raise modified_conflict(res, name)
        if subresource == "status":
            merged = clone(current)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        else:
            for owned in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if owned in cur_meta:
                    meta[owned] = cur_meta[owned]
                else:
                    meta.pop(owned, None)
            meta["name"] = name
            if res.namespaced:
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            if res.status_subresource:
                if "status" in current:
                    new["status"] = current["status"]
                else:
                    new.pop("status", None)
            if res is R.PODS:
                spec = new.get("spec")
                if isinstance(spec, dict):
                    _pod_spec_defaults(spec)
                errors = _pod_update_errors(current, new)
                if errors:
                    raise invalid(res, name, errors)
            if res is R.NAMESPACES:
                new["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
            if res.qualified in _DEFAULTED:
                _storage_defaults(res, new)
            if res is R.PERSISTENT_VOLUME_CLAIMS:
                errors = _pvc_update_errors(current, new)
                if errors:
                    raise invalid(res, name, errors)
        if res is R.NODES:
            errors = _node_status_errors(new)
            if errors:
                raise invalid(res, name, errors)
        return self._commit_update(res, ns, name, current, new, dry_run=dry_run)

    def _commit_update(
        self,
        res: ResourceInfo,
        ns: str | None,
        name: str,
        current: JSON,
        new: JSON,
        *,
        dry_run: bool,
    ) -> JSON:
        meta = new["metadata"]
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        if new == current:
            return current  # no-op writes keep the resourceVersion and notify nobody
        if res.has_generation:

            def body(o: JSON) -> JSON:
                return {k: v for k, v in o.items() if k not in ("metadata", "status")}

            if body(new) != body(current):
                meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
        if dry_run:
            return new
        key = self._key(res, ns, name)
        in_grace = res is R.PODS and meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not in_grace:
            return self._remove(res, key, current)  # the last finalizer went: finish deleting
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        self._bucket(res)[key] = new
        self._emit(res, StoredEvent(rv, "MODIFIED", new, current))
        return new

    def patch(
        self,
        res: ResourceInfo,
        ns: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        current = self.get(res, ns, name)
        try:
            if patch_type == "merge":
                patched = merge_patch(current, patch)
            elif patch_type == "strategic":
                if res.crd:
                    raise APIStatusError.make(
                        415,
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json-patch+json, application/merge-patch+json, "
                        "application/apply-patch+yaml",
                    )
                patched = strategic_merge_patch(current, patch, res.kind)
            elif patch_type == "json":
                patched = json_patch(current, patch)
            else:
                raise APIStatusError.make(
                    415,
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: application/json-patch+json, application/merge-patch+json"
                    f"{'' if res.crd else ', application/strategic-merge-patch+json'}",
                )
        except PatchError as e:
            raise APIStatusError.make(e.code, str(e)) from None
        if not isinstance(patched, dict):
            raise bad_request("the patch did not produce a JSON object")
        # a resourceVersion left in the patched object is a precondition, as in kube
        return self.update(res, ns, name, patched, subresource=subresource, dry_run=dry_run)

    # -- delete ---------------------------------------------------------------------------------

    def delete(
        self,
        res: ResourceInfo,
        ns: str | None,
        name: str,
        options: DeleteOptions | None = None,
        *,
        dry_run: bool = False,
    ) -> JSON:
        opts = options or DeleteOptions()
        current = self.get(res, ns, name)
        meta = current["metadata"]
        gk = res.qualified_kind
        if opts.uid is not None and opts.uid != meta["uid"]:
            raise conflict(
                res,
                name,
                f"the UID in the precondition ({opts.uid}) does not match the UID in record "
                f"({meta['uid']}). The object might have been deleted and then recreated",
                qualified=gk,
            )
        if opts.resource_version is not None and opts.resource_version != meta["resourceVersion"]:
            raise conflict(
                res,
                name,
                f"the ResourceVersion in the precondition ({opts.resource_version}) does not "
                f"match the ResourceVersion in record ({meta['resourceVersion']}). The object "
                "might have been modified",
                qualified=gk,
            )
        if dry_run:
            return current
        key = self._key(res, ns, name)
        grace = self._grace_period(res, current, opts)
        if meta.get("finalizers") or grace:
            # finalizers (or a kubelet, for bound pods) finish the deletion later
            new = clone(current)
            new_meta = new["metadata"]
            if not new_meta.get("deletionTimestamp") or grace < int(
                new_meta.get("deletionGracePeriodSeconds") or 0
            ):
                new_meta["deletionTimestamp"] = now_rfc3339(grace)
                new_meta["deletionGracePeriodSeconds"] = grace
            if new == current:
                return current
            rv = self._next_rv()
            new_meta["resourceVersion"] = str(rv)
            self._bucket(res)[key] = new
            self._emit(res, StoredEvent(rv, "MODIFIED", new, current))
            return new
        if res is R.NAMESPACES:
            for other in R.stored():
                if other.namespaced:
                    for k in [k for k in self._bucket(other) if k[0] == name]:
                        self._remove(other, k, self._bucket(other)[k])
        return self._remove(res, key, current)

    def _grace_period(self, res: ResourceInfo, obj: JSON, opts: DeleteOptions) -> int:
        """Non-zero only for graceful pod deletion of bound pods (kubelet would finish it)."""
        if res is not R.PODS or not self.graceful_pod_deletion:
            return 0
        if not (obj.get("spec") or {}).get("nodeName"):
            return 0
        if opts.grace_period_seconds is not None:
            return max(opts.grace_period_seconds, 0)
        return int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))

    def _remove(self, res: ResourceInfo, key: Key, current: JSON) -> JSON:
        del self._bucket(res)[key]
        rv = self._next_rv()
        self._emit(res, StoredEvent(rv, "DELETED", None, current))
        return current

    # -- pods/binding ---------------------------------------------------------------------------

    def bind(self, ns: str, name: str, binding: Any, *, dry_run: bool = False) -> None:
        if not isinstance(binding, dict):
            raise bad_request("the object provided is unrecognized (must be a JSON object)")
        if binding.get("kind", "Binding") != "Binding":
            raise bad_request(f"not a Binding object: {binding.get('kind')}")
        meta = binding.get("metadata") or {}
        if (meta.get("name") or "") != name:
            raise bad_request("name in URL does not match name in Binding object")
        if meta.get("namespace") and meta["namespace"] != ns:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        target = binding.get("target") or {}
        if not target.get("name"):
            raise APIStatusError.make(500, "target.name: Required value", reason="")
        if target.get("kind") not in (None, "", "Node"):
            raise APIStatusError.make(
                500,
                f'target.kind: Unsupported value: "{target["kind"]}": supported values: "Node"',
                reason="",
            )
        current = self.get(R.PODS, ns, name)
        cur_meta = current["metadata"]
        if meta.get("uid") and meta["uid"] != cur_meta["uid"]:
            raise _precondition_storage_conflict(
                R.PODS, ns, name, "UID", meta["uid"], cur_meta["uid"]
            )
        want_rv = meta.get("resourceVersion")
        if want_rv and want_rv != cur_meta["resourceVersion"]:
            raise _precondition_storage_conflict(
                R.PODS, ns, name, "ResourceVersion", want_rv, cur_meta["resourceVersion"]
            )
        if cur_meta.get("deletionTimestamp"):
            raise conflict(
                R.PODS,
                name,
                f"pod {name} is being deleted, cannot be assigned to a host",
                qualified="pods/binding",
            )
        node = (current.get("spec") or {}).get("nodeName")
        if node:
            raise conflict(
                R.PODS,
                name,
                f'pod {name} is already assigned to node "{node}"',
                qualified="pods/binding",
            )
        # copy only the containers that change: stored objects are never modified in place,
        # so the new version may share the rest with the old one
        new = dict(current)
        new["spec"] = {**(current.get("spec") or {}), "nodeName": target["name"]}
        new_meta = new["metadata"] = dict(cur_meta)
        if meta.get("annotations"):
            new_meta["annotations"] = {**(cur_meta.get("annotations") or {}), **meta["annotations"]}
        status = new["status"] = dict(current.get("status") or {})
        # v1.35+ (ClearingNominatedNodeNameAfterBinding, on by default): a bound pod's
        # nomination hint is stale
        status.pop("nominatedNodeName", None)
        status["conditions"] = list(status.get("conditions") or ())
        _set_condition(new, "PodScheduled", "True")
        if dry_run:
            return
        rv = self._next_rv()
        new_meta["resourceVersion"] = str(rv)
        self._bucket(R.PODS)[self._key(R.PODS, ns, name)] = new
        self._emit(R.PODS, StoredEvent(rv, "MODIFIED", new, current))

    # -- watch ----------------------------------------------------------------------------------

    def open_watch(
        self,
        res: ResourceInfo,
        ns: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        resource_version: str | None,
        *,
        name: str | None = None,
        send_initial_events: bool = False,
        render: Renderer | None = None,
    ) -> Watcher:
        """Register a watcher with its backlog (initial state or replay) already queued."""
        w = Watcher(res, ns if res.namespaced else None, labels, fields, name, render)
        if send_initial_events or resource_version in (None, "", "0"):
            draw = render or event_line
            for obj in self.list(res, w.namespace, labels, fields)[0]:
                if w.matches(obj):
                    w.put((EVENT, draw("ADDED", obj)))
            if send_initial_events:
                mark = self.bookmark_line(res, initial_events_end=True)
                w.put((BOOKMARK, mark))
        else:
            try:
                since = int(resource_version)
            except ValueError:
                raise bad_request(f'invalid resource version "{resource_version}"') from None
            oldest = self.compacted[res.qualified]
            if since < oldest:
                status = status_body(
                    410, f"too old resource version: {since} ({oldest})", "Expired"
                )
                w.put((EVENT, event_line("ERROR", status)))
                w.close()
                return w
            for ev in self.history[res.qualified]:
                if ev.rv > since:
                    w.offer(ev)
        self.watchers[res.qualified].add(w)
        return w

    def close_watch(self, w: Watcher) -> None:
        self.watchers[w.res.qualified].discard(w)

    def drop_watches(self, resource: ResourceInfo | None = None, *, abort: bool = False) -> int:
        n = 0
        for qualified, ws in self.watchers.items():
            if resource is not None and qualified != resource.qualified:
                continue
            for w in list(ws):
                w.close(abort)
                n += 1
            ws.clear()
        return n

    def bookmark_line(self, res: ResourceInfo, *, initial_events_end: bool = False) -> bytes:
        meta: JSON = {"resourceVersion": str(self.rv), "creationTimestamp": None}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta}
        return encode({"type": "BOOKMARK", "object": obj}) + b"\n"

    def all_watchers(self) -> builtins.list[Watcher]:
        return [w for ws in self.watchers.values() for w in ws]


def _set_condition(obj: JSON, ctype: str, status: str) -> None:
    """Like podutil.UpdatePodCondition: the condition is replaced whole (reason and message go),
    and lastTransitionTime only moves when the status changes."""
    st = obj.setdefault("status", {})
    conds: list[JSON] = st.setdefault("conditions", [])
    new: JSON = {"type": ctype, "status": status, "lastProbeTime": None}
    for i, c in enumerate(conds):
        if c.get("type") == ctype:
            same = c.get("status") == status and c.get("lastTransitionTime")
            new["lastTransitionTime"] = c["lastTransitionTime"] if same else now_rfc3339()
            conds[i] = new
            return
    new["lastTransitionTime"] = now_rfc3339()
    conds.append(new)
