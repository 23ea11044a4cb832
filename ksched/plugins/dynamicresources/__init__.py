"""DynamicResources: devices for ResourceClaims (DRA with structured parameters)."""

from .plugin import DynamicResources

__all__ = ["DynamicResources"]
