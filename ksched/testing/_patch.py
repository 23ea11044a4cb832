"""The three patch formats kube-apiserver accepts for built-in types.

Strategic merge patch is driven by a small table of list merge keys (the `patchMergeKey` tags
of the core/v1 Go types) instead of OpenAPI, which is enough for the fields schedulers,
controllers and kubectl touch.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


class PatchError(ValueError):
    """A patch that cannot be applied; `code` is the HTTP status kube-apiserver answers with."""

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- RFC 6902 JSON patch -----------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer {path!r} must start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    idx = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if idx > limit:
        raise PatchError(f"array index {idx} out of bounds")
    return idx


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict):
            if tok not in cur:
                raise PatchError(f"doc is missing path: {path!r}")
            cur = cur[tok]
        elif isinstance(cur, list):
            cur = cur[_index(cur, tok, allow_end=False)]
        else:
            raise PatchError(f"doc is missing path: {path!r}")
    return cur


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"doc is missing path: {path!r}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise PatchError(f"doc is missing path: {path!r}")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise PatchError(f"doc is missing path: {path!r}")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"Unable to remove nonexistent key: {last}: missing value")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, allow_end=False))
    raise PatchError(f"doc is missing path: {path!r}")


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    if not isinstance(operations, list):
        raise PatchError("json patch must be a JSON array of operations", code=400)
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid json patch operation: {op!r}", code=400)
        kind, path = op["op"], op["path"]
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc, _ = _remove(doc, path) if _pointer(path) else (doc, None)
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            doc, value = _remove(doc, op.get("from", ""))
            doc = _add(doc, path, value)
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op.get("from", ""))))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {kind}", code=400)
    return doc


# --- strategic merge patch ---------------------------------------------------------------------

# List field name -> merge key, from the `patchMergeKey` struct tags of k8s.io/api types.
MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "env": "name",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "addresses": "type",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "podIPs": "ip",
    "hostIPs": "ip",
}
# Kinds whose list fields of the same name use another key: a Service's spec.ports merge by
# port (its only `ports` list; a pod template's container ports keep containerPort); a
# CSINode's spec.drivers merge by driver name; a ResourceClaim's status.reservedFor by uid.
KIND_MERGE_KEYS: dict[str, dict[str, str]] = {
    "Service": {"ports": "port"},
    "CSINode": {"drivers": "name"},
    "ResourceClaim": {"reservedFor": "uid"},
    # scheduling.k8s.io PodGroup (the scheduler's status patches; the CRD of that kind
    # takes no strategic merge patch)
    "PodGroup": {"resourceClaimStatuses": "name"},
}
# Lists of scalars with `patchStrategy:"merge"`: patched as ordered sets.
MERGED_SCALAR_LISTS = frozenset({"finalizers"})

_DELETE = object()


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_directives(v)
            for k, v in value.items()
            if not k.startswith("$") and v is not None
        }
    if isinstance(value, list):
        return [
            _strip_directives(v)
            for v in value
            if not (isinstance(v, dict) and v.get("$patch") in ("delete", "replace"))
        ]
    return copy.deepcopy(value)


def _merge_list(field: str, original: Any, patch: list[Any], keys: Mapping[str, str]) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [_strip_directives(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    base: list[Any] = list(original) if isinstance(original, list) else []
    key = keys.get(field)
    if key is not None and all(isinstance(p, dict) for p in patch):
        result = list(base)
        for item in patch:
            if key not in item:
                if item.get("$patch") == "delete":
                    continue
                raise PatchError(f"map: {item} does not contain declared merge key: {key}")
            idx = next(
                (
                    i
                    for i, cur in enumerate(result)
                    if isinstance(cur, dict) and cur.get(key) == item[key]
                ),
                None,
            )
            if item.get("$patch") == "delete":
                if idx is not None:
                    result.pop(idx)
                continue
            if idx is None:
                result.append(_strip_directives(item))
            else:
                result[idx] = _merge_map(result[idx], item, keys)
        return result
    if field in MERGED_SCALAR_LISTS:
        result = list(base)
        for item in patch:
            if item not in result:
                result.append(copy.deepcopy(item))
        return result
    return [_strip_directives(p) for p in patch]


def _order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def ident(item: Any) -> Any:
        return item.get(key) if key is not None and isinstance(item, dict) else item

    wanted = [ident(o) for o in order]
    ranked = [it for w in wanted for it in items if ident(it) == w]
    rest = [it for it in items if ident(it) not in wanted]
    return ranked + rest


def _merge_map(original: Any, patch: dict[str, Any], keys: Mapping[str, str]) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _strip_directives(patch)
    result: dict[str, Any] = dict(original) if isinstance(original, dict) else {}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value if isinstance(value, list) else []
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            drop = value if isinstance(value, list) else []
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in drop]
            continue
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(result.get(key), value, keys)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value, keys)
        else:
            result[key] = copy.deepcopy(value)
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _order(result[field], order, keys.get(field))
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def strategic_merge_patch(target: Any, patch: Any, kind: str = "") -> Any:
    """Strategic merge patch for built-in types, using the MERGE_KEYS table for lists
    (with ``kind``'s exceptions from KIND_MERGE_KEYS)."""
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object", code=400)
    keys = MERGE_KEYS | KIND_MERGE_KEYS.get(kind, {})
    result = _merge_map(target, patch, keys)
    if result is _DELETE:
        return {}
    return result
