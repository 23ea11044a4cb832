"""DefaultBinder: binds through the handle's cluster client.

In the daemon that is a ``pods/binding`` POST; in ``ksched simulate`` it assigns the
pod in the simulated cluster. A ``BindError`` is kept as the status cause so the
scheduler can tell retryable failures (5xx, timeouts) from final ones (409, 404).
"""

from __future__ import annotations

from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.interface import BindPlugin
from ..framework.status import Code, Status
from ..framework.types import PodInfo
from . import names

__all__ = ["DefaultBinder"]


class DefaultBinder(BindPlugin[NoArgs]):
    name = names.DEFAULT_BINDER

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        assert self.handle is not None
        try:
            await self.handle.cluster.bind(pod, node_name)
        except Exception as e:
            st = Status(Code.ERROR, str(e), plugin=self.name)
            st.cause = e
            return st
        return None
