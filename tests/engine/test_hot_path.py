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

from tests.conftest import MakeCouncil
from tests.engine.deliberation_council import build
from tests.engine.helpers import reply, say
from wopdsl import CouncilState, Message, Run, Turn


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
