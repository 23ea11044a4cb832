"""Log format (JSON vs console), klog-style verbosity, pod fields, stdlib routing."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from ksched import logging as klog


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    klog.reset()


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def lines(buf: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(x) for x in buf.getvalue().splitlines()]


def test_json_when_not_a_terminal_with_pod_node_profile() -> None:
    buf = io.StringIO()
    klog.configure(None, 2, stream=buf)
    log = klog.get_logger("ksched.test")
    log.info("Successfully bound pod to node", pod="ns/p", node="n1", profile="ksched", v=2)
    log.info("about a pod, nothing else known", pod="ns/q")
    log.info("not about a pod")
    a, b, c = lines(buf)
    assert a["msg"] == "Successfully bound pod to node"
    assert (a["pod"], a["node"], a["profile"]) == ("ns/p", "n1", "ksched")
    assert a["level"] == "info" and a["logger"] == "ksched.test" and "ts" in a
    assert "v" not in a
    assert (b["pod"], b["node"], b["profile"]) == ("ns/q", None, None)
    assert "pod" not in c and "node" not in c


def test_console_on_a_terminal() -> None:
    buf = _TTY()
    klog.configure(None, 0, stream=buf)
    klog.get_logger("ksched.test").warning("hello there", pod="ns/p")
    out = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())
    assert "hello there" in out and "pod=ns/p" in out and "node=None" in out
    assert not out.lstrip().startswith("{")


def test_format_flag_overrides_detection() -> None:
    buf = _TTY()
    klog.configure("json", 0, stream=buf)
    klog.get_logger().info("x")
    assert lines(buf)[0]["msg"] == "x"


def test_verbosity() -> None:
    buf = io.StringIO()
    klog.configure("json", 1, stream=buf)
    log = klog.get_logger()
    log.info("v1", v=1)
    log.info("v2", v=2)
    log.debug("debug needs -v 4")
    log.error("errors always")
    assert [x["msg"] for x in lines(buf)] == ["v1", "errors always"]
    assert klog.enabled(1) and not klog.enabled(2)
    buf = io.StringIO()
    klog.configure("json", 4, stream=buf)
    klog.get_logger().debug("now shown")
    assert [x["msg"] for x in lines(buf)] == ["now shown"]


def test_stdlib_logging_is_routed() -> None:
    buf = io.StringIO()
    klog.configure("json", 0, stream=buf)
    logging.getLogger("aiohttp.client").warning("connection %s lost", "x")
    logging.getLogger("aiohttp.client").info("chatter is dropped below -v 6")
    (entry,) = lines(buf)
    assert entry["msg"] == "connection x lost"
    assert entry["logger"] == "aiohttp.client" and entry["level"] == "warning"


def test_bound_initial_values() -> None:
    buf = io.StringIO()
    klog.configure("json", 0, stream=buf)
    klog.get_logger("ksched.x", profile="p").info("hi", pod="a/b")
    (entry,) = lines(buf)
    assert (entry["pod"], entry["node"], entry["profile"]) == ("a/b", None, "p")
