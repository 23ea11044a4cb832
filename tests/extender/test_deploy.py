"""The shipped manifests: kube-scheduler's config is a valid KubeSchedulerConfiguration
whose extender points at the Service, and the extender's own config and kubeconfig load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ksched.config import load_config_data
from ksched.extender.client import ExtenderSet
from ksched.extender.server import ExtenderServer
from ksched.framework.registry import default_registry

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "extender"


def _docs() -> dict[str, dict[str, Any]]:
    docs = yaml.safe_load_all((DEPLOY / "ksched-extender.yaml").read_text())
    return {d["kind"]: d for d in docs}


def test_kube_scheduler_config_points_at_the_service() -> None:
    data = yaml.safe_load((DEPLOY / "kube-scheduler-config.yaml").read_text())
    cfg, _ = load_config_data(data, "kube-scheduler-config.yaml")
    [ext] = cfg.extenders
    docs = _docs()
    svc, dep = docs["Service"], docs["Deployment"]
    host = f"{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc"
    port = next(p["port"] for p in svc["spec"]["ports"] if p["name"] == "https")
    assert ext.url_prefix == f"https://{host}:{port}"
    assert ext.tls_config is not None and ext.tls_config.server_name == host
    assert (ext.filter_verb, ext.prioritize_verb, ext.preempt_verb) == (
        "filter",
        "prioritize",
        "preempt",
    )
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--port=8888" in args and any(a.startswith("--kubeconfig=") for a in args)
    assert ext.node_cache_capable  # the extender keeps an informer cache


def test_the_served_profile_builds() -> None:
    cm = _docs()["ConfigMap"]["data"]
    reg = default_registry()
    cfg, _ = load_config_data(yaml.safe_load(cm["config.yaml"]), "config.yaml", set(reg.names()))
    server = ExtenderServer(cfg, reg, profile="ksched-extender")
    assert server.fw.filter_plugins and server.fw.score_plugins
    kubeconfig = yaml.safe_load(cm["kubeconfig"])
    assert kubeconfig["users"][0]["user"]["tokenFile"].endswith("serviceaccount/token")
    assert len(ExtenderSet.from_config([])) == 0
