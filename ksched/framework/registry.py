"""Plugin registry: the built-in plugins plus setuptools entry points.

Third-party distributions register plugins under the ``ksched.plugins``
entry-point group (``Name = package.module:PluginClass``). The target is a plugin
class (its ``Args`` attribute, if any, parses the args) or a factory
``(args, handle) -> plugin``. An entry point that fails to import stops startup
with the distribution's name, never silently drops a plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from ..util.errors import KschedError
from .args import PluginArgsError
from .handle import Handle
from .interface import extension_points_of

__all__ = [
    "ENTRY_POINT_GROUP",
    "PluginArgsError",
    "PluginLoadError",
    "PluginSpec",
    "Registry",
    "parse_plugin_args",
]

ENTRY_POINT_GROUP = "ksched.plugins"

Factory = Callable[[Any, Handle], Any]


class PluginLoadError(KschedError, RuntimeError):
    """An entry point that could not be imported."""


@dataclass(slots=True)
class PluginSpec:
    name: str
    factory: Factory
    cls: type | None = None
    distribution: str = "ksched"
    points: list[str] = field(default_factory=list)

    @property
    def args_type(self) -> Any:
        return getattr(self.cls, "Args", None) if self.cls is not None else None


def parse_plugin_args(spec: PluginSpec, raw: dict[str, Any] | None) -> Any:
    """Turn pluginConfig args into the plugin's Args (``Args.parse(name, dict)``: the one
    decoder of ``PluginArgs``, or a plugin's own), else the dict."""
    args_type = spec.args_type
    data = dict(raw or {})
    if args_type is None:
        return data
    parse = getattr(args_type, "parse", None)
    if parse is None:
        return args_type(**data)
    return parse(spec.name, data)


def _spec_from_target(name: str, target: Any, distribution: str) -> PluginSpec:
    if isinstance(target, type):
        cls = target

        def factory(args: Any, handle: Handle, _cls: type = cls) -> Any:
            return _cls(args, handle)

        return PluginSpec(name, factory, cls, distribution, extension_points_of(cls))
    if callable(target):
        return PluginSpec(name, target, None, distribution, [])
    raise PluginLoadError(
        f"entry point {name} ({distribution}): {target!r} is neither a class nor a factory"
    )


class Registry:
    def __init__(self) -> None:
        self._specs: dict[str, PluginSpec] = {}

    def register(self, name: str, target: Any, distribution: str = "ksched") -> None:
        if name in self._specs:
            raise PluginLoadError(
                f"plugin {name!r} from {distribution} is already registered by "
                f"{self._specs[name].distribution}"
            )
        self._specs[name] = _spec_from_target(name, target, distribution)

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        for ep in metadata.entry_points(group=group):
            dist = ep.dist.name if ep.dist is not None else "?"
            try:
                target = ep.load()
            except Exception as e:  # the import itself is third-party code
                raise PluginLoadError(
                    f"plugin {ep.name} from distribution {dist} failed to load ({ep.value}): "
                    f"{type(e).__name__}: {e}"
                ) from e
            self.register(ep.name, target, dist)

    def get(self, name: str) -> PluginSpec | None:
        return self._specs.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[PluginSpec]:
        return iter(self._specs.values())

    def names(self) -> list[str]:
        return sorted(self._specs)
