"""pod_requests as kube-scheduler computes a pod's requests (resourcehelper.PodRequests,
NodeInfo's non-zero requests) and the resource-name classification helpers."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ksched.api.objects import InvalidObjectError, Pod, ResourceRequirements, decode
from ksched.api.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    Resource,
    ResourceError,
    is_extended_resource,
    is_scalar_resource,
    is_supported_pod_level_resource,
    pod_requests,
)

GI = 2**30
MI = 2**20


def c(
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    *,
    sidecar: bool = False,
    name: str = "c",
) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    out: dict[str, Any] = {"name": name, "resources": res}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def pod(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, Any] | None = None,
    name: str = "p",
) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    return decode({"kind": "Pod", "metadata": {"name": name, "namespace": "ns"}, "spec": spec}, Pod)


def cpu_of(p: Pod) -> int:
    return pod_requests(p).requests.milli_cpu


# ---- upstream TestPodResourceRequests (component-helpers/resource) ----------------------


@pytest.mark.parametrize(
    ("init", "containers", "overhead", "want_cpu", "want_mem"),
    [
        pytest.param(
            [c({"cpu": "4"})], [c({"cpu": "1"})], None, 4000, 0, id="larger init container"
        ),
        pytest.param(
            [c({"cpu": "2"})],
            [c({"cpu": "2"}), c({"cpu": "3"})],
            None,
            5000,
            0,
            id="larger containers",
        ),
        pytest.param(
            [c({"cpu": "2"}, {"cpu": "2"})],
            [c({"cpu": "2"}), c({"cpu": "3"})],
            {"cpu": "1", "memory": "1Gi"},
            6000,
            GI,
            id="pod overhead included",
        ),
        pytest.param(
            [c({"cpu": "1"}, sidecar=True)],
            [c({"cpu": "1"})],
            None,
            2000,
            0,
            id="restartable init container",
        ),
        # max(5, restartable init containers(3+2+1) + regular(1)) = 7
        pytest.param(
            [
                c({"cpu": "5"}),
                c({"cpu": "1"}, sidecar=True),
                c({"cpu": "2"}, sidecar=True),
                c({"cpu": "3"}, sidecar=True),
            ],
            [c({"cpu": "1"})],
            None,
            7000,
            0,
            id="multiple restartable init containers",
        ),
        # init-2 requires 5 + the previously running restartable init containers (1+2) = 8;
        # the restartable init container that starts after it doesn't count.
        pytest.param(
            [
                c({"cpu": "5"}),
                c({"cpu": "1"}, sidecar=True),
                c({"cpu": "2"}, sidecar=True),
                c({"cpu": "5"}),
                c({"cpu": "3"}, sidecar=True),
            ],
            [c({"cpu": "1"})],
            None,
            8000,
            0,
            id="multiple restartable and regular init containers",
        ),
        pytest.param(
            [c({"cpu": "10"}, sidecar=True), c({"cpu": "200"})],
            [c({"cpu": "100"})],
            None,
            210_000,
            0,
            id="restartable-init, init and regular",
        ),
    ],
)
def test_upstream_pod_requests_table(
    init: list[dict[str, Any]],
    containers: list[dict[str, Any]],
    overhead: dict[str, Any] | None,
    want_cpu: int,
    want_mem: int,
) -> None:
    r = pod_requests(pod(containers, init, overhead)).requests
    assert r.milli_cpu == want_cpu
    assert r.memory == want_mem


def test_sidecar_order_matters() -> None:
    # A regular init container only runs beside the sidecars declared before it.
    before = pod([c({"cpu": "1"})], [c({"cpu": "4"}, sidecar=True), c({"cpu": "3"})])
    after = pod([c({"cpu": "1"})], [c({"cpu": "3"}), c({"cpu": "4"}, sidecar=True)])
    assert cpu_of(before) == 7000  # max(1 + 4, 4 + 3)
    assert cpu_of(after) == 5000  # max(1 + 4, 3, 4)


def test_sidecar_memory_and_cpu_are_maxed_per_resource() -> None:
    p = pod(
        [c({"cpu": "1", "memory": "1Gi"})],
        [c({"cpu": "500m", "memory": "2Gi"}, sidecar=True), c({"cpu": "3", "memory": "1Gi"})],
    )
    r = pod_requests(p).requests
    # containers + sidecar = 1.5 cpu, 3Gi; init + sidecar = 3.5 cpu, 3Gi
    assert r.milli_cpu == 3500
    assert r.memory == 3 * GI


def test_sum_of_containers_and_every_resource_kind() -> None:
    p = pod(
        [
            c(
                {
                    "cpu": "250m",
                    "memory": "64Mi",
                    "ephemeral-storage": "1Gi",
                    "nvidia.com/gpu": "1",
                    "hugepages-2Mi": "4Mi",
                    "example.com/foo": "3",
                }
            ),
            c(
                {
                    "cpu": "0.75",
                    "memory": 64 * MI,
                    "ephemeral-storage": "1G",
                    "nvidia.com/gpu": 2,
                    "attachable-volumes-aws-ebs": "1",
                    "kubernetes.io/batch-hint": "2",
                }
            ),
        ]
    )
    r = pod_requests(p).requests
    assert r.milli_cpu == 1000
    assert r.memory == 128 * MI
    assert r.ephemeral_storage == GI + 10**9
    assert r.scalar == {
        "nvidia.com/gpu": 3,
        "hugepages-2Mi": 4 * MI,
        "example.com/foo": 3,
        "attachable-volumes-aws-ebs": 1,
        "kubernetes.io/batch-hint": 2,
    }
    assert r.allowed_pod_number == 0


def test_unknown_unprefixed_names_are_not_counted() -> None:
    r = pod_requests(pod([c({"cpu": "1", "foo": "5", "requests.example.com/x": "1"})])).requests
    assert r.scalar == {}
    assert r.milli_cpu == 1000


def test_overhead_is_added_to_requests_and_non_zero_requests() -> None:
    p = pod(
        [c({"cpu": "1", "memory": "1Gi"})],
        overhead={"cpu": "250m", "memory": "120Mi", "example.com/x": "1"},
    )
    pr = pod_requests(p)
    assert (pr.requests.milli_cpu, pr.requests.memory) == (1250, GI + 120 * MI)
    assert pr.requests.scalar == {"example.com/x": 1}
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == (1250, GI + 120 * MI)
    # Overhead is added on top of the defaults for containers without requests.
    pr = pod_requests(pod([c()], overhead={"cpu": "10m"}))
    assert pr.requests.milli_cpu == 10 and pr.requests.memory == 0
    assert pr.non_zero_milli_cpu == DEFAULT_MILLI_CPU_REQUEST + 10
    assert pr.non_zero_memory == DEFAULT_MEMORY_REQUEST


# ---- limits default missing requests (apiserver defaulting) ------------------------------


def test_limits_default_missing_requests() -> None:
    pr = pod_requests(pod([c(limits={"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"})]))
    assert pr.requests.milli_cpu == 2000
    assert pr.requests.memory == GI
    assert pr.requests.scalar == {"nvidia.com/gpu": 1}
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == (2000, GI)


def test_explicit_request_wins_over_limit() -> None:
    pr = pod_requests(pod([c({"cpu": "500m"}, {"cpu": "2", "memory": "1Gi"})]))
    assert pr.requests.milli_cpu == 500
    assert pr.requests.memory == GI  # defaulted from the limit


def test_limits_default_init_container_requests() -> None:
    assert cpu_of(pod([c({"cpu": "1"})], [c(limits={"cpu": "3"})])) == 3000


# ---- non-zero requests (scoring) ----------------------------------------------------------


def test_defaults_are_100m_and_200mi() -> None:
    assert DEFAULT_MILLI_CPU_REQUEST == 100
    assert DEFAULT_MEMORY_REQUEST == 200 * MI


@pytest.mark.parametrize(
    ("containers", "init", "want_cpu", "want_mem", "nz_cpu", "nz_mem"),
    [
        pytest.param([c()], None, 0, 0, 100, 200 * MI, id="requestless container"),
        pytest.param(
            [c({"cpu": "500m", "memory": "500Mi"})],
            None,
            500,
            500 * MI,
            500,
            500 * MI,
            id="1X container with requests",
        ),
        pytest.param(
            [c({"cpu": "500m", "memory": "500Mi"}), c({"cpu": "700m", "memory": "800Mi"})],
            None,
            1200,
            1300 * MI,
            1200,
            1300 * MI,
            id="2X container with requests",
        ),
        pytest.param(
            [c({"cpu": "0", "memory": "0"})], None, 0, 0, 0, 0, id="explicit zero stays zero"
        ),
        pytest.param([c({"cpu": "300m"})], None, 300, 0, 300, 200 * MI, id="only cpu set"),
        pytest.param([c({"memory": "1Gi"})], None, 0, GI, 100, GI, id="only memory set"),
        pytest.param(
            [c({"cpu": "300m"}), c()],
            None,
            300,
            0,
            400,
            400 * MI,
            id="default per container missing it",
        ),
        pytest.param(
            [c({"example.com/x": "1"})],
            None,
            0,
            0,
            100,
            200 * MI,
            id="extended resources do not count as cpu/memory",
        ),
        # Init containers get the defaults too before being max'd in.
        pytest.param(
            [c({"cpu": "50m", "memory": "10Mi"})],
            [c()],
            50,
            10 * MI,
            100,
            200 * MI,
            id="requestless init container",
        ),
        pytest.param(
            [c({"cpu": "50m", "memory": "10Mi"})],
            [c({"cpu": "0"})],
            50,
            10 * MI,
            50,
            200 * MI,
            id="init container with explicit zero cpu",
        ),
        pytest.param(
            [c()], [c(sidecar=True)], 0, 0, 200, 400 * MI, id="requestless sidecar adds defaults"
        ),
    ],
)
def test_non_zero_requests(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None,
    want_cpu: int,
    want_mem: int,
    nz_cpu: int,
    nz_mem: int,
) -> None:
    pr = pod_requests(pod(containers, init))
    assert (pr.requests.milli_cpu, pr.requests.memory) == (want_cpu, want_mem)
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == (nz_cpu, nz_mem)


def test_no_containers_at_all() -> None:
    pr = pod_requests(pod([]))
    assert pr.requests.is_zero()
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == (0, 0)


# ---- rounding happens once, on the pod total (Quantity arithmetic) -----------------------


def test_sub_milli_requests_are_summed_before_rounding() -> None:
    # Ten containers of 100u: upstream sums the quantities (1m) before MilliValue().
    pr = pod_requests(pod([c({"cpu": "100u", "memory": "0.5"}) for _ in range(10)]))
    assert pr.requests.milli_cpu == 1
    assert pr.requests.memory == 5
    assert pr.non_zero_milli_cpu == 1


def test_rounding_up_of_the_total() -> None:
    pr = pod_requests(pod([c({"cpu": "1n", "memory": "1m", "example.com/x": "0.1"})]))
    assert pr.requests.milli_cpu == 1
    assert pr.requests.memory == 1
    assert pr.requests.scalar == {"example.com/x": 1}
    assert cpu_of(pod([c({"cpu": "1.0005"})])) == 1001


def test_yaml_float_requests_are_exact() -> None:
    assert cpu_of(pod([c({"cpu": 0.1}), c({"cpu": 0.2})])) == 300


# ---- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "field"),
    [
        (
            pod([c({"cpu": "1"}), c({"memory": "1GiB"})]),
            "spec.containers[1].resources.requests.memory",
        ),
        (pod([c()], [c({"cpu": "abc"})]), "spec.initContainers[0].resources.requests.cpu"),
        (pod([c(limits={"cpu": "x"})]), "spec.containers[0].resources.limits.cpu"),
        (
            pod([c({"cpu": "1"}, {"nvidia.com/gpu": "1x"})]),
            "spec.containers[0].resources.limits.nvidia.com/gpu",
        ),
        (pod([c()], overhead={"memory": "lots"}), "spec.overhead.memory"),
    ],
)
def test_resource_error_names_pod_and_field(p: Pod, field: str) -> None:
    with pytest.raises(ResourceError) as ei:
        pod_requests(p)
    msg = str(ei.value)
    assert msg.startswith("Pod ns/p: ")
    assert field in msg
    assert isinstance(ei.value, InvalidObjectError)


def test_resource_from_list_names_the_field() -> None:
    with pytest.raises(ResourceError, match=r"Node n1: status\.allocatable\.cpu: "):
        Resource.from_list({"cpu": "four"}, "Node n1: status.allocatable")
    r = Resource.from_list(
        {
            "cpu": "3500m",
            "memory": "1Gi",
            "pods": "110",
            "ephemeral-storage": "10Gi",
            "nvidia.com/gpu": 2,
            "other": "1",
        }
    )
    assert r.to_dict() == {
        "cpu": 3500,
        "memory": GI,
        "ephemeral-storage": 10 * GI,
        "pods": 110,
        "nvidia.com/gpu": 2,
    }


# ---- classification -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("cpu", False, False),
        ("memory", False, False),
        ("ephemeral-storage", False, False),
        ("pods", False, False),
        ("foo", False, False),
        ("nvidia.com/gpu", True, True),
        ("example.com/foo-bar_baz.1", True, True),
        ("kubernetes.io/batch-hint", False, True),  # prefixed native
        ("node.kubernetes.io/x", False, True),
        ("hugepages-2Mi", False, True),
        ("hugepages-1Gi", False, True),
        ("attachable-volumes-csi-x", False, True),
        ("requests.example.com/foo", False, False),
        # Not a qualified name once prefixed with "requests." (IsQualifiedName).
        ("Example.com/foo", False, False),
        ("example.com/", False, False),
        ("example.com/-foo", False, False),
        ("a/b/c", False, False),
        ("example.com/" + "x" * 64, False, False),
        ("example.com/" + "x" * 63, True, True),
    ],
)
def test_resource_name_classification(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource(name) is extended
    assert is_scalar_resource(name) is scalar


def test_resource_vector_arithmetic() -> None:
    a = Resource(1000, GI, 0, 0, {"x/y": 1})
    b = Resource(500, 2 * GI, 5, 1, {"x/y": 2, "a/b": 1})
    s = a.clone()
    s.add(b)
    assert s.to_dict() == {
        "cpu": 1500,
        "memory": 3 * GI,
        "ephemeral-storage": 5,
        "pods": 1,
        "x/y": 3,
        "a/b": 1,
    }
    s.sub(b)
    assert s == Resource(1000, GI, 0, 0, {"x/y": 1, "a/b": 0})
    m = a.clone()
    m.set_max(b)
    assert (m.milli_cpu, m.memory, m.scalar) == (1000, 2 * GI, {"x/y": 2, "a/b": 1})
    assert a.scalar == {"x/y": 1}  # clone did not share the dict
    assert a.get("x/y") == 1 and a.get("cpu") == 1000 and a.get("none/such") == 0


# ---- pod-level resources (PodLevelResources) -------------------------------------------


def pl_pod(
    containers: list[dict[str, Any]],
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, Any] | None = None,
) -> Pod:
    """A pod with ``spec.resources`` (pod-level requests and limits)."""
    p = pod(containers, init, overhead)
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    spec = msgspec.structs.replace(p.spec, resources=decode(res, ResourceRequirements))
    return msgspec.structs.replace(p, spec=spec)


HP2, HP1G = "hugepages-2Mi", "hugepages-1Gi"


@pytest.mark.parametrize(
    ("name", "expected"),
    [("cpu", True), ("memory", True), ("ephemeral-storage", False), (HP2, True), (HP1G, True)],
)
def test_supported_pod_level_resources(name: str, expected: bool) -> None:
    """Upstream TestIsSupportedPodLevelResource."""
    assert is_supported_pod_level_resource(name) is expected


MINI = {"cpu": "2m", "memory": "3Mi"}
INIT = {"cpu": "4m", "memory": "5Mi"}
BIG_INIT = {"cpu": "8m", "memory": "6Mi"}


# Upstream TestPodLevelResourceRequests (SkipPodLevelResources=false; ksched has the gate
# on). The unsupported resource is ephemeral-storage here, upstream's "storage" being a
# name the scheduler's Resource does not count.
@pytest.mark.parametrize(
    ("pl_requests", "pl_limits", "containers", "init", "want"),
    [
        pytest.param(None, None, [], None, {}, id="nil"),
        pytest.param({"memory": "2Mi"}, None, [], None, {"memory": 2 * MI}, id="pod memory"),
        pytest.param(
            {"memory": "2Mi"},
            None,
            [c({"cpu": "2m"})],
            None,
            {"memory": 2 * MI, "cpu": 2},
            id="pod level memory and container level cpu",
        ),
        pytest.param(
            {"ephemeral-storage": "2Mi"},
            None,
            [c({"ephemeral-storage": "3Mi"})],
            None,
            {"ephemeral-storage": 3 * MI},
            id="unsupported resource at both levels",
        ),
        pytest.param(
            {"ephemeral-storage": "2Mi"},
            None,
            [c({"memory": "3Mi"})],
            None,
            {"memory": 3 * MI},
            id="unsupported resource at pod level",
        ),
        pytest.param(None, None, [c(MINI)], None, {"memory": 3 * MI, "cpu": 2}, id="containers"),
        pytest.param(
            {"memory": "6Mi", "cpu": "8m"},
            None,
            [c(MINI)],
            None,
            {"memory": 6 * MI, "cpu": 8},
            id="both levels",
        ),
        pytest.param(
            None, None, [c(MINI)], [c(INIT)], {"memory": 5 * MI, "cpu": 4}, id="init container"
        ),
        pytest.param(
            None,
            None,
            [c(MINI)],
            [c(INIT, sidecar=True)],
            {"memory": 8 * MI, "cpu": 6},
            id="sidecar container",
        ),
        pytest.param(
            None,
            None,
            [c(MINI)],
            [c(INIT, sidecar=True), c(BIG_INIT)],
            {"memory": 11 * MI, "cpu": 12},
            id="init and sidecar containers",
        ),
        pytest.param(
            {"memory": "15Mi", "cpu": "18m"},
            None,
            [c(MINI)],
            [c(INIT, sidecar=True), c(BIG_INIT)],
            {"memory": 15 * MI, "cpu": 18},
            id="pod level with init and sidecar containers",
        ),
        pytest.param(
            {"memory": "10Mi", HP2: "2Mi"},
            {HP2: "2Mi"},
            [],
            None,
            {"memory": 10 * MI, HP2: 2 * MI},
            id="hugepages single page size",
        ),
        pytest.param(
            {"cpu": "1", HP2: "2Mi", HP1G: "1Gi"},
            {HP2: "2Mi", HP1G: "1Gi"},
            [],
            None,
            {"cpu": 1000, HP2: 2 * MI, HP1G: GI},
            id="hugepages multiple page sizes",
        ),
        pytest.param(
            {"cpu": "1", HP2: "10Mi"},
            {HP2: "10Mi"},
            [c({HP2: "6Mi"}, {HP2: "6Mi"})],
            None,
            {"cpu": 1000, HP2: 10 * MI},
            id="hugepages at both levels",
        ),
        pytest.param(
            {"cpu": "1", HP2: "10Mi", HP1G: "2Gi"},
            {HP2: "10Mi", HP1G: "2Gi"},
            [c({"cpu": "1", HP1G: "2Gi"}, {HP1G: "2Gi"})],
            None,
            {"cpu": 1000, HP2: 10 * MI, HP1G: 2 * GI},
            id="hugepages multiple page sizes at both levels",
        ),
        pytest.param(
            {"cpu": "1", HP2: "10Mi"},
            {HP2: "10Mi"},
            [c({"memory": "4Mi", HP1G: "1Gi"}, {HP1G: "1Gi"})],
            None,
            {"cpu": 1000, "memory": 4 * MI, HP2: 10 * MI, HP1G: GI},
            id="hugepage sizes split between pod and container level",
        ),
    ],
)
def test_pod_level_requests_table(
    pl_requests: dict[str, Any] | None,
    pl_limits: dict[str, Any] | None,
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None,
    want: dict[str, int],
) -> None:
    p = pl_pod(containers, pl_requests, pl_limits, init)
    got = {k: v for k, v in pod_requests(p).requests.to_dict().items() if v}
    assert got == want


# Upstream TestPodInfoCalculateResources (pod-level cases): what a NodeInfo accounts.
@pytest.mark.parametrize(
    ("pl_requests", "containers", "init", "want", "non_zero"),
    [
        pytest.param(
            {"cpu": "1200m", "memory": "1200Mi"},
            [c({"cpu": "500m", "memory": "500Mi"})],
            [c({"cpu": "500m", "memory": "500Mi"})],
            {"cpu": 1200, "memory": 1200 * MI},
            (1200, 1200 * MI),
            id="container and init container with pod-level requests",
        ),
        pytest.param(
            {"cpu": "1200m", "memory": "1200Mi"},
            [c({"cpu": "500m", "memory": "500Mi"})],
            [c({"cpu": "500m", "memory": "500Mi"}, sidecar=True)],
            {"cpu": 1200, "memory": 1200 * MI},
            (1200, 1200 * MI),
            id="container and sidecar container with pod-level requests",
        ),
        pytest.param(
            {"memory": "1200Mi"},
            [c()],
            [c()],
            {"memory": 1200 * MI},
            (DEFAULT_MILLI_CPU_REQUEST, 1200 * MI),
            id="pod-level memory requests",
        ),
        pytest.param(
            {"cpu": "500m"},
            [c()],
            [c()],
            {"cpu": 500},
            (500, DEFAULT_MEMORY_REQUEST),
            id="pod-level cpu requests",
        ),
        pytest.param(
            {"cpu": "500m"},
            [c({"ephemeral-storage": "800Mi"})],
            [c({"ephemeral-storage": "500Mi"})],
            {"cpu": 500, "ephemeral-storage": 800 * MI},
            (500, DEFAULT_MEMORY_REQUEST),
            id="unsupported container resources and pod-level supported resources",
        ),
        # Not upstream's table: pod-level requests naming only unsupported resources are
        # not pod-level requests, so every container gets the defaults as usual.
        pytest.param(
            {"ephemeral-storage": "1Gi"},
            [c({"cpu": "300m"}), c()],
            None,
            {"cpu": 300},
            (400, 2 * DEFAULT_MEMORY_REQUEST),
            id="only unsupported pod-level requests",
        ),
    ],
)
def test_pod_level_non_zero_requests(
    pl_requests: dict[str, Any],
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None,
    want: dict[str, int],
    non_zero: tuple[int, int],
) -> None:
    pr = pod_requests(pl_pod(containers, pl_requests, init=init))
    assert {k: v for k, v in pr.requests.to_dict().items() if v} == want
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == non_zero


def test_fit_scorer_ignores_pod_level_requests() -> None:
    """NodeResourcesFit's calculatePodResourceRequest runs without pod-level resources
    (its scorer never sets enablePodLevelResources): each container's missing cpu/memory
    defaulted, pod-level cpu ignored. A NodeInfo defaults only what the pod requests
    nowhere. Found by the differential harness against kube-scheduler v1.36.3."""
    pr = pod_requests(pl_pod([c({"memory": "1Gi"}), c()], {"cpu": "1"}))
    assert (pr.requests.milli_cpu, pr.requests.memory) == (1000, GI)
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == (1000, GI)
    assert (pr.score_milli_cpu, pr.score_memory) == (
        2 * DEFAULT_MILLI_CPU_REQUEST,
        GI + DEFAULT_MEMORY_REQUEST,
    )
    # Without pod-level requests both are the same.
    pr = pod_requests(pod([c({"memory": "1Gi"}), c()]))
    assert (pr.score_milli_cpu, pr.score_memory) == (pr.non_zero_milli_cpu, pr.non_zero_memory)
    assert (pr.score_milli_cpu, pr.score_memory) == (200, GI + DEFAULT_MEMORY_REQUEST)


def test_overhead_is_added_to_pod_level_requests() -> None:
    p = pl_pod(
        [c({"cpu": "2"})],
        {"cpu": "1", "memory": "1Gi"},
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    pr = pod_requests(p)
    want = (1250, GI + 120 * MI)
    assert (pr.requests.milli_cpu, pr.requests.memory) == want
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == want
    # Fit's scorer: the container (2 cpu, memory defaulted) plus overhead
    assert (pr.score_milli_cpu, pr.score_memory) == (2250, DEFAULT_MEMORY_REQUEST + 120 * MI)


# ---- pod-level defaulting, as the apiserver does it -------------------------------------


def test_pod_level_limits_default_the_requests() -> None:
    pr = pod_requests(pl_pod([c(), c()], limits={"cpu": "2", "memory": "1Gi"}))
    assert (pr.requests.milli_cpu, pr.requests.memory) == (2000, GI)
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == (2000, GI)
    # Fit's scorer: two containers with nothing requested, both defaulted
    assert (pr.score_milli_cpu, pr.score_memory) == (
        2 * DEFAULT_MILLI_CPU_REQUEST,
        2 * DEFAULT_MEMORY_REQUEST,
    )


def test_container_requests_win_over_pod_level_limits() -> None:
    """With pod-level limits, cpu/memory the containers request default the pod-level
    request to their aggregate. Fit's scorer ignores pod-level resources and defaults
    each container's missing cpu/memory instead."""
    pr = pod_requests(pl_pod([c({"cpu": "100m"}), c()], limits={"cpu": "2", "memory": "1Gi"}))
    assert (pr.requests.milli_cpu, pr.requests.memory) == (100, GI)
    assert (pr.score_milli_cpu, pr.score_memory) == (
        100 + DEFAULT_MILLI_CPU_REQUEST,
        2 * DEFAULT_MEMORY_REQUEST,
    )
    # Pod-level requests alone default nothing: the second container's default counts.
    pr = pod_requests(pl_pod([c({"cpu": "100m"}), c()], {"memory": "1Gi"}))
    assert (pr.requests.milli_cpu, pr.requests.memory) == (100, GI)
    assert (pr.score_milli_cpu, pr.score_memory) == (200, 2 * DEFAULT_MEMORY_REQUEST)


