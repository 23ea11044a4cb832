"""``k8s.io/kube-scheduler/extender/v1`` types on the wire, as Go's ``encoding/json`` has them.

The Go structs carry no json tags, so the keys are the Go field names (``Pod``, ``Nodes``,
``NodeNames``, ``FailedNodes``, ...), nil pointers, slices and maps are ``null``, map keys
are sorted and ``<``, ``>``, ``&``, U+2028 and U+2029 are escaped. Encoding reproduces
that byte for byte (golden tests compare bytes), so a Go extender or a stock
kube-scheduler cannot tell ksched from kube-scheduler.

Decoding follows ``json.Unmarshal``: keys match field names case-insensitively (real
extenders answer ``{"nodenames": ...}`` or ``{"error": ...}``), the last duplicate wins,
unknown keys are ignored, ``null`` leaves the zero value, and a value of the wrong JSON
type is an error naming the Go field, as Go's ``UnmarshalTypeError`` does. The v1.Pod and
v1.Node objects inside stay plain dicts here; ``ksched.api.objects`` decodes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from ..api.objects import HeadMeta, ObjectHead
from ..util.errors import KschedError
from ..util.limits import MAX_DEPTH, DecodeLimitError, clip, decode_json, json_length, json_shape

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "MAX_OBJECT_BYTES",
    "MAX_STRUCT_MEMBERS",
    "MIN_EXTENDER_PRIORITY",
    "Bounds",
    "ExtenderArgs",
    "ExtenderBindingArgs",
    "ExtenderBindingResult",
    "ExtenderFilterResult",
    "ExtenderPreemptionArgs",
    "ExtenderPreemptionResult",
    "HostPriority",
    "MetaPod",
    "MetaVictims",
    "Obj",
    "TooLarge",
    "Victims",
    "WireError",
    "decode_binding_args",
    "decode_binding_result",
    "decode_extender_args",
    "decode_extender_args_body",
    "decode_filter_result",
    "decode_host_priority_list",
    "decode_preemption_args",
    "decode_preemption_args_body",
    "decode_preemption_result",
    "encode",
    "encode_args_raw",
    "go_escape",
    "object_meta",
    "parse_json",
]

MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

JSONObject = dict[str, Any]
#: a v1.Pod or v1.Node: decoded (what clients and tests build) or its raw JSON (what the
#: server keeps of a request body, ``decode_extender_args_body``)
Obj = JSONObject | msgspec.Raw


class WireError(KschedError, ValueError):
    """A body Go's ``json.Unmarshal`` into the extender/v1 type would reject."""


# ---- the types --------------------------------------------------------------------------------


@dataclass(slots=True)
class ExtenderArgs:
    pod: Obj | None = None
    # v1.NodeList items (only when the extender is not nodeCacheCapable); None is nil.
    nodes: list[Obj] | None = None
    node_names: list[str] | None = None


@dataclass(slots=True)
class ExtenderFilterResult:
    nodes: list[Obj] | None = None
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] | None = None
    failed_and_unresolvable_nodes: dict[str, str] | None = None
    error: str = ""


@dataclass(slots=True)
class HostPriority:
    host: str = ""
    score: int = 0


@dataclass(slots=True)
class ExtenderBindingArgs:
    pod_name: str = ""
    pod_namespace: str = ""
    pod_uid: str = ""
    node: str = ""


@dataclass(slots=True)
class ExtenderBindingResult:
    error: str = ""


@dataclass(slots=True)
class Victims:
    pods: list[Obj] | None = None
    num_pdb_violations: int = 0


@dataclass(slots=True)
class MetaPod:
    uid: str = ""


@dataclass(slots=True)
class MetaVictims:
    pods: list[MetaPod | None] | None = None
    num_pdb_violations: int = 0


@dataclass(slots=True)
class ExtenderPreemptionArgs:
    pod: Obj | None = None
    node_name_to_victims: dict[str, Victims | None] | None = None
    node_name_to_meta_victims: dict[str, MetaVictims | None] | None = None


@dataclass(slots=True)
class ExtenderPreemptionResult:
    node_name_to_meta_victims: dict[str, MetaVictims | None] | None = None


# ---- encoding ---------------------------------------------------------------------------------

