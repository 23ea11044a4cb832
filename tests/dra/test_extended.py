"""ksched.dra.extended after upstream's extendeddynamicresources_test.go
(``Test_createRequestsAndMappings_requests`` / ``_mappings``) and the extended resource
cache's tests: requests per container (init containers sharing their largest, reusing
what later sidecars and regular containers get), mappings, and which class backs a name
(the explicit name's newest class, every class's implicit name)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import Pod, decode
from ksched.api.resource import DeviceClass, ResourceClaim
from ksched.dra.extended import (
    CLASS_PREFIX,
    EXTENDED_CLAIM_ANNOTATION,
    IN_MEMORY_NAME,
    ClassResolver,
    find_extended_claim,
    in_memory_claim,
    is_dra_extended_name,
    requests_and_mappings,
)

from .factories import device_class

EXT = "example.com/gpu"
IMPLICIT = CLASS_PREFIX + "classInit"


def _c(name: str, res: dict[str, str], sidecar: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": res}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> Pod:
    spec = {"containers": containers, "initContainers": init or []}
    meta = {"name": "p", "namespace": "ns", "uid": "pod-uid"}
    return decode({"metadata": meta, "spec": spec}, Pod)


CLASSES = {
    EXT: device_class("class"),
    EXT + "1": device_class("class1"),
    EXT + "init": device_class("classInit"),
    IMPLICIT: device_class("classInit"),
}

POD1 = pod([_c("con0", {EXT: "1", EXT + "1": "2"})])
POD2 = pod([_c("con0", {EXT: "1"}), _c("con1", {EXT + "1": "2"})])
POD_INIT = pod([_c("con0", {EXT: "1"})], [_c("init-con0", {EXT + "init": "2"})])
POD_INIT2 = pod(
    [_c("con0", {EXT: "1"})],
    [_c("init-con0", {EXT + "init": "1"}), _c("init-con1", {EXT + "init": "2"})],
)
POD_INIT3 = pod(
    [_c("con0", {EXT: "1"})],
    [
        _c("init-con0", {EXT + "init": "1"}),
        _c("sidecar-con1", {EXT + "init": "1"}, sidecar=True),
        _c("init-con2", {EXT + "init": "2"}),
    ],
)
POD_IMPLICIT = pod([], [_c("init-con0", {EXT + "init": "1", IMPLICIT: "2"})])

# (pod, extended resources to allocate, classes, [(request, class, count)])
REQUEST_CASES: dict[str, tuple[Pod, dict[str, int], dict[str, DeviceClass], list[Any]]] = {
    "nil": (POD1, {}, CLASSES, []),
    "one resource match": (POD1, {EXT: 1}, CLASSES, [("container-0-request-0", "class", 1)]),
    "one resource match, one resource not match": (
        POD1,
        {EXT: 1, EXT + "1": 2},
        {EXT: CLASSES[EXT]},
        [("container-0-request-0", "class", 1)],
    ),
    "two resources match": (
        POD1,
        {EXT: 1, EXT + "1": 2},
        CLASSES,
        [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
    ),
    "two containers match": (
        POD2,
        {EXT: 1, EXT + "1": 2},
        CLASSES,
        [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
    ),
    "one init container, one regular container": (
        POD_INIT,
        {EXT: 1, EXT + "init": 2},
        CLASSES,
        [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
    ),
    "two init containers, one regular container": (
        POD_INIT2,
        {EXT: 1, EXT + "init": 2},
        CLASSES,
        [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
    ),
    "three init containers, one sidecar, one regular container": (
        POD_INIT3,
        {EXT: 1, EXT + "init": 2},
        CLASSES,
        [
            ("container-1-request-0", "classInit", 1),
            ("container-2-request-0", "classInit", 2),
            ("container-3-request-0", "class", 1),
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(REQUEST_CASES))
def test_requests(case: str) -> None:
    p, resources, classes, want = REQUEST_CASES[case]
    requests, _ = requests_and_mappings(p, resources, classes)
    got = []
    for r in requests:
        assert r.exactly is not None and r.exactly.allocation_mode == "ExactCount"
        got.append((r.name, r.exactly.device_class_name, r.exactly.count))
    assert got == want


MAPPING_CASES: dict[str, tuple[Pod, dict[str, int], list[tuple[str, str, str]]]] = {
    "one container, two requests": (
        POD1,
        {EXT: 1, EXT + "1": 2},
        [("con0", EXT, "container-0-request-0"), ("con0", EXT + "1", "container-0-request-1")],
    ),
    "one container, one explicit and one implicit request": (
        POD_IMPLICIT,
        {EXT: 1, EXT + "init": 2, IMPLICIT: 2},
        [
            ("init-con0", IMPLICIT, "container-0-request-0"),
            ("init-con0", EXT + "init", "container-0-request-1"),
        ],
    ),
    "two containers, two requests": (
        POD2,
        {EXT: 1, EXT + "1": 2},
        [("con0", EXT, "container-0-request-0"), ("con1", EXT + "1", "container-1-request-0")],
    ),
    "init containers share the largest request": (
        POD_INIT2,
        {EXT: 1, EXT + "init": 2},
        [
            ("con0", EXT, "container-2-request-0"),
            ("init-con0", EXT + "init", "container-1-request-0"),
            ("init-con1", EXT + "init", "container-1-request-0"),
        ],
    ),
    "an init container reuses a later sidecar's devices": (
        POD_INIT3,
        {EXT: 1, EXT + "init": 2},
        [
            ("con0", EXT, "container-3-request-0"),
            ("sidecar-con1", EXT + "init", "container-1-request-0"),
            ("init-con0", EXT + "init", "container-1-request-0"),
            ("init-con2", EXT + "init", "container-2-request-0"),
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(MAPPING_CASES))
def test_mappings(case: str) -> None:
    p, resources, want = MAPPING_CASES[case]
    _, mappings = requests_and_mappings(p, resources, CLASSES)
    assert mappings == want


def test_fractional_or_zero_requests_make_no_request() -> None:
    p = pod([_c("a", {EXT: "0"}), _c("b", {EXT: "500m"}), _c("c", {EXT: "2"})])
    requests, mappings = requests_and_mappings(p, {EXT: 2}, CLASSES)
    assert [(r.name, r.exactly and r.exactly.count) for r in requests] == [
        ("container-2-request-0", 2)
    ]
    assert mappings == [("c", EXT, "container-2-request-0")]


def _cls(name: str, ext: str | None = None, created: str | None = None) -> DeviceClass:
    raw: dict[str, Any] = {"metadata": {"name": name}, "spec": {}}
    if ext:
        raw["spec"]["extendedResourceName"] = ext
    if created:
        raw["metadata"]["creationTimestamp"] = created
    return decode(raw, DeviceClass)


def test_resolver_explicit_and_implicit_names() -> None:
    classes = {"a": _cls("a", EXT), "b": _cls("b")}
    r = ClassResolver()
    assert r.get(classes, EXT) is classes["a"]
    assert r.get(classes, CLASS_PREFIX + "a") is classes["a"]
    assert r.get(classes, CLASS_PREFIX + "b") is classes["b"]
    assert r.get(classes, "example.com/other") is None
    assert r.get({}, EXT) is None
    assert r.backed(classes, [(EXT, 1), ("example.com/other", 1), (CLASS_PREFIX + "b", 0)]) == {EXT}


def test_resolver_newest_class_wins_an_explicit_name_then_the_lower_name() -> None:
    old = _cls("zeta", EXT, "2026-01-01T00:00:00Z")
    new = _cls("omega", EXT, "2026-02-01T00:00:00Z")
    assert ClassResolver().get({"zeta": old, "omega": new}, EXT) is new
    tie_a = _cls("alpha", EXT, "2026-02-01T00:00:00Z")
    assert ClassResolver().get({"omega": new, "alpha": tie_a}, EXT) is tie_a


def test_resolver_follows_a_changing_plain_mapping() -> None:
    classes: dict[str, DeviceClass] = {}
    r = ClassResolver()
    assert r.get(classes, EXT) is None
    classes["a"] = _cls("a", EXT)
    assert r.get(classes, EXT) is classes["a"]  # a plain dict is read again every time


def test_dra_extended_names() -> None:
    assert is_dra_extended_name(EXT)
    assert is_dra_extended_name(CLASS_PREFIX + "gpu")
    assert not is_dra_extended_name("cpu")
    assert not is_dra_extended_name("kubernetes.io/something")
    assert not is_dra_extended_name("hugepages-2Mi")


def test_in_memory_claim_and_finding_the_created_one() -> None:
    p = POD1
    claim = in_memory_claim(p)
    meta = claim.metadata
    assert meta.name == IN_MEMORY_NAME and meta.generate_name == "p-extended-resources-"
    assert meta.annotations == {EXTENDED_CLAIM_ANNOTATION: "true"}
    assert [(o.kind, o.name, o.uid, o.controller) for o in meta.owner_references] == [
        ("Pod", "p", "pod-uid", True)
    ]
    assert meta.uid and in_memory_claim(p).metadata.uid != meta.uid  # a fresh temporary uid
    assert not claim.spec.devices.requests
    created = decode(
        {
            "metadata": {
                "name": "p-extended-resources-abcde",
                "namespace": "ns",
                "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
                "ownerReferences": [
                    {"kind": "Pod", "name": "p", "uid": "pod-uid", "controller": True}
                ],
            }
        },
        ResourceClaim,
    )
    not_annotated = decode(
        {"metadata": {"name": "x", "ownerReferences": [{"name": "p", "uid": "pod-uid"}]}},
        ResourceClaim,
    )
    other_pod = decode(
        {
            "metadata": {
                "name": "y",
                "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
                "ownerReferences": [{"name": "p", "uid": "other", "controller": True}],
            }
        },
        ResourceClaim,
    )
    assert find_extended_claim(p, [not_annotated, other_pod, created]) is created
    assert find_extended_claim(p, [not_annotated, other_pod]) is None
