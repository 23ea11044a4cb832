"""YAML scalars as Kubernetes reads them (sigs.k8s.io/yaml, that is go-yaml v2).

PyYAML's YAML 1.1 types a few plain scalars otherwise: go-yaml reads ``y``, ``Y``, ``n``
and ``N`` as booleans, and dates (``2001-12-14``), base-60 numbers (``1:20``) and ``=`` as
strings. ``Loader`` reads them as kube-scheduler does; ``Dumper`` quotes a string that
go-yaml would read as something else, so what ksched writes kube-scheduler reads back.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["Dumper", "Loader"]

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_STRINGS_TO_GO = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}
# PyYAML's, without the base-60 forms.
_GO_INT = re.compile(
    r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"
)
_GO_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?"
    r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_YES_NO = re.compile(r"^(?:y|Y|n|N)$")

_Resolvers = dict[Any, list[tuple[str, re.Pattern[str]]]]


def _go_yaml(resolvers: _Resolvers) -> _Resolvers:
    out: _Resolvers = {}
    for first, pairs in resolvers.items():
        kept = [
            (tag, _GO_INT if tag == _INT else _GO_FLOAT if tag == _FLOAT else rx)
            for tag, rx in pairs
            if tag not in _STRINGS_TO_GO
        ]
        if kept:
            out[first] = kept
    for first in "yYnN":
        out.setdefault(first, []).append((_BOOL, _YES_NO))
    return out


class Loader(yaml.SafeLoader):
    yaml_implicit_resolvers = _go_yaml(yaml.SafeLoader.yaml_implicit_resolvers)
    bool_values = {**yaml.SafeLoader.bool_values, "y": True, "n": False}


class Dumper(yaml.SafeDumper):
    yaml_implicit_resolvers = _go_yaml(yaml.SafeDumper.yaml_implicit_resolvers)
