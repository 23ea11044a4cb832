"""PodInfo's derived requests: worked out once per distinct resource spec."""

from __future__ import annotations

from typing import Any

from ksched.framework import types
from tests.factories import make_pod


def _c(name: str, restart: str | None = None, **requests: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "resources": {"requests": requests}}
    if restart:
        c["restartPolicy"] = restart
    return c


def test_replicas_share_requests_and_specs_that_differ_do_not() -> None:
    a, b = make_pod(cpu="250m", memory="1Gi"), make_pod(cpu="250m", memory="1Gi")
    c = make_pod(cpu="500m", memory="1Gi")
    assert a.requests is b.requests
    assert (a.non_zero_cpu, a.non_zero_mem) == (b.non_zero_cpu, b.non_zero_mem) == (250, 2**30)
    assert c.requests is not a.requests and c.requests.milli_cpu == 500
    # a limit stands in for a missing request: part of the key
    lim = make_pod(containers=[{"name": "c", "resources": {"limits": {"cpu": "250m"}}}])
    assert lim.requests.milli_cpu == 250 and lim.requests.memory == 0


def test_init_containers_overhead_and_sidecars_key_the_requests() -> None:
    init = [_c("i", cpu="2")]
    plain = make_pod(containers=[_c("c", cpu="1")], initContainers=init)
    sidecar = make_pod(
        containers=[_c("c", cpu="1")], initContainers=[_c("i", restart="Always", cpu="2")]
    )
    overhead = make_pod(containers=[_c("c", cpu="1")], initContainers=init, overhead={"cpu": "1"})
    two = make_pod(containers=[_c("c", cpu="1"), _c("d", cpu="1")])
    one = make_pod(containers=[_c("c", cpu="1")])
    assert plain.requests.milli_cpu == 2000  # max(init, sum(containers))
    assert sidecar.requests.milli_cpu == 3000  # a sidecar runs beside the containers
    assert overhead.requests.milli_cpu == 3000
    assert two.requests.milli_cpu == 2000 and one.requests.milli_cpu == 1000
    again = make_pod(containers=[_c("x", cpu="1")], initContainers=[_c("y", cpu="2")])
    assert again.requests is plain.requests  # container names do not matter


def test_errors_name_each_pod_and_are_not_shared() -> None:
    bad1, bad2 = make_pod("bad1", cpu="lots"), make_pod("bad2", cpu="lots")
    assert bad1.error is not None and "default/bad1" in bad1.error
    assert bad2.error is not None and "default/bad2" in bad2.error
    assert bad1.requests.milli_cpu == 0


def test_memo_is_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(types, "_REQUESTS_MEMO", {})
    monkeypatch.setattr(types, "_REQUESTS_MEMO_SIZE", 3)
    pods = [make_pod(cpu=f"{i + 1}m") for i in range(7)]
    assert [p.requests.milli_cpu for p in pods] == [1, 2, 3, 4, 5, 6, 7]
    assert len(types._REQUESTS_MEMO) <= 3


def test_pod_level_resources_key_the_requests() -> None:
    """Pods differing only in spec.resources never share requests, even single-container."""
    plain = make_pod(cpu="1")
    pod_level = make_pod(cpu="1", resources={"requests": {"cpu": "2"}})
    limits = make_pod(cpu="1", resources={"limits": {"memory": "1Gi"}})
    empty = make_pod(cpu="1", resources={})
    assert plain.requests.milli_cpu == 1000
    assert pod_level.requests.milli_cpu == 2000 and pod_level.requests is not plain.requests
    assert limits.requests.memory == 2**30 and limits.requests is not plain.requests
    assert empty.requests.milli_cpu == 1000
    again = make_pod(cpu="1", resources={"requests": {"cpu": "2"}})
    assert again.requests is pod_level.requests
    assert (again.score_cpu, again.score_mem) == (pod_level.score_cpu, pod_level.score_mem)


def test_assumed_copy_and_equal_versions_share_the_score_figures() -> None:
    p = make_pod(containers=[_c("a", memory="1Gi"), _c("b")], resources={"requests": {"cpu": "1"}})
    assert (p.non_zero_cpu, p.non_zero_mem) == (1000, 2**30)
    assert (p.score_cpu, p.score_mem) == (200, 2**30 + 200 * 2**20)
    later = p.with_pod(p.pod)
    later.share_derived(p)
    for copy in (p.assumed_on("n1"), later):
        # taken over, not worked out again on first use
        assert types._has(copy, "score_cpu") and types._has(copy, "score_mem")
        assert (copy.score_cpu, copy.score_mem) == (p.score_cpu, p.score_mem)


def test_raw_api_json_is_kept_as_bytes_and_decoded_only_when_asked() -> None:
    import msgspec

    from ksched.api.objects import Pod, decode
    from ksched.extender.client import pod_json

    PodInfo = types.PodInfo

    manifest = {
        "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c"}], "unknownField": {"x": 1}},
    }
    data = msgspec.json.encode(manifest)
    info = PodInfo(decode(manifest, Pod), data)
    assert pod_json(info) is data  # sent as received: no decode/encode round trip
    assert info.raw == manifest  # unknown fields included
    assert info.raw is info.raw  # decoded once
    assert msgspec.json.decode(pod_json(info)) == manifest
    moved = info.assumed_on("n1")
    assert moved.raw is info.raw and info.with_pod(moved.pod).raw == manifest
    plain = PodInfo(decode(manifest, Pod))
    assert plain.raw is None and plain.raw_json() is None
    assert msgspec.json.decode(pod_json(plain))["metadata"]["name"] == "p"


def test_swap_pod_replaces_the_pod_by_identity_wherever_it_is() -> None:
    """A confirmed version takes the assumed one's slot (first, middle or last of the
    node's pods, and in the affinity lists); the aggregates and generation stay; a pod
    not on the node changes nothing."""
    from tests.factories import make_node, make_node_info

    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}
            ]
        }
    }
    pods = [make_pod(f"p{i}", cpu="100m", affinity=anti if i % 2 else None) for i in range(7)]
    ni = make_node_info(make_node("n1"), list(pods))
    before = (ni.requested.milli_cpu, ni.generation, len(ni.pods_with_affinity))
    assert len(ni.pods_with_required_anti_affinity) == 3
    for i in (0, 3, 6):
        new = make_pod(f"p{i}", cpu="100m", affinity=anti if i % 2 else None)
        assert ni.swap_pod(pods[i], new)
        assert ni.pods[i] is new and pods[i] not in ni.pods
        if i % 2:
            assert new in ni.pods_with_required_anti_affinity
            assert not any(q is pods[i] for q in ni.pods_with_required_anti_affinity)
    assert (ni.requested.milli_cpu, ni.generation, len(ni.pods_with_affinity)) == before
    assert [p.name for p in ni.pods] == [f"p{i}" for i in range(7)]
    stranger = make_pod("p1", cpu="100m")  # equal name, another object: not on the node
    assert not ni.swap_pod(stranger, make_pod("p1"))
    assert ni.pods[1] is pods[1]
