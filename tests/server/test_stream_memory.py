"""What an open SSE stream holds on to: nothing it has sent, and its place until the client goes.

The host runs in this process (``create_app`` under uvicorn, on loopback), so ``tracemalloc``
sees what the streams keep; the clients are plain sockets.
"""

from __future__ import annotations

import gc
import http.client
import json
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from tests.server.conftest import COUNCILS, free_port
from wopdsl.server import Limits, create_app

TASK_BYTES = 99_000
"""The run's task (at most 100,000 characters), so its first event is about 100 kB."""


@pytest.fixture()
def host(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    app = create_app(tmp_path / "runs.db", [COUNCILS / "desk.toml"],
                     limits=Limits(max_subscribers=8))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(10)


def _call(where: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://{where}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _waiting_run(where: str) -> tuple[str, int]:
    """A run of the desk waiting for its visitor, its task large; (id, last sequence)."""
    run_id = _call(where, "POST", "/v1/runs",
                   {"workflowId": "desk", "inputs": {"task": "x" * TASK_BYTES}})["runId"]
    deadline = time.monotonic() + 30
    while _call(where, "GET", f"/v1/runs/{run_id}")["status"] != "waiting-input":
        assert time.monotonic() < deadline, "the run never waited for its visitor"
        time.sleep(0.05)
    last = _call(where, "GET", f"/v1/runs/{run_id}/events?lastSequence=0")["lastEventSeq"]
    return str(run_id), int(last)


class _Stream:
    """One SSE client."""

    def __init__(self, where: str, run_id: str) -> None:
        self.conn = http.client.HTTPConnection(where, timeout=30)
        self.conn.request("GET", f"/v1/runs/{run_id}/events?streamMode=debug",
                          headers={"Accept": "text/event-stream"})
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200

    def read_through(self, last: int) -> None:
        """Read up to the frame of sequence ``last`` (keeping none of it)."""
        while self.resp.readline().rstrip(b"\r\n") != f"id: {last}".encode():
            pass

    def close(self) -> None:
        self.resp.close()
        self.conn.close()


def test_streams_keep_no_copy_of_what_they_sent(host: tuple[str, Any]) -> None:
    where, _ = host
    run_id, last = _waiting_run(where)
    gc.collect()
    tracemalloc.start()
    try:
        streams = [_Stream(where, run_id) for _ in range(8)]
        for stream in streams:
            stream.read_through(last)  # Each stream sent its catch-up: 100 kB or more.
        # Each stream now waits for the run's next event. Before, each kept its catch-up
        # (the encoded frames, and the chunk last sent): 8 streams held 1.6 MB or more.
        deadline = time.monotonic() + 10
        while True:
            gc.collect()
            held = tracemalloc.get_traced_memory()[0]
            if held < 4 * TASK_BYTES or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert held < 4 * TASK_BYTES, f"8 idle streams hold {held / 1000:.0f} kB"
        for stream in streams:
            stream.close()
    finally:
        tracemalloc.stop()


def test_a_client_that_goes_away_frees_its_place(host: tuple[str, Any]) -> None:
    where, app = host
    run_id, last = _waiting_run(where)
    feeds = app.state.api.feeds
    streams = [_Stream(where, run_id) for _ in range(8)]  # The host's limit.
    for stream in streams:
        stream.read_through(last)
    assert feeds.count == 8
    for stream in streams[:5]:
        stream.close()  # The run stays idle: only the disconnect can end these streams.
    deadline = time.monotonic() + 10
    while feeds.count > 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert feeds.count == 3
    again = _Stream(where, run_id)  # A freed place is taken again.
    again.read_through(last)
    assert feeds.count == 4
    for stream in [*streams[5:], again]:
        stream.close()
