"""Steering a running council (DESIGN.md §24, docs/guides/steering.md), python members.

A person's steering post stops the running turns it names at once (their tasks cancelled),
and they run again first — the same turn, the next attempt — with the post among their
triggers; nothing of a stopped turn is saved, a stopped turn counts against neither the cap
nor the retries, and the log validates in v1 and v2.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HUMAN, MakeCouncil
from tests.engine.helpers import Calls, member_events, of_type, reply, say, wait_for
from wopdsl import Council, Reply, Run, Turn, ValidationError, Vote, attach
from wopdsl.protocol.check_v2 import check_events_v2
from wopdsl.store import open_store

RUN = "steered-run-000001"
"""A run id the v2 check admits (16 characters or more)."""


class Held:
    """An async handler step that holds chosen calls until released, or stopped."""

    def __init__(self, calls: Calls, hold: Callable[[Turn], bool]) -> None:
        self.calls = calls
        self.hold = hold
        self.started: dict[str, asyncio.Event] = {}
        self.release: dict[str, asyncio.Event] = {}
        self.stopped: list[tuple[str, int]] = []

    def running(self, member: str) -> asyncio.Event:
        return self.started.setdefault(member, asyncio.Event())

    def gate(self, member: str) -> asyncio.Event:
        return self.release.setdefault(member, asyncio.Event())

    async def __call__(self, turn: Turn) -> None:
        if not self.hold(turn):
            return
        self.running(turn.member).set()
        try:
            await self.gate(turn.member).wait()
        except asyncio.CancelledError:
            self.stopped.append((turn.member, len(self.calls.of(turn.member))))
            raise


def first_call(calls: Calls, member: str | None = None) -> Callable[[Turn], bool]:
    """Hold each member's first call only (``member``: that member's only)."""
    return lambda turn: member in (None, turn.member) and len(calls.of(turn.member)) == 1


def says_triggers(turn: Turn) -> Reply:
    return reply(f"{turn.member} saw {[m.id for m in turn.triggers]}")


def assert_valid(run: Run) -> None:
    """The log validates in v2 too (v1: the autouse `wop check` fixture)."""
    assert check_events_v2(run.events.to_list()) == []


async def test_a_steer_stops_the_running_turn_and_runs_it_again_first_with_the_post(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    held = Held(calls, first_call(calls))
    council = make_council(
        {"writer": calls.handler(lambda t: reply("w", say("board", "draft")), before=held),
         "reviewer": calls.handler(), "me": HUMAN},
        rooms={"board": ["me", "writer", "reviewer"]}, waiting=["reviewer"],
        max_turns_per_member=1)
    run = council.start(store=db_path, run_id=RUN, deterministic=True)
    await wait_for(held.running("writer"), "the writer's turn runs")

    post = await asyncio.wait_for(
        run.reply("@writer use the 2M budget", room="board", steer=True), 5)

    assert await run.wait() == "completed", run.error
    assert held.stopped == [("writer", 1)]  # its task was cancelled: stopped at once
    writer = calls.of("writer")
    assert [(c.turn, c.triggers) for c in writer] == [(1, []), (1, [post])]
    assert post in writer[1].messages
    events = run.events.to_list()
    assert member_events(events) == [
        ("node.started", "writer"), ("node.started", "me"), ("node.completed", "me"),
        ("node.retried", "writer"), ("node.started", "writer"), ("node.completed", "writer")]
    first, again = [e for e in of_type(events, "node.started") if e.get("nodeId") == "writer"]
    retried = of_type(events, "node.retried")[0]["payload"]
    assert retried == {"nodeId": "writer", "attempt": 1, "delayMs": 0, "lastError": {
        "code": "STEERED", "message": f"stopped by the steering post {post}",
        "details": {"messageId": post}, "retryable": True}}
    assert (again["payload"]["attempt"], again["payload"]["turn"], again["payload"]["position"],
            again["payload"]["triggers"]) == (1, 1, first["payload"]["position"], [post])
    steering = next(e for e in of_type(events, "conversation.exchanged")
                    if e["payload"]["turn"]["messageId"] == post)["payload"]["turn"]
    assert steering["content"] == {"text": "@writer use the 2M budget", "mentions": ["writer"],
                                   "steer": True}
    assert [m.sender for m in run.messages] == ["me", "writer"]  # one writer post: the rerun's
    assert run.state.members["writer"].turns == 1  # the stopped turn spent no cap (max 1)
    assert run.state.steering == {post: ("writer",)}
    assert_valid(run)


async def test_a_steer_without_mentions_stops_the_rooms_running_members_only(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    held = Held(calls, first_call(calls))
    council = make_council(
        {"a": calls.handler(says_triggers, before=held),
         "b": calls.handler(says_triggers, before=held),
         "c": calls.handler(says_triggers, before=held), "me": HUMAN},
        rooms={"board": ["me", "a", "b"], "side": ["c", "me"]}, global_concurrency=3)
    run = council.start(store=db_path, run_id=RUN, deterministic=True)
    for member in "abc":
        await wait_for(held.running(member), f"{member}'s turn runs")

    post = await run.reply("everyone: the budget is fixed", room="board", steer=True)
    await asyncio.sleep(0.05)
    assert sorted(held.stopped) == [("a", 1), ("b", 1)]  # c (another room) runs on
    held.gate("c").set()

    assert await run.wait() == "completed", run.error
    assert [(c.member, c.triggers) for c in calls.log[3:]] == [("a", [post]), ("b", [post])]
    assert run.state.members["c"].result == {"summary": "c saw []"}
    assert run.state.steering == {post: ("a", "b")}
    assert_valid(run)


async def test_a_turn_that_finished_before_the_steer_is_discarded_until_its_batch_settles(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    held = Held(calls, first_call(calls, "b"))
    council = make_council(
        {"a": calls.handler(lambda t: reply("a", say("board", f"a saw {len(t.triggers)}"))),
         "b": calls.handler(says_triggers, before=held), "me": HUMAN},
        rooms={"board": ["me", "a", "b"]}, global_concurrency=2)
    run = council.start(store=db_path, run_id=RUN, deterministic=True)
    await wait_for(held.running("b"), "b's turn runs (a's is done)")
    assert len(calls.of("a")) == 1

    post = await run.reply("@a redo it", room="board", steer=True)
    assert held.stopped == []  # b is not named: it runs on
    held.gate("b").set()

    assert await run.wait() == "completed", run.error
    assert [m.text for m in run.messages if m.sender == "a"] == ["a saw 1"]  # the rerun only
    assert [(c.member, c.triggers) for c in calls.log] == [("a", []), ("b", []), ("a", [post])]
    assert_valid(run)


async def test_a_vote_of_a_turn_the_steer_stopped_is_never_counted(
        make_council: MakeCouncil, db_path: Path) -> None:
    # a's turn votes "hold" and ends before the steer, but its batch (b still runs) has not
    # settled: the steer discards it, vote and all; only the rerun's vote is counted.
    calls = Calls()
    held = Held(calls, first_call(calls, "b"))

    def votes(choice: Callable[[Turn], str]) -> Callable[[Turn], Reply]:
        return lambda turn: Reply(summary=f"{turn.member} votes", posts=[say(
            "board", f"{turn.member}: {choice(turn)}")], votes=[
            Vote(decision="ship", choice=choice(turn), reason=f"{turn.member} thinks so")])

    council = make_council(
        {"a": calls.handler(votes(lambda t: "ship" if t.triggers else "hold")),
         "b": calls.handler(votes(lambda t: "ship"), before=held), "me": HUMAN},
        rooms={"board": ["me", "a", "b"]}, global_concurrency=2)
    council.decision("ship", room="board", question="Ship?", options=["ship", "hold"],
                     voters=["a", "b"])
    run = council.start(store=db_path, run_id=RUN, deterministic=True)
    await wait_for(held.running("b"), "b's turn runs (a's, voting hold, is done)")
    assert len(calls.of("a")) == 1

    post = await run.reply("@a the budget is fixed: vote again", room="board", steer=True)
    held.gate("b").set()

    assert await run.wait() == "completed", run.error
    assert [(c.member, c.triggers) for c in calls.log] == [("a", []), ("b", []), ("a", [post])]
    history = run.state.decisions["ship"].history
    assert sorted((v.voter, v.choice) for v in history) == [("a", "ship"), ("b", "ship")]
    (decision,) = run.decisions
    assert decision["tally"] == {"ship": 2, "hold": 0} and decision["outcome"] == "ship"
    assert [m.text for m in run.messages if m.sender == "a"] == ["a: ship"]
    assert "a: hold" not in str(run.events.to_list())  # nowhere in the log
    assert_valid(run)


async def test_a_steer_puts_named_queued_and_idle_members_first(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    held = Held(calls, lambda turn: turn.member == "lead")
    council = make_council(
        {"lead": calls.handler(before=held), "x": calls.handler(says_triggers),
         "y": calls.handler(says_triggers), "idle": calls.handler(says_triggers),
         "me": HUMAN},
        rooms={"board": ["me", "lead", "x", "y", "idle"]}, waiting=["idle"])
    run = council.start(store=db_path, run_id=RUN, deterministic=True)
    await wait_for(held.running("lead"), "lead's turn runs")

    post = await run.reply("@y @idle look at this first", room="board", steer=True)
    assert held.stopped == []  # lead is not named
    assert list(run.state.queue) == ["y", "idle", "x"]
    held.gate("lead").set()

    assert await run.wait() == "completed", run.error
    assert [(c.member, c.triggers) for c in calls.log] == [
        ("lead", []), ("y", [post]), ("idle", [post]), ("x", [])]
    assert run.state.steering == {post: ()}
    assert_valid(run)


async def test_a_steered_turn_spends_no_retry(make_council: MakeCouncil,
                                              db_path: Path) -> None:
    calls = Calls()
    held = Held(calls, first_call(calls))

    def flaky(turn: Turn) -> Reply:
        if len(calls.of("w")) == 2:
            raise RuntimeError("transient")
        return says_triggers(turn)

    council = make_council({"w": calls.handler(flaky, before=held), "me": HUMAN},
                           rooms={"board": ["me", "w"]}, options={"w": {"retries": 1}})
    run = council.start(store=db_path, run_id=RUN, deterministic=True)
    await wait_for(held.running("w"), "w's turn runs")

    post = await run.reply("@w again", room="board", steer=True)

    assert await run.wait() == "completed", run.error  # stopped, failed once, retried: done
    assert [c.triggers for c in calls.of("w")] == [[], [post], [post]]
    retried = [e["payload"]["lastError"]["code"] for e in of_type(run.events, "node.retried")]
    assert retried == ["STEERED", "TEAM_NODE_FAILED"]  # a handler exception
    assert_valid(run)


async def test_a_steer_from_another_handle_stops_the_turn_through_the_store(
        make_council: MakeCouncil, db_path: Path) -> None:
    # Another handle on its own store connection: as `wop reply --steer` from another
    # process, the driver learns of the post from the store's change notification.
    calls = Calls()
    held = Held(calls, first_call(calls))
    council = make_council({"w": calls.handler(says_triggers, before=held), "me": HUMAN},
                           rooms={"board": ["me", "w"]})
    run = council.start(store=db_path, run_id=RUN, deterministic=True)
    await wait_for(held.running("w"), "w's turn runs")
    other = attach(open_store(db_path), run.run_id)

    post = await other.reply("@w stop", room="board", steer=True)

    assert await run.wait() == "completed", run.error
    assert held.stopped == [("w", 1)]
    assert [c.triggers for c in calls.of("w")] == [[], [post]]
    assert_valid(run)


async def test_a_stopped_member_takes_its_round_turn_again_and_sees_the_steer_in_a_blind_room(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    held = Held(calls, first_call(calls, "b"))
    council = make_council(
        {"a": calls.handler(lambda t: reply("a", say("board", "a answers"))),
         "b": calls.handler(lambda t: reply("b", say("board", "b answers")), before=held),
         "me": HUMAN},
        rooms={"board": {"members": ["me", "a", "b"], "rounds": 1, "blind": True}},
        global_concurrency=2)
    run = council.start(store=db_path, run_id=RUN, deterministic=True)
    await wait_for(held.running("b"), "b's round turn runs")

    post = await run.reply("@b consider the budget", room="board", steer=True)

    assert await run.wait() == "completed", run.error
    rerun = calls.of("b")[1]
    assert rerun.triggers == [post]
    assert post in rerun.messages  # visible mid-round, like a system turn ...
    a_post = next(m.id for m in run.messages if m.sender == "a")
    assert a_post not in rerun.messages  # ... while the round's answers stay hidden
    assert rerun.input.rounds["board"]["round"] == 1  # the same round turn, not a new one
    assert [m.sender for m in run.messages].count("b") == 1
    assert_valid(run)


@pytest.mark.parametrize(("options", "message"), [
    ({"operation": "close"}, "a steer is a post"),
    ({"text": ""}, "the post is empty"),
    ({"resume": {"operation": "exchange",
                 "turn": {"content": {"text": "hi", "steer": "yes"}}}},
     "content.steer must be true or false"),
    ({"as_": "bot", "resume": {"role": "agent", "speakerId": "host:bot",
                               "content": {"text": "hi", "steer": True}}},
     "only a person (a human member) steers"),
])
async def test_a_steer_that_breaks_a_rule_is_refused_and_nothing_is_appended(
        db_path: Path, options: dict[str, Any], message: str) -> None:
    run = await _waiting_council().arun(store=db_path, run_id=RUN, deterministic=True)
    before = len(run.events)
    kwargs = {"text": "hi", "room": "board", "steer": True, **options}
    with pytest.raises(ValidationError) as refused:
        await run.reply(**kwargs)
    assert message in refused.value.message
    assert len(run.events) == before


def _waiting_council() -> Council:
    """``w`` asks the person ``me`` in room ``board``; ``bot`` is an external member."""
    council = Council("team", task="Ship it.")
    council.room("board", members=["me", "w", "bot"])
    council.human("me", role="me")
    council.add_member("bot", role="bot", engine="external", initial_turn=False)

    @council.member(role="w")
    def w(turn: Turn) -> Reply:
        return reply("ask", say("board", "over to you", "me"))

    return council