_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def go_escape(data: bytes) -> bytes:
    """Go's HTML-safe escaping; these bytes only ever occur inside JSON strings."""
    for raw, esc in _ESCAPES:
        if raw in data:
            data = data.replace(raw, esc)
    return data


def _sorted_map(m: Mapping[str, Any] | None, value: Callable[[Any], Any]) -> Any:
    if m is None:
        return None
    return {k: value(m[k]) for k in sorted(m)}


def _node_list(items: list[Obj] | None) -> Any:
    return None if items is None else {"metadata": {}, "items": items}


def _meta_victims(v: MetaVictims | None) -> Any:
    if v is None:
        return None
    pods = None if v.pods is None else [None if p is None else {"UID": p.uid} for p in v.pods]
    return {"Pods": pods, "NumPDBViolations": v.num_pdb_violations}


def _victims(v: Victims | None) -> Any:
    if v is None:
        return None
    return {"Pods": v.pods, "NumPDBViolations": v.num_pdb_violations}


def _to_go(obj: Any) -> Any:
    """The Go-shaped value of one extender/v1 object (field order as in the Go struct)."""
    if isinstance(obj, ExtenderArgs):
        return {"Pod": obj.pod, "Nodes": _node_list(obj.nodes), "NodeNames": obj.node_names}
    if isinstance(obj, ExtenderFilterResult):
        return {
            "Nodes": _node_list(obj.nodes),
            "NodeNames": obj.node_names,
            "FailedNodes": _sorted_map(obj.failed_nodes, str),
            "FailedAndUnresolvableNodes": _sorted_map(obj.failed_and_unresolvable_nodes, str),
            "Error": obj.error,
        }
    if isinstance(obj, HostPriority):
        return {"Host": obj.host, "Score": obj.score}
    if isinstance(obj, list):
        return [_to_go(x) for x in obj]
    if isinstance(obj, ExtenderBindingArgs):
        return {
            "PodName": obj.pod_name,
            "PodNamespace": obj.pod_namespace,
            "PodUID": obj.pod_uid,
            "Node": obj.node,
        }
    if isinstance(obj, ExtenderBindingResult):
        return {"Error": obj.error}
    if isinstance(obj, ExtenderPreemptionArgs):
        return {
            "Pod": obj.pod,
            "NodeNameToVictims": _sorted_map(obj.node_name_to_victims, _victims),
            "NodeNameToMetaVictims": _sorted_map(obj.node_name_to_meta_victims, _meta_victims),
        }
    if isinstance(obj, ExtenderPreemptionResult):
        return {"NodeNameToMetaVictims": _sorted_map(obj.node_name_to_meta_victims, _meta_victims)}
    if obj is None:
        return None
    raise TypeError(f"not an extender/v1 type: {type(obj).__name__}")


def encode(obj: Any) -> bytes:
    """``json.Marshal(obj)`` for an extender/v1 value (a ``list`` is a HostPriorityList)."""
    return go_escape(msgspec.json.encode(_to_go(obj)))


def encode_args_raw(
    pod: bytes, nodes: Iterable[bytes] | None, node_names: list[str] | None
) -> bytes:
    """ExtenderArgs from already encoded pod and node JSON: the client's hot path, which
    keeps one encoding per node object instead of re-encoding every node per call."""
    parts = [b'{"Pod":', pod, b',"Nodes":']
    if nodes is None:
        parts.append(b"null")
    else:
        parts += [b'{"metadata":{},"items":[', b",".join(nodes), b"]}"]
    parts += [b',"NodeNames":', msgspec.json.encode(node_names), b"}"]
    return go_escape(b"".join(parts))


# ---- decoding ---------------------------------------------------------------------------------


def parse_json(data: bytes) -> Any:
    """The JSON value of a body; invalid JSON (bad UTF-8 included) or JSON nested beyond
    ``ksched.util.limits.MAX_DEPTH`` is a WireError."""
    try:
        return decode_json(data)
    except (msgspec.DecodeError, DecodeLimitError) as e:
        raise WireError(f"invalid JSON: {e}") from None


def _fold(key: str) -> str:
    # Go matches with simple Unicode case folding; beyond ASCII only these two fold onto it.
    return key.lower().replace("\u017f", "s").replace("\u212a", "k")


