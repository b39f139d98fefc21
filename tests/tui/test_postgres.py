"""`wop tui RUN` on a PostgreSQL store: attach to a run another process executes there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

import wopdsl_tui
from textual.pilot import Pilot
from wopdsl_tui import CouncilApp

import wopdsl
from tests.tui.conftest import REPO, drawn, finished, phase, room_texts, settle
from tests.tui.relay_process import RUN_ID


def _wait_for_turn(url: str, member: str, proc: subprocess.Popen[str]) -> None:
    import time

    from wopdsl.store.postgres import PostgresStore

    store = PostgresStore(url)
    try:
        for _ in range(3000):
            if any(e["type"] == "node.started" and e.get("nodeId") == member
                   for e in store.read(RUN_ID)):
                return
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
    finally:
        store.close()
    raise AssertionError(f"{member}'s turn never started")


async def test_the_tui_follows_a_run_another_host_executes(tmp_path: Path, pg_url: str) -> None:
    gate = tmp_path / "gate"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.tui.relay_process", pg_url, str(gate)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_turn(pg_url, "second", proc)
        app = CouncilApp(wopdsl.attach(pg_url, RUN_ID))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, lambda: phase(app, "second") == "running" and drawn(app))
            assert room_texts(app, "track") == [("first", "Baton to @second")]
            gate.touch()  # The other process finishes; LISTEN/NOTIFY brings its events here.
            await settle(pilot, finished(app))
            assert room_texts(app, "track") == [
                ("first", "Baton to @second"), ("second", "Baton home")]
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_run_app_attaches_by_run_id(pg_url: str, monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gate").touch()
    done = subprocess.run([sys.executable, "-m", "tests.tui.relay_process", pg_url,
                           str(tmp_path / "gate")], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    real_run = CouncilApp.run
    seen: list[list[tuple[str, str]]] = []

    async def look(pilot: Pilot[int]) -> None:
        app = pilot.app
        assert isinstance(app, CouncilApp)
        await settle(pilot, finished(app))
        seen.append(room_texts(app, "track"))
        await pilot.press("ctrl+q")

    def headless_run(self: CouncilApp, **kwargs: object) -> int | None:
        return real_run(self, headless=True, size=(80, 24), auto_pilot=look)

    monkeypatch.setattr(CouncilApp, "run", headless_run)
    assert wopdsl_tui.run_app(RUN_ID, pg_url) == 0
    assert seen == [[("first", "Baton to @second"), ("second", "Baton home")]]
    assert list(tmp_path.iterdir()) == [tmp_path / "gate"]  # No SQLite file on the side.
