"""``ksched run`` with a third-party plugin that hangs: the daemon keeps scheduling, the
stuck pod gets a SchedulerError condition and event naming the plugin."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from ksched.cli import build_parser
from ksched.cluster import APIClient
from ksched.config import load_config_data
from ksched.daemon import SchedulerDaemon
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import FilterPlugin
from ksched.framework.registry import Registry
from ksched.framework.status import Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins import default_registry
from ksched.testing import TestAPIServer, make_node, make_pod


class HangFilter(FilterPlugin):
    """Stuck (for longer than the test's deadline) on pods labelled hang=yes."""

    name = "HangFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if pod.labels.get("hang") == "yes":
            end = time.monotonic() + 5
            while time.monotonic() < end:
                pass
        return None


def _setup() -> tuple[Any, Registry]:
    reg = default_registry()
    reg.register("HangFilter", HangFilter, "tests")
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "ksched",
                "plugins": {"filter": {"enabled": [{"name": "HangFilter"}]}},
            }
        ],
    }
    return load_config_data(data, "test", set(reg.names()))[0], reg


def test_hung_filter_fails_only_its_pod() -> None:
    cfg, reg = _setup()

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            srv.create(make_pod("stuck", labels={"hang": "yes"}, scheduler_name="ksched"))
            srv.create(make_pod("fine", scheduler_name="ksched"))
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                async with SchedulerDaemon(
                    cfg, registry=reg, client=client, port=0, plugin_timeout=0.2
                ) as d:
                    await d.wait_ready(10)
                    with anyio.fail_after(10):
                        while not srv.get("pods", "default", "fine")["spec"].get("nodeName"):
                            await anyio.sleep(0.02)
                        while not srv.get("pods", "default", "stuck")["status"].get("conditions"):
                            await anyio.sleep(0.02)
            finally:
                await client.close()
            stuck = srv.get("pods", "default", "stuck")
            assert not stuck["spec"].get("nodeName")
            [cond] = stuck["status"]["conditions"]
            want = 'plugin "HangFilter" (filter) did not return within 0.2s'
            assert (cond["type"], cond["status"], cond["reason"]) == (
                "PodScheduled",
                "False",
                "SchedulerError",
            )
            assert cond["message"] == want

    anyio.run(main)


def test_timeout_flags(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["run", "--plugin-timeout", "2.5", "--binding-timeout", "0"])
    assert (args.plugin_timeout, args.binding_timeout) == (2.5, 0.0)
    defaults = build_parser().parse_args(["run"])
    assert (defaults.plugin_timeout, defaults.binding_timeout) == (15.0, 600.0)
    assert build_parser().parse_args(["extender", "--config", "c"]).plugin_timeout == 15.0
    for bad, why in (("x", "not a number of seconds: 'x'"), ("-1", "must be >= 0 seconds")):
        with pytest.raises(SystemExit) as ei:
            build_parser().parse_args(["run", "--plugin-timeout", bad])
        assert ei.value.code == 2
        assert f"argument --plugin-timeout: {why}" in capsys.readouterr().err
