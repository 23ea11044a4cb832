"""ksched-contrib: scheduling plugins shipped apart from ksched.

Each plugin is registered under the ``ksched.plugins`` entry-point group in this
distribution's pyproject.toml, so installing the distribution is all it takes for
ksched to find them; ksched itself never imports this package. Importing it stays
cheap: plugin modules load only when an entry point asks for them.
"""

from __future__ import annotations

__all__ = ["PLUGINS"]

# Plugin name -> entry-point target, mirrored in pyproject.toml (a test checks they agree).
PLUGINS: dict[str, str] = {
    "PodNameLength": "ksched_contrib.podnamelength:PodNameLength",
    "ShortNodeName": "ksched_contrib.shortnodename:ShortNodeName",
    "Lucky": "ksched_contrib.lucky:Lucky",
    "Sample": "ksched_contrib.sample:Sample",
    "Coscheduling": "ksched_contrib.coscheduling:Coscheduling",
}