def test_container_hugepage_limits_become_pod_level_limits() -> None:
    """defaultHugePagePodLimits: the containers' hugepage limits give the pod limits, which
    then default the pod-level cpu/memory requests from the containers."""
    hp = c({"cpu": "100m", HP2: "4Mi"}, {HP2: "4Mi"})
    pr = pod_requests(pl_pod([hp, c()], {"memory": "1Gi"}))
    assert pr.requests.scalar == {HP2: 4 * MI}
    assert (pr.requests.milli_cpu, pr.requests.memory) == (100, GI)
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == (100, GI)
    # A pod-level hugepage request stops that defaulting.
    pr = pod_requests(pl_pod([hp, c()], {"memory": "1Gi", HP2: "6Mi"}))
    assert pr.requests.scalar == {HP2: 6 * MI}
    assert (pr.non_zero_milli_cpu, pr.non_zero_memory) == (100, GI)
    # Fit's scorer sees neither: the containers, each defaulted
    assert (pr.score_milli_cpu, pr.score_memory) == (200, 2 * DEFAULT_MEMORY_REQUEST)


def test_pod_level_error_names_the_field() -> None:
    with pytest.raises(ResourceError, match=r"^Pod ns/p: spec\.resources\.requests\.cpu: "):
        pod_requests(pl_pod([c()], {"cpu": "lots"}))
    with pytest.raises(ResourceError, match=r"^Pod ns/p: spec\.resources\.limits\.memory: "):
        pod_requests(pl_pod([c()], limits={"memory": "1GiB"}))


