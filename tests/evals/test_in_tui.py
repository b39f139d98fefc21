"""An eval's run opens in the TUI (``wop tui RUN``) like any stored run: replayed from its log."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from wopdsl_tui import CouncilApp
from wopdsl_tui.widgets import DecisionsView

import wopdsl
from tests.evals.conftest import board_vs_solo, write
from tests.tui.conftest import finished, room_texts, settle
from wopdsl.evals.api import run_eval


async def test_an_evals_run_replays_in_the_tui(councils: Path) -> None:
    report = run_eval(write(councils, "e.toml", board_vs_solo("tui")), councils / "runs.db")
    board = next(r["runId"] for r in report["runs"] if (r["arm"], r["case"]) == ("board", "c2"))
    run = wopdsl.attach(councils / "runs.db", board)
    assert run.tags == ["eval=tui", "arm=board", "case=c2", "repeat=1"]
    app = CouncilApp(run)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot, finished(app))
        assert app.run_status == "completed"
        assert room_texts(app, "board") == [
            ("system", "Round 1 of 1 begins: 3 members answer."),
            ("a", "x"), ("b", "x"), ("c", "y"),
            ("system", "Round 1 of 1 ended: the debate is over."),
            ("system", "Decision 'pick' closed: x (x 2, y 1; 3 of 3 voted; 1 dissent)."),
            ("system", "Every decision is closed: the chair has the last word.")]
        panel = str(app.query_one(DecisionsView).render()).splitlines()
        assert panel[0] == "pick Which? [closed] x (x 2, y 1; 3 of 3 voted)"
        assert panel[1] == "  dissent: c (y): contrary"
        assert panel[-1] == "answer (chair): 1+3 = 4 (x)"
