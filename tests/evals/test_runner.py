"""The runner: stored, tagged runs with deterministic ids; reuse and resume; jobs; stop."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from tests.evals.conftest import board_vs_solo, write
from wopdsl import attach, open_store
from wopdsl.evals import load_eval
from wopdsl.evals.progress import Progress
from wopdsl.evals.runner import EvalRunner

EVAL = board_vs_solo("e1", settings="repeats = 2\njobs = 1\n")

BARRIER = """\
import asyncio

from wopdsl import Reply

state = {"now": 0, "peak": 0, "calls": 0}


async def wait_for_company(turn):
    state["now"] += 1
    state["calls"] += 1
    state["peak"] = max(state["peak"], state["now"])
    for _ in range(500):  # until `jobs` runs are in here together (or 5 s)
        if state["now"] >= 3 or state["calls"] > 6:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.02)
    state["now"] -= 1
    return Reply(summary=f"{turn.task} = 4")
"""

SLOW = """\
import asyncio
from pathlib import Path

from wopdsl import Reply


async def solve(turn):
    for _ in range(3000):  # until the test says go (or 30 s)
        if Path(__file__).with_name("go").exists():
            break
        await asyncio.sleep(0.01)
    return Reply(summary="4")
"""

PY_COUNCIL = """\
[council]
id = "py"
task = "placeholder"

