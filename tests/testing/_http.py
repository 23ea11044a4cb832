"""A stdlib-only kube REST client for testing the test API server, so the client side shares
no code with the server."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from typing import Any


class WatchStream:
    """A watch response read line by line; `next()` gives None once the server closes it."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self.conn = conn
        self.resp = resp
        self.status = resp.status

    def next(self) -> dict[str, Any] | None:
        line = self.resp.readline()
        if not line:
            return None
        event: dict[str, Any] = json.loads(line)
        return event

    def take(self, n: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _ in range(n):
            ev = self.next()
            assert ev is not None, f"stream ended after {out}"
            out.append(ev)
        return out

    def rest(self) -> list[dict[str, Any]]:
        out = []
        while (ev := self.next()) is not None:
            out.append(ev)
        return out

    def close(self) -> None:
        self.conn.close()


class Client:
    """Minimal kube REST client over http.client."""

    def __init__(self, url: str) -> None:
        parsed = urllib.parse.urlparse(url)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 80
        self.streams: list[WatchStream] = []

    def close(self) -> None:
        for s in self.streams:
            s.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        **query: Any,
    ) -> tuple[int, Any]:
        if query:
            path += "?" + urllib.parse.urlencode(query)
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            hdrs = {"Content-Type": content_type, **(headers or {})} if data is not None else {}
            hdrs.update(headers or {})
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
            ctype = resp.getheader("Content-Type", "")
            if ctype.startswith("application/json"):
                return resp.status, json.loads(payload)
            return resp.status, payload.decode()
        finally:
            conn.close()

    def get(self, path: str, **query: Any) -> tuple[int, Any]:
        return self.request("GET", path, **query)

    def post(self, path: str, body: Any, **query: Any) -> tuple[int, Any]:
        return self.request("POST", path, body, **query)

    def put(self, path: str, body: Any, **query: Any) -> tuple[int, Any]:
        return self.request("PUT", path, body, **query)

    def patch(self, path: str, body: Any, kind: str = "merge") -> tuple[int, Any]:
        ctype = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }[kind]
        return self.request("PATCH", path, body, content_type=ctype)

    def delete(self, path: str, body: Any = None, **query: Any) -> tuple[int, Any]:
        return self.request("DELETE", path, body, **query)

    def watch(self, path: str, timeout: float = 10.0, **query: Any) -> WatchStream:
        query.setdefault("watch", "true")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        conn.request("GET", path + "?" + urllib.parse.urlencode(query))
        stream = WatchStream(conn, conn.getresponse())
        self.streams.append(stream)
        return stream


def pod(name: str, ns: str = "default", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", None)
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "pause"}], **spec},
    }
    if labels:
        body["metadata"]["labels"] = labels
    return body


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
