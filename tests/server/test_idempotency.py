"""``Idempotency-Key`` answers live in the store: a retry after a host restart (even a
``kill -9``) gets the first answer and appends nothing; the key with another request is
refused. On SQLite and on PostgreSQL."""

from __future__ import annotations

import signal
import urllib.error
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.postgres import fresh_database
from tests.server.conftest import Served

SEC = Path(__file__).resolve().parent / "sec_councils"
HELLO = {"resumeValue": {"content": {"text": "Hello there, @keeper", "mentions": ["keeper"]}}}


@pytest.fixture(params=["sqlite", "postgres"])
def host(request: pytest.FixtureRequest, serve: Any,
         tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Start (and restart) `wop serve` on one store (``env=``: its extra environment)."""
    if request.param == "sqlite":
        yield lambda **options: serve(SEC, store=tmp_path / "runs.db", **options)
        return
    pytest.importorskip("psycopg", reason="needs the postgres extra")
    with fresh_database() as url:
        started: list[Served] = []

        def go(**options: Any) -> Served:
            started.append(serve(SEC, args=("--store", url), **options))
            return started[-1]

        yield go
        for served in started:
            served.stop()


def _replayed(headers: dict[str, str]) -> bool:
    return {k.lower(): v for k, v in headers.items()}.get("openwop-idempotent-replay") == "true"


def _guest_turns(served: Served, run_id: str) -> list[str]:
    events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
    return [e["payload"]["turn"]["content"]["text"] for e in events
            if e["type"] == "conversation.exchanged"
            and e["payload"]["turn"]["speakerId"] == "host:guest"]


def test_a_turn_post_killed_right_after_its_append_is_answered_once_by_its_retry(
        host: Callable[..., Served]) -> None:
    # The host dies (SIGKILL, from a test hook) right after the keyed turn post acted: its
    # turn is appended and no answer was sent. The answer was kept in the turn's own
    # transaction, so the retry replays it and appends nothing.
    served = host(env={"WOPDSL_TEST_CRASH_AT": "idempotent-act"})
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "guestbook"})
    assert status == 201, created  # Not keyed: the hook does not fire.
    run_id = created["runId"]
    served.wait_status(run_id, "waiting-input")
    path = f"/v1/runs/{run_id}/interrupts/room:hall"
    keyed = {"Idempotency-Key": "crash-1"}
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        served.request("POST", path, HELLO, headers=keyed)
    assert served.proc.wait(15) == -signal.SIGKILL

    served = host()
    served.wait_status(run_id, "waiting-input")
    events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
    turns = [e["payload"]["turn"] for e in events if e["type"] == "conversation.exchanged"
             and e["payload"]["turn"]["speakerId"] == "host:guest"]
    assert [t["content"]["text"] for t in turns] == ["Hello there, @keeper"]  # Once.
    status, answer, headers = served.request("POST", path, HELLO, headers=keyed)
    assert status == 200 and _replayed(headers), answer
    assert answer["runId"] == run_id and answer["nodeId"] == "room:hall"
    assert answer["messageId"] == turns[0]["messageId"]
    status, again, headers = served.request("POST", path, HELLO, headers=keyed)
    assert (status, again) == (200, answer) and _replayed(headers)
    assert _guest_turns(served, run_id) == ["Hello there, @keeper"]
    served.stop()
    assert "Traceback" not in served.logs()


def test_keyed_answers_survive_a_killed_host(host: Callable[..., Served]) -> None:
    served = host()
    create = {"Idempotency-Key": "create-1"}
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "guestbook"},
                                        headers=create)
    assert status == 201
    run_id = created["runId"]
    served.wait_status(run_id, "waiting-input")
    path = f"/v1/runs/{run_id}/interrupts/room:hall"
    status, first, _ = served.request("POST", path, HELLO, headers={"Idempotency-Key": "t-1"})
    assert status == 200, first
    served.wait_status(run_id, "waiting-input")
    assert served.stop(signal.SIGKILL) == -signal.SIGKILL

    served = host()
    served.wait_status(run_id, "waiting-input")
    # The same request again (keys in another order, other spacing: the same meaning).
    again = {"resumeValue": {"content": {"mentions": ["keeper"], "text": "Hello there, @keeper"}}}
    status, answer, headers = served.request("POST", path, again,
                                             headers={"Idempotency-Key": "t-1"})
    assert (status, answer) == (200, first)
    assert _replayed(headers)
    assert _guest_turns(served, run_id) == ["Hello there, @keeper"]
    status, answer, headers = served.request("POST", "/v1/runs", {"workflowId": "guestbook"},
                                             headers=create)
    assert (status, answer) == (201, created) and _replayed(headers)
    # The keys with other requests: refused, and nothing happens.
    last = served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"]
    other = {"resumeValue": {"content": {"text": "Something else", "mentions": []}}}
    other_task = {"workflowId": "guestbook", "inputs": {"task": "Another task."}}
    for where, body, key in [(path, other, "t-1"), ("/v1/runs", other_task, "create-1"),
                             ("/v1/runs", {"workflowId": "guestbook"}, "t-1")]:
        status, answer, _ = served.request("POST", where, body,
                                           headers={"Idempotency-Key": key})
        assert (status, answer["error"]) == (409, "idempotency_key_mismatch"), (key, answer)
    page = served.request("GET", f"/v1/runs/{run_id}/events")[1]
    assert page["lastEventSeq"] == last and _guest_turns(served, run_id) == [
        "Hello there, @keeper"]
    # A new key acts.
    status, answer, headers = served.request("POST", path, other,
                                             headers={"Idempotency-Key": "t-2"})
    assert status == 200 and answer["messageId"] != first["messageId"]
    assert not _replayed(headers)
    served.stop()
    assert "Traceback" not in served.logs()
