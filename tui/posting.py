"""The composer's side of the council screen: who the person posts and votes as, and where.

:class:`PostingApp` is the base of :class:`~wopdsl_tui.app.CouncilApp`: it follows the active
room tab, hands the keyboard to a human whose turn is requested, and sends the composer's
lines — a post through ``Run.reply``, a ``/vote`` through ``Run.vote`` (see
:mod:`wopdsl_tui.votes`), a ``/steer TEXT`` (or ``ctrl+g``) as a steering post that stops the
running turns it names (docs/guides/steering.md). A refusal is shown above the composer and
keeps what was typed.
"""

from __future__ import annotations

from textual import work
from textual.app import App
from textual.widgets import TabbedContent
from wopdsl_tui.bridge import RoomFeed, RunFold
from wopdsl_tui.presence import Watching
from wopdsl_tui.votes import VoteCommand, is_vote, parse_vote
from wopdsl_tui.widgets import Composer, DecisionsView, Notice

import wopdsl

__all__ = ["STEER", "PostingApp"]

STEER = "/steer"
"""The composer command that sends the rest of the line as a steering post."""


class PostingApp(App[int]):
    """Posting and voting from the composer (the base of ``CouncilApp``)."""

    fold: RunFold
    council_run: wopdsl.Run | None
    human: str | None
    _rooms: list[RoomFeed]
    _waiting: list[str]
    _turn_requested: bool
    _posting: bool
    _refusal: tuple[str, str] | None
    _watching: Watching | None
    _as: str | None
    """The person at this screen, when given (``wop tui --as``): the composer keeps to it."""

    def _watch_drive(self) -> object:
        """Watch this process's drive of the run (``CouncilApp`` runs it as a worker)."""
        raise NotImplementedError

    def _watch_presence(self) -> object:
        """Be present as :attr:`human` (``CouncilApp`` runs it as a worker)."""
        raise NotImplementedError

    # -- who posts where -------------------------------------------------------------------

    @property
    def active_room(self) -> str | None:
        """The room of the active tab."""
        active: str = self.query_one("#rooms", TabbedContent).active
        if not active:
            return self._rooms[0].id if self._rooms else None
        return self._rooms[int(active.removeprefix("room-"))].id

    def _activate_room(self, room_id: str) -> None:
        for number, room in enumerate(self._rooms):
            if room.id == room_id:
                self.query_one("#rooms", TabbedContent).active = f"room-{number}"

    def _update_target(self) -> None:
        room_id = self.active_room
        if self.human is None or room_id is None:
            return
        feed = self.fold.rooms[room_id]
        members = feed.members
        here = [h for h in self.fold.humans if h in members]
        if self.human not in members and here and self._as is None:
            # Post as the human member of this room (the one asked first, if any).
            self.human = next((h for h in self._waiting if h in here), here[0])
            self._watch_presence()  # present as that person now
        composer = self.query_one(Composer)
        composer.set_members(m for m in members if m != self.human)
        voting = bool(self.query_one(DecisionsView).ballots)
        composer.placeholder = f"Message {room_id} as {self.human}; @ mentions a member" + (
            "; /vote votes" if voting else "")
        notice = self.query_one(Notice)
        closed = self.fold.closed_reason(feed, here)
        composer.disabled = closed is not None
        if closed is not None:
            notice.show_closed(closed)
        elif self._refusal is not None:
            notice.show_refusal(*self._refusal)
        else:
            notice.show_target(self.human, room_id, turn=self._turn_requested,
                               sending=self._posting, voting=voting)

    def _on_waiting(self) -> None:
        """Hand the keyboard to the human whose turn was just requested."""
        requested = bool(self._waiting)
        asked = requested and not self._turn_requested and (
            self._as is None or self._as in self._waiting)
        if asked:
            person = self._as or self._waiting[0]
            if person != self.human:
                self.human = person
                self._watch_presence()
            room = self.fold.asked_in(person)
            if room is not None:
                self._activate_room(room)
        self._turn_requested = requested
        self._update_target()
        if asked:  # After the update: the composer is enabled for the room asked from.
            self.query_one(Composer).focus()

    # -- posting and voting ----------------------------------------------------------------

    def action_focus_composer(self) -> None:
        if self.human is not None:
            self.query_one(Composer).focus()

    def action_vote(self) -> None:
        """Start a ``/vote`` line for the first decision open for you (Tab completes)."""
        panel = self.query_one(DecisionsView)
        if panel.ballots:
            decision = next(iter(panel.ballots))
            self._activate_room(panel.rooms[decision])  # Where its voters post.
            composer = self.query_one(Composer)
            composer.value = f"/vote {decision} "
            composer.cursor_position = len(composer.value)
            composer.focus()

    def action_steer(self) -> None:
        """Send the composer's text as a steering post (``ctrl+g``)."""
        text = self.query_one(Composer).value
        if text.strip():
            self._send(text, steer=True)

    def on_composer_sent(self, event: Composer.Sent) -> None:
        text = event.text
        if text.strip() == STEER or text.startswith(STEER + " "):
            self._send(text.strip()[len(STEER):].strip(), steer=True, typed=text)
        else:
            self._send(text)

    def _send(self, text: str, *, steer: bool = False, typed: str | None = None) -> None:
        room = self.active_room
        if self._posting or self.human is None or room is None or self.council_run is None:
            return
        if steer and not text:
            self._refusal = ("validation_error", "a steer needs text: /steer @member do this "
                             "instead")
            self._update_target()
            return
        vote = None
        if not steer and is_vote(text):
            panel = self.query_one(DecisionsView)
            try:
                vote = parse_vote(text, self.fold.council.decisions, panel.ballots)
            except ValueError as exc:
                self._refusal = ("validation_error", str(exc))
                self._update_target()
                return
        self._post(text, room, self.human, vote, steer=steer,
                   typed=self.query_one(Composer).value if typed is None else typed)

    @work(group="post", exit_on_error=False)
    async def _post(self, text: str, room: str, member: str, vote: VoteCommand | None, *,
                    steer: bool = False, typed: str = "") -> None:
        """Post ``text`` (or cast ``vote``) as ``member``; a refusal keeps what was typed.

        The post is saved at once, even while turns run; a steer stops those it names.
        """
        assert self.council_run is not None
        composer = self.query_one(Composer)
        self._posting = True
        self._refusal = None
        self._update_target()
        try:
            if vote is None:
                await self.council_run.reply(text.strip(), room=room, as_=member, steer=steer)
            else:  # As the human voter of the decision (this one, when it votes on it).
                voters = self.query_one(DecisionsView).voters.get(vote.decision, ())
                await self.council_run.vote(
                    vote.decision, vote.choice, reason=vote.reason,
                    as_=member if member in voters or not voters else voters[0])
        except wopdsl.WopError as exc:
            # Nothing was saved, so nothing typed is lost: the text stays in the composer.
            self._refusal = (exc.code, exc.message)
            return
        finally:
            self._posting = False
            self._update_target()
        if composer.value == typed:  # Cleared unless the person typed on meanwhile.
            composer.value = ""
        if self._watching is not None:
            await self._watching.stopped()
        self._turn_requested = False
        self._update_target()
        # The post may have set the run going again here: watch that drive like the first.
        self._watch_drive()
