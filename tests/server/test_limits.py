"""Limits, bad input and retries on a real host: clear envelopes, never a 500 or a traceback."""

from __future__ import annotations

import http.client
import sqlite3
from typing import Any

from tests.server.conftest import Served


def _runs(served: Served) -> list[str]:
    with sqlite3.connect(served.store) as db:
        return [r[0] for r in db.execute("SELECT DISTINCT run_id FROM events")]


def test_bad_requests_get_the_envelope(serve: Any) -> None:
    served = serve(args=("--max-body-bytes", "300"))
    run_id = served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    cases: list[tuple[str, str, Any, bytes | None, int, str]] = [
        ("POST", "/v1/runs", None, b"{not json", 400, "validation_error"),
        ("POST", "/v1/runs", None, b"[1, 2]", 400, "validation_error"),
        ("POST", "/v1/runs", None, b"", 400, "validation_error"),
        ("POST", "/v1/runs", {"workflowId": 7}, None, 400, "validation_error"),
        ("POST", "/v1/runs", {"workflowId": "desk", "surprise": 1}, None, 400,
         "validation_error"),
        ("POST", "/v1/runs", {"workflowId": "desk", "inputs": {"topic": "x"}}, None, 400,
         "validation_error"),
        ("POST", "/v1/runs", {"workflowId": "desk", "inputs": {"task": 3}}, None, 400,
         "validation_error"),
        ("POST", "/v1/runs", {"workflowId": "desk", "callbackUrl": "http://127.0.0.1/"},
         None, 400, "validation_error"),
        ("POST", "/v1/runs", {"workflowId": "desk", "metadata": {"x": "y" * 400}}, None, 413,
         "payload_too_large"),
        ("GET", "/v1/runs/nope", None, None, 404, "run_not_found"),
        ("GET", "/v1/runs/nope/events", None, None, 404, "run_not_found"),
        ("GET", "/v1/workflows/nope", None, None, 404, "workflow_not_found"),
        ("POST", f"/v1/runs/{run_id}/interrupts/room:chat", {"resumeValue": 5}, None, 400,
         "validation_error"),
        ("POST", f"/v1/runs/{run_id}/interrupts/room:chat", {"value": {}}, None, 400,
         "validation_error"),
        ("POST", f"/v1/runs/{run_id}/interrupts/room:chat",
         {"resumeValue": {"operation": "shout", "turn": {}}}, None, 400, "validation_error"),
        ("POST", f"/v1/runs/{run_id}/interrupts/bot", {"resumeValue": {}}, None, 404,
         "interrupt_not_found"),
        ("POST", f"/v1/runs/{run_id}:pause", {}, None, 409, "run_state_conflict"),  # waiting
        ("POST", f"/v1/runs/{run_id}:archive", {}, None, 404, "not_found"),
        ("POST", f"/v1/runs/{run_id}:fork", {"fromSeq": -1}, None, 400, "validation_error"),
        ("POST", f"/v1/runs/{run_id}:fork", {"fromSeq": 0, "mode": "replay",
                                             "runOptionsOverlay": {"tags": ["x"]}}, None, 400,
         "validation_error"),
        ("POST", f"/v1/runs/{run_id}:fork", {"mode": "branch"}, None, 400, "validation_error"),
        ("POST", f"/v1/runs/{run_id}:fork", {"fromSeq": 10**6}, None, 422,
         "fork_point_invalid"),
        ("DELETE", f"/v1/runs/{run_id}", None, None, 405, "method_not_allowed"),
        ("GET", "/runs", None, None, 405, "method_not_allowed"),  # v2: POST /runs exists.
        ("GET", "/nowhere", None, None, 400, "validation_error"),
        ("GET", "/v1/runs/x/events/poll?timeout=500", None, None, 404, "run_not_found"),
        ("GET", f"/v1/runs/{run_id}/events/poll?timeout=500", None, None, 400,
         "validation_error"),
    ]
    for method, path, body, raw, status, code in cases:
        got, answer, _ = served.request(method, path, body, raw=raw)
        assert (got, answer["error"]) == (status, code), (method, path, body, answer)
        assert set(answer) <= {"error", "message", "details"} and answer["message"]
    # Nothing above changed the run.
    assert served.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "waiting-input"
    served.stop()
    assert "Traceback" not in served.logs()


