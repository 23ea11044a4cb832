"""Unknown fields in plain data bound for an API struct, as kube's strict decoding finds them.

The API structs (``objects``) ignore fields they do not model, which is right for objects
read from a cluster; plugin args embedding an API type (NodeAffinity's ``addedAffinity``)
are decoded strictly by kube-scheduler, and so must refuse them.
"""

from __future__ import annotations

from typing import Any

import msgspec.inspect as mi

__all__ = ["unknown_fields"]

_LISTS = (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)


def unknown_fields(data: Any, cls: type, path: str = "") -> list[str]:
    """The paths (``a.b[0].c``, under ``path``) of the keys in ``data`` that ``cls`` and the
    structs it holds have no field for; wrong types are left to the decoder."""
    return _walk(data, mi.type_info(cls), path)


def _fits(data: Any, t: mi.Type) -> bool:
    if isinstance(data, dict):
        return isinstance(t, mi.StructType | mi.DictType)
    return isinstance(data, list) and isinstance(t, _LISTS)


def _walk(data: Any, t: mi.Type, path: str) -> list[str]:
    if isinstance(t, mi.UnionType):
        t = next((sub for sub in t.types if _fits(data, sub)), t)
    if not _fits(data, t):
        return []
    if isinstance(t, mi.StructType):
        fields = {f.encode_name: f.type for f in t.fields}
        out: list[str] = []
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            out += _walk(value, fields[key], where) if key in fields else [where]
        return out
    if isinstance(t, mi.DictType):
        return [u for k, v in data.items() for u in _walk(v, t.value_type, f"{path}.{k}")]
    assert isinstance(t, _LISTS)
    return [u for i, v in enumerate(data) for u in _walk(v, t.item_type, f"{path}[{i}]")]
