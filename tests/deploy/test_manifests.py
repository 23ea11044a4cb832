"""deploy/: the kustomize base and overlays render, validate against the Kubernetes schemas
offline, and fit together (ports, probes, labels, config, leader election, security)."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import build_parser, main

from ._manifests import DEPLOY, JSON, ROOT, find, kustomize, load, resource_files, rules_of
from ._schema import VALIDATORS

TARGETS = {
    "base": DEPLOY,
    "contrib": DEPLOY / "overlays" / "contrib",
    "extender": DEPLOY / "overlays" / "extender",
    "shadow": DEPLOY / "overlays" / "shadow",
}


def _validate_all(objs: list[JSON]) -> list[str]:
    return [f"[{name}] {e}" for name, check in VALIDATORS.items() for o in objs for e in check(o)]


# ---- schemas --------------------------------------------------------------------------------


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_renders_and_validates(target: str) -> None:
    objs = kustomize(TARGETS[target])
    assert objs
    assert _validate_all(objs) == []


@pytest.mark.parametrize(
    "path",
    [
        *resource_files(DEPLOY / "base"),
        DEPLOY / "overlays" / "contrib" / "podgroups-rbac.yaml",
        DEPLOY / "extender" / "bind-rbac.yaml",
        ROOT / "systemd" / "rbac.yaml",
    ],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_manifest_files_validate_without_kubectl(path: Path) -> None:
    assert _validate_all(load(path)) == []


def _container(objs: list[JSON]) -> JSON:
    c: JSON = find(objs, "Deployment", "ksched")["spec"]["template"]["spec"]["containers"][0]
    return c


def _typo(key: str, wrong: str, get: Callable[[list[JSON]], JSON]) -> Callable[[list[JSON]], None]:
    def mutate(objs: list[JSON]) -> None:
        d = get(objs)
        d[wrong] = d.pop(key)

    return mutate


# mistake -> (how to make it, a word every error about it must contain)
MUTATIONS: dict[str, tuple[Callable[[list[JSON]], None], str]] = {
    "typo readinesProbe": (_typo("readinessProbe", "readinesProbe", _container), "readinesProbe"),
    "typo runAsNonroot": (
        _typo("runAsNonRoot", "runAsNonroot", lambda o: _container(o)["securityContext"]),
        "runAsNonroot",
    ),
    "typo resourceName": (
        _typo("resourceNames", "resourceName", lambda o: find(o, "Role")["rules"][1]),
        "resourceName",
    ),
    "typo minAvailible": (
        _typo("minAvailable", "minAvailible", lambda o: find(o, "PodDisruptionBudget")["spec"]),
        "minAvailible",
    ),
    "replicas as a string": (
        lambda o: find(o, "Deployment")["spec"].update(replicas="2"),
        "replicas",
    ),
    "container without a name": (lambda o: _container(o).pop("name"), "name"),
}


@pytest.mark.parametrize("validator", sorted(VALIDATORS))
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_validation_catches_mistakes(validator: str, mutation: str) -> None:
    objs = copy.deepcopy(kustomize(DEPLOY))
    mutate, word = MUTATIONS[mutation]
    mutate(objs)
    errors = [e for o in objs for e in VALIDATORS[validator](o)]
    assert errors, f"{validator} accepted: {mutation}"
    assert all(word in e for e in errors), errors


def test_the_strict_json_schemas_are_used_when_installed() -> None:
    """kubernetes-validate (PyPI) is optional; the client-model validator always runs."""
    assert "models" in VALIDATORS
    if "jsonschema" not in VALIDATORS:
        pytest.skip("kubernetes-validate is not installed: only the client-model validator ran")


# ---- the base -------------------------------------------------------------------------------


def _run_args(objs: list[JSON]) -> Any:
    c = _container(objs)
    assert c.get("command") is None  # the image's ENTRYPOINT ["ksched"]
    return build_parser().parse_args(c["args"])


def test_deployment_runs_ksched_with_leader_election_and_probes() -> None:
    objs = kustomize(DEPLOY)
    dep = find(objs, "Deployment", "ksched")
    pod = dep["spec"]["template"]["spec"]
    c = _container(objs)
    args = _run_args(objs)
    assert args.command == "run" and args.leader_elect is True
    assert dep["spec"]["replicas"] == 2
    assert args.bind_address == "0.0.0.0"  # the kubelet probes the pod IP
    assert args.port is None  # no plain-HTTP port: only the secure one, as kube-scheduler
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"https": args.secure_port} and args.secure_port == 10259
    always = args.authorization_always_allow_paths.split(",")
    probes = (
        ("startupProbe", "/livez"),
        ("livenessProbe", "/livez"),
        ("readinessProbe", "/readyz"),
    )
    for probe, path in probes:
        get = c[probe]["httpGet"]
        assert get["path"] == path and ports[get["port"]] == args.secure_port
        assert get["scheme"] == "HTTPS"  # as the seeds' kube-scheduler manifests probe it
        assert path in always  # the kubelet's probes carry no credentials
    # the startup probe holds liveness back for a slow start: no initial delay needed
    startup = c["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 60
    assert "initialDelaySeconds" not in c["livenessProbe"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod.get("schedulerName") in (None, "default-scheduler")  # never schedules itself
    assert c["resources"]["requests"].keys() == {"cpu", "memory"}
    # config: the ConfigMap is mounted where --config points
    mount = next(m for m in c["volumeMounts"] if m["name"] == "config")
    assert Path(args.config).parent == Path(mount["mountPath"]) and mount["readOnly"]
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    cm = find(objs, "ConfigMap")
    assert volume["configMap"]["name"] == cm["metadata"]["name"]
    assert Path(args.config).name in cm["data"]
    # 30 s for in-flight bindings + 5 s for queued status writes fit in the grace period
    assert pod["terminationGracePeriodSeconds"] >= 35


def test_pod_security() -> None:
    objs = kustomize(DEPLOY)
    pod = find(objs, "Deployment", "ksched")["spec"]["template"]["spec"]
    psc, csc = pod["securityContext"], _container(objs)["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] != 0
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["readOnlyRootFilesystem"] is True
    assert csc["capabilities"] == {"drop": ["ALL"]}
    assert not pod.get("hostNetwork") and not pod.get("hostPID")
    ns = find(objs, "Namespace", "ksched")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    # the UID matches the image's user (Dockerfile)
    assert f"--uid {psc['runAsUser']}" in (ROOT / "Dockerfile").read_text()


def test_everything_namespaced_lives_in_ksched() -> None:
    objs = kustomize(DEPLOY)
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for o in objs:
        ns = o["metadata"].get("namespace")
        assert (ns is None) == (o["kind"] in cluster_scoped), o["metadata"]
        assert ns in (None, "ksched")


def test_pdb_and_service_select_the_scheduler_pods() -> None:
    objs = kustomize(DEPLOY)
    dep = find(objs, "Deployment", "ksched")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    pdb = find(objs, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["minAvailable"] == 1 < dep["spec"]["replicas"]
    svc = find(objs, "Service")
    assert svc["spec"]["selector"].items() <= labels.items()
    port = svc["spec"]["ports"][0]
    assert port["targetPort"] in {p["name"] for p in _container(objs)["ports"]}
    assert port["name"].endswith("metrics")


def test_service_account_is_bound_to_both_roles() -> None:
    objs = kustomize(DEPLOY)
    sa = find(objs, "ServiceAccount")
    pod = find(objs, "Deployment", "ksched")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    me = {
        "kind": "ServiceAccount",
        "name": sa["metadata"]["name"],
        "namespace": sa["metadata"]["namespace"],
    }
    for binding, role, name in (
        ("ClusterRoleBinding", "ClusterRole", "ksched"),
        ("RoleBinding", "Role", "ksched-leader-election"),
        # the secure port's TokenReviews and SubjectAccessReviews
        ("ClusterRoleBinding", "ClusterRole", "system:auth-delegator"),
    ):
        [b] = [o for o in objs if o["kind"] == binding and o["roleRef"]["name"] == name]
        assert b["subjects"] == [me]
        assert b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": name}
        if not name.startswith("system:"):
            find(objs, role, name)
    bound = {o["roleRef"]["name"] for o in objs if o["kind"].endswith("Binding")}
    assert "ksched-metrics-reader" not in bound  # for the cluster's Prometheus to bind


def test_metrics_reader_role_grants_get_metrics_only() -> None:
    role = find(kustomize(DEPLOY), "ClusterRole", "ksched-metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_network_policy_admits_only_the_secure_port() -> None:
    objs = kustomize(DEPLOY)
    np = find(objs, "NetworkPolicy", "ksched")
    labels = find(objs, "Deployment", "ksched")["spec"]["template"]["metadata"]["labels"]
    assert np["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert np["spec"]["policyTypes"] == ["Ingress"]  # egress (the API server) unrestricted
    [rule] = np["spec"]["ingress"]
    assert rule == {"ports": [{"port": "https", "protocol": "TCP"}]}
    assert {p["name"] for p in _container(objs)["ports"]} == {"https"}
    svc = find(objs, "Service")
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == ["https"]


def _write_config(objs: list[JSON], tmp_path: Path) -> tuple[Path, JSON]:
    cm = find(objs, "ConfigMap")
    path = tmp_path / "config.yaml"
    path.write_text(cm["data"]["config.yaml"])
    return path, yaml.safe_load(cm["data"]["config.yaml"])


def test_base_config_validates_and_matches_the_lease_role(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objs = kustomize(DEPLOY)
    path, cfg = _write_config(objs, tmp_path)
    assert main(["config", "validate", str(path)]) == 0, capsys.readouterr().err
    assert [p["schedulerName"] for p in cfg["profiles"]] == ["ksched"]
    le = cfg["leaderElection"]
    assert le["leaderElect"] is True
    role = find(objs, "Role")
    assert role["metadata"]["namespace"] == le["resourceNamespace"] == "ksched"
    assert {r for r in rules_of(role) if r[3]} == {
        ("coordination.k8s.io", "leases", v, le["resourceName"]) for v in ("get", "update")
    }


# ---- overlays -------------------------------------------------------------------------------


def test_contrib_overlay(contrib: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objs = kustomize(TARGETS["contrib"])
    path, cfg = _write_config(objs, tmp_path)
    assert main(["config", "validate", str(path)]) == 0, capsys.readouterr().err
    enabled = {
        p["name"]
        for prof in cfg["profiles"]
        for point in prof["plugins"].values()
        for p in point.get("enabled", [])
    }
    assert "Coscheduling" in enabled
    assert _container(objs)["image"].endswith("-contrib")
    assert "--target ksched-contrib" in (ROOT / "Dockerfile").read_text()
    podgroups = rules_of(find(objs, "ClusterRole", "ksched-podgroups"))
    assert podgroups == {("scheduling.x-k8s.io", "podgroups", v, "") for v in ("list", "watch")}
    b = find(objs, "ClusterRoleBinding", "ksched-podgroups")
    assert b["subjects"][0]["name"] == find(objs, "ServiceAccount")["metadata"]["name"]
    # everything else is the base's
    base = {
        (o["kind"], o["metadata"]["name"]) for o in kustomize(DEPLOY) if o["kind"] != "ConfigMap"
    }
    assert base <= {(o["kind"], o["metadata"]["name"]) for o in objs}


def test_contrib_config_without_the_distribution_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base image does not have ksched-contrib: the overlay's config needs its image."""
    from importlib import metadata

    try:
        metadata.distribution("ksched-contrib")
    except metadata.PackageNotFoundError:
        pass
    else:
        pytest.skip("ksched-contrib is installed in this environment")
    path, _ = _write_config(kustomize(TARGETS["contrib"]), tmp_path)
    assert main(["config", "validate", str(path)]) == 2
    assert "Coscheduling" in capsys.readouterr().err


