"""One encoder contract: what the store accepts, every reader serves (issue 20, item 2).

Each door refuses a value the host's encoder (orjson) could not write — nested past 32
levels, an integer beyond 64 bits — with ``validation_error`` (HTTP) or the matching code
(``DECLARATION_INVALID`` with file:line:col, ``RESULT_INVALID``); a model's absurd ``usage``
is replaced by the engine's estimate with a ``log.appended`` note. Afterwards the run's
events serve as JSON and over SSE, to the terminal event. A log written before the doors
existed (the values stored anyway) still serves too.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.bounded import bounded_wop
from tests.server.conftest import COUNCILS, Served
from wopdsl.store import SqliteStore

FAULTS = Path(__file__).resolve().parent / "fault_councils"
WIDE = 2**70


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"d": value}
    return value


def _sse(served: Served, run_id: str) -> list[dict[str, Any]]:
    """Every event of an ended run over SSE (the stream closes after the terminal one)."""
    conn = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=30)
    conn.request("GET", f"/v1/runs/{run_id}/events?streamMode=debug",
                 headers={"Accept": "text/event-stream"})
    resp = conn.getresponse()
    assert resp.status == 200
    events = [json.loads(line[len(b"data: "):]) for line in resp.read().splitlines()
              if line.startswith(b"data: ")]
    conn.close()
    return events


def _serves(served: Served, run_id: str) -> list[dict[str, Any]]:
    status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events")
    assert status == 200, page
    streamed = _sse(served, run_id)
    assert streamed == page["events"]
    assert streamed[-1]["type"] in ("run.completed", "run.failed", "run.cancelled")
    status, snap, _ = served.request("GET", f"/v1/runs/{run_id}")
    assert status == 200, snap
    return streamed


def test_deep_metadata_is_refused_and_the_host_keeps_serving(
        serve: Callable[..., Served]) -> None:
    served = serve(COUNCILS / "desk.toml")
    status, body, _ = served.request("POST", "/v1/runs",
                                     {"workflowId": "desk", "metadata": _deep(300)})
    assert status in (400, 422), body
    assert body["error"] == "validation_error"
    assert body["message"].startswith("metadata.d.d.d") and "deeper than 32" in body["message"]
    # The request parser reads integers up to 2^64-1 as integers (wider ones as floats, as
    # JavaScript does): 2^63 is one past the signed 64-bit range.
    status, body, _ = served.request("POST", "/v1/runs",
                                     {"workflowId": "desk", "metadata": {"n": [2**63]}})
    assert status in (400, 422) and body["error"] == "validation_error", body
    assert body["message"].startswith("metadata.n[0]: an integer of 19 digits")
    status, _runs, _ = served.request("GET", "/v1/workflows")
    assert status == 200
    # Nothing was stored for the refused requests; a fair run serves as ever.
    status, body, _ = served.request("POST", "/v1/runs",
                                     {"workflowId": "desk", "metadata": {"n": 2**63 - 1}})
    assert status == 201, body
    served.wait_status(body["runId"], "waiting-input")
    status, page, _ = served.request("GET", f"/v1/runs/{body['runId']}/events")
    assert status == 200
    assert page["events"][0]["payload"]["metadata"]["request"] == {"n": 2**63 - 1}
    assert len(SqliteStore(served.store).runs()) == 1


def test_a_wide_integer_in_a_script_steps_data_fails_validate_with_a_place(
        tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(
        '[council]\nid = "c"\ntask = "t"\n\n[[members]]\nid = "m"\nrole = "r"\n'
        'engine = "script"\n'
        f'script = [{{ summary = "s", data = {{ fine = {2**63 - 1}, n = {WIDE} }} }}]\n',
        encoding="utf-8")
    for command in (("validate", "c.toml"), ("run", "c.toml")):
        done = bounded_wop(*command, cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.startswith("error[DECLARATION_INVALID]:")
        assert "c.toml:9:" in done.stderr
        assert "members[0] (m).script[0].data.n: an integer of 22 digits is outside the " \
               "signed 64-bit range" in done.stderr
    assert not (tmp_path / ".wop").exists() or not SqliteStore(
        tmp_path / ".wop" / "runs.db").runs()


def test_a_wide_integer_in_a_handlers_data_fails_the_turn_and_the_run_serves(
        tmp_path: Path, serve: Callable[..., Served]) -> None:
    served = serve(FAULTS / "big_data.toml", env={"PYTHONPATH": str(FAULTS)})
    status, body, _ = served.request("POST", "/v1/runs", {"workflowId": "big-data"})
    assert status == 201, body
    run_id = body["runId"]
    served.wait_status(run_id, "waiting-input")
    # A turn from outside with a wide integer is refused at the door (422), nothing stored.
    status, refused, _ = served.request(
        "POST", f"/v1/runs/{run_id}/interrupts/room:desk",
        {"resumeValue": {"operation": "close", "outcome": {"n": 2**64 - 1}}})
    assert status == 422 and refused["error"] == "validation_error", refused
    assert "the resume payload: outcome.n: an integer of 20 digits" in refused["message"]
    status, sent, _ = served.request(
        "POST", f"/v1/runs/{run_id}/interrupts/room:desk",
        {"resumeValue": {"operation": "exchange", "turn": {
            "role": "user", "content": {"text": "Go, @wide.", "mentions": ["wide"]}}}})
    assert status == 200, sent
    snap = served.wait_status(run_id, "failed")
    assert snap["status"] == "failed"
    events = _serves(served, run_id)
    (failed,) = [e for e in events if e["type"] == "node.failed"]
    error = failed["payload"]["error"]
    assert error["code"] == "RESULT_INVALID"
    assert error["message"].startswith("wide returned data.n: an integer of 22 digits")
    assert error["details"] == {"field": "data.n"}
    assert events[-1]["payload"]["error"]["code"] == "TEAM_NODE_FAILED"


def test_a_log_holding_unservable_values_still_serves(tmp_path: Path,
                                                      serve: Callable[..., Served]) -> None:
    """Runs stored before the doors were checked: the host's encoder falls back, never 500."""
    store_path = tmp_path / "old.db"
    store = SqliteStore(store_path)
    event = {"eventId": "evt-old-run-0000000", "runId": "old-run", "type": "run.started",
             "payload": {"workflowId": "desk", "inputs": {"task": "t"},
                         "metadata": {"wide": WIDE, "deep": _deep(300)}},
             "timestamp": "2026-01-01T00:00:00.000Z", "sequence": 0, "schemaVersion": 1}
    ended = {**event, "eventId": "evt-old-run-0000001", "type": "run.failed", "sequence": 1,
             "payload": {"error": {"code": "STORE_ERROR", "message": "old"}}}
    store.append("old-run", [event, ended], 0)  # type: ignore[list-item]
    store.close()
    served = serve(COUNCILS / "desk.toml", store=store_path)
    events = _serves(served, "old-run")
    assert events[0]["payload"]["metadata"]["wide"] == WIDE
    depth, node = 0, events[0]["payload"]["metadata"]["deep"]
    while isinstance(node, dict):
        depth, node = depth + 1, node["d"]
    assert depth == 300


