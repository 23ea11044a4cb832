"""kube-scheduler HTTP extenders, both ways.

* ``client``: ksched calling extenders configured in ``KubeSchedulerConfiguration.extenders``
  (Filter, Prioritize, Bind, ProcessPreemption), in ``ksched run`` and ``ksched simulate``;
* ``server``: ``ksched extender`` serving a profile's plugins to a stock kube-scheduler;
* ``wire``: the ``k8s.io/kube-scheduler/extender/v1`` types in Go's JSON encoding.

Only constants live here, so ``ksched --help`` does not import aiohttp.
"""

DEFAULT_PORT = 8888
# Loopback unless told otherwise: beyond it every verb needs client certificates.
DEFAULT_BIND_ADDRESS = "127.0.0.1"
# Full NodeLists of big clusters are large (5000 nodes is about 25 MiB); beyond this, 413.
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
# Nodes a request may carry without --kubeconfig (with it: those the cache holds and a
# tenth more): three times the 5,000 nodes Kubernetes supports in one cluster. Beyond
# either bound, 413 before any node is decoded.
DEFAULT_MAX_NODES = 15_000

__all__ = ["DEFAULT_BIND_ADDRESS", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_NODES", "DEFAULT_PORT"]
