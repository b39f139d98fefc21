"""Helpers for driving the real TUI with Textual's Pilot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Typing only: each test module skips itself first when the tui extra is missing.
    from textual.pilot import Pilot
    from wopdsl_tui import CouncilApp

REPO = Path(__file__).resolve().parents[2]
"""The repository root (councils/ lives there)."""

ADVISORY_BOARD = REPO / "councils" / "advisory-board.toml"
RELEASE_TEAM = REPO / "councils" / "release-team.toml"


async def settle(pilot: Pilot[int], reached: Callable[[], bool], *, steps: int = 3000) -> None:
    """Let the app work until ``reached()`` holds (events are processed, not timed)."""
    for _ in range(steps):
        if reached():
            await pilot.pause()
            return
        await pilot.pause(0.01)
    raise AssertionError("the app never reached the expected state")


def drawn(app: CouncilApp) -> bool:
    """Whether every event folded so far is on screen."""
    return app.shown_sequence == app.fold.last_sequence >= 0


def phase(app: CouncilApp, member: str) -> str | None:
    """The member's phase, or ``None`` while the app has not folded ``run.started`` yet.

    An attached app reads the log asynchronously: a condition polled before its first event
    arrives must wait, not fail.
    """
    return app.fold.phase(member) if member in app.fold.council.members else None


def finished(app: CouncilApp, status: str = "completed") -> Callable[[], bool]:
    """A condition: the run ended with ``status`` and the screen shows its last event."""
    return lambda: app.fold.terminal == status and drawn(app)


def waiting(app: CouncilApp) -> Callable[[], bool]:
    """A condition: the run waits for a human and the screen shows it."""
    return lambda: app.run_status == "waiting-input" and drawn(app)


def room_lines(app: CouncilApp, room: str) -> list[str]:
    """The visual lines of a room's message list, as plain text."""
    view = app.room_view(room)
    return [view.line_text(y) for y in range(view.virtual_size.height if view.count else 0)]


def room_texts(app: CouncilApp, room: str) -> list[tuple[str, str]]:
    """(sender, text) of each message a room's tab holds."""
    return [(m.sender, m.text) for m in app.room_view(room).messages]