def _jtype(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, _Opaque):
        return v.jtype
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return f"number {msgspec.json.encode(v).decode()}"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _type_error(v: Any, field: str, gotype: str) -> WireError:
    where = f"Go struct field {field}" if "." in field else "Go value"
    return WireError(f"json: cannot unmarshal {_jtype(v)} into {where} of type {gotype}")


def _fields(v: Any, struct: str, names: tuple[str, ...], field: str) -> dict[str, Any]:
    """The values of a Go struct's fields in a JSON object, keys matched case-insensitively."""
    if not isinstance(v, dict):
        raise _type_error(v, field, f"v1.{struct}")
    index = {_fold(n): n for n in names}
    out: dict[str, Any] = {}
    for k, x in v.items():
        name = index.get(_fold(k))
        if name is not None:
            out[name] = x  # a later duplicate wins, as in Go
    return out


def _str(v: Any, field: str) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    raise _type_error(v, field, "string")


def _int64(v: Any, field: str) -> int:
    if v is None:
        return 0
    if isinstance(v, int) and not isinstance(v, bool) and _INT64_MIN <= v <= _INT64_MAX:
        return v
    raise _type_error(v, field, "int64")


def _object(v: Any, field: str, gotype: str) -> JSONObject | None:
    """A nested Kubernetes object (v1.Pod, v1.Node), kept as a dict for ksched.api.objects."""
    if v is None:
        return None
    if isinstance(v, dict):
        return v
    raise _type_error(v, field, gotype)


T = TypeVar("T")


def _list(v: Any, field: str, gotype: str, item: Callable[[Any, str], T]) -> list[T] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise _type_error(v, field, gotype)
    return [item(x, field) for x in v]


def _map(v: Any, field: str, gotype: str, value: Callable[[Any, str], T]) -> dict[str, T] | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise _type_error(v, field, gotype)
    return {k: value(x, field) for k, x in v.items()}


def _node_items(v: Any, field: str) -> list[Obj] | None:
    if v is None:
        return None
    f = _fields(v, "NodeList", ("Items",), field)

    def item(x: Any, where: str) -> Obj:
        # null decodes to a zero Node.
        return _object(x, f"{field}.items", "v1.Node") or {}

    return _list(f.get("Items"), f"{field}.items", "[]v1.Node", item) or []


def _top(v: Any, struct: str, names: tuple[str, ...]) -> dict[str, Any]:
    if v is None:
        return {}  # Go: unmarshalling null into a struct is a no-op
    if not isinstance(v, dict):
        raise WireError(f"json: cannot unmarshal {_jtype(v)} into Go value of type v1.{struct}")
    return _fields(v, struct, names, struct)


def decode_extender_args(v: Any) -> ExtenderArgs:
    f = _top(v, "ExtenderArgs", ("Pod", "Nodes", "NodeNames"))
    return ExtenderArgs(
        pod=_object(f.get("Pod"), "ExtenderArgs.Pod", "v1.Pod"),
        nodes=_node_items(f.get("Nodes"), "ExtenderArgs.Nodes"),
        node_names=_list(f.get("NodeNames"), "ExtenderArgs.NodeNames", "[]string", _str),
    )


def decode_filter_result(v: Any) -> ExtenderFilterResult:
    s = "ExtenderFilterResult"
    f = _top(v, s, ("Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"))
    return ExtenderFilterResult(
        nodes=_node_items(f.get("Nodes"), f"{s}.Nodes"),
        node_names=_list(f.get("NodeNames"), f"{s}.NodeNames", "[]string", _str),
        failed_nodes=_map(f.get("FailedNodes"), f"{s}.FailedNodes", "v1.FailedNodesMap", _str),
        failed_and_unresolvable_nodes=_map(
            f.get("FailedAndUnresolvableNodes"),
            f"{s}.FailedAndUnresolvableNodes",
            "v1.FailedNodesMap",
            _str,
        ),
        error=_str(f.get("Error"), f"{s}.Error"),
    )


def _host_priority(v: Any, field: str) -> HostPriority:
    if v is None:
        return HostPriority()
    f = _fields(v, "HostPriority", ("Host", "Score"), "HostPriority")
    return HostPriority(
        _str(f.get("Host"), "HostPriority.Host"), _int64(f.get("Score"), "HostPriority.Score")
    )


def decode_host_priority_list(v: Any) -> list[HostPriority]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise WireError(
            f"json: cannot unmarshal {_jtype(v)} into Go value of type v1.HostPriorityList"
        )
    return [_host_priority(x, "HostPriority") for x in v]


