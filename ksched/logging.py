"""Structured logs for the daemon (structlog), klog-style verbosity.

JSON lines when stdout is not a terminal (what log collectors want), a readable console
format otherwise; ``--log-format`` overrides. ``-v N`` works like klog's: an event logged
with ``v=K`` is written only when ``N >= K``, and debug-level events need ``N >= 4``. Hot
paths ask ``enabled(K)`` first so a suppressed line costs one comparison, not a processor
chain.

Every line about a pod carries ``pod``, ``node`` and ``profile`` keys (null when unknown), so
one pod's history can be grepped or queried out of the stream. Standard-library loggers
(aiohttp, kubernetes_asyncio) are routed through the same renderer.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

__all__ = ["LogFormat", "configure", "enabled", "get_logger", "reset", "verbosity"]

LogFormat = Literal["json", "console"]

_verbosity = 0


class _NamedLogger(structlog.WriteLogger):
    """A WriteLogger that remembers the name passed to ``get_logger`` (for the ``logger`` key)."""

    def __init__(self, name: str, file: TextIO) -> None:
        super().__init__(file)
        self.name = name


class _Factory:
    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def __call__(self, *args: Any) -> _NamedLogger:
        name = str(args[0]) if args else "ksched"
        # Resolved per logger so tests that swap sys.stdout (capsys) see the output.
        return _NamedLogger(name, self.stream if self.stream is not None else sys.stdout)


def _add_logger_name(logger: WrappedLogger, method: str, ed: EventDict) -> EventDict:
    name = getattr(logger, "name", None)
    if name and "logger" not in ed:
        ed["logger"] = name
    return ed


def _verbosity_filter(logger: WrappedLogger, method: str, ed: EventDict) -> EventDict:
    v = ed.pop("v", 0)
    if isinstance(v, int) and v > _verbosity:
        raise structlog.DropEvent
    return ed


def _pod_fields(logger: WrappedLogger, method: str, ed: EventDict) -> EventDict:
    """A line about a pod always names the node and profile too (None when not known)."""
    if "pod" in ed:
        ed.setdefault("node", None)
        ed.setdefault("profile", None)
    return ed


class _StdlibHandler(logging.Handler):
    """Forwards standard-library log records into structlog."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # a broken format string must not kill the daemon
            msg = str(record.msg)
        kw: dict[str, Any] = {}
        if record.exc_info:
            kw["exc_info"] = record.exc_info
        structlog.get_logger(record.name).log(record.levelno, msg, **kw)


def configure(
    fmt: LogFormat | None = None,
    verbosity: int = 0,
    *,
    stream: TextIO | None = None,
) -> None:
    """Set up structlog (and route stdlib logging through it).

    ``fmt`` None picks JSON unless ``stream`` (default stdout) is a terminal.
    """
    global _verbosity
    _verbosity = max(0, int(verbosity))
    out = stream if stream is not None else sys.stdout
    if fmt is None:
        fmt = "console" if _isatty(out) else "json"
    renderer: Processor
    tail: list[Processor]
    if fmt == "json":
        tail = [
            structlog.processors.format_exc_info,
            structlog.processors.EventRenamer("msg"),
        ]
        renderer = structlog.processors.JSONRenderer(default=str)
    else:
        tail = []
        renderer = structlog.dev.ConsoleRenderer(colors=_isatty(out), timestamp_key="ts")
    processors: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        _verbosity_filter,
        structlog.processors.add_log_level,
        _add_logger_name,
        _pod_fields,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
        *tail,
        renderer,
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.DEBUG if _verbosity >= 4 else logging.INFO
        ),
        logger_factory=_Factory(stream),
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, _StdlibHandler):
            root.removeHandler(h)
    root.addHandler(_StdlibHandler())
    root.setLevel(logging.DEBUG if _verbosity >= 6 else logging.WARNING)


def reset() -> None:
    """Undo ``configure`` (structlog defaults, stdlib routing removed), e.g. between tests."""
    global _verbosity
    _verbosity = 0
    structlog.reset_defaults()
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, _StdlibHandler):
            root.removeHandler(h)
    root.setLevel(logging.WARNING)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def enabled(v: int) -> bool:
    """Whether a ``v``-level line would be written (check before building costly fields)."""
    return _verbosity >= v


def verbosity() -> int:
    return _verbosity


def get_logger(name: str = "ksched", **initial: Any) -> Any:
    """A structlog logger; ``initial`` key/values are bound to every line it writes."""
    log = structlog.get_logger(name)
    return log.bind(**initial) if initial else log
