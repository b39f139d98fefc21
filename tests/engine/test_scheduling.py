"""Scheduling (DESIGN.md §3): queue order, batches, dispatch-order completions, mentions."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.conftest import MakeCouncil
from tests.engine.helpers import (
    Calls,
    dispatch_order,
    exchanged_ids,
    index_of,
    member_events,
    reply,
    say,
    wait_for,
)
from tests.published import RELEASE_TEAM_TOML, REVIEWER_TEXT, decorated_release_team
from wopdsl import Council, Reply, Turn
from wopdsl.declare import loads_spec


async def test_initial_turns_run_in_declaration_order(make_council: MakeCouncil,
                                                      db_path: Path) -> None:
    calls = Calls()
    council = make_council({m: calls.handler() for m in ["zed", "amy", "kit", "late"]},
                           waiting=["late"])

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert calls.order == ["zed", "amy", "kit"]
    assert dispatch_order(run.events) == ["zed", "amy", "kit"]
    assert [c.triggers for c in calls.log] == [[], [], []]
    assert calls.of("late") == []
    assert run.result is not None
    assert [(a["name"], a["result"]) for a in run.result["agents"]] == [
        ("zed", {"summary": "zed turn 1"}),
        ("amy", {"summary": "amy turn 1"}),
        ("kit", {"summary": "kit turn 1"}),
        ("late", None),
    ]


async def test_waiting_member_runs_only_when_mentioned(make_council: MakeCouncil,
                                                       db_path: Path) -> None:
    calls = Calls()
    council = make_council(
        {
            "lead": calls.handler(lambda t: reply("asked", say("all", "go", "helper"))),
            "helper": calls.handler(),
            "idle": calls.handler(),
        },
        waiting=["helper", "idle"],
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert calls.order == ["lead", "helper"]
    assert calls.of("helper")[0].triggers == ["team/lead/1/0"]


async def test_a_batch_holds_at_most_global_concurrency_and_settles_before_the_next(
    make_council: MakeCouncil, db_path: Path
) -> None:
    both_started = asyncio.Event()
    first_done = asyncio.Event()
    started: set[str] = set()
    finished: list[str] = []
    running = 0
    most_running = 0
    seen_by_third: list[list[str]] = []

    async def first(turn: Turn) -> Reply:
        await enter(turn.member)
        await wait_for(both_started, "the first two members running together")
        return leave(turn.member, first_done)

    async def second(turn: Turn) -> Reply:
        await enter(turn.member)
        await wait_for(both_started, "the first two members running together")
        await wait_for(first_done, "the first member finishing")
        # A pool that refills as soon as a slot frees would start the third member now.
        for _ in range(20):
            await asyncio.sleep(0.005)
        return leave(turn.member, None)

    async def third(turn: Turn) -> Reply:
        await enter(turn.member)
        seen_by_third.append(list(finished))
        return leave(turn.member, None)

    async def enter(member: str) -> None:
        nonlocal running, most_running
        running += 1
        most_running = max(most_running, running)
        started.add(member)
        if {"first", "second"} <= started:
            both_started.set()

    def leave(member: str, done: asyncio.Event | None) -> Reply:
        nonlocal running
        running -= 1
        finished.append(member)
        if done is not None:
            done.set()
        return reply(f"{member} done")

    council = make_council({"first": first, "second": second, "third": third},
                           global_concurrency=2)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert most_running == 2
    assert seen_by_third == [["first", "second"]]
    events = list(run.events)
    # Both dispatches are durable before either completes; the third only after both.
    assert member_events(events) == [
        ("node.started", "first"),
        ("node.started", "second"),
        ("node.completed", "first"),
        ("node.completed", "second"),
        ("node.started", "third"),
        ("node.completed", "third"),
    ]
    batches = [e["payload"].get("batch") for e in events
               if e["type"] == "node.started" and e.get("nodeId") in {"first", "second", "third"}]
    assert batches == [1, 1, 2]


async def test_completions_are_applied_in_dispatch_order(make_council: MakeCouncil,
                                                         db_path: Path) -> None:
    second_done = asyncio.Event()
    finish_order: list[str] = []

    async def slow(turn: Turn) -> Reply:
        await wait_for(second_done, "the second member finishing first")
        finish_order.append(turn.member)
        return reply("slow", say("all", "from slow"))

    async def fast(turn: Turn) -> Reply:
        finish_order.append(turn.member)
        second_done.set()
        return reply("fast", say("all", "from fast"))

    council = make_council({"slow": slow, "fast": fast}, global_concurrency=2)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert finish_order == ["fast", "slow"]
    events = list(run.events)
    assert index_of(events, "node.completed", "slow") < index_of(events, "node.completed", "fast")
    assert exchanged_ids(events) == ["team/slow/1/0", "team/fast/2/0"]
    assert [(m.id, m.sender, m.position, m.text) for m in run.messages] == [
        ("team/slow/1/0", "slow", 1, "from slow"),
        ("team/fast/2/0", "fast", 2, "from fast"),
    ]
    # Each exchanged event directly follows its own member's node.completed.
    kinds = [(e["type"], e.get("nodeId")) for e in events]
    at = kinds.index(("node.completed", "slow"))
    assert kinds[at:at + 4] == [
        ("node.completed", "slow"),
        ("conversation.exchanged", "room:all"),
        ("node.completed", "fast"),
        ("conversation.exchanged", "room:all"),
    ]


async def test_mentions_in_one_batch_coalesce_into_one_turn_with_every_trigger(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    council = make_council(
        {
            "ann": calls.handler(lambda t: reply("ann", say("all", "ann asks", "rev"))),
            "bob": calls.handler(lambda t: reply("bob", say("all", "bob asks", "rev"))),
            "rev": calls.handler(),
        },
        waiting=["rev"],
        global_concurrency=2,
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert calls.order.count("rev") == 1
    (rev,) = calls.of("rev")
    assert rev.turn == 1
    assert rev.triggers == ["team/ann/1/0", "team/bob/2/0"]
    started = [e for e in run.events if e["type"] == "node.started" and e.get("nodeId") == "rev"]
    assert [e["payload"]["triggers"] for e in started] == [["team/ann/1/0", "team/bob/2/0"]]
    assert started[0]["payload"]["position"] == 3


async def test_pending_mentions_across_batches_share_one_queued_turn(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    # Queue: ann, bob, cat. ann mentions rev (queued after cat); bob mentions rev again
    # while rev is still queued: one turn, both triggers, still after cat.
    council = make_council(
        {
            "ann": calls.handler(lambda t: reply("ann", say("all", "ann asks", "rev"))),
            "bob": calls.handler(lambda t: reply("bob", say("all", "bob asks", "rev"))),
            "cat": calls.handler(),
            "rev": calls.handler(),
        },
        waiting=["rev"],
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert calls.order == ["ann", "bob", "cat", "rev"]
    assert calls.of("rev")[0].triggers == ["team/ann/1/0", "team/bob/2/0"]


async def test_a_mention_never_interrupts_a_running_turn(make_council: MakeCouncil,
                                                         db_path: Path) -> None:
    calls = Calls()
    asker_done = asyncio.Event()

    async def asker(turn: Turn) -> Reply:
        calls.record(turn)
        asker_done.set()
        return reply("asked", say("all", "please look", "busy"))

    async def busy(turn: Turn) -> Reply:
        calls.record(turn)
        if turn.turn == 1:
            # Still running when the batch-mate that mentions it has finished.
            await wait_for(asker_done, "the batch-mate finishing")
            await asyncio.sleep(0.01)
        return reply(f"busy turn {turn.turn}")

    council = make_council({"asker": asker, "busy": busy}, global_concurrency=2)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert [(c.member, c.turn, c.triggers) for c in calls.log] == [
        ("asker", 1, []),
        ("busy", 1, []),
        ("busy", 2, ["team/asker/1/0"]),
    ]
    events = list(run.events)
    assert not [e for e in events if e["type"] in {"node.cancelled", "node.failed"}]
    completed = [e["payload"]["outputs"] for e in events
                 if e["type"] == "node.completed" and e.get("nodeId") == "busy"]
    assert completed == [{"summary": "busy turn 1"}, {"summary": "busy turn 2"}]


async def test_a_member_may_mention_itself(make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()

    def solo(turn: Turn) -> Reply:
        if turn.turn == 1:
            return reply("again", say("all", "note to self", "solo"))
        return reply("done")

    council = make_council({"solo": calls.handler(solo)})

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert [(c.turn, c.triggers) for c in calls.log] == [(1, []), (2, ["team/solo/1/0"])]
    assert run.messages[0].mentions == ["solo"]


async def test_message_ids_use_dispatch_position_and_post_index(make_council: MakeCouncil,
                                                               db_path: Path) -> None:
    council = make_council(
        {
            "quiet": lambda t: reply("nothing to say"),
            "chatty": lambda t: reply("two posts", say("a", "one"), say("b", "two", "quiet")),
        },
        rooms={"a": ["quiet", "chatty"], "b": ["chatty", "quiet"]},
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert [m.model_dump(by_alias=True) for m in run.messages] == [
        {"id": "team/chatty/2/0", "roomId": "a", "sender": "chatty", "text": "one",
         "mentions": [], "position": 2},
        {"id": "team/chatty/2/1", "roomId": "b", "sender": "chatty", "text": "two",
         "mentions": ["quiet"], "position": 2},
    ]
    # quiet's second turn (position 3) is triggered by the second post.
    starts = [(e["payload"]["nodeId"], e["payload"]["position"], e["payload"]["turn"])
              for e in run.events if e["type"] == "node.started"
              and e["payload"].get("typeId") == "council.member"]
    assert starts == [("quiet", 1, 1), ("chatty", 2, 1), ("quiet", 3, 2)]




async def test_the_published_example_from_toml(db_path: Path) -> None:
    council = Council.from_spec(loads_spec(RELEASE_TEAM_TOML))

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert dispatch_order(run.events) == ["writer", "reviewer", "writer"]
    assert [(m.id, m.sender, m.text, m.mentions) for m in run.messages] == [
        ("team/writer/1/0", "writer", "Please review: Prepare a release note.", ["reviewer"]),
        ("team/reviewer/2/0", "reviewer", REVIEWER_TEXT, ["writer"]),
    ]
    assert run.result == {
        "task": "Prepare a release note.",
        "agents": [
            {"name": "writer", "role": "writer",
             "result": {"summary": "Finished after review team/reviewer/2/0: "
                                  "Prepare a release note."}},
            {"name": "reviewer", "role": "reviewer",
             "result": {"summary": "Draft checked.", "posts": [
                 {"roomId": "review", "text": REVIEWER_TEXT, "mentions": ["writer"]}]}},
        ],
    }


async def test_the_published_example_with_decorators(db_path: Path) -> None:
    seen: list[str] = []
    council = decorated_release_team(seen)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert seen == ["writer", "reviewer", "writer"]
    assert [m.text for m in run.messages if m.sender == "reviewer"] == [REVIEWER_TEXT]
    assert [m.id for m in run.messages] == ["team/writer/1/0", "team/reviewer/2/0"]


async def test_a_member_mentioned_twice_in_one_post_gets_that_message_once(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    council = make_council(
        {"ann": calls.handler(lambda t: reply("a", say("all", "you, you", "rev", "rev"))),
         "rev": calls.handler()},
        waiting=["rev"],
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert calls.order == ["ann", "rev"]
    assert calls.of("rev")[0].triggers == ["team/ann/1/0"]
    assert [m.id for m in calls.of("rev")[0].input.messages] == ["team/ann/1/0"]
