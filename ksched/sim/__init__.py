"""``ksched simulate``: schedule the pending pods of a manifest file, in memory."""

from .cluster_file import ClusterFile, ClusterFileError, load_cluster, parse_cluster
from .simulator import PodResult, SimulatedCluster, Simulation, simulate

__all__ = [
    "ClusterFile",
    "ClusterFileError",
    "PodResult",
    "SimulatedCluster",
    "Simulation",
    "load_cluster",
    "parse_cluster",
    "simulate",
]