def test_refused_turns_are_422_and_append_nothing(serve: Any) -> None:
    served = serve()
    run_id = served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    last = served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"]
    path = f"/v1/runs/{run_id}/interrupts/room:chat"
    refused = [
        ({"role": "agent", "speakerId": "host:conformance-intruder",
          "content": {"text": "let me in"}}, "conversation_speaker_not_participant"),
        # RFC 0101 §Spec item 2: an unattributed agent turn is a validation_error.
        ({"operation": "exchange", "turn": {"role": "agent", "content": {"text": "anon"}}},
         "validation_error"),
        ({"role": "agent", "speakerId": "host:bot", "content": {"text": "as the bot"}},
         "validation_error"),
        ({"role": "agent", "speakerId": "host:visitor", "content": {"text": "wrong role"}},
         "validation_error"),
        ({"content": {"text": "hi @ghost", "mentions": ["ghost"]}}, "validation_error"),
    ]
    for resume, code in refused:
        status, body, _ = served.request("POST", path, {"resumeValue": resume})
        assert (status, body["error"]) == (422, code), (resume, body)
        if code == "conversation_speaker_not_participant":
            assert body["details"]["speakerId"] == resume["speakerId"]
        page = served.request("GET", f"/v1/runs/{run_id}/events")[1]
        assert page["lastEventSeq"] == last and page["runStatus"] == "waiting-input"
    status, body, _ = served.request("POST", path, {"resumeValue": {
        "operation": "close", "turn": {"role": "user", "speakerId": "host:visitor",
                                       "content": {"text": "bye"}}, "outcome": {"ok": True}}})
    assert status == 200, body
    served.wait_status(run_id, "completed")
    status, body, _ = served.request("POST", path, {"resumeValue": {"content": {"text": "x"}}})
    assert status == 409 and body["error"] in ("interrupt_already_resolved", "run_terminal")


def test_idempotent_run_creation_and_turns(serve: Any) -> None:
    served = serve()
    key = {"Idempotency-Key": "create-1"}
    first = served.request("POST", "/v1/runs", {"workflowId": "desk"}, headers=key)
    again = served.request("POST", "/v1/runs", {"workflowId": "desk"}, headers=key)
    assert first[0] == again[0] == 201 and first[1] == again[1]
    # The replay says so (rest-endpoints.md); the first answer does not.
    assert {k.lower() for k in again[2]} >= {"openwop-idempotent-replay"}
    assert "openwop-idempotent-replay" not in {k.lower() for k in first[2]}
    run_id = first[1]["runId"]
    assert _runs(served) == [run_id]
    other = served.request("POST", "/v1/runs", {"workflowId": "desk", "inputs": {"task": "X"}},
                           headers=key)
    assert (other[0], other[1]["error"]) == (409, "idempotency_key_mismatch")
    assert "runId" not in other[1]  # idempotency.md: no cached body on a mismatch.
    served.wait_status(run_id, "waiting-input")
    turn = {"resumeValue": {"content": {"text": "Only once, @bot", "mentions": ["bot"]}}}
    path = f"/v1/runs/{run_id}/interrupts/room:chat"
    answers = [served.request("POST", path, turn, headers={"Idempotency-Key": "turn-1"})
               for _ in range(3)]
    assert all(a[0] == 200 for a in answers)
    assert len({a[1]["messageId"] for a in answers}) == 1
    served.wait_status(run_id, "completed")
    texts = [m["content"]["text"] for m in
             served.request("GET", f"/v1/runs/{run_id}")[1]["channels"]["chat"]]
    assert texts.count("Only once, @bot") == 1
    # A restarted host still finds the run a retried creation asks for.
    served.stop()
    again = serve(store=served.store)
    retry = again.request("POST", "/v1/runs", {"workflowId": "desk"}, headers=key)
    assert retry[0] == 201 and retry[1]["runId"] == run_id
    assert _runs(again) == [run_id]


def test_run_and_subscriber_caps(serve: Any) -> None:
    served = serve(args=("--max-runs", "2", "--max-subscribers", "1"))
    ids = [served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
           for _ in range(2)]
    status, body, headers = served.request("POST", "/v1/runs", {"workflowId": "desk"})
    assert (status, body["error"]) == (429, "too_many_runs")
    assert body["details"] == {"limit": "maxRuns", "value": 2} and headers["retry-after"]
    conn = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=10)
    conn.request("GET", f"/v1/runs/{ids[0]}/events", headers={"Accept": "text/event-stream"})
    assert conn.getresponse().status == 200
    status, body, _ = served.request("GET", f"/v1/runs/{ids[1]}/events",
                                     headers={"Accept": "text/event-stream"})
    assert (status, body["error"]) == (503, "too_many_subscribers")
    conn.close()
    # A run that ends frees its place.
    assert served.request("POST", f"/v1/runs/{ids[0]}/cancel", {})[0] == 200
    assert served.request("POST", "/v1/runs", {"workflowId": "desk"})[0] == 201
