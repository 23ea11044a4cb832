"""deploy/kubeadm/: ksched as a kubeadm static pod. Offline: the manifest validates and is
shaped like kubeadm's kube-scheduler.yaml. Against a real API server (each version CI
runs): it passes server-side validation as a Pod, and its exact command line (the paths it
mounts mapped to where the test put the files; ksched at that kube-scheduler's emulated
version) schedules a pod with a kubeadm-shaped ``scheduler.conf`` — a client certificate of
``system:kube-scheduler`` signed by the cluster CA, no token — beside kube-scheduler (its
own Lease) and in place of it (kube-scheduler's Lease: never both)."""

from __future__ import annotations

import base64
import contextlib
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import build_parser, main
from ksched.testing import make_node, make_pod
from ksched.testing.controlplane import ControlPlane, KubeScheduler

from ._manifests import DEPLOY, JSON, load
from ._schema import VALIDATORS

KUBEADM = DEPLOY / "kubeadm"
MANIFEST = KUBEADM / "ksched.yaml"
SCHEDULER = "system:kube-scheduler"
#: kube-scheduler as kubeadm runs it: leader election on kube-system/kube-scheduler
LEADER_ELECTING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": True},
}


def static_pod() -> JSON:
    (pod,) = load(MANIFEST)
    assert pod["kind"] == "Pod"
    return pod


def container(pod: JSON) -> JSON:
    (c,) = pod["spec"]["containers"]
    return dict(c)


def run_args(pod: JSON) -> Any:
    command = container(pod)["command"]
    assert command[0] == "ksched"
    return build_parser().parse_args(command[1:])


# ---- offline ----------------------------------------------------------------------------------


def test_manifest_validates_offline() -> None:
    pod = static_pod()
    assert [f"[{name}] {e}" for name, check in VALIDATORS.items() for e in check(pod)] == []


def test_shaped_like_kubeadms_kube_scheduler() -> None:
    pod = static_pod()
    spec, c, args = pod["spec"], container(pod), run_args(pod)
    assert pod["metadata"]["namespace"] == "kube-system"
    assert pod["metadata"]["labels"]["tier"] == "control-plane"
    assert spec["hostNetwork"] is True
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert args.command == "run" and args.leader_elect is True
    # kube-scheduler's credentials, mounted read-only from the host
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    conf = mounts[args.kubeconfig]
    assert args.kubeconfig == "/etc/kubernetes/scheduler.conf" and conf["readOnly"] is True
    assert volumes[conf["name"]]["hostPath"]["path"] == "/etc/kubernetes/scheduler.conf"
    config_dir = mounts[str(Path(args.config).parent)]
    assert config_dir["readOnly"] is True and "hostPath" in volumes[config_dir["name"]]
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]  # the read-only root's scratch
    # HTTPS probes on its own secure port, on loopback where it listens
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert args.secure_port == 10269 and args.bind_address == "127.0.0.1"
    always = args.authorization_always_allow_paths.split(",")
    for probe, path in (
        ("startupProbe", "/livez"),
        ("livenessProbe", "/livez"),
        ("readinessProbe", "/readyz"),
    ):
        get = c[probe]["httpGet"]
        assert get["scheme"] == "HTTPS" and get["host"] == args.bind_address, probe
        assert ports[get["port"]] == args.secure_port and get["path"] == path, probe
        assert path in always  # the kubelet's probes carry no credentials
    startup = c["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 240  # kubeadm's 4 min
    # kube-scheduler's CPU request, no limits; root without capabilities (scheduler.conf is
    # root:root 0600)
    assert c["resources"]["requests"]["cpu"] == "100m" and "limits" not in c["resources"]
    sc = c["securityContext"]
    assert sc["runAsUser"] == 0 and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["readOnlyRootFilesystem"] is True
    assert spec["terminationGracePeriodSeconds"] >= 35  # in-flight bindings, status writes


@pytest.mark.parametrize("name", ["config.yaml", "config-replace.yaml"])
def test_configs_validate(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "validate", str(KUBEADM / name)]) == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    le = cfg["leaderElection"]
    assert le["leaderElect"] is True and le["resourceNamespace"] == "kube-system"
    schedulers = [p["schedulerName"] for p in cfg["profiles"]]
    if name == "config.yaml":  # beside kube-scheduler: its own name and Lease
        assert (schedulers, le["resourceName"]) == (["ksched"], "ksched")
    else:  # in its place: kube-scheduler's name and Lease
        assert (schedulers, le["resourceName"]) == (["default-scheduler"], "kube-scheduler")


