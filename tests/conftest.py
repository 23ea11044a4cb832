"""Shared fixtures: the in-process test API server (``apiserver``, ``apiserver_kubeconfig``)."""

pytest_plugins = ["ksched.testing.pytest_plugin"]
