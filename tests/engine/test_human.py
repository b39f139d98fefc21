"""Human members (DESIGN.md §3, §13): waiting for input, replies, refusals, joining."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import HUMAN, MakeCouncil
from tests.engine.helpers import Calls, dispatch_order, of_type, reply, say, wait_for
from wopdsl import Council, Reply, SqliteStore, Turn, ValidationError, attach


def desk_council(make_council: MakeCouncil, calls: Calls) -> Council:
    """writer asks the human on turn 1 and finishes on turn 2; reviewer waits to be asked."""

    def writer(turn: Turn) -> Reply:
        if turn.turn == 1:
            return reply("asked", say("desk", "Which version?", "me"))
        return reply(f"finished with {turn.triggers[0].text}")

    return make_council(
        {"writer": calls.handler(writer), "reviewer": calls.handler(), "me": HUMAN},
        rooms={"desk": ["writer", "me"], "side": ["reviewer", "writer"],
               "lounge": ["me", "reviewer"]},
        waiting=["reviewer"],
    )


async def test_a_requested_human_turn_waits_for_input_then_a_reply_continues(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    run = await desk_council(make_council, calls).arun(store=db_path, deterministic=True)

    assert run.status == "waiting-input"
    assert run.waiting_for == ["me"]
    assert run.result is None and run.error is None
    assert calls.order == ["writer"]
    assert [e["type"] for e in run.events[-2:]] == ["conversation.exchanged",
                                                     "interrupt.requested"]
    asked = run.events[-1]["payload"]
    assert asked["kind"] == "conversation.exchange"
    assert asked["key"] == f"{run.run_id}:room:desk:exchange:me:1"

    message_id = await run.reply("Version 2 @writer", room="desk")
    status = await run.wait()

    assert message_id == "team/me/2/0"
    assert status == "completed"
    assert run.state.terminal == "completed"
    assert [(c.member, c.turn, c.triggers) for c in calls.log] == [
        ("writer", 1, []), ("writer", 2, ["team/me/2/0"])]
    assert calls.log[1].input.result == {
        "summary": "asked", "posts": [{"roomId": "desk", "text": "Which version?",
                                       "mentions": ["me"]}]}
    assert [(m.id, m.sender, m.mentions) for m in run.messages] == [
        ("team/writer/1/0", "writer", ["me"]),
        ("team/me/2/0", "me", ["writer"]),
    ]
    me_started = [e for e in of_type(run.events, "node.started") if e.get("nodeId") == "me"]
    assert [e["payload"]["triggers"] for e in me_started] == [["team/writer/1/0"]]
    assert run.result is not None
    assert run.result["agents"][2] == {"name": "me", "role": "me", "result": {
        "summary": "Version 2 @writer",
        "posts": [{"roomId": "desk", "text": "Version 2 @writer", "mentions": ["writer"]}]}}


@pytest.mark.parametrize(
    ("room", "text", "as_"),
    [
        ("side", "hello @writer", None),         # me is not a member of side
        ("desk", "hello @reviewer", None),       # reviewer is not in desk
        ("attic", "hello", None),                # no such room
        ("desk", "hello @nobody", None),         # not a member at all
        ("desk", "hello", "writer"),             # writer is not a human member
        ("desk", "hello", "ghost"),              # not a member
        ("desk", "bad \udcff bytes", None),     # not valid Unicode (undecodable argv)
    ],
)
async def test_a_refused_reply_raises_validation_error_and_appends_nothing(
    make_council: MakeCouncil, db_path: Path, room: str, text: str, as_: str | None
) -> None:
    calls = Calls()
    run = await desk_council(make_council, calls).arun(store=db_path, deterministic=True)
    before = len(run.events)

    with pytest.raises(ValidationError) as caught:
        await run.reply(text, room=room, as_=as_)

    assert caught.value.code == "validation_error"
    assert str(caught.value)
    assert len(run.events) == before
    assert run.status == "waiting-input"
    # The run still takes a valid reply afterwards.
    await run.reply("fine @writer", room="desk")
    assert await run.wait() == "completed"


async def test_a_wrong_mention_names_the_rooms_members(make_council: MakeCouncil,
                                                       db_path: Path) -> None:
    run = await desk_council(make_council, Calls()).arun(store=db_path, deterministic=True)
    before = len(run.events)

    with pytest.raises(ValidationError) as caught:
        await run.reply("thanks @writr and @reviewer", room="desk")

    assert caught.value.message == ("mention '@writr' is not a member of room 'desk' (writer, "
                                    "me); did you mean 'writer'?")
    assert caught.value.hint == ("mention members of room 'desk': @writer, @me (or @all); a "
                                 "name without @ asks nobody")
    assert "resume payload" not in str(caught.value) and "operation" not in str(caught.value)
    assert len(run.events) == before


async def test_a_refused_reply_through_a_fresh_handle_appends_nothing(
    make_council: MakeCouncil, db_path: Path
) -> None:
    council = desk_council(make_council, Calls())
    run = await council.arun(store=db_path, deterministic=True)
    other = attach(SqliteStore(db_path), run.run_id, council=council)
    before = len(other.events)

    with pytest.raises(ValidationError):
        await other.reply("hello @reviewer", room="desk")

    assert len(other.events) == before


async def test_a_human_post_while_a_turn_runs_is_durable_at_once_and_applied_at_settle(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    first_running = asyncio.Event()
    release_first = asyncio.Event()

    async def hold(turn: Turn) -> None:
        if turn.member == "writer" and turn.turn == 1:
            first_running.set()
            await wait_for(release_first, "the test releasing the first turn")

    council = make_council(
        {"writer": calls.handler(lambda t: reply(f"w{t.turn}"), before=hold),
         "reviewer": calls.handler(), "me": HUMAN},
        rooms={"lounge": ["me", "reviewer", "writer"]},
        waiting=["reviewer"],
    )
    run = council.start(store=db_path, deterministic=True)
    await wait_for(first_running, "the first batch running")

    # The human joins while a turn runs: the post is saved at once (DESIGN.md §24) ...
    message_id = await asyncio.wait_for(run.reply("@reviewer have a look", room="lounge"), 5)
    assert [e["type"] for e in run.events][-3:] == [
        "node.started", "node.completed", "conversation.exchanged"]
    assert calls.order == ["writer"]  # ... and a mention never interrupts a running turn:
    release_first.set()  # it is applied when the batch settles.
    status = await run.wait()

    assert status == "completed", run.error
    assert message_id == "team/me/2/0"
    assert calls.order == ["writer", "reviewer"]
    assert calls.of("reviewer")[0].triggers == ["team/me/2/0"]
    assert dispatch_order(run.events) == ["writer", "me", "reviewer"]


async def test_a_human_may_join_a_run_waiting_for_another_human(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    council = make_council(
        {"lead": calls.handler(lambda t: reply("ask", say("all", "you two?", "ann"))),
         "helper": calls.handler(), "ann": HUMAN, "bob": HUMAN},
        waiting=["helper"],
    )
    run = await council.arun(store=db_path, deterministic=True)
    assert run.waiting_for == ["ann"]

    await run.reply("@helper please start", room="all", as_="bob")
    assert await run.wait() == "waiting-input"

    assert calls.order == ["lead", "helper"]
    assert calls.of("helper")[0].triggers == ["team/bob/2/0"]
    assert run.waiting_for == ["ann"]


async def test_a_waiting_run_resumed_elsewhere_never_re_asks_the_human(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    council = desk_council(make_council, calls)
    run = await council.arun(store=db_path, deterministic=True)
    before = len(run.events)

    again = council.open(run.run_id, SqliteStore(db_path))
    assert await again.resume() == "waiting-input"
    assert len(again.events) == before
    assert calls.order == ["writer"]

    await again.reply("v3 @writer", room="desk")
    assert await again.wait() == "completed"
    assert calls.order == ["writer", "writer"]


async def test_a_human_post_breaking_the_turn_schema_is_refused(make_council: MakeCouncil,
                                                                db_path: Path) -> None:
    council = make_council(
        {"asker": lambda t: reply("ask", say("all", "yes?", "me")), "me": HUMAN},
        rooms={"all": {"members": ["asker", "me"], "turn_schema": {
            "type": "object", "properties": {"text": {"type": "string", "maxLength": 5}}}}})
    run = await council.arun(store=db_path, deterministic=True)
    before = len(run.events)

    with pytest.raises(ValidationError) as caught:
        await run.reply("this is far too long", room="all")

    assert "turn_schema" in str(caught.value)
    assert len(run.events) == before
    await run.reply("ok", room="all")
    assert await run.wait() == "completed"


async def test_a_reply_while_another_driver_holds_the_run_is_kept_and_followed(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    council = desk_council(make_council, calls)
    run = await council.arun(store=db_path, deterministic=True)
    assert run.status == "waiting-input"
    store = SqliteStore(db_path)
    late = attach(store, run.run_id, council=council)

    # Another driver took the run up just now (as a second person's reply would).
    with store.claim(run.run_id):
        message_id = await late.reply("Version 2 @writer", room="desk")
        watching = asyncio.ensure_future(late.wait())
        await asyncio.sleep(0.05)
        assert not watching.done()  # not driving: following the driver that holds the run
    assert message_id == "team/me/2/0"

    # That driver carries the run on, the late post included.
    assert await attach(db_path, run.run_id, council=council).resume() == "completed"
    assert await asyncio.wait_for(watching, 10) == "completed"
    assert [(c.member, c.turn, c.triggers) for c in calls.log] == [
        ("writer", 1, []), ("writer", 2, ["team/me/2/0"])]
    store.close()