def decode_binding_args(v: Any) -> ExtenderBindingArgs:
    s = "ExtenderBindingArgs"
    f = _top(v, s, ("PodName", "PodNamespace", "PodUID", "Node"))
    return ExtenderBindingArgs(
        _str(f.get("PodName"), f"{s}.PodName"),
        _str(f.get("PodNamespace"), f"{s}.PodNamespace"),
        _str(f.get("PodUID"), f"{s}.PodUID"),
        _str(f.get("Node"), f"{s}.Node"),
    )


def decode_binding_result(v: Any) -> ExtenderBindingResult:
    f = _top(v, "ExtenderBindingResult", ("Error",))
    return ExtenderBindingResult(_str(f.get("Error"), "ExtenderBindingResult.Error"))


def _meta_pod(v: Any, field: str) -> MetaPod | None:
    if v is None:
        return None
    f = _fields(v, "MetaPod", ("UID",), "MetaPod")
    return MetaPod(_str(f.get("UID"), "MetaPod.UID"))


def _meta_victims_of(v: Any, field: str) -> MetaVictims | None:
    if v is None:
        return None
    f = _fields(v, "MetaVictims", ("Pods", "NumPDBViolations"), "MetaVictims")
    return MetaVictims(
        _list(f.get("Pods"), "MetaVictims.Pods", "[]*v1.MetaPod", _meta_pod),
        _int64(f.get("NumPDBViolations"), "MetaVictims.NumPDBViolations"),
    )


def _victims_of(v: Any, field: str) -> Victims | None:
    if v is None:
        return None
    f = _fields(v, "Victims", ("Pods", "NumPDBViolations"), "Victims")

    def pod(x: Any, where: str) -> JSONObject:
        return _object(x, "Victims.Pods", "v1.Pod") or {}

    return Victims(
        _list(f.get("Pods"), "Victims.Pods", "[]*v1.Pod", pod),
        _int64(f.get("NumPDBViolations"), "Victims.NumPDBViolations"),
    )


def decode_preemption_args(v: Any) -> ExtenderPreemptionArgs:
    s = "ExtenderPreemptionArgs"
    f = _top(v, s, ("Pod", "NodeNameToVictims", "NodeNameToMetaVictims"))
    return ExtenderPreemptionArgs(
        pod=_object(f.get("Pod"), f"{s}.Pod", "v1.Pod"),
        node_name_to_victims=_map(
            f.get("NodeNameToVictims"),
            f"{s}.NodeNameToVictims",
            "map[string]*v1.Victims",
            _victims_of,
        ),
        node_name_to_meta_victims=_map(
            f.get("NodeNameToMetaVictims"),
            f"{s}.NodeNameToMetaVictims",
            "map[string]*v1.MetaVictims",
            _meta_victims_of,
        ),
    )


def decode_preemption_result(v: Any) -> ExtenderPreemptionResult:
    s = "ExtenderPreemptionResult"
    f = _top(v, s, ("NodeNameToMetaVictims",))
    return ExtenderPreemptionResult(
        _map(
            f.get("NodeNameToMetaVictims"),
            f"{s}.NodeNameToMetaVictims",
            "map[string]*v1.MetaVictims",
            _meta_victims_of,
        )
    )


# ---- bounded decoding of request bodies (the server) -------------------------------------------
#
# A body is decoded field by field with msgspec.Raw (a view of the body's bytes, no Python
# objects): every count is checked against ``Bounds`` before a decoder makes an object per
# element, so a 60 MiB body of two million tiny nodes is refused for the price of a scan
# (it took 59 s and 5.9 GB decoded whole). The node and pod objects stay Raw: the server
# decodes them straight into its types, skipping fields no plugin reads, and answers with
# their bytes as they came.

#: Largest object a request may carry: kube-apiserver refuses a JSON request body beyond
#: 3 MiB, so no Node or Pod it serves is larger.
MAX_OBJECT_BYTES = 3 * 1024 * 1024
#: Most members of one extender/v1 struct's JSON object (it has two to five fields; Go
#: skips unknown keys, but a body of a million of them is an attack, not a request).
MAX_STRUCT_MEMBERS = 1000


