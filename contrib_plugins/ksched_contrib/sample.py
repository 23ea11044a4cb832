"""Sample: logs what it sees at PreFilter, Filter and PreBind, and changes nothing.

A template for new plugins and a debugging aid: enable it in a profile to watch
which pods and nodes the framework hands to plugins, with the plugin's own args
(the ``favorite_*`` fields of the scheduling-framework KEP's example config) in
every line as structured fields.
"""

from __future__ import annotations

import structlog
from ksched import (
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    NodeInfo,
    PluginArgs,
    PodInfo,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    Snapshot,
    Status,
)

__all__ = ["Sample"]

NAME = "Sample"
log = structlog.get_logger("ksched_contrib.sample")


class SampleArgs(PluginArgs, rename=None):
    """The KEP's example args, whose wire names are snake_case."""

    favorite_color: str = ""
    favorite_number: int = 0
    thanks_to: str = ""


class Sample(PreFilterPlugin[SampleArgs], FilterPlugin[SampleArgs], PreBindPlugin[SampleArgs]):
    name = NAME

    Args = SampleArgs

    def _log(self, point: str, pod: PodInfo, node: str | None) -> None:
        fw = self.handle.framework if self.handle is not None else None
        log.info(
            f"{self.name} {point}",
            plugin=self.name,
            extension_point=point,
            pod=pod.key,
            node=node,
            profile=fw.profile_name if fw is not None else None,
            favorite_color=self.args.favorite_color,
            favorite_number=self.args.favorite_number,
            thanks_to=self.args.thanks_to,
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        self._log("PreFilter", pod, None)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self._log("Filter", pod, node.name)
        return None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self._log("PreBind", pod, node_name)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Sample never rejects a pod, so no event needs to requeue one for it."""
        return []
