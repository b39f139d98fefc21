"""llm members end to end: the real openai client against the scripted loopback server."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any

from tests.llm.conftest import KEY, llm_council
from tests.openwop_schemas import load_schemas
from wopdsl import SqliteStore
from wopdsl.testing.model_server import Answer, Cut, Failure, ScriptedModelServer


def post(summary: str, room: str = "desk", text: str = "", *mentions: str) -> dict[str, Any]:
    return {"summary": summary, "posts": [{"roomId": room, "text": text or summary,
                                           "mentions": list(mentions)}]}


def events_of(db: Path, run_id: str) -> list[dict[str, Any]]:
    store = SqliteStore(db)
    try:
        return store.read(run_id)
    finally:
        store.close()


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def payloads(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in events if e["type"] == kind]


async def run_it(council: Any, db: Path) -> tuple[Any, list[dict[str, Any]]]:
    run = await council.arun(store=str(db))
    events = events_of(db, run.run_id)
    load_schemas().check_events(events)
    return run, events


async def test_valid_answers_complete_the_run(server: ScriptedModelServer, tmp_path: Path) -> None:
    server.add(Answer(post("Draft ready.", "desk", "Please check the plan.", "critic"),
                      usage=(120, 30)), member="writer")
    server.add(Answer({"summary": "Checked.", "posts": []}, usage=(200, 10)), member="critic")
    run, events = await run_it(llm_council(), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert [r.member for r in server.requests] == ["writer", "critic"]
    result = run.result
    assert result["agents"][0]["result"]["summary"] == "Draft ready."
    assert result["usage"]["members"]["writer"]["totalTokens"] == 150
    assert result["usage"]["total"] == {"calls": 2, "inputTokens": 320, "outputTokens": 40,
                                        "totalTokens": 360}
    turn = payloads(events, "conversation.exchanged")[0]["turn"]
    assert turn["agent"] == {"model": {"provider": "openai", "model": "test-model"}}
    assert turn["content"] == {"text": "Please check the plan.", "mentions": ["critic"]}
    usage = payloads(events, "provider.usage")
    assert usage[0] == {"provider": "openai", "model": "test-model", "inputTokens": 120,
                        "outputTokens": 30, "totalTokens": 150, "nodeId": "writer"}
    composed = payloads(events, "prompt.composed")
    assert [c["nodeId"] for c in composed] == ["writer", "critic"]
    assert all("systemPrompt" not in c and c["hash"].startswith("sha256:") for c in composed)
    # Order within a turn: started, composed, (chunks), usage, completed.
    writer = [e["type"] for e in events if e.get("nodeId") == "writer"]
    assert writer[:2] == ["node.started", "prompt.composed"]
    assert writer[-2:] == ["provider.usage", "node.completed"]
    # Streaming: the text arrived as output.chunk events, the last one marked.
    chunks = [p for p in payloads(events, "output.chunk") if p["nodeId"] == "writer"]
    assert "".join(c["chunk"] for c in chunks) == Answer(post(
        "Draft ready.", "desk", "Please check the plan.", "critic")).text
    assert chunks[-1].get("isLast") is True


async def test_streamed_text_is_committed_at_most_every_interval(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    """A fast answer's text goes out as one chunk; a slow stream's as it arrives, in order."""
    fast = Answer(post("Quick."), chunks=8)
    slow = Answer(post("Slow.", "desk", "at length", "critic"), chunks=4, chunk_delay_s=0.08)
    server.add(slow, member="writer")
    server.add(fast, member="critic")
    run, events = await run_it(llm_council(), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    by_member: dict[str, list[dict[str, Any]]] = {}
    for chunk in payloads(events, "output.chunk"):
        by_member.setdefault(chunk["nodeId"], []).append(chunk)
    assert [(c["chunk"], c.get("isLast")) for c in by_member["critic"]] == [(fast.text, True)]
    writer = by_member["writer"]
    assert len(writer) >= 3 and writer[-1].get("isLast") is True
    assert "".join(c["chunk"] for c in writer) == slow.text


async def test_request_carries_the_member_schema_and_settings(server: ScriptedModelServer,
                                                              tmp_path: Path) -> None:
    server.add(Answer({"summary": "ok", "posts": []}))
    council = llm_council(members={"writer": {"temperature": 0.3, "max_output_tokens": 99},
                                   "critic": {"initial_turn": False}},
                          rooms={"desk": ["writer", "critic"], "solo": ["writer"]})
    run, _ = await run_it(council, tmp_path / "runs.db")
    assert run.status == "completed"
    body = server.requests[0].body
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("test-model", 0.3, 99)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    schema = body["response_format"]["json_schema"]
    assert schema["strict"] is True and schema["name"] == "turn_result"
    variants = schema["schema"]["properties"]["posts"]["items"]["anyOf"]
    assert [v["properties"]["roomId"]["enum"] for v in variants] == [["desk"], ["solo"]]
    assert variants[0]["properties"]["mentions"]["items"]["enum"] == ["critic"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


async def test_system_prompt_follows_what_it_reads(server: ScriptedModelServer,
                                                   tmp_path: Path) -> None:
    """A system prompt reading only steady names is the same at every turn; one reading the
    turn number is rendered again at every turn (the render of a steady one is reused)."""
    for n in (1, 2):
        server.add(Answer(post(f"w{n}", "desk", "again", "critic")), member="writer")
        server.add(Answer(post(f"c{n}", "desk", "back", "writer")), member="critic")
    server.add(Answer({"summary": "done", "posts": []}), member="writer")
    council = llm_council(members={
        "writer": {"system_prompt": "member id: {{ member }}\nturn {{ turn }}"},
        "critic": {"initial_turn": False}}, max_turns_per_member=3)
    run, _ = await run_it(council, tmp_path / "runs.db")
    assert run.status == "completed", run.error
    systems: dict[str, list[str]] = {}
    for request in server.requests:
        systems.setdefault(request.member or "", []).append(
            request.body["messages"][0]["content"])
    assert systems["writer"] == [f"member id: writer\nturn {n}" for n in (1, 2, 3)]
    assert len(systems["critic"]) == 2 and len(set(systems["critic"])) == 1
    assert systems["critic"][0].startswith("You are critic, the critic in a council")


async def test_plain_json_mode_without_streaming(server: ScriptedModelServer,
                                                 tmp_path: Path) -> None:
    server.add(Answer({"summary": "ok"}, usage=None))
    council = llm_council(members={"writer": {}}, rooms={},
                          profile={"stream": False, "structured_output": "json_object"})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "completed", run.error
    body = server.requests[0].body
    assert "stream" not in body and body["response_format"] == {"type": "json_object"}
    assert "output.chunk" not in kinds(events)
    # No usage from the server: the engine records its estimate rather than nothing.
    usage = payloads(events, "provider.usage")[0]
    assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0


async def test_usage_absent_in_a_stream_is_estimated(server: ScriptedModelServer,
                                                     tmp_path: Path) -> None:
    server.add(Answer({"summary": "ok"}, usage=None))
    run, events = await run_it(llm_council(members={"writer": {}}, rooms={}),
                               tmp_path / "runs.db")
    assert run.status == "completed"
    usage = payloads(events, "provider.usage")[0]
    assert usage["outputTokens"] == -(-len(b'{"summary": "ok"}') // 3)


async def test_invalid_json_is_repaired(server: ScriptedModelServer, tmp_path: Path) -> None:
    server.add(Answer("{not json"), Answer({"summary": "fixed", "posts": []}))
    run, events = await run_it(llm_council(members={"writer": {}}), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    attempted = payloads(events, "envelope.retry.attempted")
    assert attempted == [{"nodeId": "writer", "attempt": 2, "reason": "parse-error",
                          "previousError": attempted[0]["previousError"]}]
    assert "not valid JSON" in attempted[0]["previousError"]
    second = server.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "{not json"
    assert "not valid JSON" in second[3]["content"]
    assert len(payloads(events, "provider.usage")) == 2


async def test_post_to_a_foreign_room_fails_after_repair(server: ScriptedModelServer,
                                                         tmp_path: Path) -> None:
    hostile = post("Take over", "vault", "I post where I do not belong.")
    server.add(Answer(hostile), Answer(hostile))
    council = llm_council(members={"writer": {}, "critic": {"initial_turn": False},
                                   "keeper": {"initial_turn": False}},
                          rooms={"desk": ["writer", "critic"], "vault": ["critic", "keeper"]})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "failed"
    assert run.error["code"] == "TEAM_NODE_FAILED"
    failed = payloads(events, "node.failed")[0]
    assert failed["error"]["code"] == "RESULT_INVALID"
    exhausted = payloads(events, "envelope.retry.exhausted")
    assert exhausted == [{"nodeId": "writer", "totalAttempts": 2,
                          "finalReason": "schema-violation",
                          "finalError": "posts[0].roomId is not one of your rooms (desk)"}]
    assert "conversation.exchanged" not in kinds(events)
    assert len(server.requests) == 2


async def test_429_with_retry_after_then_success(server: ScriptedModelServer,
                                                 tmp_path: Path) -> None:
    server.add(Failure(429, "slow down", retry_after="1"), Answer({"summary": "ok"}))
    started = time.monotonic()
    run, events = await run_it(llm_council(members={"writer": {}}), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert time.monotonic() - started >= 1.0
    retried = payloads(events, "node.retried")
    assert retried[0]["attempt"] == 1 and retried[0]["delayMs"] == 1000
    assert retried[0]["lastError"]["code"] == "MODEL_ERROR"
    assert "HTTP 429" in retried[0]["lastError"]["message"]
    starts = [p for p in payloads(events, "node.started") if p["nodeId"] == "writer"]
    assert [s["attempt"] for s in starts] == [0, 1]
    assert "writer" in [p["nodeId"] for p in payloads(events, "node.completed")]


async def test_500s_until_retries_are_exhausted(server: ScriptedModelServer,
                                                tmp_path: Path) -> None:
    server.add(*[Failure(500, "boom")] * 3)
    council = llm_council(members={"writer": {}},
                          profile={"retries": 2, "retry_backoff_ms": 100})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "failed"
    error = payloads(events, "node.failed")[0]["error"]
    assert error["code"] == "MODEL_ERROR" and "gave up after 3 attempt(s)" in error["message"]
    assert error["details"] == {"status": 500}
    assert [p["attempt"] for p in payloads(events, "node.retried")] == [1, 2]
    # Exponential backoff with jitter: 100 ms × 2^n × [0.5, 1].
    first, second = (p["delayMs"] for p in payloads(events, "node.retried"))
    assert 50 <= first <= 100 and 100 <= second <= 200
    assert len(server.requests) == 3


async def test_401_fails_at_once_without_the_key(server: ScriptedModelServer,
                                                 tmp_path: Path) -> None:
    server.add(Failure(401, f"Incorrect API key provided: {KEY}"))
    run, events = await run_it(llm_council(members={"writer": {}}), tmp_path / "runs.db")
    assert run.status == "failed"
    error = payloads(events, "node.failed")[0]["error"]
    assert error["code"] == "MODEL_ERROR"
    assert "HTTP 401" in error["message"] and "Incorrect API key provided" in error["message"]
    assert KEY not in json.dumps(events)
    assert len(server.requests) == 1 and "node.retried" not in kinds(events)


async def test_answer_slower_than_turn_timeout(server: ScriptedModelServer,
                                               tmp_path: Path) -> None:
    server.add(Answer({"summary": "late"}, delay_s=1.5))
    council = llm_council(members={"writer": {}}, turn_timeout_ms=300)
    started = time.monotonic()
    run, events = await run_it(council, tmp_path / "runs.db")
    assert time.monotonic() - started < 1.4
    assert run.status == "failed"
    assert payloads(events, "node.failed")[0]["error"]["code"] == "TIMEOUT"


async def test_a_stream_cut_mid_way_is_retried(server: ScriptedModelServer,
                                               tmp_path: Path) -> None:
    server.add(Cut({"summary": "never finished", "posts": []}), Answer({"summary": "whole"}))
    run, events = await run_it(llm_council(members={"writer": {}}), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert run.result["agents"][0]["result"] == {"summary": "whole"}
    retried = payloads(events, "node.retried")
    assert len(retried) == 1 and "dropped" in retried[0]["lastError"]["message"]
    channels = {p["channel"] for p in payloads(events, "output.chunk")}
    assert channels == {"attempt-0", "attempt-1"}


async def test_batch_members_call_concurrently(server: ScriptedModelServer,
                                               tmp_path: Path) -> None:
    members = {f"m{i}": {} for i in range(4)}
    server.default = Answer({"summary": "done"}, delay_s=0.4)
    council = llm_council(members=members, rooms={}, global_concurrency=4,
                          profile={"max_concurrency": 4})
    started = time.monotonic()
    run, _ = await run_it(council, tmp_path / "a.db")
    overlapped = time.monotonic() - started
    assert run.status == "completed"
    assert overlapped < 1.2, f"4 calls of 0.4 s took {overlapped:.2f} s: they did not overlap"
    arrivals = sorted(r.at for r in server.requests)
    assert arrivals[-1] - arrivals[0] < 0.3


async def test_max_concurrency_bounds_calls_in_flight(server: ScriptedModelServer,
                                                      tmp_path: Path) -> None:
    members = {f"m{i}": {} for i in range(3)}
    server.default = Answer({"summary": "done"}, delay_s=0.3)
    council = llm_council(members=members, rooms={}, global_concurrency=3,
                          profile={"max_concurrency": 1})
    run, _ = await run_it(council, tmp_path / "a.db")
    assert run.status == "completed"
    arrivals = sorted(r.at for r in server.requests)
    assert all(b - a >= 0.25 for a, b in itertools.pairwise(arrivals))


async def test_a_burst_of_connections_is_not_held_back(server: ScriptedModelServer) -> None:
    """The scripted server takes 16 connections at once (no SYN dropped and retried 1 s later)."""
    from openai import AsyncOpenAI

    server.default = Answer({"summary": "done"}, delay_s=0.2)
    clients = [AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0) for _ in range(16)]
    started = time.monotonic()
    await asyncio.gather(*(c.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]) for c in clients))
    took = time.monotonic() - started
    for client in clients:
        await client.close()
    assert len(server.requests) == 16
    assert took < 0.9, f"16 calls of 0.2 s took {took:.2f} s: connections were held back"
