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

from ..util.errors import KschedError
from ..util.limits import DecodeLimitError, decode_json

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "MIN_EXTENDER_PRIORITY",
    "ExtenderArgs",
    "ExtenderBindingArgs",
    "ExtenderBindingResult",
    "ExtenderFilterResult",
    "ExtenderPreemptionArgs",
    "ExtenderPreemptionResult",
    "HostPriority",
    "MetaPod",
    "MetaVictims",
    "Victims",
    "WireError",
    "decode_binding_args",
    "decode_binding_result",
    "decode_extender_args",
    "decode_filter_result",
    "decode_host_priority_list",
    "decode_preemption_args",
    "decode_preemption_result",
    "encode",
    "encode_args_raw",
    "go_escape",
    "parse_json",
]

MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

JSONObject = dict[str, Any]


class WireError(KschedError, ValueError):
    """A body Go's ``json.Unmarshal`` into the extender/v1 type would reject."""


# ---- the types --------------------------------------------------------------------------------


@dataclass(slots=True)
class ExtenderArgs:
    pod: JSONObject | None = None
    # v1.NodeList items (only when the extender is not nodeCacheCapable); None is nil.
    nodes: list[JSONObject] | None = None
    node_names: list[str] | None = None


@dataclass(slots=True)
class ExtenderFilterResult:
    nodes: list[JSONObject] | None = None
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
    pods: list[JSONObject] | None = None
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
    pod: JSONObject | None = None
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


def _node_list(items: list[JSONObject] | None) -> Any:
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


def _node_items(v: Any, field: str) -> list[JSONObject] | None:
    if v is None:
        return None
    f = _fields(v, "NodeList", ("Items",), field)

    def item(x: Any, where: str) -> JSONObject:
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
