"""Idle and slow connections against a real `wop serve`: the host keeps answering.

Real sockets on loopback: hundreds that connect and say nothing, some that send their
request head a byte at a time, one that never finishes its body. The host (with a file
limit the sockets alone would exhaust) keeps answering discovery, times the laggards out,
refuses cleanly when every connection is busy, and its log stays a few lines long.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import Served

SEC = Path(__file__).resolve().parent / "sec_councils"


def _address(served: Served) -> tuple[str, int]:
    host, port = served.url.removeprefix("http://").split(":")
    return host, int(port)


def _discovery(served: Served, timeout: float = 5) -> int:
    conn = http.client.HTTPConnection(*_address(served), timeout=timeout)
    try:
        conn.request("GET", "/.well-known/openwop")
        resp = conn.getresponse()
        assert json.loads(resp.read())["protocolVersions"]
        return resp.status
    finally:
        conn.close()


@contextmanager
def _sockets(served: Served, count: int) -> Iterator[list[socket.socket]]:
    with ExitStack() as stack:
        opened = []
        for _ in range(count):
            sock = stack.enter_context(socket.create_connection(_address(served), timeout=10))
            opened.append(sock)
        yield opened


def _closed_by_server(sock: socket.socket, within: float) -> bytes | None:
    """What the server sent before closing ``sock`` (``None`` if it stayed open)."""
    sock.settimeout(within)
    got = b""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                return got
            got += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        return got


@pytest.mark.slow
def test_idle_and_slow_connections_do_not_starve_the_host(serve: Any) -> None:
    # 256 open files: without a cap and deadlines, 300 idle sockets exhaust them.
    served = serve(SEC, args=("--header-timeout", "3", "--body-timeout", "2"),
                   open_files=256)
    assert "at most 96 connections" in served.logs()
    stop = threading.Event()

    def trickle(sock: socket.socket) -> None:  # A slowloris: one byte of head at a time.
        head = b"GET /v1/workflows HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 500
        for byte in head:
            if stop.wait(0.2):
                return
            try:
                sock.send(bytes([byte]))
            except OSError:
                return

    with _sockets(served, 300) as idle, _sockets(served, 20) as slow:
        workers = [threading.Thread(target=trickle, args=(s,), daemon=True) for s in slow]
        for worker in workers:
            worker.start()
        try:
            # The host keeps answering while they are all open (evicting the idlest).
            for _ in range(10):
                assert _discovery(served) == 200
                time.sleep(0.1)
            # A body that never finishes: 408, and the connection closes.
            body_conn = socket.create_connection(_address(served), timeout=10)
            body_conn.sendall(b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                              b'{"workflowId"')
            answer = _closed_by_server(body_conn, 10)
            body_conn.close()
            assert answer is not None and b" 408 " in answer.split(b"\r\n")[0], answer
            assert b"request_timeout" in answer
            # Past the head deadline, the idle and the slow ones are gone.
            time.sleep(3.5)
            assert all(_closed_by_server(s, 2) is not None for s in idle[-20:])
            closing = [_closed_by_server(s, 2) for s in slow]
            assert all(c is not None for c in closing)
            assert any(b"408" in c for c in closing if c), closing
            assert _discovery(served) == 200
        finally:
            stop.set()
    served.stop()
    logs = served.logs()
    assert "Traceback" not in logs and "Errno 24" not in logs
    assert len(logs) < 8000, logs[-3000:]  # One line per condition per minute.
    assert logs.count("connection cap (96) reached") == 1


def test_a_full_host_refuses_cleanly(serve: Any) -> None:
    served = serve(SEC, args=("--max-connections", "4"))
    run_id = served.request("POST", "/v1/runs", {"workflowId": "guestbook"})[1]["runId"]
    streams = []
    for _ in range(4):  # Four busy connections: event streams.
        conn = http.client.HTTPConnection(*_address(served), timeout=10)
        conn.request("GET", f"/v1/runs/{run_id}/events", headers={"Accept": "text/event-stream"})
        resp = conn.getresponse()
        assert resp.status == 200
        streams.append(conn)
    try:
        sock = socket.create_connection(_address(served), timeout=10)
        answer = _closed_by_server(sock, 5)
        sock.close()
        assert answer is not None and answer.startswith(b"HTTP/1.1 503 "), answer
        _head, _, body = answer.partition(b"\r\n\r\n")
        assert json.loads(body)["error"] == "too_many_connections"
    finally:
        for conn in streams:
            conn.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            assert _discovery(served) == 200
            break
        except (AssertionError, OSError, http.client.HTTPException):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    served.stop()
    assert "Traceback" not in served.logs()
