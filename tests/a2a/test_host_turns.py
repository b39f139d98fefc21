"""``wop serve --a2a``: the client's messages to a task that goes on (exactly once, paused runs).

A real ``wop serve`` subprocess serves a council whose analyst asks the boss, a person, twice;
the official A2A SDK's client answers for the boss.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a.client", reason="the a2a extra (wopdsl[a2a]) is not installed")

from tests.a2a.a2a_client import checked, code, connect, message, rpc, send
from tests.server.conftest import Served, start_server

TWICE = """\
[council]
id = "desk"
task = "Size a market."
chair = "lead"

[[rooms]]
id = "market"
members = ["analyst", "boss", "lead"]

[[members]]
id = "analyst"
role = "market analyst"
engine = "script"

[[members.script]]
summary = "asked"
posts = [{ room = "market", text = "Which market, @boss?", mentions = ["boss"] }]

[[members.script]]
summary = "asked"
posts = [{ room = "market", text = "Which year, @boss?", mentions = ["boss"] }]

[[members.script]]
summary = "noted"

[[members]]
id = "boss"
role = "person"
engine = "human"
initial_turn = false

[[members]]
id = "lead"
role = "lead"
engine = "script"
script = [{ summary = "Sized the market." }]
"""


def _serve(tmp_path: Path, store: Path | None = None) -> Served:
    council = tmp_path / "desk.toml"
    council.write_text(TWICE, encoding="utf-8")
    return start_server(tmp_path, council, args=("--a2a",), store=store)


def _boss_posts(task: dict[str, Any]) -> list[str]:
    return [m["parts"][0]["text"] for m in task["history"]
            if m.get("metadata", {}).get("from") == "boss"]


def test_a_message_sent_again_to_a_waiting_task_is_posted_once(tmp_path: Path) -> None:
    """Every message is taken once per task by its messageId, across a host's kill -9 too."""
    served = _serve(tmp_path)

    async def answer(url: str, text: str) -> list[dict[str, Any]]:
        async with httpx.AsyncClient(timeout=30) as http:
            a2a = await connect(http, url, streaming=False)
            try:
                return await send(a2a, message(text, "m-2", task_id))
            finally:
                await a2a.close()

    try:
        started = rpc(served.url, "SendMessage", {"message": {
            "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "Size it."}]}})
        task_id = started["result"]["task"]["id"]
        [first] = asyncio.run(answer(served.url, "Germany @analyst"))
        [again] = asyncio.run(answer(served.url, "Germany @analyst"))
    finally:
        os.kill(served.proc.pid, signal.SIGKILL)
        served.proc.wait(10)
    assert first["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert first["task"]["status"]["message"]["parts"][0]["text"] == \
        "boss is asked in room market: analyst said: Which year, @boss?"
    assert _boss_posts(first["task"]) == ["Germany @analyst"]
    assert again["task"]["status"] == first["task"]["status"]
    assert _boss_posts(again["task"]) == ["Germany @analyst"]  # not posted a second time
    restarted = _serve(tmp_path, served.store)
    try:
        [after] = asyncio.run(answer(restarted.url, "Germany @analyst"))
        assert _boss_posts(after["task"]) == ["Germany @analyst"]  # the store remembers it
        other = rpc(restarted.url, "SendMessage", {"message": {
            "messageId": "m-2", "role": "ROLE_USER", "taskId": task_id,
            "parts": [{"text": "France"}]}})
        assert code(other) == -32602
        assert other["error"]["message"] == (
            f"message m-2 was sent to task {task_id} already, with other content; "
            "send a new message with a new messageId")
        done = rpc(restarted.url, "SendMessage", {"message": {
            "messageId": "m-3", "role": "ROLE_USER", "taskId": task_id,
            "parts": [{"text": "2030"}]}})["result"]["task"]
    finally:
        restarted.stop()
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert _boss_posts(done) == ["Germany @analyst", "2030"]
    checked(served.store, task_id)


NOTE = """\
[council]
id = "note"
task = "Draft the launch note."

[models.m]
model = "test-model"
api_key_env = "WOPDSL_TEST_MODEL_KEY"
retry_backoff_ms = 1

[[rooms]]
id = "studio"
members = ["founder", "writer"]

[[members]]
id = "writer"
role = "writer"
engine = "llm"
model = "m"

[[members]]
id = "founder"
role = "founder"
engine = "human"
initial_turn = false
"""
DRAFT = {"summary": "Drafted.", "posts": [
    {"roomId": "studio", "text": "Beta ships Friday. @founder, approve it?",
     "mentions": ["founder"]}]}


@pytest.fixture
def model() -> Iterator[Any]:
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    from wopdsl.testing.model_server import ScriptedModelServer

    with ScriptedModelServer() as server:
        yield server


def _serve_note(tmp_path: Path, model: Any) -> Served:
    council = tmp_path / "note.toml"
    council.write_text(NOTE, encoding="utf-8")
    return start_server(tmp_path, council, args=("--a2a",),
                        env={"OPENAI_BASE_URL": model.url, "WOPDSL_TEST_MODEL_KEY": "sk-test"})


def test_a_blocking_message_to_a_paused_task_is_answered_at_once(tmp_path: Path,
                                                                model: Any) -> None:
    """Paused, the task is answered as it is (working, runStatus paused), not when unpaused."""
    from wopdsl.testing.model_server import Answer

    release = threading.Event()

    def held(_request: Any) -> Any:
        release.wait(60)  # (a bound for the server's thread, should the test fail early)
        return Answer(DRAFT)

    model.add(held, Answer(DRAFT))
    served = _serve_note(tmp_path, model)
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # blocking: waits for the run
            starting = pool.submit(rpc, served.url, "SendMessage", {"message": {
                "messageId": "n-1", "role": "ROLE_USER", "parts": [{"text": "Go."}]}},
                council="note")
            deadline = time.monotonic() + 30
            while not model.requests and time.monotonic() < deadline:
                time.sleep(0.02)  # the writer's turn runs: its model call is held
            assert model.requests
            [listed] = rpc(served.url, "ListTasks", {}, council="note")["result"]["tasks"]
            task_id = listed["id"]
            status, paused, _ = served.request("POST", f"/v1/runs/{task_id}:pause", {})
            assert (status, paused["status"]) == (202, "paused"), paused
            started = starting.result()["result"]["task"]  # answered once the run paused
        assert (started["id"], started["status"]["state"], started["metadata"]["runStatus"]) \
            == (task_id, "TASK_STATE_WORKING", "paused")
        answer = rpc(served.url, "SendMessage", {"message": {
            "messageId": "n-2", "role": "ROLE_USER", "taskId": task_id,
            "parts": [{"text": "Keep it short."}]}}, council="note")
        task = answer["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_WORKING"
        assert task["metadata"]["runStatus"] == "paused"
        assert [(m["metadata"]["from"], m["parts"][0]["text"]) for m in task["history"][1:]] \
            == [("founder", "Keep it short.")]
        release.set()
        status, resumed, _ = served.request("POST", f"/v1/runs/{task_id}:resume", {})
        assert status == 202, resumed
        served.wait_status(task_id, "waiting-input")
        done = rpc(served.url, "SendMessage", {"message": {
            "messageId": "n-3", "role": "ROLE_USER", "taskId": task_id,
            "parts": [{"text": "Approved."}]}}, council="note")["result"]["task"]
    finally:
        release.set()
        served.stop()
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    checked(served.store, task_id)


def test_an_llm_members_tokens_stream_as_artifact_appends(tmp_path: Path, model: Any) -> None:
    """SendStreamingMessage: the writer's post is streamed piece by piece, then sent whole."""
    from wopdsl.testing.model_server import Answer

    text = ("Beta ships Friday: faster sync, fewer clicks, and a new onboarding tour for "
            "teams. @founder, approve it?")
    model.add(Answer({"summary": "Drafted.", "posts": [
        {"roomId": "studio", "text": text, "mentions": ["founder"]}]},
        chunks=16, chunk_delay_s=0.1))
    served = _serve_note(tmp_path, model)

    async def go() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(timeout=30) as http:
            a2a = await connect(http, served.url, streaming=True, council="note")
            try:
                return await send(a2a, message("Draft it.", "st-1"))
            finally:
                await a2a.close()

    try:
        events = asyncio.run(go())
    finally:
        served.stop()
    assert "task" in events[0]
    kinds = [next(iter(e)) for e in events[1:]]
    assert kinds[-3:] == ["artifactUpdate", "statusUpdate", "statusUpdate"]
    assert set(kinds[:-3]) == {"artifactUpdate"}
    post = events[-2]["statusUpdate"]["status"]["message"]
    assert events[-2]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert post["parts"] == [{"text": text}] and post["metadata"]["from"] == "writer"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    pieces = [e["artifactUpdate"] for e in events[1:-3]]
    assert len(pieces) >= 2  # token by token, not the post at once
    assert [p["artifact"]["artifactId"] for p in pieces] == [post["messageId"]] * len(pieces)
    assert [p.get("append", False) for p in pieces] == [False] + [True] * (len(pieces) - 1)
    assert not any(p.get("lastChunk") for p in pieces)
    assert "".join(p["artifact"]["parts"][0]["text"] for p in pieces) == text
    assert pieces[0]["artifact"]["name"] == "post"
    assert pieces[-1]["artifact"]["metadata"] == {"from": "writer", "room": "studio"}
    whole = events[-3]["artifactUpdate"]
    assert (whole.get("append", False), whole["lastChunk"]) == (False, True)
    assert whole["artifact"]["artifactId"] == post["messageId"]
    assert whole["artifact"]["parts"] == [{"text": text}]
    assert whole["artifact"]["metadata"] == post["metadata"]
