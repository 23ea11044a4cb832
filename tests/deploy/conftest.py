"""Fixtures: ksched-contrib installed as a user would (shared with tests/contrib)."""

from ..contrib.conftest import contrib, contrib_install

__all__ = ["contrib", "contrib_install"]
