"""pod_requests as kube-scheduler computes a pod's requests (resourcehelper.PodRequests,
NodeInfo's non-zero requests) and the resource-name classification helpers."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import InvalidObjectError, Pod, decode
from ksched.api.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    Resource,
    ResourceError,
    is_extended_resource,
    is_scalar_resource,
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