# ---- against the real control plane -----------------------------------------------------------


@pytest.fixture(scope="module")
def cp() -> Iterator[ControlPlane]:
    """A control plane of its own: the static pod's Leases and port are fixed names."""
    with ControlPlane() as plane:
        yield plane


@pytest.mark.kube
def test_server_side_validates_as_a_pod(cp: ControlPlane) -> None:
    out = cp.kubectl("apply", "--dry-run=server", "-f", str(MANIFEST), "-o", "yaml")
    pod = yaml.safe_load(out.stdout)
    assert pod["kind"] == "Pod" and pod["metadata"]["namespace"] == "kube-system"
    assert pod["spec"]["priority"] == 2000001000  # system-node-critical, by admission


def scheduler_conf(cp: ControlPlane, path: Path) -> Path:
    """kubeadm's scheduler.conf for this cluster: a client certificate, no token."""
    cp.certificate_kubeconfig(SCHEDULER, path=path)
    conf = yaml.safe_load(path.read_text())
    (user,) = conf["users"]
    assert set(user["user"]) == {"client-certificate-data", "client-key-data"}
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(base64.b64decode(user["user"]["client-certificate-data"]))
    ca = x509.load_pem_x509_certificate(cp.client_ca_file.read_bytes())
    cert.verify_directly_issued_by(ca)
    assert cert.subject.rfc4514_string() == f"CN={SCHEDULER}"
    return path


@contextlib.contextmanager
def static_pod_process(cp: ControlPlane, tmp: Path, config: Path) -> Iterator[str]:
    """The manifest's command line, run here: each path under a mountPath is the test's file
    for that volume. Yields the secure URL its probes use; stops it with SIGTERM (as the
    kubelet does) and expects a clean exit."""
    pod = static_pod()
    c = container(pod)
    host = {
        "/etc/kubernetes/scheduler.conf": scheduler_conf(cp, tmp / "scheduler.conf"),
        "/etc/ksched": tmp / "etc-ksched",
        "/tmp": tmp / "scratch",
    }
    assert set(host) == {m["mountPath"] for m in c["volumeMounts"]}
    host["/etc/ksched"].mkdir()
    host["/tmp"].mkdir()
    shutil.copy(config, host["/etc/ksched"] / "config.yaml")

    def mapped(arg: str) -> str:
        flag, eq, value = arg.partition("=")
        for inside, outside in host.items():
            if value == inside or value.startswith(inside + "/"):
                return f"{flag}{eq}{outside}{value[len(inside) :]}"
        return arg

    ksched = Path(sys.executable).with_name("ksched")
    # the manifest's command, at the emulated version of this control plane's kube-scheduler
    argv = [str(ksched), *(mapped(a) for a in c["command"][1:])]
    argv.append(f"--emulated-version={cp.emulated_version}")
    args = run_args(pod)
    with socket.socket() as s:
        s.settimeout(1)
        if s.connect_ex(("127.0.0.1", args.secure_port)) == 0:
            pytest.fail(f"port {args.secure_port} is in use: the static pod's port is fixed")
    log = (tmp / "ksched.log").open("w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    url = f"https://{args.bind_address}:{args.secure_port}"
    try:
        ready = url + c["readinessProbe"]["httpGet"]["path"]
        wait(lambda: probe(ready) == 200, tmp, "ready", 60, proc=proc)
        assert probe(url + c["livenessProbe"]["httpGet"]["path"]) == 200
        yield url
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(pod["spec"]["terminationGracePeriodSeconds"]) == 0, log_of(tmp)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()


def probe(url: str) -> int:
    """An HTTPS GET as the kubelet's probe makes it: no credentials, no verification."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=5, context=ctx) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


def log_of(tmp: Path) -> str:
    return (tmp / "ksched.log").read_text(errors="replace")[-3000:]


def wait(
    cond: Any,
    tmp: Path,
    what: str,
    timeout: float = 30,
    proc: subprocess.Popen[bytes] | None = None,
    ks: KubeScheduler | None = None,
) -> None:
    """Poll ``cond``; on failure show ksched's log (and kube-scheduler's)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None:
            assert proc.poll() is None, f"ksched exited {proc.returncode}:\n{log_of(tmp)}"
        if time.monotonic() > deadline:
            theirs = f"\nkube-scheduler:\n{ks.log()[-3000:]}" if ks is not None else ""
            pytest.fail(f"timed out after {timeout}s waiting for {what}\n{log_of(tmp)}{theirs}")
        time.sleep(0.1)


