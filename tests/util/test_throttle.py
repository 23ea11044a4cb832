"""One log line per cause per interval, with the count of repeats held back."""

from __future__ import annotations

import anyio
import pytest
import structlog

from ksched.cluster import APIClient, Backoff, Informer, InformerSet
from ksched.cluster import informer as informer_mod
from ksched.util.throttle import LogThrottle


def test_one_line_per_cause_per_interval() -> None:
    now = [0.0]
    t = LogThrottle(10.0, clock=lambda: now[0])
    assert t.allow("a") == 0
    assert t.allow("b") == 0  # another cause is logged at once
    for _ in range(5):
        now[0] += 1.0
        assert t.allow("a") is None
    now[0] = 10.0
    assert t.allow("a") == 5  # the next line says how many were held back
    assert t.allow("a") is None


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_informers_of_an_unreachable_server_log_once_per_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """13 informers retrying every 20 ms against a closed port for a second: about 650
    failures, a couple of log lines; /readyz's text groups them with one error."""
    monkeypatch.setattr(informer_mod, "_THROTTLE", LogThrottle(10.0))
    client = await APIClient.for_master("http://127.0.0.1:1", qps=0)
    paths = [f"/api/v1/kind{i}" for i in range(13)]
    informers = InformerSet(
        Informer(
            client,
            p,
            lambda raw: raw,
            name=p.rsplit("/", 1)[1],
            backoff=Backoff(0.02, 0.02, jitter=0.0),
        )
        for p in paths
    )
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            tg.start_soon(informers.run)
            await anyio.sleep(1.0)
            tg.cancel_scope.cancel()
    await client.close()
    failures = [e for e in logs if e["log_level"] in ("warning", "error")]
    assert 1 <= len(failures) <= 2, failures
    text = informers.unsynced()
    assert text.startswith("kind0, kind1, kind2, ")
    # one group: all thirteen with the first one's error, naming the server
    assert text.startswith("kind0, kind1, kind2, kind3, kind4, kind5, kind6, kind7, kind8, ")
    assert "kind12 (/api/v1/kind0: " in text and text.count("/api/v1/kind1") == 0
    assert "Cannot connect to host 127.0.0.1:1" in text
