"""The error details panel: each failed turn's code, message and recorded traceback."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static
from wopdsl_tui.bridge import ErrorNote

from wopdsl.projections import terminal_safe

__all__ = ["ErrorDetails"]


class ErrorDetails(VerticalScroll):
    """Hidden until asked for (``ctrl+e``); scrolls when the tracebacks are long.

    What a handler raised is shown as recorded in ``node.failed.error.details`` (the same
    traceback ``wop run --debug`` prints), escaped: nothing in it acts on the terminal.
    """

    DEFAULT_CSS = """
    ErrorDetails {
        height: auto;
        max-height: 50%;
        border-top: solid $error;
        border-title-align: left;
        padding: 0 1;
        display: none;
    }
    ErrorDetails > Static {
        width: 1fr;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="error-text")

    def on_mount(self) -> None:
        self.border_title = "Errors (ctrl+e hides)"

    def show_errors(self, errors: Sequence[ErrorNote]) -> None:
        """Redraw from the run's error notes, oldest first."""
        self.query_one("#error-text", Static).update(render_errors(errors))


def render_errors(errors: Sequence[ErrorNote]) -> Text:
    """The panel's text: ``node: error[CODE]: message``, then the traceback when recorded."""
    text = Text(end="")
    for number, note in enumerate(errors):
        if number:
            text.append("\n\n")
        where = f"{note.node}: " if note.node else "run: "
        text.append(terminal_safe(f"{where}error[{note.code}]: {note.message}"),
                    style="bold red")
        if note.traceback:
            text.append("\n" + terminal_safe(note.traceback.rstrip()))
    return text
