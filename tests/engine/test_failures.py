"""Failed turns and limits (DESIGN.md §3): RESULT_INVALID, TEAM_TURN_LIMIT, SCRIPT_EXHAUSTED,
raising and timing-out handlers, and sync handlers off the event loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeCouncil
from tests.engine.helpers import Calls, member_events, of_type, reply, say, types, wait_for
from wopdsl import Reply, Turn

INVALID_RESULTS: dict[str, Any] = {
    "post to a room the sender is not in": reply("x", say("private", "psst")),
    "mention outside the room": reply("x", say("work", "hey", "outsider")),
    "mention of an unknown member": reply("x", say("work", "hey", "nobody")),
    "post to an unknown room": reply("x", say("nowhere", "hello")),
    "one invalid post among valid ones": reply(
        "x", say("work", "valid one", "lead"), say("work", "valid two"),
        say("private", "invalid")),
    "summary is not a string": {"summary": 3},
    "unknown result key": {"summary": "ok", "extra": True},
    "posts is not a list": {"summary": "ok", "posts": "work: hi"},
    "post without text": {"summary": "ok", "posts": [{"roomId": "work", "mentions": []}]},
    "not a result at all": 42,
    "over max_output_bytes": reply("x", say("work", "y" * 3000)),
}


@pytest.mark.parametrize("bad_first", [False, True], ids=["bad-second", "bad-first"])
@pytest.mark.parametrize("case", list(INVALID_RESULTS))
async def test_an_invalid_result_fails_the_turn_and_then_the_run_after_the_batch_settles(
    make_council: MakeCouncil, db_path: Path, case: str, bad_first: bool
) -> None:
    calls = Calls()
    invalid = INVALID_RESULTS[case]
    pair = ["bad", "good"] if bad_first else ["good", "bad"]

    def lead(turn: Turn) -> Reply:
        return reply("kickoff", say("work", "start", *pair))

    def good(turn: Turn) -> Reply:
        return reply("good done", say("work", "good work", "later"))

    handlers = {
        "lead": calls.handler(lead),
        "good": calls.handler(good),
        "bad": calls.handler(lambda t: invalid),
        "later": calls.handler(),
        "outsider": calls.handler(),
    }
    council = make_council(
        handlers,
        rooms={"work": ["lead", "good", "bad", "later"], "private": ["lead", "outsider"]},
        waiting=["good", "bad", "later", "outsider"],
        global_concurrency=2,
        max_output_bytes=2048,
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.result is None
    events = list(run.events)
    run_failed = events[-1]
    assert run_failed["type"] == "run.failed"
    assert run_failed["payload"]["failedNodeId"] == "bad"
    (failed,) = of_type(events, "node.failed")
    assert failed["nodeId"] == "bad"
    assert failed["payload"]["error"]["code"] == "RESULT_INVALID"
    assert failed["payload"]["error"]["message"]
    # The batch settled: both turns of batch 2 ran, the valid one's completion and message
    # are in the log, the invalid one's posts are not; nothing ran after the batch.
    assert calls.order == ["lead", *pair]
    batch = [("node.started", m) for m in pair]
    settled = [("node.failed" if m == "bad" else "node.completed", m) for m in pair]
    assert member_events(events) == [
        ("node.started", "lead"), ("node.completed", "lead"), *batch, *settled]
    good_id = f"team/good/{2 + pair.index('good')}/0"
    assert [m.id for m in run.messages] == ["team/lead/1/0", good_id]
    assert all(m.sender != "bad" for m in run.messages)
    assert run.state.members["lead"].result == {
        "summary": "kickoff",
        "posts": [{"roomId": "work", "text": "start", "mentions": pair}]}
    assert run.state.members["good"].result is not None
    assert run.state.members["bad"].result is None
    assert run.state.members["bad"].failed
    assert "Traceback" not in str(events)


async def test_a_failed_turn_keeps_earlier_batches_results_in_the_log(
    make_council: MakeCouncil, db_path: Path
) -> None:
    council = make_council(
        {
            "first": lambda t: reply("first ok", say("all", "hello", "second")),
            "second": lambda t: {"summary": None},
        },
        waiting=["second"],
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.state.failed_node == "second"
    outputs = [e["payload"]["outputs"] for e in of_type(run.events, "node.completed")
               if e["nodeId"] == "first"]
    assert outputs == [{"summary": "first ok", "posts": [
        {"roomId": "all", "text": "hello", "mentions": ["second"]}]}]
    assert [m.id for m in run.messages] == ["team/first/1/0"]
    assert "team/first/1/0" in run.transcript


async def test_a_queued_member_whose_cap_is_spent_fails_the_run_with_turn_limit(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    council = make_council(
        {
            "ping": calls.handler(lambda t: reply("ping", say("all", "ping", "pong"))),
            "pong": calls.handler(lambda t: reply("pong", say("all", "pong", "ping"))),
        },
        waiting=["pong"],
        options={"pong": {"max_turns": 2}},
        max_turns_per_member=1,
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.result is None
    assert run.error is not None and run.error["code"] == "TEAM_TURN_LIMIT"
    assert run.error["message"] == (
        "ping was mentioned by pong in room 'all' after using all 1 of its turns (max_turns = "
        "1); fix: raise its max_turns (or max_turns_per_member), debate in a room with rounds "
        "= N (a mention there never adds a turn), or end the discussion on a decision "
        "([[decisions]]: members vote instead of asking again; see docs/guides/deliberation.md)")
    assert run.error["details"] == {"member": "ping", "limit": "max_turns", "value": 1,
                                    "mentionedBy": ["pong"]}
    assert calls.order == ["ping", "pong"]
    events = list(run.events)
    assert "run.completed" not in types(events)
    assert events[-1]["type"] == "run.failed"
    assert events[-1]["payload"]["failedNodeId"] == "ping"
    # The turn was never dispatched: no node.started beyond the cap.
    assert [e["nodeId"] for e in of_type(events, "node.started")
            if e["payload"].get("typeId") == "council.member"] == ["ping", "pong"]
    # Every conversation still closes before the run ends.
    assert types(events)[-4:] == ["conversation.closed", "node.resumed", "node.completed",
                                  "run.failed"]


async def test_a_script_running_out_fails_with_script_exhausted(make_council: MakeCouncil,
                                                               db_path: Path) -> None:
    council = make_council(
        {
            "boss": [
                {"summary": "1", "posts": [{"room": "all", "text": "one", "mentions": ["bot"]}]},
                {"summary": "2", "posts": [{"room": "all", "text": "two", "mentions": ["bot"]}]},
            ],
            "bot": [
                {"summary": "first", "posts": [{"room": "all", "text": "ok",
                                                "mentions": ["boss"]}]},
            ],
        },
        waiting=["bot"],
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.state.failed_node == "bot"
    (failed,) = of_type(run.events, "node.failed")
    assert failed["nodeId"] == "bot"
    assert failed["payload"]["error"]["code"] == "SCRIPT_EXHAUSTED"
    assert "bot" in failed["payload"]["error"]["message"]
    assert [m.id for m in run.messages] == ["team/boss/1/0", "team/bot/2/0", "team/boss/3/0"]


async def test_a_raising_handler_fails_its_turn_cleanly(make_council: MakeCouncil,
                                                        db_path: Path) -> None:
    def explode(turn: Turn) -> Reply:
        raise ValueError("boom in the handler")

    async def fine(turn: Turn) -> Reply:
        return reply("fine", say("all", "still here"))

    council = make_council({"fine": fine, "explode": explode}, global_concurrency=2)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.state.failed_node == "explode"
    (failed,) = of_type(run.events, "node.failed")
    error = failed["payload"]["error"]
    assert error["code"]
    assert "ValueError" in error["message"] and "boom in the handler" in error["message"]
    # The traceback is kept in the error's details (DESIGN.md §6), and nowhere else.
    exception = error["details"]["exception"]
    assert exception["type"] == "ValueError"
    assert exception["message"] == "boom in the handler"
    assert exception["traceback"].startswith("Traceback (most recent call last):")
    assert 'in explode\n    raise ValueError("boom in the handler")' in exception["traceback"]
    assert "wopdsl/engine" not in exception["traceback"]
    rest = [e for e in run.events if e["sequence"] != failed["sequence"]]
    assert "Traceback" not in str(rest) and "Traceback" not in error["message"]
    assert [m.id for m in run.messages] == ["team/fine/1/0"]


async def test_an_async_handler_over_turn_timeout_fails_its_turn(make_council: MakeCouncil,
                                                                 db_path: Path) -> None:
    never = asyncio.Event()
    cancelled: list[bool] = []

    async def stuck(turn: Turn) -> Reply:
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return reply("unreachable")

    council = make_council({"quick": lambda t: reply("quick"), "stuck": stuck},
                           global_concurrency=2, options={"stuck": {"turn_timeout_ms": 50}})

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.state.failed_node == "stuck"
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["error"]["code"] == "TIMEOUT"
    assert "turn_timeout_ms" in failed["payload"]["error"]["message"]
    assert cancelled == [True]
    assert run.state.members["quick"].result == {"summary": "quick"}


async def test_a_sync_handler_over_turn_timeout_fails_its_turn(make_council: MakeCouncil,
                                                               db_path: Path) -> None:
    release = threading.Event()

    def stuck(turn: Turn) -> Reply:
        release.wait(10)
        return reply("late")

    council = make_council({"stuck": stuck}, turn_timeout_ms=50)
    try:
        run = await council.arun(store=db_path, deterministic=True)
    finally:
        release.set()  # let the worker thread end

    assert run.status == "failed"
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["error"]["code"] == "TIMEOUT"
    assert run.state.members["stuck"].result is None


async def test_sync_handlers_run_off_the_event_loop(make_council: MakeCouncil,
                                                    db_path: Path) -> None:
    flag = threading.Event()
    blocking_started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def blocking(turn: Turn) -> Reply:
        loop.call_soon_threadsafe(blocking_started.set)
        # Blocks its thread until the async batch-mate runs: only possible off the loop.
        return reply("set" if flag.wait(5) else "loop was blocked")

    async def setter(turn: Turn) -> Reply:
        await wait_for(blocking_started, "the sync handler starting")
        flag.set()
        return reply("setter")

    council = make_council({"blocking": blocking, "setter": setter}, global_concurrency=2)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert run.state.members["blocking"].result == {"summary": "set"}


def _cyclic() -> dict[str, Any]:
    data: dict[str, Any] = {}
    data["self"] = data
    return data


NOT_JSON: dict[str, Any] = {
    "NaN in data": {"summary": "x", "data": {"v": float("nan")}},
    "infinity in data": reply("x", data=[float("inf")]),
    "a set in data": {"summary": "x", "data": {1, 2}},
    "a cycle in data": {"summary": "x", "data": _cyclic()},
    "an object in data": {"summary": "x", "data": object()},
    "lone surrogate in summary": reply("bad \ud800 summary"),
    "lone surrogate in a post": reply("x", say("all", "bad \udcff text")),
}


@pytest.mark.parametrize("case", list(NOT_JSON))
async def test_a_result_that_is_not_json_fails_the_turn_with_result_invalid(
    make_council: MakeCouncil, db_path: Path, case: str
) -> None:
    bad = NOT_JSON[case]
    council = make_council(
        {"fine": lambda t: reply("fine", say("all", "ok")), "odd": lambda t: bad},
        global_concurrency=2,
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.state.failed_node == "odd"
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["error"]["code"] == "RESULT_INVALID"
    assert [m.id for m in run.messages] == ["team/fine/1/0"]
    assert run.events[-1]["type"] == "run.failed"


async def test_a_turn_input_over_max_input_bytes_fails_the_turn(make_council: MakeCouncil,
                                                               db_path: Path) -> None:
    calls = Calls()
    council = make_council(
        {"loud": calls.handler(lambda t: reply("loud", say("all", "z" * 5000, "small"))),
         "small": calls.handler()},
        waiting=["small"],
        options={"small": {"max_input_bytes": 1024}},
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.state.failed_node == "small"
    assert calls.order == ["loud"]  # the handler never saw the oversized input
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["error"]["code"]
    assert "max_input_bytes" in failed["payload"]["error"]["message"]


SHORT_TEXT = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 5}}}


async def test_a_post_breaking_the_rooms_turn_schema_is_result_invalid(
    make_council: MakeCouncil, db_path: Path
) -> None:
    council = make_council(
        {"short": lambda t: reply("s", say("all", "ok")),
         "long": lambda t: reply("l", say("all", "far too long"))},
        rooms={"all": {"members": ["short", "long"], "turn_schema": SHORT_TEXT}},
        global_concurrency=2)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.state.failed_node == "long"
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["error"]["code"] == "RESULT_INVALID"
    assert "turn_schema" in failed["payload"]["error"]["message"]
    assert [m.text for m in run.messages] == ["ok"]


async def test_a_council_without_rooms_runs_and_refuses_posts(make_council: MakeCouncil,
                                                              db_path: Path) -> None:
    quiet = make_council({"one": lambda t: reply("alone"), "two": lambda t: reply("too")},
                         rooms={})

    run = await quiet.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert run.result is not None
    assert [a["result"] for a in run.result["agents"]] == [{"summary": "alone"},
                                                            {"summary": "too"}]
    assert not [e for e in run.events if e["type"].startswith("conversation.")]

    chatty = make_council({"one": lambda t: reply("x", say("all", "hello?"))}, rooms={})
    failed = await chatty.arun(store=db_path, deterministic=True)
    assert failed.status == "failed"
    assert of_type(failed.events, "node.failed")[0]["payload"]["error"]["code"] == (
        "RESULT_INVALID")


async def test_a_room_over_max_participants_is_refused_before_anything_is_saved(
    make_council: MakeCouncil, db_path: Path
) -> None:
    from wopdsl import SqliteStore, ValidationError

    council = make_council({"a": lambda t: reply("a"), "b": lambda t: reply("b"),
                            "c": lambda t: reply("c")})

    with pytest.raises(ValidationError) as caught:
        await council.arun(store=db_path, run_id="crowded", max_participants=2)

    assert "maxParticipants" in str(caught.value)
    store = SqliteStore(db_path)
    assert store.read("crowded") == []
    store.close()


async def test_a_sync_callable_returning_a_coroutine_is_awaited(make_council: MakeCouncil,
                                                                db_path: Path) -> None:
    async def real(turn: Turn) -> Reply:
        await asyncio.sleep(0)
        return reply(f"awaited {turn.member}")

    council = make_council({"wrapped": lambda t: real(t)})

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed", run.error
    assert run.state.members["wrapped"].result == {"summary": "awaited wrapped"}


async def _raises_cancelled(turn: Turn) -> Reply:
    raise asyncio.CancelledError


async def _awaits_a_cancelled_task(turn: Turn) -> Reply:
    inner = asyncio.ensure_future(asyncio.sleep(10))
    inner.cancel()
    await inner  # raises CancelledError, though nobody cancelled this turn
    return reply("unreachable")


@pytest.mark.parametrize("handler", [_raises_cancelled, _awaits_a_cancelled_task],
                         ids=["raises", "inner-task-cancelled"])
async def test_a_handler_raising_cancelled_error_fails_its_turn_not_the_caller(
    make_council: MakeCouncil, db_path: Path, handler: Any
) -> None:
    council = make_council({"ok": lambda t: reply("ok", say("all", "fine")), "odd": handler},
                           global_concurrency=2)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.state.failed_node == "odd"
    (failed,) = of_type(run.events, "node.failed")
    assert "CancelledError" in failed["payload"]["error"]["message"]
    assert [m.id for m in run.messages] == ["team/ok/1/0"]


async def test_cancelling_a_run_stops_its_running_turns(make_council: MakeCouncil,
                                                        db_path: Path) -> None:
    running = asyncio.Event()
    stopped: list[str] = []

    async def waits(turn: Turn) -> Reply:
        running.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.append(turn.member)
            raise
        return reply("unreachable")

    council = make_council({"waits": waits})
    run = council.start(store=db_path, deterministic=True)
    await wait_for(running, "the turn starting")

    await run.cancel()
    await asyncio.sleep(0)  # let the cancelled turn run its handler

    assert run.status == "cancelled"
    assert stopped == ["waits"]
    assert [e["type"] for e in run.events][-1] == "run.cancelled"
    assert [e["nodeId"] for e in of_type(run.events, "node.cancelled")] == ["waits"]


async def test_script_exhausted_counts_its_turns_in_good_english(
    make_council: MakeCouncil, db_path: Path
) -> None:
    council = make_council({"echo": [{"summary": "once", "posts": [
        {"room": "all", "text": "again @echo", "mentions": ["echo"]}]}]})
    run = await council.arun(store=db_path)
    assert run.status == "failed"
    assert "echo has 1 scripted turn; turn 2 was requested" in run.error["message"]
