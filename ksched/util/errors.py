"""``KschedError``: the one root of the exceptions ksched raises on purpose.

Every ksched exception derives from it (besides the builtin it always had, such as
``ValueError``, so existing ``except`` clauses keep working), so an embedder or the CLI can
tell "ksched reported a problem" from a bug with one ``except KschedError``. It lives in
``util`` because the low-level pieces (``api``, ``util``) raise it too and must not import
the core. Not under it on purpose: ``framework.deadline.PluginTimeout`` (a BaseException,
so a plugin's ``except Exception`` cannot swallow the deadline) and private control-flow
exceptions that never leave their module.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "KschedError"]

# The CLI's exit codes (see ksched/cli.py).
EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1


class KschedError(Exception):
    """A problem ksched reports; ``str()`` is the message, one line per problem.

    ``exit_code``: what ``ksched`` exits with when the error reaches it (2: bad input,
    found before anything touched a cluster; 1: a failure at run time). ``context``: what
    the error is about when the raiser could not know it (a file, a command), printed
    before each line by the CLI; whoever knows it sets it on the way up.
    """

    exit_code: ClassVar[int] = EXIT_BAD_INPUT
    context: str = ""

    def lines(self) -> list[str]:
        """The lines the CLI prints: the message (each line prefixed with ``context``)."""
        text = str(self) or type(self).__name__
        lines = text.splitlines() or [text]
        if not self.context:
            return lines
        return [f"{self.context}: {line}" for line in lines]