class TooLarge(WireError):
    """A body beyond one of ``Bounds`` (413)."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """What one request body may hold."""

    #: nodes in Nodes.items or NodeNames, and candidate nodes of a preemption
    max_nodes: int
    #: bytes of any one Pod or Node
    max_object_bytes: int = MAX_OBJECT_BYTES
    #: victim pods of a preemption request, over all its nodes
    max_victims: int = 0
    #: JSON values in the body (``ksched.util.limits.json_shape``); 0: no bound
    max_values: int = 0

    def victims(self) -> int:
        """The victim bound: ``max_victims``, or 110 (kubelet's default max-pods) per node."""
        return self.max_victims or 110 * self.max_nodes


_RAW_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_ELEMENTS = msgspec.json.Decoder(list[msgspec.Raw])
_EMPTY = msgspec.Raw(b"{}")
_WHITESPACE = b" \t\r\n"


@dataclass(frozen=True, slots=True)
class _Opaque:
    """An array or object where a scalar belongs: only its JSON type matters (the error)."""

    jtype: str


def _first_byte(raw: bytes | msgspec.Raw) -> int:
    view = memoryview(raw).cast("B")  # msgspec.Raw is a buffer
    for b in view:
        if b not in _WHITESPACE:
            return b
    return 0


def _raw_jtype(raw: bytes | msgspec.Raw) -> str:
    """Go's name for the JSON type of ``raw`` (with a number's text, as Go words it)."""
    b = _first_byte(raw)
    if b == ord("{"):
        return "object"
    if b == ord("["):
        return "array"
    if b == ord('"'):
        return "string"
    if b == ord("n"):
        return "null"
    if b in (ord("t"), ord("f")):
        return "bool"
    return f"number {clip(bytes(raw).strip().decode('ascii', 'replace'), 40)}"


def _raw_type_error(raw: bytes | msgspec.Raw, field: str, gotype: str) -> WireError:
    where = f"Go struct field {field}" if "." in field else "Go value"
    return WireError(f"json: cannot unmarshal {_raw_jtype(raw)} into {where} of type {gotype}")


def _scalar(raw: msgspec.Raw) -> Any:
    """A scalar's value; an array or object as ``_Opaque`` (never built)."""
    jtype = _raw_jtype(raw)
    if jtype in ("object", "array"):
        return _Opaque(jtype)
    try:
        return msgspec.json.decode(raw)
    except msgspec.ValidationError:  # a number beyond float64 (1e400)
        return _Opaque(jtype)
    except (UnicodeDecodeError, msgspec.DecodeError):  # the raw JSON parsed: only bad UTF-8
        raise WireError("invalid JSON: invalid UTF-8 in a string") from None


def _raw_members(
    raw: bytes | msgspec.Raw, field: str, gotype: str, limit: int, what: str, few: bool
) -> dict[str, msgspec.Raw]:
    """The members of a JSON object, its values left raw; TooLarge beyond ``limit``
    (counted from the bytes first, unless ``few`` says there cannot be that many)."""
    if _raw_jtype(raw) != "object":
        raise _raw_type_error(raw, field, gotype)
    n = limit if few else json_length(raw)
    if n > limit:
        raise TooLarge(f"{field}: {n} {what} is over the limit of {limit}")
    try:
        return _RAW_MEMBERS.decode(raw)
    except (UnicodeDecodeError, msgspec.DecodeError):  # the raw JSON parsed: only bad UTF-8
        raise WireError("invalid JSON: invalid UTF-8 in a key") from None


def _raw_struct(
    raw: bytes | msgspec.Raw, struct: str, names: tuple[str, ...], field: str, few: bool
) -> dict[str, msgspec.Raw]:
    """``_fields`` of a raw JSON object: its Go fields' values, still raw."""
    members = _raw_members(raw, field, f"v1.{struct}", MAX_STRUCT_MEMBERS, "members", few)
    index = {_fold(n): n for n in names}
    out: dict[str, msgspec.Raw] = {}
    for k, x in members.items():
        name = index.get(_fold(k))
        if name is not None:
            out[name] = x
    return out


def _raw_elements(
    raw: msgspec.Raw, field: str, gotype: str, limit: int, what: str, few: bool
) -> list[msgspec.Raw] | None:
    """The elements of a JSON array (None for null), left raw; TooLarge beyond ``limit``
    (counted from the bytes first, unless ``few`` says there cannot be that many)."""
    jtype = _raw_jtype(raw)
    if jtype == "null":
        return None
    if jtype != "array":
        raise _raw_type_error(raw, field, gotype)
    n = limit if few else json_length(raw)
    if n > limit:
        raise TooLarge(f"{field}: {n} {what} is over the limit of {limit}")
    return _RAW_ELEMENTS.decode(raw)


def _raw_object(raw: msgspec.Raw | None, field: str, gotype: str, bounds: Bounds) -> Obj | None:
    """A Kubernetes object kept raw (None for null), within the size bound."""
    if raw is None or _raw_jtype(raw) == "null":
        return None
    if _raw_jtype(raw) != "object":
        raise _raw_type_error(raw, field, gotype)
    if len(raw) > bounds.max_object_bytes:
        raise TooLarge(
            f"{field}: an object of {len(raw)} bytes is over the limit of "
            f"{bounds.max_object_bytes} bytes"
        )
    return raw


def _raw_str_list(raw: msgspec.Raw | None, field: str, limit: int, few: bool) -> list[str] | None:
    if raw is None:
        return None
    items = _raw_elements(raw, field, "[]string", limit, "names", few)
    return None if items is None else [_str(_scalar(x), field) for x in items]


def _top_raw(
    data: bytes, struct: str, names: tuple[str, ...], bounds: Bounds
) -> tuple[dict[str, msgspec.Raw], list[int]]:
    """The top-level struct's fields of a body, after the checks ``parse_json`` makes and
    the bound on its values; and the commas at each nesting (``json_shape``), which spare
    counting a container's elements with another scan when there cannot be too many."""
    depth, values, commas = json_shape(data)
    try:
        if depth > MAX_DEPTH:
            raise WireError(f"invalid JSON: nesting deeper than {MAX_DEPTH} levels")
        msgspec.json.decode(data, type=msgspec.Raw)  # the syntax, all of it, first (as Go)
    except msgspec.DecodeError as e:
        raise WireError(f"invalid JSON: {e}") from None
    if bounds.max_values and values > bounds.max_values:
        raise TooLarge(
            f"{struct}: {values} JSON values (array elements and object members) is over "
            f"the limit of {bounds.max_values}"
        )
    if _raw_jtype(data) == "null":
        return {}, commas  # Go: unmarshalling null into a struct is a no-op
    if _raw_jtype(data) != "object":
        raise WireError(
            f"json: cannot unmarshal {_raw_jtype(data)} into Go value of type v1.{struct}"
        )
    few = commas[1] < MAX_STRUCT_MEMBERS
    return _raw_struct(data, struct, names, struct, few), commas


def decode_extender_args_body(data: bytes, bounds: Bounds) -> ExtenderArgs:
    """``decode_extender_args(parse_json(data))`` within ``bounds``: the Pod and the nodes
    stay ``msgspec.Raw``; TooLarge for more nodes or larger objects than allowed."""
    f, commas = _top_raw(data, "ExtenderArgs", ("Pod", "Nodes", "NodeNames"), bounds)
    pod = _raw_object(f.get("Pod"), "ExtenderArgs.Pod", "v1.Pod", bounds)  # Go's order
    nodes: list[Obj] | None = None
    if (raw_nodes := f.get("Nodes")) is not None and _raw_jtype(raw_nodes) != "null":
        field = "ExtenderArgs.Nodes"
        few = commas[2] < MAX_STRUCT_MEMBERS
        items = _raw_struct(raw_nodes, "NodeList", ("Items",), field, few).get("Items")
        few = commas[3] < bounds.max_nodes  # Nodes.items' elements are at nesting 3
        elements = (
            _raw_elements(items, f"{field}.items", "[]v1.Node", bounds.max_nodes, "nodes", few)
            if items is not None
            else None
        )
        nodes = [
            _raw_object(x, f"{field}.items", "v1.Node", bounds) or _EMPTY  # null: a zero Node
            for x in elements or []
        ]
    return ExtenderArgs(
        pod=pod,
        nodes=nodes,
        node_names=_raw_str_list(
            f.get("NodeNames"),
            "ExtenderArgs.NodeNames",
            bounds.max_nodes,
            commas[2] < bounds.max_nodes,
        ),
    )


def _raw_int64(raw: msgspec.Raw | None, field: str) -> int:
    return 0 if raw is None else _int64(_scalar(raw), field)


def decode_preemption_args_body(data: bytes, bounds: Bounds) -> ExtenderPreemptionArgs:
    """``decode_preemption_args(parse_json(data))`` within ``bounds``: at most
    ``max_nodes`` candidate nodes and ``bounds.victims()`` victims over all of them; the
    Pod and the victim pods stay ``msgspec.Raw``."""
    s = "ExtenderPreemptionArgs"
    f, commas = _top_raw(data, s, ("Pod", "NodeNameToVictims", "NodeNameToMetaVictims"), bounds)
    budget = [bounds.victims()]
    pod = _raw_object(f.get("Pod"), f"{s}.Pod", "v1.Pod", bounds)  # Go's order
    # Nesting 2: the maps' nodes; 3: a Victims' fields; 4: its pods (at most two lists a
    # node); 5: a MetaPod's fields.
    few_nodes = commas[2] < bounds.max_nodes
    few_fields = commas[3] < MAX_STRUCT_MEMBERS and commas[5] < MAX_STRUCT_MEMBERS
    few_pods = commas[4] + 2 * bounds.max_nodes <= budget[0]

    def victims(field: str, raw: msgspec.Raw, gotype: str) -> list[msgspec.Raw] | None:
        pods = _raw_elements(raw, field, gotype, budget[0], "victims (over all nodes)", few_pods)
        budget[0] -= len(pods or [])
        return pods

    def node_map(key: str, gotype: str) -> dict[str, msgspec.Raw] | None:
        raw = f.get(key)
        if raw is None or _raw_jtype(raw) == "null":
            return None
        return _raw_members(raw, f"{s}.{key}", gotype, bounds.max_nodes, "nodes", few_nodes)

    def victims_map(
        key: str, gotype: str, struct: str, item: Callable[[msgspec.Raw], Any]
    ) -> dict[str, Any] | None:
        """NodeNameToVictims or NodeNameToMetaVictims: node → Victims or MetaVictims."""
        if (m := node_map(key, gotype)) is None:
            return None
        out: dict[str, Any] = {}
        for node, raw in m.items():
            if _raw_jtype(raw) == "null":
                out[node] = None
                continue
            v = _raw_struct(raw, struct, ("Pods", "NumPDBViolations"), struct, few_fields)
            gotype = "[]*v1.Pod" if struct == "Victims" else "[]*v1.MetaPod"
            pods = victims(f"{struct}.Pods", v["Pods"], gotype) if "Pods" in v else None
            cls = Victims if struct == "Victims" else MetaVictims
            out[node] = cls(
                None if pods is None else [item(p) for p in pods],
                _raw_int64(v.get("NumPDBViolations"), f"{struct}.NumPDBViolations"),
            )
        return out

    full = victims_map(
        "NodeNameToVictims",
        "map[string]*v1.Victims",
        "Victims",
        lambda p: _raw_object(p, "Victims.Pods", "v1.Pod", bounds) or _EMPTY,
    )
    meta = victims_map(
        "NodeNameToMetaVictims",
        "map[string]*v1.MetaVictims",
        "MetaVictims",
        lambda p: _raw_meta_pod(p, few_fields),
    )
    return ExtenderPreemptionArgs(
        pod=pod,
        node_name_to_victims=full,
        node_name_to_meta_victims=meta,
    )


def _raw_meta_pod(raw: msgspec.Raw, few: bool) -> MetaPod | None:
    if _raw_jtype(raw) == "null":
        return None
    f = _raw_struct(raw, "MetaPod", ("UID",), "MetaPod", few)
    uid = f.get("UID")
    return MetaPod("" if uid is None else _str(_scalar(uid), "MetaPod.UID"))


def object_meta(obj: Obj) -> tuple[str, str]:
    """(metadata.name, metadata.uid) of a v1 object, decoded or raw; "" for what is not
    a string (the object's own decoding reports that)."""
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        uid = meta.get("uid") if isinstance(meta, dict) else None
    else:
        try:
            head = msgspec.json.decode(obj, type=ObjectHead).metadata or HeadMeta()
        except (msgspec.DecodeError, UnicodeDecodeError):
            return "", ""
        name, uid = head.name, head.uid
    return (name if isinstance(name, str) else "", uid if isinstance(uid, str) else "")
