"""Kubernetes API I/O for the daemon: client, informers, binder, status reporting.

The only package that talks to kube-apiserver; it feeds the scheduler through its
``on_*`` handlers and the ``ClusterClient``/``Observer``/``EventRecorder`` protocols and
never imports the scheduler core.
"""

from .binder import APIClusterClient
from .client import APIClient, APIConnectionError, APIError, RateLimiter
from .decoding import pod_decoder, struct_decoder
from .informer import Backoff, Informer, InformerSet
from .status import StatusReporter
from .wiring import ClusterInformers, connect_scheduler

__all__ = [
    "APIClient",
    "APIClusterClient",
    "APIConnectionError",
    "APIError",
    "Backoff",
    "ClusterInformers",
    "Informer",
    "InformerSet",
    "RateLimiter",
    "StatusReporter",
    "connect_scheduler",
    "pod_decoder",
    "struct_decoder",
]
