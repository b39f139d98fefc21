"""The one fold every reader uses: ``CouncilState`` over a real run's log on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import HUMAN, MakeCouncil
from tests.published import RELEASE_TEAM_TOML
from wopdsl import Council, SqliteStore, attach
from wopdsl.declare import loads_spec
from wopdsl.state import (
    TERMINAL,
    TERMINAL_EVENTS,
    CouncilState,
    build_snapshot,
    channels,
    status_of_event,
)


async def test_the_fold_of_the_log_is_the_engines_state(db_path: Path) -> None:
    run = await Council.from_spec(loads_spec(RELEASE_TEAM_TOML)).arun(store=db_path)
    events = SqliteStore(db_path).read(run.run_id)

    folded = CouncilState.fold(events)

    assert folded.status == run.status == "completed"
    assert folded.result() == run.result
    assert folded.last_sequence == len(events) - 1
    assert {m: s.turns for m, s in folded.members.items()} == {"writer": 2, "reviewer": 1}
    assert [m.id for m in folded.transcript_messages()] == [m.id for m in run.messages]
    assert build_snapshot(folded) == run.snapshot()


async def test_folding_in_pieces_equals_one_fold(db_path: Path) -> None:
    run = await Council.from_spec(loads_spec(RELEASE_TEAM_TOML)).arun(store=db_path)
    events = SqliteStore(db_path).read(run.run_id)
    whole = CouncilState.fold(events)

    pieces = CouncilState()
    for start in range(0, len(events), 3):
        pieces.apply_all(events[start:start + 3])
        assert pieces.last_sequence == min(start + 2, len(events) - 1)

    assert build_snapshot(pieces) == build_snapshot(whole)
    assert channels(pieces) == channels(whole)


def test_terminal_events_name_the_terminal_statuses() -> None:
    assert set(TERMINAL_EVENTS.values()) == set(TERMINAL)
    for event_type, status in TERMINAL_EVENTS.items():
        assert status_of_event(event_type) == status
    assert status_of_event("node.completed") is None


async def test_a_waiting_run_folds_to_waiting_input(make_council: MakeCouncil,
                                                    db_path: Path) -> None:
    ask = {"summary": "asked", "posts": [{"room": "desk", "text": "Ready?",
                                          "mentions": ["boss"]}]}
    council = make_council({"boss": HUMAN, "worker": [ask]}, rooms={"desk": ["boss", "worker"]})
    run = await council.arun(store=db_path)
    assert run.status == "waiting-input"

    folded = CouncilState.fold(SqliteStore(db_path).read(run.run_id))

    assert folded.status == "waiting-input"
    assert folded.waiting_for == ["boss"]
    assert folded.member_phase("boss") == "waiting"
    assert attach(db_path, run.run_id).state.status == "waiting-input"


async def test_an_unknown_event_type_is_skipped_for_forward_compatibility(
    db_path: Path,
) -> None:
    run = await Council.from_spec(loads_spec(RELEASE_TEAM_TOML)).arun(store=db_path)
    events = SqliteStore(db_path).read(run.run_id)
    extra = dict(events[-1], type="x.future.event", sequence=len(events))

    folded = CouncilState.fold([*events, extra])

    assert folded.status == "completed"
    assert folded.last_sequence == len(events)