def bound_to(cp: ControlPlane, name: str) -> str:
    status, pod = cp.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    assert status == 200, pod
    return str(pod["spec"].get("nodeName") or "")


def holder(cp: ControlPlane, lease: str) -> str:
    status, obj = cp.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}"
    )
    return str(obj["spec"].get("holderIdentity") or "") if status == 200 else ""


@pytest.mark.kube
def test_beside_kube_scheduler_it_schedules_with_a_kubeadm_scheduler_conf(
    cp: ControlPlane, tmp_path: Path
) -> None:
    cp.ok("POST", "/api/v1/nodes", make_node("kubeadm-beside-n1"))
    with static_pod_process(cp, tmp_path, KUBEADM / "config.yaml") as url:
        pod = make_pod("beside", scheduler_name="ksched", cpu="100m")
        cp.ok("POST", "/api/v1/namespaces/default/pods", pod)
        wait(lambda: bound_to(cp, "beside") == "kubeadm-beside-n1", tmp_path, "beside bound")
        assert holder(cp, "ksched")  # its own Lease, beside kube-scheduler's
        assert probe(url + "/metrics") == 403  # anonymous: only the probe paths
    assert not holder(cp, "ksched")  # released on SIGTERM


@pytest.mark.kube
def test_in_place_of_kube_scheduler_it_waits_for_its_lease(
    cp: ControlPlane, tmp_path: Path
) -> None:
    """config-replace.yaml: kube-scheduler's name and Lease. While a kube-scheduler holds the
    Lease (a node not switched yet), ksched only waits; once kube-scheduler is gone (moved out
    of the manifests), ksched takes the Lease over and schedules default-scheduler's pods;
    rolled back, kube-scheduler takes the Lease ksched released and schedules again."""
    cp.ok("POST", "/api/v1/nodes", make_node("kubeadm-replace-n1"))

    def create(name: str) -> None:
        cp.ok("POST", "/api/v1/namespaces/default/pods", make_pod(name, cpu="100m"))

    def lease() -> str:
        return holder(cp, "kube-scheduler")

    ks = cp.kube_scheduler(LEADER_ELECTING)
    ks.start()
    try:
        wait(lambda: lease(), tmp_path, "kube-scheduler's Lease", ks=ks)
        kube = lease()
        with static_pod_process(cp, tmp_path, KUBEADM / "config-replace.yaml"):
            create("by-kube")
            wait(lambda: bound_to(cp, "by-kube"), tmp_path, "by-kube bound", ks=ks)
            time.sleep(3)  # a retry period and more: ksched does not take a held Lease
            assert lease() == kube
            ks.stop()  # kube-scheduler.yaml moved out of /etc/kubernetes/manifests
            # kube-scheduler releases the Lease as it stops; ksched takes it and schedules
            wait(lambda: lease() not in ("", kube), tmp_path, "ksched's turn", 40)
            create("by-ksched")
            wait(lambda: bound_to(cp, "by-ksched"), tmp_path, "by-ksched bound")
        # roll back: ksched released the Lease as it stopped; a kube-scheduler takes it
        assert lease() == ""
        ks = cp.kube_scheduler(LEADER_ELECTING, name="kube-scheduler-back")
        ks.start()
        wait(lambda: lease() not in ("", kube), tmp_path, "the Lease back", ks=ks)
        create("rolled-back")
        wait(lambda: bound_to(cp, "rolled-back"), tmp_path, "rolled-back bound", ks=ks)
    finally:
        ks.stop()
