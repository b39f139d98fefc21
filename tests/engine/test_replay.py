"""Replay (DESIGN.md §8): the state is a pure fold; reading a finished run appends nothing."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import MakeCouncil
from tests.engine.helpers import Calls, reply, say
from tests.engine.resume_council import build
from wopdsl import CouncilState, SqliteStore, attach


def count(db_path: Path, run_id: str) -> int:
    store = SqliteStore(db_path)
    try:
        return store.last_sequence(run_id) + 1
    finally:
        store.close()


async def test_folding_a_completed_run_rebuilds_its_result_and_appends_nothing(
    tmp_path: Path, db_path: Path
) -> None:
    council = build(tmp_path / "side.log", delay=0)
    run = await council.arun(store=db_path, run_id="done")
    assert run.status == "completed"
    calls = (tmp_path / "side.log").read_text().count("\n")
    store = SqliteStore(db_path)
    events = store.read("done")
    before = len(events)

    state = CouncilState.fold(events)

    assert state.status == "completed"
    assert state.result() == run.result == state.outputs
    assert [m.id for m in state.transcript_messages()] == [m.id for m in run.messages]
    assert CouncilState.fold(store.read("done")).result() == state.result()  # pure

    attached = attach(db_path, "done")
    assert attached.status == "completed"
    assert attached.result == run.result
    assert attached.transcript == run.transcript
    assert [m.id for m in attached.messages] == [m.id for m in run.messages]
    assert attached.waiting_for == []
    assert attached.snapshot()["status"] == "completed"
    assert len(list(attached.events)) == before
    assert await attached.wait() == "completed"

    # Resuming a finished run re-folds the log and runs nothing.
    again = build(tmp_path / "side.log", delay=0).open("done", SqliteStore(db_path))
    assert await again.resume() == "completed"

    assert count(db_path, "done") == before
    assert (tmp_path / "side.log").read_text().count("\n") == calls
    store.close()


async def test_folding_a_failed_run_gives_its_error(make_council: MakeCouncil,
                                                    db_path: Path) -> None:
    council = make_council({"one": lambda t: reply("x", say("all", "hi", "ghost"))})
    run = await council.arun(store=db_path, run_id="bad")
    before = count(db_path, "bad")

    state = CouncilState.fold(attach(db_path, "bad").events)

    assert state.status == "failed"
    assert state.error == run.error
    assert state.failed_node == "one"
    assert attach(db_path, "bad").result is None
    assert count(db_path, "bad") == before


async def test_two_deterministic_runs_have_identical_transcripts(make_council: MakeCouncil,
                                                                 db_path: Path) -> None:
    calls = Calls()
    council = make_council(
        {"ann": calls.handler(lambda t: reply("a", say("all", "hi @bob", "bob"))),
         "bob": calls.handler(lambda t: reply("b", say("all", "hello")))},
        waiting=["bob"],
    )

    first = await council.arun(store=db_path, deterministic=True)
    second = await council.arun(store=db_path, deterministic=True)

    assert first.run_id != second.run_id
    assert first.transcript == second.transcript
    assert first.result == second.result
