"""ksched.testing.controlplane: the build is cached and versioned, the control plane comes
up in one command, explains its failures, and never leaves a process behind."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ksched.testing.controlplane import (
    ASSETS_ENV,
    BINARIES,
    BuildError,
    ControlPlane,
    ControlPlaneError,
    build,
    find_assets,
)
from ksched.testing.controlplane import _build as build_mod

pytestmark = pytest.mark.kube


def _processes_mentioning(text: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", text], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def test_binaries_report_the_pinned_version() -> None:
    assets = build()  # built (or found) once per machine
    for name in ("kube-apiserver", "kube-scheduler", "kube-controller-manager"):
        out = subprocess.run(
            [str(assets.path(name)), "--version"], capture_output=True, text=True
        ).stdout
        assert out.strip() == f"Kubernetes {assets.version}", (name, out)
    kubectl = subprocess.run(
        [str(assets.path("kubectl")), "version", "--client"], capture_output=True, text=True
    ).stdout
    assert f"Client Version: {assets.version}" in kubectl
    etcd = subprocess.run([str(assets.path("etcd")), "--version"], capture_output=True, text=True)
    assert etcd.stdout.startswith("etcd Version: 3.")


def test_a_second_build_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    first = build()
    # without Go at all: a second run must not need it
    monkeypatch.setattr(build_mod.shutil, "which", lambda _name: None)
    t0 = time.monotonic()
    assert build() == first
    assert time.monotonic() - t0 < 1.0
    with pytest.raises(BuildError, match=r"needs Go >= 1\.26 on PATH"):
        build(force=True)


def test_the_assets_variable_names_ready_binaries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ready = build().directory
    monkeypatch.setenv(ASSETS_ENV, str(ready))
    found = find_assets()
    assert found is not None and found.directory == ready
    (tmp_path / "etcd").write_text("")  # not executable
    (tmp_path / "kubectl").symlink_to(ready / "kubectl")
    monkeypatch.setenv(ASSETS_ENV, str(tmp_path))
    missing = "kube-apiserver, kube-scheduler, kube-controller-manager, etcd"
    with pytest.raises(BuildError, match=rf"{ASSETS_ENV}=.*: missing executables {missing}$"):
        find_assets()
    assert set(BINARIES) == {
        "etcd",
        "kube-apiserver",
        "kube-scheduler",
        "kube-controller-manager",
        "kubectl",
    }


def test_a_failing_component_is_named_with_its_log_and_nothing_stays(tmp_path: Path) -> None:
    with pytest.raises(ControlPlaneError) as err:
        ControlPlane(workdir=tmp_path, apiserver_args=["--no-such-flag"]).start()
    msg = str(err.value)
    assert msg.startswith("kube-apiserver: died before ready (exited with 1;")
    assert "unknown flag: --no-such-flag" in msg
    assert _processes_mentioning(str(tmp_path)) == []


def test_up_prints_every_address_and_a_kubectl_that_runs_then_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    """``up`` with every optional component: each printed address answers, the printed
    ``try:`` line runs as it stands and the ``export PATH=`` line puts kubectl on a PATH
    without it (the build's directory is on nobody's PATH); SIGTERM stops everything."""
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ksched.testing.controlplane",
            "up",
            "--with-scheduler",
            "--with-controller-manager",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert p.stdout is not None
        lines = []
        for line in p.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("try: "):
                break
        text = "\n".join(lines)
        assert "control plane up in" in text, text
        fields = dict(x.split(":", 1) for x in lines[1:] if not x.startswith(("export", "try")))
        fields = {k: v.strip() for k, v in fields.items()}
        assert set(fields) >= {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "admin kubeconfig",
            "kube-scheduler kubeconfig",
            "kubectl",
        }, text
        kubectl = str(build().path("kubectl"))
        assert fields["kubectl"] == kubectl
        # ksched beside it emulates the release that was built
        assert fields["ksched"] == (
            f"ksched run --kubeconfig {fields['kube-scheduler kubeconfig']} "
            f"--emulated-version {build().emulated_version}"
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        assert _get(fields["etcd"] + "/health", None) == 200
        # /healthz and /readyz answer anyone on each secure port (authorization-always-allow)
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            assert fields[name].startswith("https://127.0.0.1:"), text
            assert _get(fields[name] + "/healthz", insecure) == 200, name

        # the try: line as printed, with a PATH that has no kubectl on it
        empty = tmp_path / "empty-bin"
        empty.mkdir()
        bare = {**os.environ, "PATH": str(empty)}
        try_line = lines[-1].removeprefix("try: ")
        out = subprocess.run(
            [*shlex.split(try_line), "-o", "name"],
            capture_output=True,
            text=True,
            timeout=30,
            env=bare,
        )
        assert "namespace/kube-system" in out.stdout, out.stderr
        (export,) = [x for x in lines if x.startswith("export PATH=")]
        bash = shutil.which("bash")
        assert bash is not None
        out = subprocess.run(
            [
                bash,
                "-c",
                f'{export}; kubectl --kubeconfig "$0" get ns -o name',
                fields["admin kubeconfig"],
            ],
            capture_output=True,
            text=True,
            timeout=30,
            env=bare,
        )
        assert "namespace/kube-system" in out.stdout, out.stderr
        assert _processes_mentioning(str(tmp_path))  # etcd, kube-apiserver, ...
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
    finally:
        if p.poll() is None:
            p.kill()
    assert _processes_mentioning(str(tmp_path)) == []


def _get(url: str, ctx: ssl.SSLContext | None) -> int:
    with urllib.request.urlopen(url, timeout=5, context=ctx) as r:
        return int(r.status)


def test_kill_9_of_the_owner_takes_the_control_plane_along(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from ksched.testing.controlplane import ControlPlane\n"
        f"cp = ControlPlane(workdir={str(tmp_path)!r}); cp.start()\n"
        "print('up', flush=True); time.sleep(600)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "up"
    assert _processes_mentioning(str(tmp_path))
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
    deadline = time.monotonic() + 10
    while _processes_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_mentioning(str(tmp_path)) == []


def test_the_reaper_plays_a_kubelet_slow_and_one_pod_at_a_time(controlplane: ControlPlane) -> None:
    """With ``delay``/``spacing`` (the differential harness sets them) a deleted bound pod
    stays Terminating ``delay`` seconds, and pods finish one at a time in the order they
    were deleted, ``spacing`` apart."""
    import uuid

    cp = controlplane
    reaper = cp.reaper
    assert reaper is not None
    run = uuid.uuid4().hex[:8]
    ns = f"reap-{run}"
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    node = f"reap-node-{run}"
    alloc = {"cpu": "4", "memory": "4Gi", "pods": "10"}
    cp.request(
        "POST",
        "/api/v1/nodes",
        {"metadata": {"name": node}, "status": {"allocatable": alloc, "capacity": alloc}},
    )
    names = ["a", "b"]
    for n in names:
        body = {
            "metadata": {"name": n},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]},
        }
        assert cp.request("POST", f"/api/v1/namespaces/{ns}/pods", body)[0] == 201
    saved = reaper.delay, reaper.spacing
    reaper.delay, reaper.spacing = 0.6, 0.4
    try:
        time.sleep(1.5)  # the reaper idle for a while first (its watch reopens)
        start = time.monotonic()
        for n in reversed(names):  # not in name order: a list would give name order
            st, out = cp.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{n}", {})
            assert st == 200 and out["metadata"].get("deletionTimestamp")
        gone: dict[str, float] = {}
        while len(gone) < len(names) and time.monotonic() - start < 20:
            for n in names:
                path = f"/api/v1/namespaces/{ns}/pods/{n}"
                if n not in gone and cp.request("GET", path)[0] == 404:
                    gone[n] = time.monotonic() - start
            time.sleep(0.02)
    finally:
        reaper.delay, reaper.spacing = saved
        cp.request("DELETE", f"/api/v1/nodes/{node}")
        cp.request("DELETE", f"/api/v1/namespaces/{ns}")
    assert len(gone) == 2
    assert gone["b"] >= 0.6  # finished in deletion order, spacing apart
    assert gone["a"] - gone["b"] >= 0.35


def _thread_cpus(pid: int) -> set[frozenset[int]]:
    """The CPU sets of every thread of ``pid``."""
    return {frozenset(os.sched_getaffinity(int(tid))) for tid in os.listdir(f"/proc/{pid}/task")}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to split")
def test_components_and_kube_scheduler_run_on_the_cpus_given(tmp_path: Path) -> None:
    """``ksched bench --pin``: every thread of etcd and kube-apiserver on the control
    plane's CPUs, every thread of a kube-scheduler on its own, and a process can be moved
    over whole."""
    from ksched.testing.controlplane._process import pin_process

    first, *rest = sorted(os.sched_getaffinity(0))
    with ControlPlane(workdir=tmp_path, cpus={first}) as cp:
        for c in cp.components:
            assert c.pid is not None
            assert _thread_cpus(c.pid) == {frozenset({first})}, c.name
        with cp.kube_scheduler(cpus=set(rest)) as ks:
            assert ks.component is not None and ks.component.pid is not None
            pid = ks.component.pid
            assert _thread_cpus(pid) == {frozenset(rest)}
            pin_process(pid, {first})
            assert _thread_cpus(pid) == {frozenset({first})}
