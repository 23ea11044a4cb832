"""The guides say true things: links resolve, quoted code is the example's code, configs
validate, shown output is what the commands print, and commands name real files."""

from __future__ import annotations

import re
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main

from ._install import PACKAGE_DIR, ROOT, Installed

PLUGINS = ROOT / "docs" / "plugins.md"
SYSTEMD_GUIDE = ROOT / "docs" / "install-systemd.md"
PAGES = [
    PLUGINS,
    SYSTEMD_GUIDE,
    ROOT / "systemd" / "README.md",
    ROOT / "deploy" / "README.md",
    PACKAGE_DIR / "README.md",
    ROOT / "README.md",
]


def blocks(path: Path, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(), re.S)


def test_readme_points_to_the_guide_under_writing_a_plugin() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Writing a plugin", 1)[1].split("\n## ", 1)[0]
    assert "(docs/plugins.md)" in section


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = page.read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", text, re.M)
    }
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        if file:
            assert (page.parent / file).exists(), f"{page.name}: {target}"
        elif anchor:
            assert anchor in anchors, f"{page.name}: {target}"


def test_quoted_code_is_the_examples_code() -> None:
    text = PLUGINS.read_text()
    quotes = re.findall(r"<!-- from: (\S+) -->\s*```python\n(.*?)```", text, re.S)
    assert len(quotes) >= 4
    for path, code in quotes:
        source = (ROOT / path).read_text()
        assert code in source, f"docs/plugins.md quotes {path} out of date:\n{code}"


def test_python_blocks_parse() -> None:
    import ast

    for code in blocks(PLUGINS, "python"):
        ast.parse(textwrap.dedent(code))


