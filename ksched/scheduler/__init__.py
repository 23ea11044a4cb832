"""The scheduler: profiles' frameworks, queue and cache driven by one loop."""

from .cycle_result import CycleResult
from .schedule_one import num_feasible_nodes_to_find
from .scheduler import Observer, Scheduler, build_frameworks

__all__ = ["CycleResult", "Observer", "Scheduler", "build_frameworks", "num_feasible_nodes_to_find"]
