"""A TCP proxy for fault tests: put it between a client and a real server, then break the line.

``down()`` closes every connection and refuses new ones (a server that stopped), ``up()``
listens again on the same port (the server is back), ``stall()`` keeps the connections open
but passes no byte either way (a network partition: calls hang), ``flow()`` lets them pass
again. ``hold(marker)`` black-holes just the requests that name ``marker`` (their connection
stays open, nothing reaches the server, no answer comes) while the rest of the traffic
flows: the test sees each one held (:meth:`TcpProxy.wait_held`), then lets it pass. Plain
sockets and threads: nothing about the server is faked.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit


class TcpProxy:
    """Forwards ``127.0.0.1:port`` to ``(host, target_port)``."""

    def __init__(self, host: str, target_port: int) -> None:
        self.target = (host, target_port)
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._flowing = threading.Event()
        self._flowing.set()
        self._listener: socket.socket | None = None
        self._marker: bytes | None = None
        self._held: list[threading.Event] = []
        self._arrived = threading.Semaphore(0)
        self.hold_s = 30.0
        """How long a held request waits for :meth:`release_held` before it passes anyway."""
        self.overdue = 0
        """Held requests that passed because nobody released them in time (a frozen test)."""
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = int(probe.getsockname()[1])
        probe.close()
        self.up()

    def up(self) -> None:
        """Accept connections (again), on the same port."""
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(128)
        self._listener = sock
        threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def down(self) -> None:
        """Close every connection and stop listening: connecting is refused."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def stall(self) -> None:
        """Pass no more bytes (connections stay open; new ones are accepted and held)."""
        self._flowing.clear()

    def flow(self) -> None:
        """Pass bytes again."""
        self._flowing.set()

    @classmethod
    def before(cls, url: str) -> TcpProxy:
        """A proxy in front of the server a ``scheme://user@host:port/…`` URL names."""
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or 5432)

    def via(self, url: str) -> str:
        """``url`` (``scheme://user@host:port/…``) pointed at this proxy."""
        parts = urlsplit(url)
        auth = parts.netloc.rsplit("@", 1)[0]
        return urlunsplit(parts._replace(netloc=f"{auth}@127.0.0.1:{self.port}"))

    def hold(self, marker: bytes) -> None:
        """Hold each request a client sends that contains ``marker`` until it is released."""
        self._arrived = threading.Semaphore(0)
        self._marker = marker

    def wait_held(self, timeout: float) -> bool:
        """Wait until a request is held; ``False`` if none was within ``timeout`` seconds."""
        return self._arrived.acquire(timeout=timeout)

    def release_held(self) -> None:
        """Let the requests held so far pass (later ones are held again)."""
        with self._lock:
            held, self._held = self._held, []
        for gate in held:
            gate.set()

    def unhold(self) -> None:
        """Hold nothing any more; let every held request pass."""
        self._marker = None
        self.release_held()

    def close(self) -> None:
        """Stop everything."""
        self.flow()
        self.down()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # Went down meanwhile.
                    client.close()
                    upstream.close()
                    continue
                self._sockets |= {client, upstream}
            for source, sink, ask in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(source, sink, ask),
                                 daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, asks: bool) -> None:
        tail = b""
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                marker = self._marker if asks else None
                if marker is not None:
                    edge = len(marker) - 1  # A marker may straddle two reads.
                    if marker in data or marker in tail[-edge:] + data[:edge]:
                        self._hold_here()
                tail = data[-64:]
                self._flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _hold_here(self) -> None:
        gate = threading.Event()
        with self._lock:
            self._held.append(gate)
        self._arrived.release()
        if not gate.wait(self.hold_s):
            self.overdue += 1
