"""ksched's version and the kube-scheduler release whose behaviour it follows.

One home for both: the package root re-exports them, and the CLI (``--version``) and the
test control plane (the release it builds) read them here, as no module imports the root.
"""

__all__ = ["KUBERNETES_VERSION", "__version__"]

__version__ = "0.1.0"
#: The kube-scheduler release ksched follows (and the control plane its tests build).
KUBERNETES_VERSION = "v1.37.2"
