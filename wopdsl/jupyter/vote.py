"""The live view's vote box (ipywidgets): a human voter votes on an open decision."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from wopdsl.jupyter.boxes import attempt, error_html
from wopdsl.projections.deliberation import DecisionView, choices_of

if TYPE_CHECKING:
    from wopdsl.run import Run

__all__ = ["VoteBox"]

class VoteBox:
    """A decision picker, its choices, the voter, a reason, a Vote button and an error line.

    Shown while a decision a human member votes on is open (DESIGN.md §22). Vote calls
    ``run.vote`` in a task on the running loop; a refused vote shows its reason and keeps
    the choice and the reason; the log keeps every vote (a voter may change its vote while
    the decision is open). :class:`~wopdsl.jupyter.LiveView` builds one when the council
    has a human voter (``view.vote_box``).

    Args:
        run: The run to vote in.
        widgets: The ``ipywidgets`` module.
    """

    def __init__(self, run: Run, *, widgets: Any) -> None:
        w = widgets
        self.run = run
        self.decision = w.Dropdown(options=[], description="vote on",
                                   layout=w.Layout(width="auto"))
        """The open decision to vote on."""
        self.choice = w.Dropdown(options=[], description="", layout=w.Layout(width="auto"))
        """One of its options, or a score on its scale."""
        self.member = w.Dropdown(options=[], description="as", layout=w.Layout(width="auto"))
        """The human voter (shown when several vote on the decision)."""
        self.reason = w.Text(placeholder="reason (shown with the tally and the dissent)",
                             layout=w.Layout(flex="1 1 auto", width="auto"))
        self.button = w.Button(description="Vote", button_style="info", icon="check-square")
        self.error = w.HTML(value="")
        """Why the last vote was refused (empty after an accepted one)."""
        self.widget = w.VBox([w.HBox([self.decision, self.choice, self.member, self.reason,
                                      self.button]), self.error])
        """The box, to display (hidden while no decision is open for a person)."""
        self.cast: list[tuple[str, Any]] = []
        """``(decision, choice)`` of each vote cast from this box."""
        self.pending: asyncio.Task[bool] | None = None
        """The vote in progress (after a click)."""
        self._ballots: dict[str, DecisionView] = {}
        self.decision.observe(lambda _change: self._pick(), names="value")
        self.button.on_click(self._clicked)
        self.widget.layout.display = "none"

    def update(self, decisions: tuple[DecisionView, ...], is_open: bool) -> None:
        """Offer the decisions open for a person now; hide the box when there is none."""
        ballots = {d.id: d for d in decisions if d.ballot}
        self._ballots = ballots
        _offer(self.decision, list(ballots))
        self.widget.layout.display = "" if ballots else "none"
        busy = self.pending is not None and not self.pending.done()
        self.button.disabled = not is_open or busy or not ballots
        self._pick()

    def _pick(self) -> None:
        ballot = self._ballots.get(self.decision.value or "")
        if ballot is None:
            return
        _offer(self.choice, list(choices_of(ballot)))  # A wide scale: ends and middle.
        _offer(self.member, list(ballot.ballot))
        self.member.layout.display = "" if len(ballot.ballot) > 1 else "none"

    def _clicked(self, _button: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._show_error("no running event loop: use await run.vote(...) instead")
            return
        self.pending = loop.create_task(self.send())

    async def send(self) -> bool:
        """Cast the chosen vote; return whether it was saved (else the reason is shown)."""
        decision, choice = self.decision.value, self.choice.value
        if not decision or choice is None:
            self._show_error("no decision is open for you to vote on")
            return False
        self.button.disabled = True
        try:
            done, _ = await attempt(lambda: self.run.vote(
                decision, choice, reason=self.reason.value.strip(), as_=self.member.value),
                self._show_error)
        finally:
            self.button.disabled = False
        if not done:
            return False
        self.reason.value = ""
        self.error.value = ""
        self.cast.append((decision, choice))
        return True

    def _show_error(self, text: str) -> None:
        self.error.value = error_html("vote", text)


def _offer(dropdown: Any, options: list[str]) -> None:
    """Set a dropdown's options (when they changed), keeping its value or taking the first."""
    if list(dropdown.options) != options:
        value = dropdown.value
        dropdown.options = options
        dropdown.value = value if value in options else (options[0] if options else None)
    elif dropdown.value is None and options:
        dropdown.value = options[0]
