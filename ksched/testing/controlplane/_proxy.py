"""A loopback TCP proxy a test can cut or stall: the way to drop a real kube-apiserver's
watch connections (and keep them down for a while), or hold every byte back as a dead
network path would, without touching the server."""

from __future__ import annotations

import contextlib
import socket
import threading


class TCPProxy:
    """Forwards 127.0.0.1:``port`` to ``target_port``; ``cut(hold=True)`` closes every live
    connection and refuses new ones until ``release()``; ``stall()`` keeps connections
    open but forwards nothing (either way) until ``resume()``."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._holding = False
        self._closed = False
        self._flowing = threading.Event()
        self._flowing.set()
        self.accepted = 0
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    def __enter__(self) -> TCPProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._holding or self._closed:
                    client.close()
                    continue
                try:
                    upstream = socket.create_connection(self.target, timeout=5)
                except OSError:
                    client.close()
                    continue
                upstream.settimeout(None)
                self._conns += [client, upstream]
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                while not self._flowing.wait(0.5):
                    if self._closed:
                        return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self, *, hold: bool = False) -> int:
        """Close every live connection (both ends); with ``hold``, refuse new ones."""
        with self._lock:
            self._holding = hold
            conns, self._conns = self._conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        return len(conns) // 2

    def release(self) -> None:
        with self._lock:
            self._holding = False

    def stall(self) -> None:
        """Forward nothing from now on (bytes read are held, not lost) until ``resume``."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def stop(self) -> None:
        self._closed = True
        self._flowing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.cut()
