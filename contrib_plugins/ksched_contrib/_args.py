"""Validation helpers for plugin args.

Every error is a ``PluginArgsError`` naming the plugin and the field, so a typo in
``pluginConfig`` stops start-up with one precise line instead of being ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ksched import PluginArgsError

__all__ = ["check_fields", "get_int", "get_optional_int", "get_str", "resolve"]


def check_fields(plugin: str, data: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Reject unknown keys: a misspelt field would otherwise silently keep its default."""
    known = list(allowed)
    for key in sorted(data):
        if key not in known:
            hint = ", ".join(known) if known else "none"
            raise PluginArgsError(plugin, str(key), f"unknown field (known fields: {hint})")


def _is_int(value: Any) -> bool:
    # YAML ``true`` decodes to a bool, which Python counts as an int; it is not one here.
    return isinstance(value, int) and not isinstance(value, bool)


def get_int(
    plugin: str, data: Mapping[str, Any], key: str, default: int, *, minimum: int | None = None
) -> int:
    value = data.get(key, default)
    if not _is_int(value):
        raise PluginArgsError(plugin, key, f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise PluginArgsError(plugin, key, f"must be at least {minimum}, got {value}")
    return int(value)


def get_optional_int(plugin: str, data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not _is_int(value):
        raise PluginArgsError(plugin, key, f"must be an integer or null, got {value!r}")
    return int(value)


def get_str(plugin: str, data: Mapping[str, Any], key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise PluginArgsError(plugin, key, f"must be a string, got {value!r}")
    return value


def resolve(args_type: Any, plugin: str, args: Any) -> Any:
    """The plugin's parsed Args whether it was built by the framework (already parsed),
    by hand with a dict, or with nothing (defaults)."""
    if isinstance(args, args_type):
        return args
    if args is None:
        return args_type.parse(plugin, {})
    if isinstance(args, Mapping):
        return args_type.parse(plugin, dict(args))
    raise PluginArgsError(plugin, "", f"expected a mapping, got {type(args).__name__}")