def test_extender_overlay_reuses_deploy_extender() -> None:
    overlay = TARGETS["extender"]
    k = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    assert k["resources"] == ["../../extender"]
    assert sorted(p.name for p in overlay.iterdir()) == ["kustomization.yaml"]
    objs = kustomize(overlay)
    plain = kustomize(DEPLOY / "extender")
    assert {(o["kind"], o["metadata"]["name"]) for o in objs} == {
        (o["kind"], o["metadata"]["name"]) for o in plain
    }
    c = find(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == _container(kustomize(DEPLOY))["image"]
    assert build_parser().parse_args(c["args"]).command == "extender"


def test_readme_commands_name_real_kustomizations() -> None:
    text = (DEPLOY / "README.md").read_text()
    dirs = re.findall(r"kubectl (?:apply -k|kustomize) (deploy[\w/.-]*)", text)
    assert len(dirs) >= 3
    for d in dirs:
        assert (ROOT / d / "kustomization.yaml").is_file(), d


def test_readme_customizing_overlay_renders(tmp_path: Path) -> None:
    text = (DEPLOY / "README.md").read_text()
    block = re.search(r"```yaml\n(# my-ksched/kustomization.yaml\n.*?)```", text, re.S)
    assert block is not None
    overlay = tmp_path / "my-ksched"
    overlay.mkdir()
    base = os.path.relpath(DEPLOY / "base", overlay)
    (overlay / "kustomization.yaml").write_text(
        block.group(1).replace("../ksched/deploy/base", base)
    )
    custom = yaml.safe_load((DEPLOY / "base" / "config.yaml").read_text())
    custom["clientConnection"]["qps"] = 20
    (overlay / "config.yaml").write_text(yaml.safe_dump(custom))
    objs = kustomize(overlay)
    assert _validate_all(objs) == []
    assert _container(objs)["image"] == "registry.example.com/ksched:0.1.0"
    assert yaml.safe_load(find(objs, "ConfigMap")["data"]["config.yaml"]) == custom


def test_image_tags_follow_the_project_version() -> None:
    import tomllib

    with (ROOT / "pyproject.toml").open("rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert _container(kustomize(DEPLOY))["image"] == f"ksched:{version}"
    assert _container(kustomize(TARGETS["contrib"]))["image"] == f"ksched:{version}-contrib"