def test_documented_config_validates(
    nodecost: Installed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # NodeCost's (the pod-group section's PlacementCost config is its package's test's)
    nodecost_part = PLUGINS.read_text().split("\n## 8. Pod groups", 1)[0]
    yaml_blocks = re.findall(r"```yaml\n(.*?)```", nodecost_part, re.S)
    configs = [b for b in yaml_blocks if "KubeSchedulerConfiguration" in b]
    assert configs
    for i, block in enumerate(configs):
        path = tmp_path / f"config-{i}.yaml"
        path.write_text(block)
        assert main(["config", "validate", str(path)]) == 0, capsys.readouterr().err
        assert yaml.safe_load(block) == yaml.safe_load(
            (PACKAGE_DIR / "examples" / "config.yaml").read_text()
        )


def test_documented_entry_point_is_the_packages() -> None:
    toml = next(b for b in blocks(PLUGINS, "toml") if "ksched.plugins" in b)
    with (PACKAGE_DIR / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    shown = tomllib.loads(toml)["project"]
    assert shown["entry-points"] == project["entry-points"]
    assert shown["dependencies"] == project["dependencies"]
    assert shown["name"] == project["name"]


def _console(after: str) -> list[str]:
    """The output lines of the console block whose command starts with ``after``."""
    for block in blocks(PLUGINS, "console"):
        lines = block.splitlines()
        cmd = [i for i, line in enumerate(lines) if line.startswith(f"$ {after}")]
        if cmd:
            return [line for line in lines[cmd[0] + 1 :] if not line.startswith("$")]
    raise AssertionError(f"no console block for {after!r}")


def test_shown_simulate_output_is_real(
    nodecost: Installed, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(PACKAGE_DIR)
    assert (
        main(["simulate", "--cluster", "examples/cluster.yaml", "--config", "examples/config.yaml"])
        == 0
    )
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert printed == _console("ksched simulate")


def test_shown_args_error_is_real(
    nodecost: Installed,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = yaml.safe_load((PACKAGE_DIR / "examples" / "config.yaml").read_text())
    cfg["profiles"][0]["pluginConfig"][0]["args"] = {"lable": "x"}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(tmp_path)
    assert main(["config", "validate", "bad.yaml"]) == 2
    assert capsys.readouterr().err.splitlines() == _console("ksched config validate")


def test_shown_plugins_line_is_real(
    nodecost: Installed, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plugins"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("NodeCost"))
    shown = _console("ksched plugins")
    assert [s.split() for s in shown] == [line.split()]


def test_derived_image_snippet_matches_the_image() -> None:
    snippet = next(b for b in blocks(PLUGINS, "dockerfile"))
    dockerfile = (ROOT / "Dockerfile").read_text()
    with (ROOT / "pyproject.toml").open("rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert f"FROM ksched:{version}" in snippet
    final_user = re.findall(r"^USER (\S+)$", dockerfile, re.M)[-1]
    assert snippet.strip().splitlines()[-1] == f"USER {final_user}"


def test_systemd_guide_commands_name_real_files() -> None:
    text = SYSTEMD_GUIDE.read_text()
    # repository paths (not /etc/systemd/system/... on the host)
    named = set(re.findall(r"(?<![\w/])((?:systemd|deploy)/[\w./-]+\.(?:yaml|service))\b", text))
    assert {
        "systemd/ksched.service",
        "systemd/config.yaml",
        "systemd/rbac.yaml",
        "deploy/base/clusterrole.yaml",
    } <= named
    for path in named:
        assert (ROOT / path).is_file(), path


# ---- the guide's plugin with args -------------------------------------------------------------


def _args_example() -> str:
    text = PLUGINS.read_text()
    found = re.search(r"<!-- example: a plugin with args -->\s*```python\n(.*?)```", text, re.S)
    assert found is not None
    return found.group(1)


def test_guides_plugin_with_args_needs_one_import_and_no_parsing() -> None:
    code = _args_example()
    imports = [line for line in code.splitlines() if line.startswith(("from ", "import "))]
    assert [line.split()[1] for line in imports] == ["ksched"]
    assert "__init__" not in code and "parse" not in code and "PluginArgsError" not in code
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/plugins.md", "exec"), namespace)  # its assertions hold


def test_guides_typed_args_example_runs_and_names_its_args_on_its_base() -> None:
    import typing

    text = PLUGINS.read_text()
    found = re.search(r"<!-- example: typed args -->\s*```python\n(.*?)```", text, re.S)
    assert found is not None
    namespace: dict[str, Any] = {}
    exec(compile(found.group(1), "docs/plugins.md", "exec"), namespace)  # its assertion holds
    prefer = namespace["Prefer"]
    (base,) = prefer.__orig_bases__
    assert (
        typing.get_args(base) == (namespace["PreferArgs"],)
        and prefer.Args is namespace["PreferArgs"]
    )


def test_guides_plugin_with_args_runs_and_names_bad_fields() -> None:
    from ksched import PluginArgsError
    from ksched.testing import make_node, make_pod, run_filter, schedule

    namespace: dict[str, Any] = {}
    exec(compile(_args_example(), "docs/plugins.md", "exec"), namespace)
    no_metal = namespace["NoMetal"]

    one, two = no_metal(), no_metal()
    one.args.forbidden.append("tin")
    assert two.args.forbidden == []  # a list default is each instance's own
    assert no_metal(no_metal.Args(forbidden=["gold"])).args.forbidden == ["gold"]

    nodes = [make_node("lead", labels={"metal": "lead"}), make_node("plain")]
    verdicts = run_filter(no_metal({"forbidden": ["lead"]}), make_pod("p"), nodes)
    assert verdicts["plain"] is None
    assert verdicts["lead"] is not None
    assert verdicts["lead"].message() == "node's metal is forbidden"

    for data, message in [
        ({"forbidden": "lead"}, "args.forbidden: must be a list, got 'lead'"),
        ({"forbidden": ["lead", 7]}, "args.forbidden[1]: must be a string, got 7"),
        (
            {"forbiden": ["lead"]},
            "args.forbiden: unknown field (known fields: forbidden, labelKey)",
        ),
        ({"labelKey": ""}, "args.labelKey: must not be empty"),
    ]:
        with pytest.raises(PluginArgsError) as e:
            no_metal(data)
        assert str(e.value) == f"plugin NoMetal: {message}"

    # From a configuration, as ksched run builds it: the same words, with the profile.
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "ksched",
                "plugins": {"filter": {"enabled": [{"name": "NoMetal"}]}},
                "pluginConfig": [{"name": "NoMetal", "args": {"forbidden": ["lead"]}}],
            }
        ],
    }
    assert schedule(config, make_pod("p"), nodes[:1], plugins=[no_metal]).node is None
    assert schedule(config, make_pod("p"), nodes, plugins=[no_metal]).node == "plain"
    config["profiles"][0]["pluginConfig"][0]["args"] = {"forbidden": [1]}  # type: ignore[index]
    with pytest.raises(Exception, match=r"plugin NoMetal: args\.forbidden\[0\]: must be a string"):
        schedule(config, make_pod("p"), nodes, plugins=[no_metal])


def test_shown_wrong_type_error_is_real(
    nodecost: Installed,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = re.search(r"A wrong type reads `(.*?)`", " ".join(PLUGINS.read_text().split()))
    assert shown is not None
    cfg = yaml.safe_load((PACKAGE_DIR / "examples" / "config.yaml").read_text())
    cfg["profiles"][0]["pluginConfig"][0]["args"] = {"missingCost": "cheap"}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(tmp_path)
    assert main(["config", "validate", "bad.yaml"]) == 2
    assert capsys.readouterr().err.splitlines() == [f'bad.yaml: profile "ksched": {shown.group(1)}']
