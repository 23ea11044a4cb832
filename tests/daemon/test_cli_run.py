"""``ksched run`` argument handling that needs no cluster; ``bench`` option checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched import logging as klog
from ksched.cli import build_parser, main
from ksched.config import load_config_data
from ksched.daemon.main import apply_leader_election_flag


def test_flags_parse() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--config",
            "c.yaml",
            "--kubeconfig",
            "k",
            "--master",
            "http://x",
            "--no-leader-elect",
            "--bind-address",
            "0.0.0.0",
            "--port",
            "1234",
            "--log-format",
            "json",
            "-v",
            "3",
        ]
    )
    assert (args.config, args.kubeconfig, args.master) == ("c.yaml", "k", "http://x")
    assert args.leader_elect is False
    assert (args.bind_address, args.port, args.log_format, args.v) == ("0.0.0.0", 1234, "json", 3)
    defaults = build_parser().parse_args(["run"])
    assert defaults.leader_elect is None
    # kube-scheduler's secure port on every interface; the plain port off, loopback when on
    assert (defaults.bind_address, defaults.secure_port) == ("0.0.0.0", 10259)
    assert (defaults.address, defaults.port) == ("127.0.0.1", None)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--leader-elect", "--no-leader-elect"])


@pytest.mark.parametrize(
    ("flag", "config", "effective"),
    [
        (True, False, True),
        (None, True, True),  # upstream's default
        (None, False, False),
        (False, True, False),
    ],
)
def test_leader_elect_flag_overrides_the_config(
    flag: bool | None, config: bool, effective: bool
) -> None:
    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": config},
        }
    )
    assert apply_leader_election_flag(flag, cfg) == []
    assert cfg.leader_election.leader_elect is effective


def test_leader_elect_flag_validates_the_election_settings() -> None:
    # Valid with leaderElect false (the rules are skipped), invalid once the flag turns it on.
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False, "leaseDuration": "5s", "renewDeadline": "10s"},
    }
    cfg, _ = load_config_data(data)
    assert apply_leader_election_flag(True, cfg) == [
        "leaderElection.leaseDuration: Invalid value: 5s: must be greater than renewDeadline (10s)"
    ]
    data["leaderElection"] = {"leaderElect": True, "renewDeadline": "2s", "retryPeriod": "2s"}
    cfg, _ = load_config_data(data)
    assert apply_leader_election_flag(None, cfg) == [
        "couldn't create leader elector: renewDeadline must be greater than "
        "retryPeriod*JitterFactor"
    ]


def test_bad_leader_election_timing_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection: {renewDeadline: 2s, retryPeriod: 2s}\n"
    )
    assert main(["run", "--config", str(cfg), "--master", "http://127.0.0.1:1"]) == 2
    assert "renewDeadline must be greater than retryPeriod*JitterFactor" in (
        capsys.readouterr().err
    )


def test_bad_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\nparallelism: -1\n"
    )
    assert main(["run", "--config", str(cfg), "--master", "http://127.0.0.1:1"]) == 2
    assert "parallelism" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "No such file or directory"),
        (b"\x00\x01garbage: [", "not valid YAML: unacceptable character #x0000"),
        (b"\xff\xfe\x00", "not UTF-8 text (byte 0)"),
        (b"clusters: [\n", "not valid YAML: line 2, column 1:"),
        (b"- a\n- b\n", "expected a mapping (kind: Config), got list"),
        (b"apiVersion: v1\nkind: Config\nclusters: []\n", "no current-context set"),
        (b"a: &a [*a]\n", "not valid YAML: line 1, column 4: an anchor's value contains"),
    ],
)
def test_bad_kubeconfig_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, problem: str
) -> None:
    kc = tmp_path / "kubeconfig"
    if content is not None:
        kc.write_bytes(content)
    try:
        assert main(["run", "--no-leader-elect", "--kubeconfig", str(kc)]) == 2
    finally:
        klog.reset()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"ksched run: cannot load cluster configuration: kubeconfig {kc}: ")
    assert problem in line


def test_port_in_use_exits_2_naming_address_and_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["run", "--no-leader-elect", "--master", "http://127.0.0.1:1"]
        try:
            assert main([*args, "--bind-address", "127.0.0.1", "--port", str(port)]) == 2
        finally:
            klog.reset()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"ksched run: cannot listen on 127.0.0.1:{port}: ")
    assert "address already in use" in err[-1]


def test_bench_baseline_needs_e2e(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--baseline", "null"]) == 2
    assert "--baseline needs --mode e2e" in capsys.readouterr().err
