"""One exception root: every exception ksched raises on purpose is a ``KschedError`` (and
still the builtin it always was, so existing ``except ValueError`` clauses hold), and the
CLI turns any of them into its lines on stderr and its exit code, in one place."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import ksched
from ksched import KschedError
from ksched.api.quantity import QuantityError
from ksched.cache.cache import CacheError
from ksched.cli import main
from ksched.cluster.apierrors import APIConnectionError, APIError
from ksched.config import ConfigError
from ksched.daemon.http import ServingError
from ksched.framework.deadline import PluginTimeout
from ksched.plugins.volumeutil import NotFoundError
from ksched.testing import TestAPIServer, make_node
from ksched.util.errors import EXIT_BAD_INPUT, EXIT_FAILURE

# ksched.testing is an independent implementation of the API server (its own errors);
# __main__ runs the CLI.
SKIPPED_MODULES = ("ksched.testing", "ksched.__main__")


def _exception_classes() -> list[type[BaseException]]:
    out: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(ksched.__path__, "ksched."):
        if info.name.startswith(SKIPPED_MODULES):
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                out.append(obj)
    return out


def test_every_public_ksched_exception_derives_from_kschederror() -> None:
    classes = _exception_classes()
    assert len(classes) >= 30  # the walk found them
    strays = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        if not issubclass(c, KschedError)
        and not c.__name__.startswith("_")  # control flow that never leaves its module
        and c is not PluginTimeout  # a BaseException on purpose: plugins cannot catch it
    ]
    assert strays == []
    assert not issubclass(PluginTimeout, Exception)


def test_the_builtin_bases_stay() -> None:
    assert issubclass(ConfigError, ValueError) and issubclass(QuantityError, ValueError)
    assert issubclass(CacheError, RuntimeError) and issubclass(NotFoundError, LookupError)
    err = ServingError("address in use", errno=98)
    assert isinstance(err, OSError) and err.errno == 98 and str(err) == "address in use"
    assert issubclass(APIConnectionError, APIError) and issubclass(APIError, KschedError)
    assert ksched.KschedError is KschedError


def test_lines_prefix_the_context_on_each_line() -> None:
    err = ConfigError(["a.yaml: x: bad", "a.yaml: y: bad"])
    assert err.lines() == ["a.yaml: x: bad", "a.yaml: y: bad"]
    err.context = "ksched"
    assert err.lines() == ["ksched: a.yaml: x: bad", "ksched: a.yaml: y: bad"]
    assert ConfigError([]).lines() == ["ConfigError"]  # never an empty report
    assert ConfigError([]).exit_code == EXIT_BAD_INPUT
    assert APIError(403, "Forbidden", "no").exit_code == EXIT_FAILURE


def test_the_cli_reports_an_api_refusal_in_one_line_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestAPIServer().run_in_thread() as srv:
        srv.create(make_node("n1"))
        srv.faults.fail_next(verb="list", resource="nodes", code=403, message="no nodes for you")
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        rc = main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(tmp_path / "c.yaml")])
    assert rc == EXIT_FAILURE
    err = capsys.readouterr().err.splitlines()
    assert err == ["ksched snapshot: 403 Forbidden: no nodes for you"]


def test_the_cli_reports_bad_input_with_its_source_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: ksched\n"
        "  pluginConfig:\n"
        "  - name: NodeResourcesFit\n"
        "    args: {scoringStrategy: {type: Nope}}\n"
    )
    assert main(["config", "validate", str(cfg)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f'{cfg}: profile "ksched": plugin NodeResourcesFit')