# ---- int64 boundaries ---------------------------------------------------------------------

MAX64, MIN64 = 2**63 - 1, -(2**63)


def test_pod_totals_saturate_after_exact_sums() -> None:
    # Upstream adds Quantities exactly and only converts the total (MilliValue saturates).
    pr = pod_requests(pod([c({"cpu": "1e18", "memory": "8Ei"}), c({"cpu": "1e18"})]))
    assert pr.requests.milli_cpu == MAX64 and pr.requests.memory == MAX64
    assert pr.non_zero_milli_cpu == MAX64 and pr.score_milli_cpu == MAX64
    # ... so a huge request cancelled by a huge negative one is exactly what is left
    pr = pod_requests(pod([c({"cpu": "1e18"}), c({"cpu": "-1e18"}), c({"cpu": "1n"})]))
    assert pr.requests.milli_cpu == 1
    pr = pod_requests(pod([c({"cpu": "-1e18", "example.com/gpu": "-8Ei"})]))
    assert pr.requests.milli_cpu == MIN64 and pr.requests.scalar["example.com/gpu"] == -MAX64
    pr = pod_requests(pod([c({"cpu": "1n", "memory": "1n"})]))
    assert (pr.requests.milli_cpu, pr.requests.memory) == (1, 1)
    assert pod_requests(pod([c({"cpu": "9223372036854775807m"})])).requests.milli_cpu == MAX64


def test_allocatable_saturates_and_vector_sums_wrap_like_int64() -> None:
    r = Resource.from_list({"cpu": "8Ei", "memory": "1e19", "pods": "8Ei", "x.io/y": "-1e19"})
    assert (r.milli_cpu, r.memory, r.allowed_pod_number) == (MAX64, MAX64, MAX64)
    assert r.scalar == {"x.io/y": MIN64}
    s = r.clone()
    s.add(r)  # Go's int64 +=: (2**63 - 1) * 2 wraps to -2
    assert (s.milli_cpu, s.scalar["x.io/y"]) == (-2, 0)
    s.sub(r)  # and wraps back exactly
    assert s == r
