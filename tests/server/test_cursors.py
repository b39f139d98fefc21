"""Cursors and run ids from the wire are checked at the door, on SQLite and on PostgreSQL.

A ``Last-Event-ID`` beyond what a store can hold (2^63-1), a malformed one, or a run id with
a NUL gets a clear 400/404, never a 500, an ``OverflowError`` or a 503 from the store.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.postgres import fresh_database
from tests.server.conftest import Served

SEC = Path(__file__).resolve().parent / "sec_councils"
TOO_BIG = str(2**63)


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, serve: Any, tmp_path: Path) -> Iterator[Served]:
    if request.param == "sqlite":
        yield serve(SEC)
        return
    pytest.importorskip("psycopg", reason="needs the postgres extra")
    with fresh_database() as url:
        host = serve(SEC, args=("--store", url))
        yield host
        host.stop()


def _get(served: Served, path: str, headers: dict[str, Any] | None = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=20)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_cursors_beyond_64_bits_or_malformed_are_400(served: Served) -> None:
    run_id = served.request("POST", "/v1/runs", {"workflowId": "guestbook"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    events = f"/v1/runs/{run_id}/events"
    for value in (TOO_BIG, "99999999999999999999999", "-2", "1e3", "0x10", "１２", "1_0", "+1",
                  " 7x", "9" * 5000):
        for accept in ("application/json", "text/event-stream"):
            status, body = _get(served, events, {"Last-Event-ID": value.encode(),
                                                  "Accept": accept})
            assert (status, body["error"]) == (400, "validation_error"), (value, accept, body)
            assert body["details"]["field"] == "Last-Event-ID"
        query = quote(value)
        for path in (f"{events}?lastSequence={query}", f"{events}/poll?lastSequence={query}",
                     f"{events}/poll?lastSequence=0&timeout={query}"):
            status, body = _get(served, path)
            assert (status, body["error"]) == (400, "validation_error"), (path, body)
    fork = served.request("POST", f"/v1/runs/{run_id}:fork", {"fromSeq": 2**63})
    assert (fork[0], fork[1]["error"]) == (400, "validation_error")
    # The largest value a store holds is a valid cursor: nothing after it.
    status, body = _get(served, f"{events}?lastSequence={2**63 - 1}")
    assert status == 200 and body["events"] == []
    served.stop()
    assert "Traceback" not in served.logs() and "OverflowError" not in served.logs()


def test_run_ids_outside_the_rule_are_not_found(served: Served) -> None:
    for run_id in ("a%00b", "%00", "run%0A", "x%20y", "%C3%A9t%C3%A9", "a" * 129, ".."):
        for suffix in ("", "/events", "/events/poll?timeout=0"):
            status, body = _get(served, f"/v1/runs/{run_id}{suffix}")
            assert (status, body["error"]) == (404, "run_not_found"), (run_id, suffix, body)
        for suffix, payload in (("/cancel", {}), (":fork", {"fromSeq": 0}),
                                ("/interrupts/room:hall", {"resumeValue": {}})):
            status, body, _ = served.request("POST", f"/v1/runs/{run_id}{suffix}", payload)
            assert status == 404, (run_id, suffix, body)
    served.stop()
    assert "Traceback" not in served.logs()
