"""The deploy/ manifests as objects: rendered by ``kubectl kustomize`` or read file by file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

__all__ = [
    "DEPLOY",
    "ROOT",
    "Rule",
    "find",
    "kustomize",
    "resource_files",
    "rules_of",
]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
JSON = dict[str, Any]
# (apiGroup, resource[/subresource], verb, resourceName or "")
Rule = tuple[str, str, str, str]

_rendered: dict[Path, list[JSON]] = {}


def kustomize(path: Path) -> list[JSON]:
    """``kubectl kustomize path`` (offline); skips the test when kubectl is not installed."""
    path = path.resolve()
    if path not in _rendered:
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            pytest.skip("kubectl is not installed")
        r = subprocess.run(
            [kubectl, "kustomize", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert r.returncode == 0, f"kubectl kustomize {path}: {r.stderr}"
        _rendered[path] = [d for d in yaml.safe_load_all(r.stdout) if d]
    return _rendered[path]


def resource_files(directory: Path) -> list[Path]:
    """The plain manifest files a kustomization.yaml lists under ``resources``."""
    k = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return [directory / r for r in k.get("resources", []) if (directory / r).is_file()]


def load(path: Path) -> list[JSON]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def find(objs: list[JSON], kind: str, name: str | None = None) -> JSON:
    hits = [
        o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(hits) == 1, f"{len(hits)} {kind} {name or ''} in {[o['kind'] for o in objs]}"
    return hits[0]


def rules_of(role: JSON) -> set[Rule]:
    """A Role/ClusterRole's rules, one (group, resource, verb, resourceName) each."""
    out: set[Rule] = set()
    for rule in role.get("rules") or []:
        names = rule.get("resourceNames") or [""]
        for g in rule.get("apiGroups") or []:
            for r in rule.get("resources") or []:
                for v in rule.get("verbs") or []:
                    for n in names:
                        out.add((g, r, v, n))
    return out
