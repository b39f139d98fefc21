"""Steering and presence in the terminal UI (DESIGN.md §24), under Textual's Pilot.

``/steer TEXT`` (or ``ctrl+g`` on the composer's text) posts a steering post while a member's
turn runs: the post is saved at once, the turn stops and runs again with it. The roster marks
who else watches and types — here a person in another process on the same store — and the
composer's typing reaches the others.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("textual")

from wopdsl_tui import CouncilApp
from wopdsl_tui.widgets import Composer, Roster

import wopdsl
from tests.conftest import HUMAN, build_council
from tests.engine.helpers import Calls, reply, say
from tests.tui.conftest import settle

RUN = "tui-steered-run-0001"


def _council(calls: Calls, hold: asyncio.Event) -> wopdsl.Council:
    """``writer`` holds its first turn until stopped; ``ann`` and ``bob`` are people."""

    async def before(turn: wopdsl.Turn) -> None:
        if len(calls.of("writer")) == 1:
            await hold.wait()

    return build_council(
        {"writer": calls.handler(lambda t: reply("w", say("board", f"draft {len(t.triggers)}")),
                                 before=before), "ann": HUMAN, "bob": HUMAN},
        rooms={"board": ["ann", "bob", "writer"]})


@pytest.mark.parametrize("how", ["command", "key"])
async def test_a_steer_from_the_composer_stops_the_turn_and_it_runs_again(
        db_path: Path, how: str) -> None:
    calls = Calls()
    hold = asyncio.Event()
    app = CouncilApp(_council(calls, hold), store=db_path, run_id=RUN, deterministic=True,
                     as_="bob")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: len(calls.of("writer")) == 1 and app.human == "bob")
        await pilot.press("ctrl+r")
        if how == "command":
            await pilot.press(*"/steer @writer use the 2M budget", "enter")
        else:
            await pilot.press(*"@writer use the 2M budget", "ctrl+g")
        await settle(pilot, lambda: app.fold.terminal == "completed")
        assert app.query_one(Composer).value == ""
        assert [c.triggers for c in calls.of("writer")] == [[], ["team/bob/2/0"]]
        steer = next(m for m in app.fold.rooms["board"].messages if m.sender == "bob")
        assert steer.text == "@writer use the 2M budget"
        events = wopdsl.attach(db_path, RUN).events.to_list()
        assert [e["payload"]["lastError"]["code"] for e in events
                if e["type"] == "node.retried"] == ["STEERED"]


async def test_a_steer_without_text_is_refused_and_nothing_is_posted(db_path: Path) -> None:
    calls = Calls()
    app = CouncilApp(_council(calls, asyncio.Event()), store=db_path, run_id=RUN,
                     deterministic=True, as_="bob")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: len(calls.of("writer")) == 1)
        saved = app.fold.last_sequence
        await pilot.press("ctrl+r", *"/steer", "enter")
        await pilot.pause(0.1)
        assert "a steer needs text" in str(app.query_one("#notice").render())
        assert app.fold.last_sequence == saved and app.query_one(Composer).value == "/steer"
        await app.council_run.cancel()  # type: ignore[union-attr]


async def test_the_roster_shows_who_else_watches_and_types(db_path: Path) -> None:
    calls = Calls()
    app = CouncilApp(_council(calls, asyncio.Event()), store=db_path, run_id=RUN,
                     deterministic=True, as_="ann")
    script = textwrap.dedent(f"""
        import asyncio, sys
        from wopdsl import attach
        from wopdsl.store import open_store

        async def main():
            run = attach(open_store({str(db_path)!r}), {RUN!r})
            bob = await run.presence.join("board", "bob")
            print("watching", flush=True)
            sys.stdin.readline()
            await bob.set_typing(True)
            print("typing", flush=True)
            sys.stdin.readline()
            await bob.leave()

        asyncio.run(main())
    """)

    def roster() -> str:
        return str(app.query_one(Roster).render())

    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: len(calls.of("writer")) == 1)
        other = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        assert other.stdin is not None and other.stdout is not None
        try:
            assert other.stdout.readline().strip() == "watching"
            await settle(pilot, lambda: "bob · human · ● watching" in roster())
            assert roster().count("watching") == 1  # bob; not ann herself
            other.stdin.write("go\n")
            other.stdin.flush()
            await settle(pilot, lambda: "✎ typing" in roster())

            # ann types in the composer: another front end sees her typing.
            await pilot.press("ctrl+r", *"draft")
            seen = wopdsl.attach(wopdsl.open_store(db_path), RUN).presence
            for _ in range(200):
                await seen.refresh()
                if seen.snapshot("board").typing == ("user:ann", "user:bob"):
                    break
                await pilot.pause(0.02)
            assert seen.snapshot("board").typing == ("user:ann", "user:bob")
            other.stdin.write("go\n")
            other.stdin.flush()
            await settle(pilot, lambda: "watching" not in roster() and "typing" not in roster())
        finally:
            other.communicate(timeout=30)
        await app.council_run.cancel()  # type: ignore[union-attr]


def test_wop_tui_as_someone_who_is_not_a_person_is_refused_before_any_screen(
        tmp_path: Path) -> None:
    # Nobody posts as another member by a typo: `--as` must name a human member.
    council = Path(__file__).resolve().parents[2] / "councils" / "advisory-board.toml"
    store = tmp_path / "runs.db"
    wop = Path(sys.executable).with_name("wop")
    for name, target in (("foundr", str(council)), ("strategist", str(council))):
        done = subprocess.run([str(wop), "tui", target, "--as", name, "--store", str(store)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.startswith(
            f"error[validation_error]: --as {name}: not a human member of this council "
            "(human members: founder)"), done.stderr
        assert "pass --as with one of founder" in done.stderr
        assert not store.exists()  # refused before a run was started
    run = wopdsl.load(council).run(store=store)  # waits for the founder
    done = subprocess.run([str(wop), "tui", run.run_id, "--as", "engineer", "--store",
                           str(store)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error[validation_error]: --as engineer: not a human member")
