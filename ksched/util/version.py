"""ksched's own version.

The kube-scheduler release it follows is ``ksched.features.KUBERNETES_VERSION``, derived from
the versions table (``ksched.features.versions``): one home, and ``util`` stays below
``features``.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
