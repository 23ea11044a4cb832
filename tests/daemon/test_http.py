"""The daemon's HTTP endpoints: health, metrics, configz, debug, and 4xx JSON on bad input."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from ksched.cluster import APIClient
from ksched.config import default_config
from ksched.daemon import SchedulerDaemon
from ksched.daemon.http import DebugServer
from ksched.features import set_feature_gates
from ksched.metrics import SchedulerMetrics
from ksched.testing import TestAPIServer

from .conftest import CLUSTER, FakeDaemon, simulated

Response = tuple[int, str, str]  # status, content type, body


def serve(daemon: FakeDaemon, *requests: tuple[str, str]) -> list[Response]:
    """Start a DebugServer for ``daemon`` on a free port and make the requests in order."""

    async def main() -> list[Response]:
        srv = DebugServer(daemon, "127.0.0.1", 0)  # type: ignore[arg-type]
        await srv.start()
        out = []
        try:
            async with aiohttp.ClientSession() as s:
                for method, path in requests:
                    async with s.request(method, srv.url + path) as r:
                        out.append((r.status, r.content_type, await r.text()))
        finally:
            await srv.stop()
        return out

    return anyio.run(main)


def one(daemon: FakeDaemon, path: str, method: str = "GET") -> Response:
    return serve(daemon, (method, path))[0]


@pytest.fixture(scope="module")
def daemon() -> FakeDaemon:
    m = SchedulerMetrics(seed=0)
    return FakeDaemon(simulated(m), metrics=m)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/nope", 404),
        ("GET", "/debug", 404),
        ("GET", "/debug/queue/extra", 404),
        ("POST", "/metrics", 405),
        ("DELETE", "/debug/queue", 405),
        ("GET", "/debug/explain", 400),
        ("GET", "/debug/explain?pod=", 400),
        ("GET", "/debug/explain?pod=justname", 400),
        ("GET", "/debug/explain?pod=a/b/c", 400),
        ("GET", "/debug/explain?pod=/x", 400),
        ("GET", "/debug/explain?pod=a/b&pod=c/d", 400),
        ("GET", "/debug/explain?pod=default/small&verbose=1", 400),
        ("GET", "/debug/explain?pod=default/nosuchpod", 404),
        ("GET", "/debug/queue?x=1", 400),
        ("GET", "/debug/cache?node=n1", 400),
    ],
)
def test_bad_requests_get_json_errors(
    daemon: FakeDaemon, method: str, path: str, status: int
) -> None:
    got, ctype, body = one(daemon, path, method)
    assert got == status
    assert ctype == "application/json"
    err = json.loads(body)
    assert set(err) == {"error"} and err["error"]
    assert "Traceback" not in body


def test_health_endpoints(daemon: FakeDaemon) -> None:
    assert one(daemon, "/healthz")[::2] == (200, "ok")
    assert one(daemon, "/livez")[::2] == (200, "ok")
    assert one(daemon, "/readyz")[::2] == (200, "ok")
    status, _, body = one(daemon, "/readyz?verbose")
    assert status == 200
    assert body.splitlines() == [
        "[+]ping ok",
        "[+]informer-sync ok",
        "[+]shutdown ok",
        "readyz check passed",
    ]


def test_readyz_503_until_synced_and_while_stopping() -> None:
    d = FakeDaemon(None, synced=False)
    status, _, body = one(d, "/readyz")
    assert status == 503
    assert "[-]informer-sync failed: informers have not synced yet" in body
    assert body.rstrip().endswith("readyz check failed")
    assert one(d, "/healthz")[0] == 200  # alive, just not ready
    assert one(d, "/readyz?exclude=informer-sync")[0] == 200
    d.synced, d.stopping = True, True
    assert one(d, "/readyz")[0] == 503
    # debug endpoints before the scheduler exists
    status, ctype, body = one(d, "/debug/queue")
    assert (status, ctype) == (503, "application/json") and "error" in json.loads(body)


def test_metrics_endpoint(daemon: FakeDaemon) -> None:
    status, ctype, body = one(daemon, "/metrics")
    assert status == 200 and ctype == "text/plain"
    assert 'scheduler_schedule_attempts_total{profile="ksched",result="scheduled"} 2.0' in body
    assert 'scheduler_pending_pods{queue="unschedulable"} 1.0' in body


def test_configz(daemon: FakeDaemon) -> None:
    status, ctype, body = one(daemon, "/configz")
    assert (status, ctype) == (200, "application/json")
    out = json.loads(body)
    cfg = out["componentconfig"]
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    assert cfg["profiles"][0]["schedulerName"] == "ksched"
    assert "client" not in out  # no API client to describe


def test_configz_shows_the_client_settings_in_effect(tmp_path: Path) -> None:
    """The kubeconfig given to the client (not the config file's empty one), the rate limits
    and content type it really uses, and the server URL."""

    async def main() -> dict[str, Any]:
        async with TestAPIServer() as srv:
            kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
            client = await APIClient.from_kubeconfig(kubeconfig, qps=7, burst=9)
            try:
                cfg = default_config()
                assert cfg.client_connection.kubeconfig == ""
                async with (
                    SchedulerDaemon(cfg, client=client, port=0) as d,
                    aiohttp.ClientSession() as s,
                    s.get(d.url + "/configz") as r,
                ):
                    return dict(await r.json())
            finally:
                await client.close()

    out = anyio.run(main)
    assert out["componentconfig"]["clientConnection"] == {
        "kubeconfig": str(tmp_path / "kubeconfig"),
        "qps": 7.0,
        "burst": 9,
        "contentType": "application/json",
        "acceptContentTypes": "application/json",
    }
    client = out["client"]
    assert client["server"].startswith("http://127.0.0.1:")
    assert client["kubeconfig"] == str(tmp_path / "kubeconfig")
    assert (client["source"], client["qps"], client["burst"]) == ("kubeconfig", 7.0, 9)


def test_configz_shows_the_feature_gates_in_effect(daemon: FakeDaemon) -> None:
    out = json.loads(one(daemon, "/configz")[2])
    assert out["emulatedVersion"] == "1.37"
    assert out["featureGates"]["OpportunisticBatching"] is True
    v136 = default_config(set_feature_gates([], ["1.36"]))
    out = json.loads(one(dataclasses.replace(daemon, config=v136), "/configz")[2])
    assert out["emulatedVersion"] == "1.36"
    assert "SidecarContainers" in out["featureGates"]  # 1.36's gates (gone in 1.37)
    gates = set_feature_gates(["OpportunisticBatching=false,StorageCapacityScoring=true"], ["1.36"])
    cfg = default_config(gates)
    out = json.loads(one(dataclasses.replace(daemon, config=cfg), "/configz")[2])
    assert out["featureGates"] == gates.effective()
    assert out["featureGates"]["OpportunisticBatching"] is False
    assert len(out["featureGates"]) > 200  # every gate, not only those set
    vb = [
        pc
        for pc in out["componentconfig"]["profiles"][0]["pluginConfig"]
        if pc["name"] == "VolumeBinding"
    ]
    assert vb[0]["args"]["shape"]  # defaulted under the gate


ZPAGE_WARNING = (
    "Warning: This endpoint is not meant to be machine parseable, has no formatting "
    "compatibility guarantees and is for debugging purposes only.\n"
)


def test_flagz_lists_the_command_line_and_goes_with_its_gate() -> None:
    """``ksched run``'s flags (``daemon.main._flags``) as kube-scheduler's /flagz text (the
    gate flags in its spelling: kube-scheduler v1.36.3 shows
    ``feature-gates=:OpportunisticBatching=false`` and ``emulated-version=[]``); 404 with
    ComponentFlagz off."""
    from ksched.cli import build_parser
    from ksched.daemon.main import _flags

    args = build_parser().parse_args(
        ["run", "--feature-gates", "OpportunisticBatching=false", "--feature-gates", "kube:A=true"]
    )
    flags = _flags(args)
    assert flags["feature-gates"] == ":OpportunisticBatching=false,kube:A=true"
    assert flags["emulated-version"] == "[]" and flags["secure-port"] == "10259"
    assert "fn" not in flags
    args = build_parser().parse_args(["run", "--emulated-version", "1.36"])
    assert _flags(args)["emulated-version"] == "[1.36]"
    d = FakeDaemon(None, flags={"feature-gates": ":A=true", "v": "2"})
    status, ctype, body = one(d, "/flagz")
    assert (status, ctype) == (200, "text/plain")
    assert body == "\nksched flagz\n" + ZPAGE_WARNING + "feature-gates=:A=true\nv=2\n"
    off = default_config(set_feature_gates(["ComponentFlagz=false"]))
    status, ctype, body = one(FakeDaemon(None, config=off), "/flagz")
    assert (status, ctype) == (404, "application/json") and "error" in json.loads(body)


def test_statusz_as_kube_schedulers_and_goes_with_its_gate() -> None:
    """Upstream's statusz text: header, then Started/Up/<runtime> version/Binary
    version/Emulation version/Paths, one per line."""
    status, ctype, body = one(FakeDaemon(None), "/statusz")
    assert (status, ctype) == (200, "text/plain")
    head, rows = body.split(ZPAGE_WARNING)
    assert head == "\nksched statusz\n"
    lines = rows.splitlines()
    assert lines[0] == ""
    names = [ln.split("  ")[0] for ln in lines[1:]]
    assert names == [
        "Started",
        "Up",
        "Python version",
        "Binary version",
        "Emulation version",
        "Paths",
    ]
    assert re.fullmatch(r"Up  0 hr 00 min 0\d sec", lines[2])
    assert lines[4].startswith("Binary version  1.37.2 (ksched ")
    assert lines[5] == "Emulation version  1.37"
    assert "/configz" in lines[6] and "/flagz" in lines[6]
    # at --emulated-version 1.36: the binary stays v1.37.2's, as kube-scheduler's does
    v136 = default_config(set_feature_gates([], ["1.36"]))
    lines = one(FakeDaemon(None, config=v136), "/statusz")[2].split(ZPAGE_WARNING)[1].splitlines()
    assert lines[4].startswith("Binary version  1.37.2 (ksched ")
    assert lines[5] == "Emulation version  1.36"
    off = default_config(set_feature_gates(["ComponentStatusz=false"]))
    assert one(FakeDaemon(None, config=off), "/statusz")[0] == 404


def test_a_daemon_without_flags_shows_its_gate_flags_on_flagz() -> None:
    gates = set_feature_gates(["OpportunisticBatching=false"])
    d = SchedulerDaemon(default_config(gates), kubeconfig="/nonexistent")
    assert d.flags == {"emulated-version": "[]", "feature-gates": ":OpportunisticBatching=false"}


RFC3339_MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def _wall(text: str) -> dt.datetime:
    assert RFC3339_MICRO.fullmatch(text), text
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_debug_times_are_rfc3339_wall_clock_timestamps(daemon: FakeDaemon) -> None:
    """The scheduler's clock is monotonic (virtual in a simulation): /debug shows the wall
    clock moments its times stand for."""
    q = json.loads(one(daemon, "/debug/queue")[2])
    now = _wall(q["now"])
    assert abs((now - dt.datetime.now(dt.UTC)).total_seconds()) < 60
    [row] = q["unschedulable"]
    assert _wall(row["initialAttemptTimestamp"]) <= _wall(row["timestamp"]) <= now
    assert _wall(row["backoffExpiry"]) > _wall(row["timestamp"])  # 1 s initial backoff
    c = json.loads(one(daemon, "/debug/cache")[2])
    assert abs((_wall(c["now"]) - now).total_seconds()) < 60


def test_debug_output_names_no_internal_pseudo_plugin() -> None:
    """A pod whose own fields are broken waits for an update, rejected by no plugin: it is
    shown with its error, not with the queue's internal rejector name."""
    bad = (
        "- {apiVersion: v1, kind: Pod, metadata: {name: bad, namespace: default, uid: b1},\n"
        "   spec: {schedulerName: ksched, containers: [{name: c, resources: "
        "{requests: {cpu: abc}}}]}}\n"
    )
    m = SchedulerMetrics(seed=0)
    d = FakeDaemon(simulated(m, CLUSTER + bad), metrics=m)
    queue, explain, metrics = (
        r[2]
        for r in serve(
            d,
            ("GET", "/debug/queue"),
            ("GET", "/debug/explain?pod=default/bad"),
            ("GET", "/metrics"),
        )
    )
    row = next(r for r in json.loads(queue)["unschedulable"] if r["pod"] == "default/bad")
    assert row["unschedulablePlugins"] == [] and "abc" in row["podError"]
    assert json.loads(explain)["unschedulablePlugins"] == []
    for body in (queue, explain, metrics):
        assert "__invalid__" not in body and '"__' not in body


def test_debug_queue_and_cache(daemon: FakeDaemon) -> None:
    status, _, body = one(daemon, "/debug/queue")
    q = json.loads(body)
    assert status == 200
    assert [p["pod"] for p in q["unschedulable"]] == ["default/huge"]
    assert q["unschedulable"][0]["unschedulablePlugins"] == ["NodeResourcesFit"]
    status, _, body = one(daemon, "/debug/cache")
    c = json.loads(body)
    assert status == 200
    assert sorted(c["nodes"]) == ["n1", "n2"]
    assert sorted(p for n in c["nodes"].values() for p in n["pods"]) == [
        "default/mid",
        "default/small",
    ]


def test_explain_recomputes_without_side_effects(daemon: FakeDaemon) -> None:
    assert daemon.sim is not None
    sched = daemon.sim.sched
    before = (
        sched.next_start_node_index,
        sched.rng.getstate(),
        sched.queue.dump()["counts"],
        sorted(p.key for p in sched.cache.list_pods()),
    )
    attempts = daemon.metrics.registry.get_sample_value(
        "scheduler_framework_extension_point_duration_seconds_count",
        {"extension_point": "Filter", "status": "Unschedulable", "profile": "ksched"},
    )
    status, _, body = one(daemon, "/debug/explain?pod=default/huge")
    assert status == 200
    out: dict[str, Any] = json.loads(body)
    assert out["queue"] == "unschedulable"
    assert out["unschedulablePlugins"] == ["NodeResourcesFit"]
    ex = out["explain"]
    assert ex["result"] == "Unschedulable" and ex["node"] is None
    assert ex["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert set(ex["filter"]) == {"n1", "n2"}
    assert "Insufficient cpu" in ex["filter"]["n1"]["NodeResourcesFit"]
    after = (
        sched.next_start_node_index,
        sched.rng.getstate(),
        sched.queue.dump()["counts"],
        sorted(p.key for p in sched.cache.list_pods()),
    )
    assert after == before
    assert (
        daemon.metrics.registry.get_sample_value(
            "scheduler_framework_extension_point_duration_seconds_count",
            {"extension_point": "Filter", "status": "Unschedulable", "profile": "ksched"},
        )
        == attempts
    )


def test_explain_scores_for_a_pod_that_would_fit() -> None:
    sim = simulated()
    sched = sim.sched
    huge = next(q for q in sched.queue.unschedulable_pods())
    from tests.factories import make_node

    sched.on_node_add(make_node("n3", cpu="16"))  # now it fits, but is not popped yet
    d = FakeDaemon(sim)
    d.outcomes.failed(huge.pod_info, "Unschedulable", "0/2 nodes are available", None)
    status, _, body = one(d, "/debug/explain?pod=default/huge")
    assert status == 200
    out = json.loads(body)
    assert out["lastAttempt"]["result"] == "Unschedulable"
    ex = out["explain"]
    assert ex["result"] == "Scheduled" and ex["node"] == "n3"
    assert "NodeResourcesFit" in ex["score"]
    assert set(ex["total"]) == {"n3"}


def test_explain_of_a_bound_pod_shows_the_last_attempt(daemon: FakeDaemon) -> None:
    assert daemon.sim is not None
    small = next(p for p in daemon.sim.sched.cache.list_pods() if p.name == "small")
    daemon.outcomes.scheduled(small, "n2", 1)
    status, _, body = one(daemon, "/debug/explain?pod=default/small")
    assert status == 200
    out = json.loads(body)
    assert out["lastAttempt"]["result"] == "Scheduled"
    assert out["lastAttempt"]["node"] == "n2"
    assert out["explain"] is None


def test_handler_failure_is_a_json_500() -> None:
    class Broken(FakeDaemon):
        @property
        def config(self) -> Any:
            raise RuntimeError("boom")

        @config.setter
        def config(self, v: Any) -> None:
            pass

    status, ctype, body = one(Broken(None), "/configz")
    assert (status, ctype) == (500, "application/json")
    assert json.loads(body) == {"error": "internal error: RuntimeError"}


def test_configz_redacts_key_material_and_tokens(daemon: FakeDaemon) -> None:
    """An extender's tlsConfig.keyData (kube-scheduler's /configz prints it in full) and any
    token-like plugin argument are REDACTED; certificates, which are public, are not."""
    import base64

    from ksched.config import load_config_data

    key = b"-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n"
    cert = b"-----BEGIN CERTIFICATE-----\npublic\n-----END CERTIFICATE-----\n"
    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "extenders": [
                {
                    "urlPrefix": "https://extender.test/",
                    "filterVerb": "filter",
                    "enableHTTPS": True,
                    "tlsConfig": {
                        "keyData": base64.b64encode(key).decode(),
                        "certData": base64.b64encode(cert).decode(),
                        "keyFile": "/etc/ksched/extender.key",
                    },
                }
            ],
        }
    )
    status, _, body = one(dataclasses.replace(daemon, config=cfg), "/configz")
    assert status == 200
    tls = json.loads(body)["componentconfig"]["extenders"][0]["tlsConfig"]
    assert tls["keyData"] == "REDACTED"
    assert tls["certData"] == base64.b64encode(cert).decode()
    assert tls["keyFile"] == "/etc/ksched/extender.key"  # a path, not the key
    assert "secret" not in body and base64.b64encode(key).decode() not in body


