"""The shipped manifests: kube-scheduler's config is a valid KubeSchedulerConfiguration
whose extender points at the Service, and the extender's own config and kubeconfig load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ksched.config import load_config_data
from ksched.extender.client import ExtenderSet
from ksched.extender.server import ExtenderServer
from ksched.plugins import default_registry

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "extender"


def _docs() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((DEPLOY / "ksched-extender.yaml").read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs)  # one object of each kind
    return by_kind


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


# ---- issue 16: the profile serves only its plugins; availability and pod security ----------

SERVED = {"NodeResourcesFit", "InterPodAffinity", "PodTopologySpread"}


def test_the_profile_serves_only_its_own_plugins() -> None:
    """No kube-scheduler default runs twice: the extender's Filter and Score plugins are
    the three it names, and kube-scheduler's profile leaves their scores to it."""
    cm = _docs()["ConfigMap"]["data"]
    reg = default_registry()
    cfg, _ = load_config_data(yaml.safe_load(cm["config.yaml"]), "config.yaml", set(reg.names()))
    fw = ExtenderServer(cfg, reg, profile="ksched-extender").fw
    verbs = {p.name for p in (*fw.pre_filter_plugins, *fw.filter_plugins, *fw.score_plugins)}
    assert verbs == SERVED
    # the rest of the profile is what a profile must have, run by no extender verb
    assert set(fw.plugins) - SERVED == {"PrioritySort", "DefaultBinder"}
    data = yaml.safe_load((DEPLOY / "kube-scheduler-config.yaml").read_text())
    ks, _ = load_config_data(data, "kube-scheduler-config.yaml")
    [profile] = ks.profiles
    assert profile.scheduler_name == "default-scheduler"
    assert {p.name for p in profile.plugins.score.disabled} == {p.name for p in fw.score_plugins}


def test_deployment_survives_disruption_with_restricted_pods() -> None:
    """kube-scheduler waits for the extender (ignorable: false): two replicas, preferably
    on two nodes, a PodDisruptionBudget, surge-first rollouts; pods meet the restricted
    Pod Security Standard."""
    docs = _docs()
    dep, pdb = docs["Deployment"], docs["PodDisruptionBudget"]
    spec = dep["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["replicas"] >= 2
    assert spec["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    assert pdb["metadata"]["namespace"] == dep["metadata"]["namespace"]
    assert pdb["spec"]["minAvailable"] == 1 < spec["replicas"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    pod = spec["template"]["spec"]
    [term] = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()
    psc = pod["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] != 0
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID")
    for c in pod["containers"]:
        csc = c["securityContext"]
        assert csc["allowPrivilegeEscalation"] is False
        assert csc["capabilities"] == {"drop": ["ALL"]}
        assert csc["readOnlyRootFilesystem"] is True
    # the client certificates of the main port, plain HTTP probes on the health port
    args = pod["containers"][0]["args"]
    main = pod["containers"][0]
    health = next(p["containerPort"] for p in main["ports"] if p["name"] == "health")
    assert f"--health-port={health}" in args
    for probe, path in (
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ):
        assert main[probe]["httpGet"] == {"path": path, "port": "health"}, probe
    startup = main["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 60
    assert "--client-ca-file=/etc/ksched/tls/ca.crt" in args
    assert not any(a.startswith("--insecure") for a in args)
