"""The composer: posts as the human member into the active room, with ``@`` completion.

It also takes ``/vote DECISION CHOICE because REASON`` (see :mod:`wopdsl_tui.votes`), with
the decision and its choices completed by Tab.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.suggester import Suggester
from textual.widgets import Input
from wopdsl_tui.votes import complete_vote

from wopdsl.model.mentions import PARTIAL_MENTION_RE

__all__ = ["Composer", "MentionSuggester"]



class MentionSuggester(Suggester):
    """Completes the ``@member`` word at the end of the input from the room's members.

    In a ``/vote`` line it completes the command, the decision and the choice instead.
    """

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.members: tuple[str, ...] = ()
        """Who may be mentioned: the active room's members (set by the app)."""
        self.ballots: dict[str, tuple[str, ...]] = {}
        """Decisions the person may vote on now → their choices (set by the app)."""

    def complete(self, value: str) -> str | None:
        """Return ``value`` with its trailing ``@prefix`` (or ``/vote`` word) completed."""
        if value.startswith("/"):
            return complete_vote(value, self.ballots)
        match = PARTIAL_MENTION_RE.search(value)
        if match is None:
            return None
        prefix = match.group(1)
        for member in self.members:
            if member.startswith(prefix) and member != prefix:
                return value + member[len(prefix):]
        return None

    async def get_suggestion(self, value: str) -> str | None:
        return self.complete(value)


class Composer(Input):
    """A one-line message box; Enter sends, Tab (or →) accepts a mention completion.

    Sending never clears the text by itself: the app clears it once the post is saved, so a
    refused post keeps everything typed.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "complete", "Complete @mention", show=False),
        Binding("escape", "leave", "Leave composer", show=False),
    ]

    class Sent(Message):
        """The user pressed Enter on a non-empty message."""

        def __init__(self, composer: Composer, text: str) -> None:
            super().__init__()
            self.composer = composer
            """The composer that sent it."""
            self.text = text
            """The text as typed."""

        @property
        def control(self) -> Composer:
            return self.composer

    def __init__(self, *, id: str | None = None) -> None:
        self.mentions = MentionSuggester()
        """The ``@`` completion source."""
        super().__init__(placeholder="Message", suggester=self.mentions, id=id)

    def set_members(self, members: Iterable[str]) -> None:
        """Complete mentions from these members (the active room's)."""
        self.mentions.members = tuple(members)

    def set_ballots(self, ballots: dict[str, tuple[str, ...]]) -> None:
        """Complete ``/vote`` lines from these open decisions and their choices."""
        self.mentions.ballots = dict(ballots)

    async def action_submit(self) -> None:
        if self.value.strip():
            self.post_message(self.Sent(self, self.value))

    def action_complete(self) -> None:
        completed = self.mentions.complete(self.value) if self.cursor_at_end else None
        if completed is None:
            self.screen.focus_next()
            return
        self.value = completed + " "
        self.cursor_position = len(self.value)

    def action_leave(self) -> None:
        self.screen.focus_previous()