[[members]]
id = "solver"
role = "solver"
handler = "company:wait_for_company"
"""


def _run(evaluation_path: Path, store_path: Path, **options: object) -> object:
    evaluation = load_eval(evaluation_path)
    store = open_store(store_path)
    try:
        return asyncio.run(EvalRunner(evaluation, store, **options).arun())  # type: ignore[arg-type]
    finally:
        store.close()


def test_every_run_is_a_stored_run_tagged_and_named_deterministically(councils: Path) -> None:
    path = write(councils, "e.toml", EVAL)
    outcome = _run(path, councils / "runs.db")
    records = outcome.records  # type: ignore[attr-defined]
    assert outcome.complete and len(records) == 8  # type: ignore[attr-defined]
    store = open_store(councils / "runs.db")
    try:
        assert sorted(info.run_id for info in store.runs()) == sorted(r.run_id for r in records)
        board = next(r for r in records if r.arm == "board" and r.case == "c2" and r.repeat == 2)
        assert board.run_id.startswith("e1.board.c2.2-")
        run = attach(store, board.run_id)
        assert run.status == "completed"
        assert run.tags == ["eval=e1", "arm=board", "case=c2", "repeat=2"]
        request = run.state.metadata["request"]
        assert request["eval"] == {"id": "e1", "arm": "board", "case": "c2", "repeat": 2,
                                   "file": str(path)}
        assert run.state.task == "1+3"  # the case's task
        assert board.checks["correct"].passed is True
        assert board.deliberation["decisions"] == 1 and board.deliberation["dissent"] == 1
    finally:
        store.close()
    again = _run(path, councils / "runs.db")
    assert [r.run_id for r in again.records] == [r.run_id for r in records]  # type: ignore[attr-defined]
    assert {r.how for r in again.records} == {"reused"}  # type: ignore[attr-defined]


def test_a_changed_council_gets_new_runs(councils: Path) -> None:
    path = write(councils, "e.toml", EVAL)
    first = _run(path, councils / "runs.db").records  # type: ignore[attr-defined]
    solo = (councils / "solo.toml").read_text().replace("= 4", "= four")
    (councils / "solo.toml").write_text(solo)
    second = _run(path, councils / "runs.db").records  # type: ignore[attr-defined]
    old = {(r.arm, r.case, r.repeat): r.run_id for r in first}
    for record in second:
        same = old[(record.arm, record.case, record.repeat)] == record.run_id
        assert same == (record.arm == "board"), record
        assert record.how == ("reused" if record.arm == "board" else "ran")
        if record.arm == "solo":
            assert record.checks["correct"].passed is False


def test_jobs_run_at_once_on_one_engine(councils: Path) -> None:
    write(councils, "company.py", BARRIER)
    write(councils, "py.toml", PY_COUNCIL)
    text = EVAL.replace("jobs = 1", "jobs = 3").replace('council = "board.toml"',
                                                        'council = "py.toml"')
    text = text.replace('[[arms]]\nid = "solo"\ncouncil = "solo.toml"\n', "")
    text = text.replace("repeats = 2", "repeats = 3")
    outcome = _run(write(councils, "e.toml", text), councils / "runs.db")
    assert outcome.complete and len(outcome.records) == 6  # type: ignore[attr-defined]
    import sys

    module = next(m for name, m in sys.modules.items() if name.endswith(".company"))
    assert module.state["peak"] == 3  # three runs were in a turn together, never more


def test_stop_leaves_runs_in_flight_resumable_then_a_rerun_finishes(councils: Path) -> None:
    write(councils, "slow.py", SLOW)
    write(councils, "slow.toml", PY_COUNCIL.replace("company:wait_for_company", "slow:solve"))
    text = EVAL.replace('council = "solo.toml"', 'council = "slow.toml"')
    path = write(councils, "e.toml", text)
    evaluation = load_eval(path)
    store = open_store(councils / "runs.db")
    seen: list[str] = []

    async def go() -> object:
        runner = EvalRunner(evaluation, store, on_record=lambda r, d, t: seen.append(r.arm))
        task = asyncio.ensure_future(runner.arun())
        while "board" not in seen:
            await asyncio.sleep(0.01)
        for _ in range(100):  # the slow run has started
            if len(store.runs()) == 2:
                break
            await asyncio.sleep(0.01)
        runner.stop()
        return await task

    outcome = asyncio.run(go())
    assert outcome.interrupted and not outcome.complete  # type: ignore[attr-defined]
    assert [r.arm for r in outcome.records] == ["board"]  # type: ignore[attr-defined]
    slow = next(i.run_id for i in store.runs() if ".solo." in i.run_id)
    events = store.read(slow)
    assert events[-1]["type"] == "node.started"  # stopped mid-turn: nothing else appended
    store.close()
    (councils / "go").write_text("now")
    again = _run(path, councils / "runs.db")
    by = {r.run_id: r.how for r in again.records}  # type: ignore[attr-defined]
    assert by[slow] == "resumed" and list(by.values()).count("reused") == 1
    store = open_store(councils / "runs.db")
    types = [e["type"] for e in store.read(slow)]
    store.close()
    assert "run.resumed" in types and types[-1] == "run.completed"
    assert types.count("run.started") == 1


def test_progress_draws_a_bar_with_an_eta_and_a_live_table(councils: Path) -> None:
    path = write(councils, "e.toml", EVAL)
    out = io.StringIO()
    progress = Progress(load_eval(path), out, live=True)
    _run(path, councils / "runs.db", on_record=progress)
    text = out.getvalue()
    assert "[" + "#" * 24 + "] 8/8 runs" in text and "ETA 0:00:00" in text
    assert "\x1b[3F\x1b[J" in text  # redrawn in place: the bar and one line per arm
    assert text.rstrip().endswith("solo: correct 4/4")
    lines = io.StringIO()
    _run(path, councils / "runs.db", on_record=Progress(load_eval(path), lines, live=False))
    first = lines.getvalue().splitlines()[0]
    assert first.startswith("[1/8] board c1 #1 completed (reused, ")
    assert first.endswith(": correct pass  " + first.rsplit(" ", 1)[1])


@pytest.mark.parametrize("limit", [1])
def test_limit_runs_the_first_cases(councils: Path, limit: int) -> None:
    outcome = _run(write(councils, "e.toml", EVAL), councils / "runs.db", limit=limit)
    assert {r.case for r in outcome.records} == {"c1"}  # type: ignore[attr-defined]
    assert outcome.planned == 4  # type: ignore[attr-defined]
