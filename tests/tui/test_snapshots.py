"""SVG snapshots of the key screens (fixed clock, deterministic run ids, no timestamps)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

pytest.importorskip("textual")
pytest.importorskip("pytest_textual_snapshot")

from textual.pilot import Pilot
from wopdsl_tui import CouncilApp
from wopdsl_tui.widgets import Composer

import wopdsl
from tests.tui.conftest import ADVISORY_BOARD, RELEASE_TEAM, REPO, finished, settle, waiting

SnapCompare = Callable[..., bool]


def board(db_path: Path) -> CouncilApp:
    return CouncilApp(wopdsl.load(ADVISORY_BOARD), store=db_path, deterministic=True)


def until(reached: Callable[[CouncilApp], Callable[[], bool]],
          *keys: str) -> Callable[[Pilot[int]], Awaitable[None]]:
    """A ``run_before``: wait for a state, press keys, then hold the cursor still."""

    async def run_before(pilot: Pilot[int]) -> None:
        app = pilot.app
        assert isinstance(app, CouncilApp)
        app.query_one(Composer).cursor_blink = False
        await settle(pilot, reached(app))
        if keys:
            await pilot.press(*keys)
        await settle(pilot, reached(app))

    return run_before


def test_waiting_for_the_founder(snap_compare: SnapCompare, db_path: Path) -> None:
    # Typing goes straight into the composer; "@str" shows its completion.
    assert snap_compare(board(db_path), run_before=until(waiting, *"Ship it @str"))


def test_a_refused_post_keeps_the_text(snap_compare: SnapCompare, db_path: Path) -> None:
    def refused(app: CouncilApp) -> Callable[[], bool]:
        return lambda: waiting(app)() and "refused" in str(app.query_one("#notice").render())

    async def run_before(pilot: Pilot[int]) -> None:
        app = pilot.app
        assert isinstance(app, CouncilApp)
        app.query_one(Composer).cursor_blink = False
        await settle(pilot, waiting(app))
        await pilot.press(*"Hi @ghost", "enter")  # Not a member of the room.
        await settle(pilot, refused(app))

    assert snap_compare(board(db_path), run_before=run_before)


def test_finished_board_with_events_and_ids(snap_compare: SnapCompare, db_path: Path) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        app = pilot.app
        assert isinstance(app, CouncilApp)
        app.query_one(Composer).cursor_blink = False
        await settle(pilot, waiting(app))
        await pilot.press(*"Ship it @st", "tab", "enter")
        await settle(pilot, finished(app))
        await pilot.press("ctrl+t", "ctrl+o")

    assert snap_compare(board(db_path), run_before=run_before, terminal_size=(120, 36))


def test_release_team_finished(snap_compare: SnapCompare, db_path: Path) -> None:
    app = CouncilApp(wopdsl.load(RELEASE_TEAM), store=db_path, deterministic=True)
    assert snap_compare(app, run_before=until(finished))


LAUNCH_BOARD = REPO / "councils" / "launch-board.toml"
VOTE_BOARD = REPO / "tests" / "deliberation_councils" / "vote-board.toml"


def test_launch_board_decided(snap_compare: SnapCompare, db_path: Path) -> None:
    # Rounds as notes, the round bar, both decisions with tally and dissent, the answer.
    app = CouncilApp(wopdsl.load(LAUNCH_BOARD), store=db_path, deterministic=True)
    assert snap_compare(app, run_before=until(finished), terminal_size=(120, 36))


def test_the_founder_votes_in_a_blind_round(snap_compare: SnapCompare, db_path: Path) -> None:
    # The others' posts are hidden until the round ends; ctrl+b starts a /vote line.
    app = CouncilApp(wopdsl.load(VOTE_BOARD), store=db_path, deterministic=True)
    assert snap_compare(app, run_before=until(waiting, "ctrl+b", *"h"), terminal_size=(100, 30))


def test_the_guide_shows_the_current_screen() -> None:
    # docs/guides/tui.md shows the "waiting for the founder" snapshot: keep them the same.
    here = Path(__file__).parent / "__snapshots__" / "test_snapshots"
    shown = REPO / "docs" / "guides" / "tui-advisory-board.svg"
    assert shown.read_text() == (here / "test_waiting_for_the_founder.svg").read_text(), (
        "copy tests/tui/__snapshots__/test_snapshots/test_waiting_for_the_founder.svg to "
        "docs/guides/tui-advisory-board.svg")
    shown = REPO / "docs" / "guides" / "tui-deliberation.svg"
    assert shown.read_text() == (here / "test_the_founder_votes_in_a_blind_round.svg"
                                 ).read_text(), (
        "copy tests/tui/__snapshots__/test_snapshots/test_the_founder_votes_in_a_blind_round.svg "
        "to docs/guides/tui-deliberation.svg")
