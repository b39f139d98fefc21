"""Deliberation is durable (DESIGN.md §22): kill -9 mid-round and between two votes, replay,
fork and PostgreSQL keep rounds, votes and outcomes exact."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.engine.deliberation_council import build
from tests.engine.test_resume_kill import (
    completed_turns,
    kill,
    nth_completed,
    nth_started,
    read,
    wait_until,
)
from wopdsl import SqliteStore, attach, fork
from wopdsl.protocol.check import check_events
from wopdsl.protocol.check_v2 import check_events_v2
from wopdsl.protocol.envelope import RunEventDoc

REPO = Path(__file__).resolve().parents[2]
RUN_ID = "board-0123456789abcdef"


def child(db: Path, side: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.engine.deliberation_council", str(db), RUN_ID,
         str(side), mode, "0.08"], cwd=REPO, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def outcome(db: Path | str, run_id: str = RUN_ID) -> dict[str, object]:
    run = attach(db, run_id)
    decision = run.state.decisions["ship"]
    return {"transcript": run.transcript, "result": run.result,
            "votes": [(v.voter, v.choice, v.round) for v in decision.history],
            "metrics": run.metrics().to_json()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    import asyncio

    folder = tmp_path_factory.mktemp("reference")
    run = asyncio.run(build(folder / "side.log", 0).arun(store=folder / "runs.db",
                                                         run_id=RUN_ID))
    assert run.status == "completed"
    result = outcome(folder / "runs.db")
    assert sorted(result["votes"]) == [  # type: ignore[call-overload]
        ("cfo", "hold", 1), ("cfo", "hold", 2), ("cmo", "hold", 1), ("cmo", "ship", 2),
        ("cto", "ship", 1), ("cto", "ship", 2)]
    return result


def round_started(number: int) -> Callable[[list[RunEventDoc]], bool]:
    return lambda events: any(
        e["type"] == "conversation.exchanged" and
        (e["payload"]["turn"].get("content") or {}).get("round", {}).get("number") == number
        for e in events)


@pytest.mark.slow
@pytest.mark.parametrize(("label", "point"), [
    ("after the first vote of round 1", nth_completed(1)),
    ("between two votes of round 2", lambda e: round_started(2)(e) and nth_completed(4)(e)),
    ("when round 2 began", round_started(2)),
    ("while a round-2 turn runs", nth_started(5)),
    ("while the chair runs", nth_started(7)),
], ids=["vote-1", "between-votes", "round-2", "turn-5", "chair"])
async def test_a_council_killed_mid_debate_resumes_to_the_same_decision(
        tmp_path: Path, reference: dict[str, object], label: str,
        point: Callable[[list[RunEventDoc]], bool]) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.log"
    proc = child(db, side, "run")
    wait_until(proc, db, RUN_ID, point, label)
    kill(proc)
    before = read(db, RUN_ID)
    assert before[-1]["type"] != "run.completed"

    run = build(side, 0).open(RUN_ID, SqliteStore(db))
    assert await run.resume() == "completed", run.error

    after = read(db, RUN_ID)
    assert after[: len(before)] == before
    assert outcome(db) == reference
    assert set(Counter(completed_turns(after)).values()) == {1}  # no turn doubled
    rounds = [(e["payload"]["turn"]["content"].get("round") or {}).get("number")
              for e in after if e["type"] == "conversation.exchanged"
              and e["payload"]["turn"]["role"] == "system"]
    assert [r for r in rounds if r] == [1, 2]  # each round began once
    assert check_events(after) == [] and check_events_v2(after) == []


async def test_replay_appends_nothing_and_forks_keep_the_debate_exact(
        tmp_path: Path, reference: dict[str, object]) -> None:
    db = tmp_path / "runs.db"
    run = await build(tmp_path / "side.log", 0).arun(store=db, run_id=RUN_ID)
    assert run.status == "completed"
    events = read(db, RUN_ID)
    # Replay: the fold of the log alone gives the same decision, appending nothing.
    proc = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(db), "replay",
                           RUN_ID, "--json"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert read(db, RUN_ID) == events
    # Fork mid-round-2, both modes: the fork completes with the same votes and outcome.
    cut = next(e["sequence"] for e in events if round_started(2)([e])) + 2
    store = SqliteStore(db)
    for mode in ("branch", "replay"):
        new_id = fork(store, RUN_ID, cut, mode=mode)  # type: ignore[arg-type]
        forked = build(tmp_path / "side.log", 0).open(new_id, store)
        assert await forked.resume() == "completed", forked.error
        assert forked.state.aliases == run.state.aliases
        assert forked.state.divergences == []
        assert [(v.voter, v.choice, v.round) for v in
                forked.state.decisions["ship"].history] == reference["votes"]
        assert forked.result == reference["result"]


async def test_the_debate_on_postgresql(pg_url: str, reference: dict[str, object],
                                        tmp_path: Path) -> None:
    from wopdsl import open_store

    store = open_store(pg_url)
    try:
        run = await build(tmp_path / "side.log", 0).arun(store=store, run_id=RUN_ID)
        assert run.status == "completed"
        assert [(v.voter, v.choice, v.round) for v in
                run.state.decisions["ship"].history] == reference["votes"]
        assert run.result == reference["result"]
        assert check_events(list(run.events)) == []
    finally:
        store.close()
