"""Test support: an in-process API server with kube-apiserver semantics, plus builders.

Nothing in ksched.testing imports the rest of ksched, so tests against this server exercise
the daemon against an independent implementation of the API.
"""

from ._auth import TokenUser
from ._store import APIStatusError
from .apiserver import VERSION_INFO, TestAPIServer, serving
from .faults import Faults, RecordedRequest
from .objects import (
    controller_ref,
    device_requests,
    make_controller,
    make_csidriver,
    make_csinode,
    make_device_class,
    make_namespace,
    make_node,
    make_pod,
    make_priority_class,
    make_pv,
    make_pvc,
    make_resource_claim,
    make_resource_claim_template,
    make_resource_slice,
    make_service,
    make_storage_class,
    make_volume_attachment,
)

__all__ = [
    "VERSION_INFO",
    "APIStatusError",
    "Faults",
    "RecordedRequest",
    "TestAPIServer",
    "TokenUser",
    "controller_ref",
    "device_requests",
    "make_controller",
    "make_csidriver",
    "make_csinode",
    "make_device_class",
    "make_namespace",
    "make_node",
    "make_pod",
    "make_priority_class",
    "make_pv",
    "make_pvc",
    "make_resource_claim",
    "make_resource_claim_template",
    "make_resource_slice",
    "make_service",
    "make_storage_class",
    "make_volume_attachment",
    "serving",
]
