"""AG-UI on `wop serve`: a real host subprocess on loopback, its streams read over HTTP.

Every event received is checked with the official ``ag-ui-protocol`` types and the 1.0
behaviour rules (``tests/agui/events.py``). Threads: a waiting run continued by ``resume`` or
by a new user message, the next run started on the same thread, a reconnect restated with
``MESSAGES_SNAPSHOT``, a finished thread replayed, stale and foreign answers refused, a host
restart that keeps its threads; the log stays valid OpenWOP (``wop check``, ``--v2``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agui.events import check_stream, final_state, texts
from tests.agui.http import Listener, history, post, run_input
from tests.server.conftest import ALICE, BOB, COUNCILS, Served
from wopdsl import open_store

pytest.importorskip("ag_ui", reason="needs ag-ui-protocol (the server extra)")

DESK = "desk"


def _interrupt(events: list[dict[str, Any]]) -> dict[str, Any]:
    end = events[-1]
    assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "interrupt", end
    [found] = end["outcome"]["interrupts"]
    return dict(found)


def _wop(served: Served, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wopdsl", *args, "--store", str(served.store)],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def desk(serve: Any, tokens_file: Path) -> Served:
    served: Served = serve(COUNCILS, args=("--tokens", str(tokens_file)), token=ALICE)
    return served


def test_a_thread_asks_the_person_and_goes_on_when_resumed(desk: Served) -> None:
    first_input = run_input("thread-1", "Help me with my order", run_id="run-a")
    first = post(desk.url, DESK, first_input, token=ALICE)
    assert first.status == 200, first.error
    assert first.headers["content-type"].startswith("text/event-stream")
    check_stream(first.events)
    assert (first.events[0]["runId"], first.events[0]["threadId"]) == ("run-a", "thread-1")
    assert first.events[-1]["runId"] == "run-a"
    assert texts(first.events) == {"team/bot/1/0": "Hello! What do you need, @visitor?"}
    asked = _interrupt(first.events)
    assert asked["reason"] == "human_turn"
    state = final_state(first.events)
    assert state["task"] == "Help me with my order" and state["status"] == "waiting-input"
    run_id = state["runId"]
    # The person answers the interrupt: the same council run goes on in a new AG-UI run.
    held = history(first.events, first_input["messages"])
    second = post(desk.url, DESK, run_input("thread-1", run_id="run-b", messages=held, resume=[
        {"interruptId": asked["id"], "status": "resolved", "payload": "A refund, @bot"}]),
        token=ALICE)
    assert second.status == 200, second.error
    check_stream(second.events)
    assert texts(second.events) == {"team/visitor/2/0": "A refund, @bot",
                                    "team/bot/3/0": "You asked: A refund, @bot"}
    assert second.events[-1]["outcome"] == {"type": "success"}
    assert final_state(second.events, state)["runId"] == run_id
    # Answering it again is refused: it is no longer open; nothing is appended.
    again = post(desk.url, DESK, run_input("thread-1", resume=[
        {"interruptId": asked["id"], "status": "resolved", "payload": "twice"}]), token=ALICE)
    assert (again.status, again.error["error"]) == (409, "interrupt_already_resolved")
    assert asked["id"] in again.error["message"]
    # A new message on the thread starts its next council run, with the message as task.
    held = history(second.events, held)
    third = post(desk.url, DESK, {**run_input("thread-1", "And a second thing", messages=held),
                                  "context": [{"description": "customer", "value": "gold"}]},
                 token=ALICE)
    check_stream(third.events)
    assert final_state(third.events)["runId"] == run_id.rsplit("-", 1)[0] + "-2"
    assert final_state(third.events)["task"] == "And a second thing\n\ncustomer: gold"
    # Nothing but the council's own events in the log: valid OpenWOP, v1 and v2.
    for check in (("check", run_id), ("check", "--v2", run_id)):
        done = _wop(desk, *check)
        assert done.returncode == 0, done.stdout + done.stderr
    started = open_store(desk.store).read(run_id, -1)[0]
    assert started["payload"]["metadata"]["request"]["agui"] == {
        "threadId": "thread-1", "runId": "run-a",
        "messageId": first_input["messages"][-1]["id"]}


def test_a_reconnect_restates_the_thread_and_a_finished_one_replays(
        desk: Served, serve: Any, tokens_file: Path) -> None:
    opening = run_input("thread-2", "Where is my parcel?")
    first = post(desk.url, DESK, opening, token=ALICE)
    asked = _interrupt(first.events)
    # The same input again (a client that lost the stream): nothing is started or posted.
    again = post(desk.url, DESK, opening, token=ALICE)
    check_stream(again.events)
    kinds = [e["type"] for e in again.events]
    assert kinds[:3] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    assert [m["id"] for m in again.events[1]["messages"]] == [
        opening["messages"][-1]["id"], "team/bot/1/0"]
    assert _interrupt(again.events)["id"] == asked["id"]
    assert "TEXT_MESSAGE_START" not in kinds
    # The person answers with a plain user message (no resume): it is the human's post.
    held = history(first.events, opening["messages"])
    answer = run_input("thread-2", "It never came, @bot", messages=held)
    second = post(desk.url, DESK, answer, token=ALICE)
    check_stream(second.events)
    assert texts(second.events)["team/visitor/2/0"] == "It never came, @bot"
    assert second.events[-1]["outcome"] == {"type": "success"}
    # Sent again, the same message is not posted twice: the finished thread is replayed.
    desk.stop()
    restarted = serve(COUNCILS, args=("--tokens", str(tokens_file)), token=ALICE,
                      store=desk.store)
    replay = post(restarted.url, DESK, answer, token=ALICE)
    check_stream(replay.events)
    assert [e["type"] for e in replay.events] == [
        "RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert [m["id"] for m in replay.events[1]["messages"]] == [
        opening["messages"][-1]["id"], "team/bot/1/0", "team/visitor/2/0", "team/bot/3/0"]
    assert replay.events[-1]["outcome"] == {"type": "success"}
    assert final_state(replay.events)["status"] == "completed"


def test_foreign_and_malformed_answers_are_refused_clearly(desk: Served) -> None:
    first = post(desk.url, DESK, run_input("thread-3", "Hi"), token=ALICE)
    asked = _interrupt(first.events)
    cases = [
        ({"interruptId": "elsewhere-1:room:chat:exchange:visitor:1", "status": "resolved",
          "payload": "hi"}, 404, "interrupt_not_found"),
        ({"interruptId": asked["id"], "status": "resolved", "payload": {"txt": "hi"}},
         400, "validation_error"),
        ({"interruptId": asked["id"], "status": "resolved", "payload": "@nobody hi"},
         422, "validation_error"),
    ]
    for entry, status, code in cases:
        answer = post(desk.url, DESK, run_input("thread-3", resume=[entry]), token=ALICE)
        assert (answer.status, answer.error["error"]) == (status, code), answer.error
        assert answer.error["message"]
    # Another principal's thread: bob may not read it, let alone answer for alice's member.
    foreign = post(desk.url, DESK, run_input("thread-3", resume=[
        {"interruptId": asked["id"], "status": "resolved", "payload": "hi"}]), token=BOB)
    assert (foreign.status, foreign.error["error"]) == (403, "forbidden")
    # Bad inputs: before any stream, with the field named.
    bad = post(desk.url, DESK, {"threadId": "t", "messages": []}, token=ALICE)
    assert (bad.status, bad.error["details"]["field"]) == (400, "runId")
    assert post(desk.url, "nope", run_input("t"), token=ALICE).status == 404
    assert post(desk.url, DESK, run_input("t"), token=None).status == 401
    # Unknown fields are tolerated, as the spec says; the person's interrupt still waits.
    tolerant = post(desk.url, DESK, {**run_input("thread-3"), "futureField": {"x": 1}},
                    token=ALICE)
    assert _interrupt(tolerant.events)["id"] == asked["id"]


WEB = Path(__file__).resolve().parent
STUDIO = WEB / "web_llm"
TOOLS = WEB / "web_tools"


@pytest.fixture
def model() -> Any:
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    from wopdsl.testing.model_server import ScriptedModelServer

    with ScriptedModelServer() as server:
        yield server


def test_two_clients_on_one_thread_see_the_same_council(serve: Any, model: Any) -> None:
    from wopdsl.testing.model_server import Answer

    note = "Beta ships Friday with faster sync and fewer clicks. @founder, approve it?"
    model.add(Answer({"summary": "Drafted.", "posts": [
        {"roomId": "studio", "text": note, "mentions": ["founder"]}]},
        chunks=12, chunk_delay_s=0.15))
    served = serve(STUDIO, env={"OPENAI_BASE_URL": model.url,
                                "WOPDSL_TEST_MODEL_KEY": "sk-test"})
    opening = run_input("shared", "Draft the beta note")
    first = Listener(served.url, "studio", opening)
    first.until(lambda e: e["type"] == "TEXT_MESSAGE_CONTENT")
    # A second client joins the thread while the note is being written.
    second = Listener(served.url, "studio", run_input("shared", messages=opening["messages"]))
    a, b = first.rest(), second.rest()
    check_stream(a)
    check_stream(b)
    assert [e["type"] for e in b[:2]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert texts(a) == {"team/writer/1/0": note}
    # b has the note whole: written so far then live (reopened), or in its snapshot.
    snapshot = [m["content"] for m in b[1]["messages"] if m["id"] == "team/writer/1/0"]
    assert texts(b).get("team/writer/1/0", "") + "".join(snapshot) == note
    assert a[-1]["outcome"] == b[-1]["outcome"]
    assert final_state(a) == final_state(b)
    assert a[-1]["outcome"]["interrupts"][0]["reason"] == "human_turn"


def test_approvals_are_answered_accepted_rejected_or_abandoned(serve: Any, model: Any) -> None:
    from wopdsl.testing.model_server import Answer, ToolCalls

    for _ in range(3):
        model.add(ToolCalls(("restart_service", {"service": "api"})),
                  Answer({"summary": "Reported.", "posts": []}))
    served = serve(TOOLS, env={"OPENAI_BASE_URL": model.url,
                               "WOPDSL_TEST_MODEL_KEY": "sk-test",
                               "PYTHONPATH": str(TOOLS)})
    outcomes = {}
    for thread, answer in (("ok", {"status": "resolved", "payload": {"action": "accept"}}),
                           ("no", {"status": "resolved", "payload": {
                               "action": "reject", "comment": "not now"}}),
                           ("gone", {"status": "cancelled"})):
        asked = _interrupt(post(served.url, "desk", run_input(thread, "Fix the api")).events)
        assert asked["reason"] == "tool_approval"
        wrong = post(served.url, "desk", run_input(thread, resume=[
            {"interruptId": asked["id"], "status": "resolved", "payload": {"action": "yes"}}]))
        assert (wrong.status, wrong.error["error"]) == (400, "validation_error")
        done = post(served.url, "desk", run_input(thread, resume=[
            {"interruptId": asked["id"], **answer}]))
        check_stream(done.events)
        [result] = [e for e in done.events if e["type"] == "TOOL_CALL_RESULT"]
        outcomes[thread] = result["content"]
        assert done.events[-1]["outcome"] == {"type": "success"}
    assert outcomes["ok"].endswith("api restarted")
    assert outcomes["no"].startswith("rejected") and "not now" in outcomes["no"]
    assert "abandoned in the chat" in outcomes["gone"]


def test_the_hosts_rules_guard_the_endpoint(serve: Any, tokens_file: Path) -> None:
    served = serve(COUNCILS, args=("--tokens", str(tokens_file), "--max-body-bytes", "2000"),
                   token=ALICE)
    body = run_input("guarded", "Hi")
    cases = [
        ({"Origin": "http://evil.example"}, None, 403, "origin_not_allowed"),
        ({"Host": "evil.example"}, None, 400, "host_not_allowed"),
        ({"Content-Type": "text/plain"}, None, 415, "unsupported_media_type"),
        ({}, json.dumps(run_input("guarded", "x" * 3000)).encode(), 413, "payload_too_large"),
        ({}, b"{not json", 400, "validation_error"),
    ]
    for headers, raw, status, code in cases:
        answer = post(served.url, DESK, body, token=ALICE, headers=headers, raw=raw)
        assert (answer.status, answer.error["error"]) == (status, code), answer.error
    # Nothing of the above started a run; the proper request does, and no token leaks.
    good = post(served.url, DESK, body, token=ALICE)
    check_stream(good.events)
    assert final_state(good.events)["runId"].endswith("-1")
    assert ALICE not in good.raw and ALICE not in served.logs()


async def test_a_client_too_slow_for_the_council_is_dropped_with_run_error(
        tmp_path: Path) -> None:
    import asyncio

    from tests.agui.http import parse_sse
    from wopdsl import SqliteStore, load
    from wopdsl.server.agui.stream import Plan, frames
    from wopdsl.server.config import Limits
    from wopdsl.server.feed import Feeds

    store = SqliteStore(tmp_path / "runs.db")
    run = await load(COUNCILS / "desk.toml").astart(store)
    assert await run.wait() == "waiting-input"
    feeds = Feeds(store, Limits(subscriber_buffer=2))
    subscriber = feeds.subscribe(run.run_id)
    after = store.last_sequence(run.run_id)
    body = frames(store, subscriber, Plan("slow", "r-1", [run.run_id], after, False, False), 5)
    read = [await anext(body)]  # RUN_STARTED; then it stops reading.
    await run.reply(room="chat", as_="visitor", text="A refund, @bot")
    assert await run.wait() == "completed"
    async with asyncio.timeout(30):
        while not subscriber.dropped:
            await asyncio.sleep(0.01)
    read += [chunk async for chunk in body]
    events = parse_sse(b"".join(read).decode())
    check_stream(events)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "STREAM_DROPPED"
    assert "send the thread's input again" in events[-1]["message"]
    await feeds.close()
    store.close()
