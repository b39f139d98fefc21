"""The tool calls panel and the approval panel (decide a call that waits for a person).

Everything shown of a call (its tool's name, arguments, result, a rejection's reason) came
from a model, a tool or a person: it goes through :func:`wopdsl.projections.escape` into
``rich.text.Text`` (never markup), so it cannot style the screen, move the cursor or pass
itself off as another line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Static
from wopdsl_tui.calls import ToolCall, ToolFold, kept_arguments

import wopdsl
from wopdsl.projections import escape, terminal_safe

if TYPE_CHECKING:
    from wopdsl.state.tools import PendingApproval

__all__ = ["ApprovalPanel", "ToolCalls", "ToolsView", "render_calls"]

SHOWN: Final = 200
"""Most calls drawn (the latest); a run's calls are bounded by its ``max_tool_calls``."""

_MARKS: Final = {
    "waiting": ("?", "bold magenta"),
    "called": ("…", "yellow"),
    "ok": ("✓", "green"),
    "rejected": ("✗", "bold red"),
    "forbidden": ("✗", "bold red"),
}


class ToolCalls(VerticalScroll):
    """Each tool call on a line: member → tool(arguments), state, duration, result.

    Hidden until the run makes (or asks to make) its first call; follows the latest call.
    """

    DEFAULT_CSS = """
    ToolCalls {
        height: auto;
        max-height: 7;
        border-top: solid $secondary;
        border-title-align: left;
        padding: 0 1;
        display: none;
    }
    ToolCalls > Static {
        width: 1fr;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="tool-lines")

    def on_mount(self) -> None:
        self.border_title = "Tool calls"

    def show_calls(self, calls: Sequence[ToolCall]) -> None:
        """Redraw from the run's calls, oldest first."""
        self.display = bool(calls)
        self.query_one("#tool-lines", Static).update(render_calls(calls[-SHOWN:]))
        self.scroll_end(animate=False, immediate=True)


def render_calls(calls: Sequence[ToolCall]) -> Text:
    """The panel's text: one line per call, a second for its result when the log has it."""
    text = Text(end="")
    for number, call in enumerate(calls):
        if number:
            text.append("\n")
        mark, style = _MARKS.get(call.state, ("!", "bold red"))
        if call.error and call.state not in ("forbidden", "rejected"):
            mark, style = "!", "bold red"
        text.append(f"{mark} ", style=style)
        text.append(escape(call.member), style="bold")
        text.append(" → ")
        text.append(escape(call.tool or "?"), style="bold")
        text.append(f"({escape(call.arguments)})" if call.arguments is not None else "(…)")
        text.append("  ")
        text.append(_state(call), style=style)
        text.append(f"  {escape(call.call_id)}", style="dim")
        if call.outcome is not None:
            text.append("\n    ← ")
            text.append(escape(call.outcome), style="dim")
    return text


def _state(call: ToolCall) -> str:
    """What became of the call, in words: waiting, decided, calling, returned."""
    parts: list[str] = []
    if call.state == "waiting":
        parts.append(f"waiting for {escape(call.approver)}")
    elif call.decision:
        parts.append(escape(call.decision))
    if call.state == "called":
        parts.append("calling" + (" again (it was in flight)" if call.repeated else ""))
    elif call.duration_ms is not None:
        what = " ".join(p for p in (call.state, call.error) if p)
        parts.append(f"{escape(what)} · {call.duration_ms} ms · {call.result_bytes or 0} bytes")
    return " · ".join(parts)


