"""Declarative plugin args: one msgspec Struct per plugin, one decoder for all of them.

A plugin declares its ``pluginConfig`` args as a class::

    class Args(PluginArgs):
        forbidden: list[str] = []          # snake_case here, camelCase in the config
        max_per_node: Int32 = 10

        def validate(self, errs: ArgsErrors) -> None:   # rules across fields
            if self.max_per_node < 0:
                errs.invalid("maxPerNode", self.max_per_node, "must not be negative")

and gets them typed as ``self.args``. ``Args.parse(plugin, data)`` is the one decoder,
for built-in and third-party plugins alike: unknown fields (at any depth) and wrong types
are refused with the field's path, defaults come from the fields, then ``validate`` runs.
Every problem found is reported, as one ``PluginArgsError`` (several are joined as an
apimachinery aggregate ``[a, b]``).

Words: a value of the wrong type is "must be an integer, got '10'" (the value as Python
shows it; in-tree ``KubeArgs`` show it as the configuration loader does); a Kubernetes
API object inside the args (``NodeAffinity``, a topology spread constraint) is decoded by
msgspec as a manifest is, with its words ("Expected `int`, got `str`"). A null field
counts as absent, as a nil Go pointer does. Field annotations:
``Int32`` (Go's int32; plain ``int`` is int64), ``Duration`` (Go duration text such as
"10s", held as float seconds), ``msgspec.Meta(ge=..., le=...)`` bounds, and
``EMPTY_IS_DEFAULT`` for fields Go defaults when they are zero ("", 0, []) rather than
absent.

``with_defaults`` is the other half of upstream's defaulting: the args as the effective
configuration shows them (``ksched config validate``), user fields kept and the absent
ones that have a value filled in.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final, Self, TypeAlias

import msgspec
import msgspec.inspect as mi

from ..api.strict import unknown_fields
from ..util.duration import format_duration, parse_duration
from ..util.errors import KschedError

__all__ = [
    "EMPTY_IS_DEFAULT",
    "ArgsErrors",
    "Duration",
    "Int32",
    "KubeArgs",
    "NoArgs",
    "PluginArgs",
    "PluginArgsError",
    "got",
    "show",
]

Int32 = Annotated[int, msgspec.Meta(extra={"bits": 32})]
Duration = Annotated[float, msgspec.Meta(extra={"duration": True})]
EMPTY_IS_DEFAULT: Final = msgspec.Meta(extra={"empty_is_default": True})

# The args of a plugin without an ``Args`` class: its pluginConfig dict as given (unread),
# or None when it is made directly.
NoArgs: TypeAlias = Mapping[str, Any] | None

_BOUNDS = {32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}
_BAD: Any = object()  # a value that failed to decode (its problem is already recorded)


class PluginArgsError(KschedError, ValueError):
    """Invalid plugin args; the message names the plugin and the field."""

    def __init__(self, plugin: str, path: str, message: str) -> None:
        self.plugin, self.path = plugin, path
        where = f"args.{path}" if path else "args"
        super().__init__(f"plugin {plugin}: {where}: {message}")


def show(value: Any) -> str:
    """A bad value as apimachinery's field errors print it (%v for numbers, quoted strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def got(value: Any) -> str:
    """A wrong value as kube-scheduler's config errors show it: YAML's true/false, "a
    list" and "an object" for containers, scalars as Python writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str | int | float):
        return repr(value)
    return type(value).__name__


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class ArgsErrors:
    """Collects a plugin's args problems, then raises them as one ``PluginArgsError``.

    One problem keeps its path on the error; several are joined like an apimachinery
    aggregate (``[a, b]``). ``validate`` hooks report through ``fail`` and ``invalid``.
    """

    def __init__(self, plugin: str) -> None:
        self.plugin = plugin
        self.errors: list[tuple[str, str]] = []

    def fail(self, path: str, msg: str) -> None:
        self.errors.append((path, msg))

    def invalid(self, path: str, value: Any, detail: str) -> None:
        """apimachinery's ``field.Invalid``: ``path: Invalid value: <value>: detail``."""
        self.fail(path, f"Invalid value: {show(value)}: {detail}")

    def raise_if_any(self) -> None:
        if not self.errors:
            return
        if len(self.errors) == 1:
            path, msg = self.errors[0]
            raise PluginArgsError(self.plugin, path, msg)
        joined = ", ".join(f"{p}: {m}" if p else m for p, m in self.errors)
        raise PluginArgsError(self.plugin, "", f"[{joined}]")


class PluginArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """Base of a plugin's ``Args``: fields with defaults, an optional ``validate``.

    Subclass fields may be given positionally too (``kw_only`` covers only the base's
    own, which it has none of). Pass ``rename=None`` in the class statement for args
    whose wire names are the field names as written.
    """

    #: An unknown field's message lists the known ones, to help with a typo.
    unknown_field_hint: ClassVar[bool] = True
    #: Defaults (as the file spells them) of fields the configuration fills in only while
    #: feature gates are on (``ksched.config.GATED_ARG_DEFAULTS`` names the gates).
    gated_defaults: ClassVar[dict[str, Any]] = {}

    def validate(self, errs: ArgsErrors) -> None:
        """Rules across fields (or beyond a field's type): report each with ``errs``."""

    @classmethod
    def parse(cls, plugin: str, data: Any) -> Self:
        """Decode ``pluginConfig`` args (plain data) and validate them: the one decoder."""
        if not isinstance(data, Mapping):
            raise PluginArgsError(plugin, "", f"expected a mapping, got {type(data).__name__}")
        errs = ArgsErrors(plugin)
        args = _Decoder(errs).struct(cls, dict(data), "")
        errs.raise_if_any()
        assert isinstance(args, cls)
        args.validate(errs)
        errs.raise_if_any()
        return args

    @classmethod
    def resolve(cls, plugin: str, args: Any) -> Self:
        """The plugin's args whether the framework parsed them already, a test passed a
        dict, or nothing was given (the defaults)."""
        if isinstance(args, cls):
            return args
        return cls.parse(plugin, {} if args is None else args)

    @classmethod
    def with_defaults(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        """``raw`` args as the effective configuration shows them: every user field kept
        (in the user's order, fields of nested args defaulted too), then each absent
        field whose default has a value (not None or empty). Wrong data is left as it is
        for ``parse`` to refuse."""
        return _with_defaults(cls, copy.deepcopy(dict(raw)))


class KubeArgs(PluginArgs):
    """Args of kube-scheduler's in-tree plugins, worded as kube-scheduler's config decoding
    words problems: a bare "unknown field", and a wrong value shown as the configuration
    loader shows one (``got``)."""

    unknown_field_hint: ClassVar[bool] = False


# ---- field types -------------------------------------------------------------------------


def _unwrap(t: mi.Type) -> tuple[mi.Type, dict[str, Any]]:
    extra: dict[str, Any] = {}
    while isinstance(t, mi.Metadata):
        extra |= t.extra or {}
        t = t.type
    return t, extra


@functools.cache
def _fields(cls: type) -> dict[str, mi.Field]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return {f.encode_name: f for f in info.fields}


def _empty_is_default(f: mi.Field) -> bool:
    return bool(_unwrap(f.type)[1].get("empty_is_default"))


def _unset(f: mi.Field, value: Any) -> bool:
    """A null (absent) value, or an empty one where Go defaults zero values."""
    if value is None:
        return True
    if isinstance(value, bool) or not _empty_is_default(f):
        return False
    return value in (0, "") or (isinstance(value, list | dict) and not value)


def _args_struct(t: mi.Type) -> type[PluginArgs] | None:
    t, _ = _unwrap(t)
    if isinstance(t, mi.StructType) and issubclass(t.cls, PluginArgs):
        return t.cls
    return None


_LISTS = (mi.ListType, mi.VarTupleType)
_WANT = {
    mi.IntType: "an integer",
    mi.FloatType: "a number",
    mi.StrType: "a string",
    mi.BoolType: "a boolean",
    mi.ListType: "a list",
    mi.VarTupleType: "a list",
    mi.DictType: "an object",
    mi.StructType: "an object",
}


class _Decoder:
    """Plain data to args structs, recording every problem in ``errs``."""

    def __init__(self, errs: ArgsErrors) -> None:
        self.errs = errs
        self.kube = False  # inside KubeArgs: a wrong value is shown as the config loader does

    def struct(self, cls: type[PluginArgs], raw: dict[str, Any], path: str) -> Any:
        fields = _fields(cls)
        before = len(self.errs.errors)
        for key in raw:
            if not isinstance(key, str) or key not in fields:
                msg = "unknown field"
                if cls.unknown_field_hint:
                    msg += f" (known fields: {', '.join(fields) or 'none'})"
                self.errs.fail(_join(path, str(key)), msg)
        kube, self.kube = self.kube, issubclass(cls, KubeArgs)
        kwargs: dict[str, Any] = {}
        for key, value in raw.items():
            f = fields.get(key) if isinstance(key, str) else None
            if f is not None and not _unset(f, value):
                kwargs[f.name] = self.value(value, f.type, _join(path, key))
        self.kube = kube
        if len(self.errs.errors) > before:
            return _BAD
        return cls(**kwargs)

    def _wrong(self, path: str, want: str, value: Any) -> Any:
        shown = got(value) if self.kube else repr(value)
        self.errs.fail(path, f"must be {want}, got {shown}")
        return _BAD

    def value(self, raw: Any, t: mi.Type, path: str, nullable: bool = False) -> Any:
        t, extra = _unwrap(t)
        if isinstance(t, mi.UnionType):
            options = [o for o in t.types if not isinstance(_unwrap(o)[0], mi.NoneType)]
            if raw is None and len(options) < len(t.types):
                return None
            if len(options) == 1:
                return self.value(raw, options[0], path, nullable=len(t.types) > 1)
            return self.foreign(raw, t, path)
        want = _WANT.get(type(t), "")
        if nullable and want:
            want += " or null"
        if extra.get("duration"):
            if not isinstance(raw, str):
                return self._wrong(path, "a string", raw)
            try:
                return parse_duration(raw)
            except ValueError:
                self.errs.invalid(path, raw, "must be a duration")
                return _BAD
        if isinstance(t, mi.IntType):
            if not isinstance(raw, int) or isinstance(raw, bool):
                return self._wrong(path, want, raw)
            bits = extra.get("bits", 64)
            lo, hi = _BOUNDS[bits]
            if not lo <= raw <= hi:
                self.errs.fail(path, f"must be a {bits}-bit integer, got {raw}")
                return _BAD
            return raw if self.bounds(raw, t, path) else _BAD
        if isinstance(t, mi.FloatType):
            if not isinstance(raw, int | float) or isinstance(raw, bool):
                return self._wrong(path, want, raw)
            # An int stays one (a float field takes ints): messages show it as written.
            return raw if self.bounds(raw, t, path) else _BAD
        if isinstance(t, mi.StrType | mi.BoolType):
            ok = isinstance(raw, str) if isinstance(t, mi.StrType) else isinstance(raw, bool)
            return raw if ok else self._wrong(path, want, raw)
        if isinstance(t, mi.AnyType):
            return raw
        if isinstance(t, _LISTS):
            if not isinstance(raw, list):
                return self._wrong(path, want, raw)
            items = [self.value(v, t.item_type, f"{path}[{i}]") for i, v in enumerate(raw)]
            if any(v is _BAD for v in items):
                return _BAD
            return tuple(items) if isinstance(t, mi.VarTupleType) else items
        if isinstance(t, mi.DictType) and isinstance(_unwrap(t.key_type)[0], mi.StrType):
            if not isinstance(raw, dict):
                return self._wrong(path, want, raw)
            out = {str(k): self.value(v, t.value_type, _join(path, str(k))) for k, v in raw.items()}
            return _BAD if any(v is _BAD for v in out.values()) else out
        cls = _args_struct(t)
        if cls is not None:
            return (
                self.struct(cls, raw, path)
                if isinstance(raw, dict)
                else self._wrong(path, want, raw)
            )
        return self.foreign(raw, t, path)

    def bounds(self, value: float, t: mi.IntType | mi.FloatType, path: str) -> bool:
        """``msgspec.Meta`` bounds, in ksched's words."""
        checks: tuple[tuple[float | None, bool, str], ...] = (
            (t.ge, t.ge is None or value >= t.ge, "at least"),
            (t.gt, t.gt is None or value > t.gt, "greater than"),
            (t.le, t.le is None or value <= t.le, "at most"),
            (t.lt, t.lt is None or value < t.lt, "less than"),
        )
        for limit, ok, words in checks:
            if not ok:
                self.errs.fail(path, f"must be {words} {limit}, got {value}")
                return False
        return True

    def foreign(self, raw: Any, t: mi.Type, path: str) -> Any:
        """A type that is not plugin args (a Kubernetes API object, a union): strict about
        unknown fields, as kube's decoding of args is, with msgspec's words for the rest."""
        target: Any = t.cls if isinstance(t, mi.StructType) else _python_type(t)
        if isinstance(t, mi.StructType):
            unknown = unknown_fields(raw, t.cls, path)
            for where in unknown:
                self.errs.fail(where, "unknown field")
            if unknown:
                return _BAD
        try:
            return msgspec.convert(raw, target, strict=True)
        except msgspec.ValidationError as e:
            msg, _, at = str(e).partition(" - at `$")
            self.errs.fail(path + at.rstrip("`"), msg)
            return _BAD


def _python_type(t: mi.Type) -> Any:
    """Back from inspect's description to an annotation msgspec can convert to (unions of
    the types args use)."""
    if isinstance(t, mi.UnionType):
        out: Any = None
        for sub in t.types:
            py = _python_type(sub)
            out = py if out is None else out | py
        return out
    simple: dict[type, Any] = {
        mi.IntType: int,
        mi.FloatType: float,
        mi.StrType: str,
        mi.BoolType: bool,
        mi.NoneType: type(None),
        mi.AnyType: Any,
    }
    if isinstance(t, mi.StructType):
        return t.cls
    if isinstance(t, mi.ListType):
        return list[_python_type(t.item_type)]  # type: ignore[misc]
    if isinstance(t, mi.DictType):
        return dict[_python_type(t.key_type), _python_type(t.value_type)]  # type: ignore[misc]
    if isinstance(t, mi.Metadata):
        return _python_type(t.type)
    return simple.get(type(t), Any)


# ---- the effective configuration -----------------------------------------------------------


def _shown(value: Any) -> bool:
    return value is not None and not (isinstance(value, str | tuple | list | dict) and not value)


def _wire(value: Any, t: mi.Type) -> Any:
    """A default as the configuration writes it: camelCase objects (shown fields only),
    Go durations."""
    t, extra = _unwrap(t)
    if isinstance(t, mi.UnionType):
        options = [o for o in t.types if not isinstance(_unwrap(o)[0], mi.NoneType)]
        return _wire(value, options[0]) if len(options) == 1 else msgspec.to_builtins(value)
    if extra.get("duration"):
        return format_duration(value)
    if isinstance(value, PluginArgs):
        fields = _fields(type(value))
        return {
            key: _wire(getattr(value, f.name), f.type)
            for key, f in fields.items()
            if _shown(getattr(value, f.name))
        }
    if isinstance(t, _LISTS):
        return [_wire(v, t.item_type) for v in value]
    return msgspec.to_builtins(value)


def _with_defaults(cls: type[PluginArgs], out: dict[str, Any]) -> dict[str, Any]:
    for key, f in _fields(cls).items():
        value = out.get(key)
        if _unset(f, value):
            default = f.default if f.default_factory is msgspec.NODEFAULT else f.default_factory()
            if default is not msgspec.NODEFAULT and _shown(default):
                out[key] = _wire(default, f.type)
            continue
        t, _ = _unwrap(f.type)
        if isinstance(t, mi.UnionType):
            options = [o for o in t.types if not isinstance(_unwrap(o)[0], mi.NoneType)]
            t = _unwrap(options[0])[0] if len(options) == 1 else t
        sub = _args_struct(t)
        if sub is not None and isinstance(value, dict):
            out[key] = _with_defaults(sub, value)
        elif isinstance(t, _LISTS) and isinstance(value, list):
            item = _args_struct(t.item_type)
            if item is not None:
                out[key] = [_with_defaults(item, v) if isinstance(v, dict) else v for v in value]
    return out