@pytest.mark.parametrize("where", ["prompt_tokens", "completion_tokens"])
def test_a_models_absurd_usage_is_replaced_by_the_estimate_with_a_note(
        tmp_path: Path, serve: Callable[..., Served], where: str) -> None:
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    from tests.llm.conftest import KEY, KEY_ENV, llm_council
    from wopdsl.testing.model_server import Answer, ScriptedModelServer

    council = llm_council(members={"writer": {}})
    path = tmp_path / "llm-team.toml"
    path.write_text(council.to_toml())
    usage = (WIDE, 7) if where == "prompt_tokens" else (11, WIDE)
    with ScriptedModelServer() as model:
        model.add(Answer({"summary": "Done.", "data": {"fine": 2**63 - 1}}, usage=usage),
                  member="writer")
        served = serve(path, env={"OPENAI_BASE_URL": model.url, KEY_ENV: KEY})
        status, body, _ = served.request("POST", "/v1/runs", {"workflowId": "llm-team"})
        assert status == 201, body
        served.wait_status(body["runId"], "completed")
        events = _serves(served, body["runId"])
    (usage_event,) = [e for e in events if e["type"] == "provider.usage"]
    payload = usage_event["payload"]
    assert all(payload[k] < 2**53 for k in ("inputTokens", "outputTokens", "totalTokens"))
    assert payload["inputTokens" if where == "prompt_tokens" else "outputTokens"] > 0
    if where == "prompt_tokens":
        assert payload["outputTokens"] == 7
    else:
        assert payload["inputTokens"] == 11
    (note,) = [e for e in events if e["type"] == "log.appended"]
    assert note["payload"]["level"] == "warn"
    assert note["payload"]["fields"] == {"field": f"usage.{where}", "digits": 22}
    assert f"usage.{where}" in note["payload"]["message"]