class ApprovalPanel(Vertical):
    """The call waiting for a decision, a reason field, Approve and Reject.

    Shown while a tool call waits for approval (``approval = MEMBER``). The buttons (and the
    app's ``ctrl+y`` / ``ctrl+x``) decide through the public ``Run.approve``, as the
    approver, with the reason typed; a refused decision is shown here, and a saved one posts
    :class:`ApprovalPanel.Decided` (the run goes on from the log).
    """

    DEFAULT_CSS = """
    ApprovalPanel {
        height: auto;
        border: round $warning;
        border-title-align: left;
        border-title-color: $warning;
        padding: 0 1;
        display: none;
    }
    ApprovalPanel > Horizontal {
        height: auto;
    }
    ApprovalPanel Input {
        width: 1fr;
    }
    ApprovalPanel Button {
        margin-left: 1;
        min-width: 14;
    }
    ApprovalPanel #approval-error {
        color: $error;
        text-style: bold;
        display: none;
    }
    """

    class Decided(Message):
        """A decision was saved: the run may go on."""

        def __init__(self, call_id: str, grant: bool) -> None:
            super().__init__()
            self.call_id = call_id
            """The decided call."""
            self.grant = grant
            """Approved (``True``) or rejected."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run: wopdsl.Run | None = None
        """The run whose calls are decided (set by the app)."""
        self.call_id: str | None = None
        """The call shown (the one a decision goes to)."""
        self.approver = ""
        """Who decides the call shown."""
        self.busy = False
        """Whether a decision is being saved."""

    def compose(self) -> ComposeResult:
        yield Static(id="approval-what")
        with Horizontal():
            yield Input(placeholder="reason (told to the model with a rejection)",
                        id="approval-reason")
            yield Button("Approve ^y", variant="success", id="approve")
            yield Button("Reject ^x", variant="error", id="reject")
        yield Static(id="approval-error")

    def on_mount(self) -> None:
        self.border_title = "Approval"

    @property
    def reason(self) -> Input:
        """The reason field (told to the model with a rejection)."""
        return self.query_one("#approval-reason", Input)

    def show_call(self, call: ToolCall | None, approver: str, waiting: int) -> None:
        """Show the call to decide (``None``: nothing waits; the panel hides)."""
        self.display = call is not None
        if call is None:
            self.call_id = None
            return
        if call.call_id != self.call_id:
            self.reason.value = ""
            self._refused("")
        self.call_id, self.approver = call.call_id, approver
        text = Text(end="")
        text.append(escape(approver), style="bold")
        text.append(" to decide: ")
        text.append(escape(call.member), style="bold")
        text.append(" asks to call ")
        text.append(escape(call.tool or "?"), style="bold")
        text.append(f"({escape(call.arguments)})" if call.arguments is not None else "")
        text.append(f"  {escape(call.call_id)}", style="dim")
        if waiting > 1:
            text.append(f"  (1 of {waiting} waiting)", style="magenta")
        self.query_one("#approval-what", Static).update(text)

    def decide(self, grant: bool) -> None:
        """Approve or reject the call shown (nothing while another decision is saved)."""
        if self.run is not None and self.call_id is not None and not self.busy:
            self._decide(self.run, self.call_id, grant)

    @work(group="decide", exit_on_error=False)
    async def _decide(self, run: wopdsl.Run, call_id: str, grant: bool) -> None:
        self._set_busy(True)
        try:
            await run.approve(call_id, as_=self.approver or None, reject=not grant,
                              reason=self.reason.value.strip())
        except wopdsl.WopError as exc:
            self._refused(exc.render())  # nothing was saved: the reason typed stays
            return
        finally:
            self._set_busy(False)
        self.reason.value = ""
        self._refused("")
        self.post_message(self.Decided(call_id, grant))

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        for button in self.query(Button):
            button.disabled = busy
        self.app.refresh_bindings()  # the footer offers ctrl+y / ctrl+x only when not busy

    def _refused(self, message: str) -> None:
        error = self.query_one("#approval-error", Static)
        error.display = bool(message)
        error.update(Text(terminal_safe(message)))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.decide(event.button.id == "approve")


class ToolsView(Vertical):
    """The run's tool calls and, below them, the approval panel (each hidden while empty)."""

    DEFAULT_CSS = """
    ToolsView {
        height: auto;
    }
    """

    def compose(self) -> ComposeResult:
        yield ToolCalls(id="tools")
        yield ApprovalPanel(id="approval")

    def show(self, fold: ToolFold, waiting: Sequence[PendingApproval],
             run: wopdsl.Run | None) -> bool:
        """Redraw from the fold; return whether a call newly waits for a decision.

        Arguments the events do not carry (``observability = "hashed"``) are read from the
        run's private records, as ``wop approve`` shows them.
        """
        fold.changed = False
        if run is not None:
            fold.fill_arguments(lambda call_id: kept_arguments(run, call_id))
        self.query_one(ToolCalls).show_calls(list(fold.calls.values()))
        panel = self.query_one(ApprovalPanel)
        panel.run = run
        first = fold.calls.get(waiting[0].call_id) if waiting else None
        asked = first is not None and first.call_id != panel.call_id
        panel.show_call(first, waiting[0].approver if waiting else "", len(waiting))
        return asked
