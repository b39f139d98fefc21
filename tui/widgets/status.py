"""The status line (run status, batch, event count, errors) and the composer's notice line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rich.text import Text
from textual.widgets import Static
from wopdsl_tui.bridge import ErrorNote

from wopdsl.projections import terminal_safe

__all__ = ["Notice", "StatusLine"]

STATUS_STYLES: Final = {
    "pending": "dim",
    "running": "bold green",
    "waiting-input": "bold magenta",
    "paused": "bold blue",
    "completed": "bold cyan",
    "failed": "bold red",
    "cancelled": "bold yellow",
}
"""How each run status is drawn."""


class StatusLine(Static):
    """One line: run id, status, batch, events, who is awaited (turns, approvals), errors."""

    DEFAULT_CSS = """
    StatusLine {
        height: auto;
        max-height: 3;
        padding: 0 1;
        background: $panel;
    }
    """

    def show_status(self, *, run_id: str, status: str, batch: int, events: int,
                    waiting: Sequence[str] = (), errors: Sequence[ErrorNote] = (),
                    problem: str = "", approvals: Sequence[tuple[str, str]] = ()) -> None:
        """Redraw the line (``approvals``: ``(approver, call id)`` of each call that waits)."""
        text = Text(end="")
        text.append(run_id or "starting", style="bold")
        text.append(" │ ")
        text.append(status, style=STATUS_STYLES.get(status, ""))
        text.append(f" │ batch {batch} │ {events} events")
        if waiting:
            text.append(f" │ waiting for {', '.join(waiting)}", style="magenta")
        if approvals:
            asked = ", ".join(f"{who} ({call})" for who, call in approvals)
            text.append(terminal_safe(f" │ approval: {asked}"), style="bold magenta")
        if errors:
            last = errors[-1]
            where = f" ({last.node})" if last.node else ""
            text.append(terminal_safe(f"\nerror[{last.code}]{where}: {last.message}"),
                        style="bold red")
        if problem:
            text.append(terminal_safe(f"\n{problem}"), style="bold red")
        self.update(text)


class Notice(Static):
    """The line above the composer: who posts where, or why a post was refused."""

    DEFAULT_CSS = """
    Notice {
        height: auto;
        max-height: 3;
        padding: 0 1;
        color: $text-muted;
        &.-refused { color: $error; text-style: bold; }
        &.-turn { color: $text; text-style: bold; }
    }
    """

    def show_target(self, member: str, room: str, *, turn: bool, sending: bool = False,
                    voting: bool = False) -> None:
        """Say who posts into which room (whether their turn was requested, and may vote)."""
        self.set_classes("-turn" if turn else "")
        text = f"{member} → {room}"
        keys = "Enter sends, Tab completes @mentions" + (" and /vote" if voting else "")
        if sending:
            text += " · sending…"
        elif turn:
            text += f" · your turn: {keys}"
        else:
            text += f" · {keys}"
        self.update(Text(text))

    def show_closed(self, reason: str) -> None:
        """Say why the composer takes no message here (it is disabled meanwhile)."""
        self.set_classes("-closed")
        self.update(Text(terminal_safe(reason)))

    def show_refusal(self, code: str, message: str) -> None:
        """Say why the last post was refused (nothing was saved; the text is kept)."""
        self.set_classes("-refused")
        self.update(Text(terminal_safe(f"refused: error[{code}] {message}")))
