"""Attach to runs: one another process is executing, one left behind by a quit, run_app."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")

import wopdsl_tui
from textual.pilot import Pilot
from wopdsl_tui import CouncilApp

import wopdsl
from tests.tui.conftest import (
    ADVISORY_BOARD,
    REPO,
    drawn,
    finished,
    phase,
    room_texts,
    settle,
)
from tests.tui.relay_process import RUN_ID


def wait_for_turn(db_path: Path, member: str, proc: subprocess.Popen[str]) -> None:
    """Block until the other process has started ``member``'s turn."""
    store = wopdsl.SqliteStore(db_path) if db_path.exists() else None
    for _ in range(3000):
        if store is None and db_path.exists():
            store = wopdsl.SqliteStore(db_path)
        if store is not None and any(
                e["type"] == "node.started" and e.get("nodeId") == member
                for e in store.read(RUN_ID)):
            store.close()
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    raise AssertionError(f"{member}'s turn never started")


async def test_attach_to_a_run_another_process_is_executing(tmp_path: Path) -> None:
    db_path, gate = tmp_path / "runs.db", tmp_path / "gate"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.tui.relay_process", str(db_path), str(gate)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_turn(db_path, "second", proc)
        app = CouncilApp(wopdsl.attach(db_path, RUN_ID))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, lambda: phase(app, "second") == "running" and drawn(app))
            assert app.run_status == "running"
            assert room_texts(app, "track") == [("first", "Baton to @second")]

            gate.touch()  # The other process finishes; the screen follows its events.
            await settle(pilot, finished(app))
            assert room_texts(app, "track") == [
                ("first", "Baton to @second"), ("second", "Baton home")]
            assert app.fold.phase("second") == "done"
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


async def test_quit_leaves_the_run_resumable(db_path: Path) -> None:
    council = wopdsl.load(ADVISORY_BOARD)
    app = CouncilApp(council, store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.run_status == "waiting-input" and drawn(app))
        await pilot.press("ctrl+q")
    assert app.return_value == 0
    # A later `wop tui RUN` picks the run up where it waits and finishes it.
    again = CouncilApp(wopdsl.attach(db_path, "advisory-board-1"))
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: again.run_status == "waiting-input" and drawn(again))
        assert again.focused is again.query_one("#composer")
        await pilot.press(*"@st", "tab", "enter")
        await settle(pilot, finished(again))
        assert room_texts(again, "board")[-1][0] == "strategist"


GATED_COUNCIL = """
[council]
id = "gated"
task = "Wait at the gate."

[[rooms]]
id = "yard"
members = ["keeper"]

[[members]]
id = "keeper"
role = "opens when the gate file exists"
handler = "tui_gate_keeper:turn"
"""

GATE_KEEPER = '''
import asyncio
from pathlib import Path

async def turn(turn):
    while not Path(__file__).with_name("open").exists():
        await asyncio.sleep(0.01)
    post = {"roomId": "yard", "text": "Gate open", "mentions": []}
    return {"summary": "Opened.", "posts": [post]}
'''


async def test_quit_mid_turn_then_resume_from_the_tui(tmp_path: Path) -> None:
    (tmp_path / "gated.toml").write_text(GATED_COUNCIL)
    (tmp_path / "tui_gate_keeper.py").write_text(GATE_KEEPER)
    db_path = tmp_path / "runs.db"
    app = CouncilApp(wopdsl.load(tmp_path / "gated.toml"), store=db_path, deterministic=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: phase(app, "keeper") == "running" and drawn(app))
        assert app.check_action("resume", ()) is False  # This process drives it.
        await pilot.press("ctrl+q")
    run = wopdsl.attach(db_path, "gated-1")
    assert run.status == "running"  # Interrupted mid-turn, not ended.
    assert run.events[-1]["type"] == "node.started"

    (tmp_path / "open").touch()
    again = CouncilApp(wopdsl.attach(db_path, "gated-1"))
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: again.run_status == "running" and drawn(again))
        assert again.check_action("resume", ()) is True
        await pilot.press("ctrl+s")
        await settle(pilot, finished(again))
        assert room_texts(again, "yard") == [("keeper", "Gate open")]
    attempts = [e["payload"]["attempt"] for e in run.events
                if e["type"] == "node.started" and e.get("nodeId") == "keeper"]
    assert attempts == [0, 1]


def test_run_app_refuses_unknown_targets(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert wopdsl_tui.run_app("ghost-run", str(tmp_path / "none.db")) == 2
    assert capsys.readouterr().err.startswith("error[RUN_NOT_FOUND]: run ghost-run not found")
    assert not (tmp_path / "none.db").exists()  # Nothing was created on disk.
    assert wopdsl_tui.run_app("missing.toml") == 2
    assert capsys.readouterr().err.startswith("error[DECLARATION_INVALID]")


def test_run_app_starts_a_council_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    real_run = CouncilApp.run
    seen: list[str] = []

    async def quit_when_done(pilot: Pilot[int]) -> None:
        app = pilot.app
        assert isinstance(app, CouncilApp)
        await settle(pilot, finished(app))
        seen.append(app.fold.run_id)
        await pilot.press("ctrl+q")

    def headless_run(self: CouncilApp, **kwargs: object) -> int | None:
        return real_run(self, headless=True, size=(80, 24), auto_pilot=quit_when_done)

    monkeypatch.setattr(CouncilApp, "run", headless_run)
    assert wopdsl_tui.run_app(str(REPO / "councils" / "release-team.toml"), "runs.db") == 0
    assert seen and seen[0].startswith("release-team-")
    assert wopdsl.attach(tmp_path / "runs.db", seen[0]).status == "completed"