def test_redact_walks_plugin_args() -> None:
    from ksched.daemon.http import redact

    args = {"endpoint": "x", "auth": {"bearerToken": "abc", "tokenFile": "/run/t", "n": 3}}
    out = redact({"profiles": [{"pluginConfig": [{"name": "P", "args": args}]}]})
    auth = out["profiles"][0]["pluginConfig"][0]["args"]["auth"]
    assert auth == {"bearerToken": "REDACTED", "tokenFile": "/run/t", "n": 3}  # a path is no secret


def test_debug_shadow_outside_shadow_mode_is_a_404_saying_how(daemon: FakeDaemon) -> None:
    status, _, body = one(daemon, "/debug/shadow")
    assert status == 404
    assert json.loads(body) == {
        "error": "not in shadow mode (ksched run --shadow-of SCHEDULER_NAME)"
    }
    status, _, body = one(daemon, "/debug/shadow?x=1")
    assert status == 400 and "unknown query parameter(s): x" in json.loads(body)["error"]


def test_configz_redacts_the_userinfo_of_urls(daemon: FakeDaemon) -> None:
    """A password in an extender's urlPrefix was shown verbatim; the rest of the URL (what
    an operator needs to see) stays."""
    import dataclasses

    from ksched.config import load_config_data

    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "extenders": [
                {"urlPrefix": "https://user:S3CRET@extender.test:8443/x", "filterVerb": "f"},
                {"urlPrefix": "http://T0KEN@other.test/", "filterVerb": "f"},
                {"urlPrefix": "https://plain.test/a@b", "filterVerb": "f"},
            ],
        }
    )
    status, _, body = one(dataclasses.replace(daemon, config=cfg), "/configz")
    assert status == 200
    urls = [e["urlPrefix"] for e in json.loads(body)["componentconfig"]["extenders"]]
    assert urls == [
        "https://REDACTED@extender.test:8443/x",
        "http://REDACTED@other.test/",
        "https://plain.test/a@b",  # an @ in the path is no userinfo
    ]
    assert "S3CRET" not in body and "T0KEN" not in body


def test_redact_urls_in_lists_and_plugin_args() -> None:
    from ksched.daemon.http import redact

    out = redact({"args": {"endpoints": ["https://a:b@h/", "h2"], "upstream": "ftp://u@h"}})
    assert out == {
        "args": {"endpoints": ["https://REDACTED@h/", "h2"], "upstream": "ftp://REDACTED@h"}
    }
