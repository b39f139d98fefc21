"""How the council decides, on screen: a room's round and hidden posts, the decisions panel.

Everything comes from the run's fold through ``wopdsl.projections.deliberation`` (the view
model the notebook shares): the round of each round room (``round 1 of 2 · blind · 2 of 3
answered``), which posts of a blind round stay hidden from the person at the screen until it
ends, each decision (open: how many voted; closed: the outcome, the tally and the dissent
with reasons) and the chair's answer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from wopdsl_tui.bridge import RunFold
from wopdsl_tui.widgets.messages import MessageList

from wopdsl.projections import terminal_safe
from wopdsl.projections.deliberation import (
    DecisionView,
    chair_of,
    choices_of,
    decisions_view,
    dissent_line,
    hidden_messages,
    round_of,
    vote_line,
)

__all__ = ["DecisionsView", "RoomPane", "RoundBar"]


class RoundBar(Static):
    """The line above a round room's messages: its round and how many have answered."""

    DEFAULT_CSS = """
    RoundBar {
        height: auto;
        padding: 0 1;
        background: $boost;
        color: $text-muted;
        &.-hiding { color: $warning; }
        &.-over { color: $success; }
    }
    """


class RoomPane(Vertical):
    """One room's tab: the round bar (round rooms only) and the message list."""

    DEFAULT_CSS = """
    RoomPane {
        height: 1fr;
    }
    """

    def __init__(self, room: str, *, colors: Mapping[str, str], members: Collection[str],
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.room = room
        """The room shown."""
        self.bar = RoundBar()
        """The round line (hidden in a room without rounds)."""
        self.messages = MessageList(room, colors=colors, members=members)
        """The message list."""
        self.bar.display = False

    def compose(self) -> ComposeResult:
        yield self.bar
        yield self.messages

    def sync(self, fold: RunFold, viewers: Collection[str]) -> None:
        """Bring the pane up to the fold: the round, hidden posts, new messages."""
        state = fold.council
        view = round_of(state, self.room)
        messages = fold.rooms[self.room].messages
        if view is not None:
            self.bar.display = True
            self.bar.set_classes("-hiding" if view.hiding else "-over" if view.settled else "")
            self.bar.update(Text(view.label()))
            self.messages.set_hidden(hidden_messages(state, self.room, viewers), view.number)
        if len(messages) > self.messages.count:
            self.messages.add_messages(messages[self.messages.count:])


class DecisionsView(Static):
    """The council's decisions and its chair: open or closed, tally, dissent, the answer.

    Hidden while the council has neither. :attr:`ballots` holds what the person at the
    screen may vote on now (decision → its choices), for ``/vote`` and its completion.
    """

    DEFAULT_CSS = """
    DecisionsView {
        height: auto;
        max-height: 12;
        overflow-y: auto;
        border: round $secondary;
        border-title-align: left;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ballots: dict[str, tuple[str, ...]] = {}
        """Open decisions the person may vote on → their choices (a scale's ends)."""
        self.voters: dict[str, tuple[str, ...]] = {}
        """Open decisions the person may vote on → the human members who vote on it."""
        self.rooms: dict[str, str] = {}
        """Each decision's room."""
        self.shown_sequence = -1
        self.display = False

    def on_mount(self) -> None:
        self.border_title = "Decisions"

    def show(self, fold: RunFold, viewers: Collection[str]) -> None:
        """Redraw from the fold (only when it moved on)."""
        if fold.last_sequence == self.shown_sequence:
            return
        self.shown_sequence = fold.last_sequence
        state = fold.council
        decisions = decisions_view(state, viewers)
        chair = chair_of(state)
        self.display = bool(decisions) or chair is not None
        self.ballots = {d.id: choices_of(d) for d in decisions if d.ballot}
        self.voters = {d.id: d.ballot for d in decisions if d.ballot}
        self.rooms = {d.id: d.room for d in decisions}
        text = Text(end="")
        for decision in decisions:
            _decision(text, decision)
        if chair is not None:
            if text:
                text.append("\n")
            text.append(f"answer ({chair.member}): " if chair.done else
                        f"chair {chair.member}: ", style="bold")
            text.append(terminal_safe(chair.label()),
                        style="bold" if chair.done else "italic")
        self.update(text)


def _decision(text: Text, decision: DecisionView) -> None:
    if text:
        text.append("\n")
    text.append(decision.id, style="bold")
    text.append(f" {terminal_safe(decision.question)} ", style="italic")
    state = "open" if decision.open else "closed"
    text.append(f"[{state}] ", style="yellow" if decision.open else "green")
    headline = decision.headline()
    text.append(terminal_safe(headline.removeprefix("open · ")),
                style="" if decision.open else "bold")
    for vote in decision.mine:
        text.append("\n  " + terminal_safe(vote_line(vote)), style="cyan")
    if decision.ballot:
        text.append(f"\n  vote: /vote {decision.id} {_hint(decision)} because …  (ctrl+b)",
                    style="dim")
    for dissent in decision.dissent:
        text.append("\n  " + terminal_safe(dissent_line(dissent)), style="red")


def _hint(decision: DecisionView) -> str:
    if decision.choices is not None:
        return "|".join(str(c) for c in decision.choices)
    low, high = decision.scale or (0, 0)
    return f"{low}..{high}"

