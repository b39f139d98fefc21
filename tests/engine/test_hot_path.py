"""What the per-turn fast paths (issue 38) must keep: the same log, the same state, no garbage.

The engine builds each event, folds it into its state and commits it; its shortcuts for the
common turn (a lone inline turn, one post, no deliberation) must leave exactly the state a
fold of the durable log gives, and a finished run must be freed with its last reference, not
wait for the cyclic garbage collector (a 10,000-turn run holds ~40,000 objects).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.conftest import MakeCouncil
from tests.engine.deliberation_council import build
from tests.engine.helpers import reply, say
from wopdsl import CouncilState, Message, Post, Reply, Run, Turn, Vote
from wopdsl.model.construct import new_message, new_turn


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    """The cyclic GC paused: only reference counting frees objects meanwhile."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


async def test_a_finished_run_is_freed_by_reference_counting(
    make_council: MakeCouncil, db_path: Path, no_cyclic_gc: None
) -> None:
    council = make_council({
        "one": lambda t: reply(f"o{t.turn}", *([say("all", "to two", "two")]
                                               if t.turn < 20 else [])),
        "two": lambda t: reply(f"t{t.turn}", say("all", "to one", "one")),
    }, waiting=["two"], max_turns_per_member=20)
    states, messages = _count(CouncilState), _count(Message)
    run = await council.arun(store=str(db_path), run_id="freed")
    assert run.status == "completed"
    assert len(run.events) > 60 and run.events(after=-1) is not None
    assert _count(CouncilState) > states and _count(Message) >= messages + 30
    run.store.close()

    del run

    # With the GC paused, only a reference cycle could keep them: there is none.
    assert (_count(CouncilState), _count(Message)) == (states, messages)


def _count(kind: type) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is kind)


async def test_the_engines_state_is_the_fold_of_its_log(
    make_council: MakeCouncil, db_path: Path
) -> None:
    def one(turn: Turn) -> object:
        if turn.turn == 1:
            return reply("first", say("all", "to two and three", "two", "three"))
        return reply(f"o{turn.turn}", *([say("all", "again", "two")] if turn.turn < 6 else []))

    council = make_council({
        "one": one,
        "two": lambda t: reply(f"t{t.turn}", say("all", f"two says {t.turn}", "one")),
        "three": lambda t: {"summary": "three", "posts": [
            {"roomId": "all", "text": "dict post", "mentions": ["two", "two"]}]},
    }, waiting=["two", "three"])
    run = await council.arun(store=str(db_path), run_id="folded")
    assert run.status == "completed"
    _assert_state_is_the_fold(run)


async def test_a_deliberating_councils_state_is_the_fold_of_its_log(
    db_path: Path, tmp_path: Path
) -> None:
    """Two blind, anonymous rounds with votes, a chair and two turns at once: the turns'
    dispatch, completion and posts written and folded in one step leave the fold's state."""
    council = build(tmp_path / "calls.txt", 0.0)
    run = await council.arun(store=str(db_path), run_id="deliberated")
    assert run.status == "completed"
    state = run.state
    assert state.decisions["ship"].closed and len(state.decisions["ship"].history) == 6
    assert state.batch < 7 and state.rooms["board"].blind  # batches of two turns ran
    _assert_state_is_the_fold(run)


def _assert_state_is_the_fold(run: Run) -> None:
    live = run.state
    folded = CouncilState.fold(run.store.read(run.run_id))
    run.store.close()
    assert live.messages and live.last_sequence == folded.last_sequence
    for name in (f.name for f in fields(CouncilState)):
        assert getattr(live, name) == getattr(folded, name), name
        assert repr(getattr(live, name)) == repr(getattr(folded, name)), name
    assert live == folded
    for message_id, message in live.messages.items():  # Their own lists, not the log's.
        assert message.mentions is not folded.messages[message_id].mentions


@pytest.mark.parametrize("reply", [
    Reply(summary="only a summary"),
    Reply(summary="s", data={"k": [1, 2.5, None]}, posts=[
        Post(room="all", text="one", mentions=["two", "three"]),
        Post(room="side", text="two")],
        votes=[Vote(decision="ship", choice="hold", reason="why"), Vote(decision="n", choice=3)]),
    Reply(summary="falsy data kept", data=0, posts=[], votes=[]),
])
def test_a_reply_goes_to_the_wire_as_its_dump_says(reply: Reply) -> None:
    """``to_wire`` (read from the models' ``__dict__`` on the hot path) is the JSON dump
    with ``roomId`` keys and without a null ``data`` or empty lists."""
    dumped = reply.model_dump(by_alias=True)
    expected = {k: v for k, v in dumped.items()
                if not (k == "data" and v is None) and not (k in ("posts", "votes") and not v)}
    wire = reply.to_wire()
    assert wire == expected and list(wire) == list(expected)
    for post, model in zip(wire.get("posts", []), reply.posts, strict=True):
        assert post["mentions"] == model.mentions and post["mentions"] is not model.mentions


def test_messages_and_turns_built_on_the_hot_path_are_the_validated_models() -> None:
    message = new_message("team/one/3/0", "all", "one", "hi", ["two"], 3)
    validated = Message(id="team/one/3/0", roomId="all", sender="one", text="hi",
                        mentions=["two"], position=3)
    assert message == validated and repr(message) == repr(validated)
    assert message.model_fields_set == validated.model_fields_set
    assert message.to_wire() == validated.to_wire() and hash(message.id) == hash(validated.id)
    with pytest.raises(ValidationError):
        message.text = "changed"  # type: ignore[misc]  # frozen, as the validated model
    turn = new_turn("task", "one", "role", "brief", 2, {"summary": "s"}, [message], [message],
                    [], {}, {}, 5)
    checked = Turn(task="task", member="one", role="role", brief="brief", turn=2,
                   result={"summary": "s"}, messages=[validated], triggers=[validated],
                   elapsed_ms=5)
    assert turn == checked and repr(turn) == repr(checked)
    assert turn.model_fields_set == set(Turn.model_fields)
