"""Offline validation of Kubernetes manifests against the API's schemas.

Two independent validators, both working without a cluster or network:

* ``models``: the OpenAPI-generated models of the official ``kubernetes`` Python client
  (a test dependency). Every field of every object is looked up in its model's
  ``attribute_map`` (an unknown field — a typo — is an error, which the client's own
  deserializer would silently drop), primitive types are checked, and the objects are then
  deserialized with client-side validation, which rejects missing required fields.
* ``jsonschema``: the strict JSON schemas bundled with ``kubernetes-validate`` (PyPI), when
  it is installed: ``additionalProperties: false`` everywhere, enums, required fields.

``validate(obj)`` returns a list of ``path: problem`` strings (empty when valid).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

__all__ = ["VALIDATORS", "validate_jsonschema", "validate_models"]

# Kinds the deploy/ manifests use, with their apiVersion (the models do not encode groups).
API_VERSIONS = {
    "Namespace": "v1",
    "Pod": "v1",
    "ServiceAccount": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Service": "v1",
    "Deployment": "apps/v1",
    "PodDisruptionBudget": "policy/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "Role": "rbac.authorization.k8s.io/v1",
    "RoleBinding": "rbac.authorization.k8s.io/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
}

_PRIMITIVES: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "object": lambda v: True,  # IntOrString, RawExtension, ...
    "datetime": lambda v: isinstance(v, str),
    "date": lambda v: isinstance(v, str),
    "bytes": lambda v: isinstance(v, str),  # base64 in YAML/JSON
}


def _model_name(api_version: str, kind: str) -> str:
    version = api_version.rsplit("/", 1)[-1]
    return version[:1].upper() + version[1:] + kind


def _walk(value: Any, type_name: str, path: str, errors: list[str]) -> None:
    from kubernetes import client

    if value is None:
        return
    if type_name.startswith(("List[", "list[")):
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            _walk(item, type_name[5:-1], f"{path}[{i}]", errors)
        return
    if type_name.startswith(("Dict[", "dict(")):  # Dict[str, X] (older clients: dict(str, X))
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map, got {type(value).__name__}")
            return
        inner = type_name[5:-1].split(", ", 1)[1]
        for k, v in value.items():
            _walk(v, inner, f"{path}.{k}", errors)
        return
    check = _PRIMITIVES.get(type_name)
    if check is not None:
        if not check(value):
            errors.append(f"{path}: expected {type_name}, got {value!r}")
        return
    cls = getattr(client, type_name, None)
    if cls is None:
        errors.append(f"{path}: no model {type_name}")
        return
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object ({type_name}), got {value!r}")
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for key, v in value.items():
        attr = by_json.get(key)
        if attr is None:
            errors.append(f"{path}.{key}: unknown field of {type_name}")
            continue
        _walk(v, cls.openapi_types[attr], f"{path}.{key}", errors)


def validate_models(obj: dict[str, Any]) -> list[str]:
    from kubernetes import client

    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return ["apiVersion and kind are required"]
    expected = API_VERSIONS.get(kind)
    if expected is None:
        return [f"{kind}: not a kind the deploy manifests are expected to use"]
    if api_version != expected:
        return [f"{kind}: apiVersion {api_version!r}, the API serves {expected!r}"]
    name = _model_name(api_version, kind)
    errors: list[str] = []
    _walk(obj, name, kind, errors)
    if errors:
        return errors
    try:  # required fields and enum checks, as the client's deserializer does them
        client.ApiClient()._ApiClient__deserialize(obj, name)  # type: ignore[attr-defined]
    except (ValueError, TypeError) as e:
        return [f"{kind}: {e}"]
    return []


def validate_jsonschema(obj: dict[str, Any]) -> list[str]:
    import kubernetes_validate  # type: ignore[import-untyped,unused-ignore]

    try:
        kubernetes_validate.validate(obj, kubernetes_validate.latest_version(), strict=True)
    except kubernetes_validate.ValidationError as e:  # a jsonschema.ValidationError
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
        return [f"{obj.get('kind')}{where}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"{obj.get('kind')}: no schema: {e}"]
    return []


VALIDATORS: dict[str, Callable[[dict[str, Any]], list[str]]] = {"models": validate_models}
if importlib.util.find_spec("kubernetes_validate") is not None:
    VALIDATORS["jsonschema"] = validate_jsonschema
