"""The modules the opt-in compiled build (``KSCHED_COMPILE=1``, setup.py) compiles with mypyc.

One list, read by setup.py without importing ksched, and by ``ksched.COMPILED``. They are
the per-pod hot path that is pure-Python loops and objects. Not here: classes plugins
subclass (``framework.interface``); runtime-checkable protocols, which mypyc cannot compile
(``framework.cycle_state``); ``framework.types`` (PodInfo copies itself with ``__new__``,
which a native class refuses, and has a property setter, which a non-native one refuses);
modules whose functions tests replace to observe the cycle (``scheduler.schedule_one``,
``scheduler.cycle_cache``: a compiled module calls its own functions directly, and a
compiled class's methods cannot be replaced); modules that define msgspec args structs,
which do not survive compilation even as non-native classes (a ``msgspec.field`` default is
refused, nested structs decode as dicts: ``plugins.noderesources``). Everything else,
third-party plugins and contrib_plugins included, stays Python.
"""

import importlib

MODULES: tuple[str, ...] = (
    "ksched.framework.runtime",
    "ksched.framework.status",
    "ksched.framework.diagnosis",
    "ksched.framework.snapshot",
    "ksched.framework.selection",
    "ksched.queue.scheduling_queue",
    "ksched.cache.cache",
    "ksched.plugins.defaultpreemption.batch",
    "ksched.plugins.interpodaffinity.index",
    "ksched.plugins.interpodaffinity.terms",
    "ksched.plugins.interpodaffinity.filtering",
    "ksched.plugins.interpodaffinity.scoring",
    "ksched.plugins.podtopologyspread.common",
    "ksched.plugins.podtopologyspread.filtering",
    "ksched.plugins.podtopologyspread.scoring",
    "ksched.api.quantity",
    "ksched.api.resources",
    "ksched.plugins.nodeports",
)


def is_compiled() -> bool:
    """Whether this installation runs the compiled modules (an extension, not a .py file).

    The first listed module is one ``import ksched`` loads anyway."""
    origin = importlib.import_module(MODULES[0]).__file__ or ""
    return not origin.endswith(".py")
