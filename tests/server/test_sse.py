"""SSE on a real host: ids are sequences, Last-Event-ID resumes exactly, keep-alives, the end."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

from tests.server.conftest import Served

SLOW = {"PINGPONG_DELAY": "0.1", "PINGPONG_TURNS": "8"}


def _open(served: Served, run_id: str, last_event_id: int | None = None,
          query: str = "?streamMode=debug",
          ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """Open the run's stream (every event, ``debug``, unless ``query`` says otherwise)."""
    conn = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=30)
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    conn.request("GET", f"/v1/runs/{run_id}/events{query}", headers=headers)
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    return conn, resp


def _frames(resp: http.client.HTTPResponse) -> Any:
    """Yield ('event', {id, event, data}) and ('comment', text) as they arrive."""
    fields: dict[str, str] = {}
    while True:
        line = resp.readline()
        if not line:
            return
        text = line.decode().rstrip("\r\n")
        if not text:
            if fields:
                yield "event", fields
            fields = {}
        elif text.startswith(":"):
            yield "comment", text
        else:
            name, _, value = text.partition(":")
            fields[name] = value.removeprefix(" ")


def _create(served: Served, workflow: str) -> str:
    status, body, _ = served.request("POST", "/v1/runs", {"workflowId": workflow})
    assert status == 201, body
    return str(body["runId"])


def test_frames_carry_sequence_type_and_the_event(serve: Any) -> None:
    served = serve(env=SLOW)
    run_id = _create(served, "pingpong")
    conn, resp = _open(served, run_id)
    events = [f for kind, f in _frames(resp) if kind == "event" and "data" in f]
    conn.close()
    for frame in events:
        doc = json.loads(frame["data"])
        assert int(frame["id"]) == doc["sequence"]
        assert frame["event"] == doc["type"]
        assert doc["runId"] == run_id
    assert [int(f["id"]) for f in events] == list(range(len(events)))
    assert events[-1]["event"] == "run.completed"  # ... and the stream ended after it.


def test_dropping_the_connection_mid_run_loses_and_repeats_nothing(serve: Any) -> None:
    served = serve(env=SLOW)
    run_id = _create(served, "pingpong")
    received: list[int] = []
    last: int | None = None
    reconnects = 0
    while True:
        conn, resp = _open(served, run_id, last)
        ended = False
        for kind, frame in _frames(resp):
            if kind != "event" or "data" not in frame:
                continue
            received.append(int(frame["id"]))
            if frame["event"] == "run.completed":
                ended = True
                break
            if len(received) % 5 == 0:
                break  # Drop the connection mid-run, then reconnect after the last id seen.
        conn.close()
        if ended:
            break
        last = received[-1]
        reconnects += 1
    assert reconnects >= 3
    status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events")
    assert status == 200
    assert received == [e["sequence"] for e in page["events"]]  # No gap, no duplicate.
    assert page["isComplete"] and page["isTerminal"] and page["runStatus"] == "completed"


def test_keepalive_comments_on_an_idle_stream(serve: Any) -> None:
    served = serve(args=("--keepalive", "0.3"))
    run_id = _create(served, "desk")
    served.wait_status(run_id, "waiting-input")
    conn, resp = _open(served, run_id)
    seen: list[float] = []
    events = 0
    start = time.monotonic()
    for kind, frame in _frames(resp):
        if kind == "event" and "data" in frame:
            events += 1
        elif kind == "comment" and "keepalive" in frame:
            seen.append(time.monotonic())
            if len(seen) == 4:
                break
    conn.close()
    assert events >= 5  # The stored events came first.
    gaps = [b - a for a, b in zip([start, *seen], seen, strict=False)][1:]
    assert all(gap < 1.0 for gap in gaps), gaps


def test_keepalive_interval_is_capped_at_15_seconds(serve: Any, tmp_path: Any) -> None:
    from tests.server.conftest import start_server

    served = start_server(tmp_path, args=("--keepalive", "20"), wait=False)
    assert served.proc.wait(30) == 2
    assert "keepalive_s must be in (0, 15]" in served.logs()


def test_a_stream_of_an_ended_run_ends_at_once(serve: Any) -> None:
    served = serve()
    run_id = _create(served, "desk")
    served.wait_status(run_id, "waiting-input")
    assert served.request("POST", f"/v1/runs/{run_id}/cancel", {})[0] == 200
    page = served.request("GET", f"/v1/runs/{run_id}/events")[1]
    last = page["lastEventSeq"]
    conn, resp = _open(served, run_id, last)
    assert [f for kind, f in _frames(resp) if kind == "event" and "data" in f] == []
    conn.close()


def test_json_without_accept_event_stream(serve: Any) -> None:
    served = serve()
    run_id = _create(served, "desk")
    served.wait_status(run_id, "waiting-input")
    status, page, headers = served.request("GET", f"/v1/runs/{run_id}/events?lastSequence=2")
    assert status == 200 and headers["content-type"] == "application/json"
    assert set(page) == {"runId", "events", "lastEventSeq", "runStatus", "isTerminal",
                         "isComplete"}
    assert page["events"][0]["sequence"] == 3
    assert page["runStatus"] == "waiting-input"
    assert page["isTerminal"] is False and page["isComplete"] is False
    bad = served.request("GET", f"/v1/runs/{run_id}/events?lastSequence=x")
    assert bad[0] == 400 and bad[1]["error"] == "validation_error"
