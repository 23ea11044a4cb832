"""``mypyc_attr`` for the modules the opt-in compiled build compiles (ksched/_compiled.py).

mypyc reads the decorator at compile time; at run time it does nothing, so the pure-Python
install does not need mypy_extensions.
"""

from typing import TYPE_CHECKING

__all__ = ["mypyc_attr"]

if TYPE_CHECKING:
    from mypy_extensions import mypyc_attr
else:
    try:
        from mypy_extensions import mypyc_attr
    except ImportError:

        def mypyc_attr(*_args, **_kwargs):
            return lambda target: target
