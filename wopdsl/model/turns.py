"""What a member sees on a turn (``Turn``) and what it returns (``Reply``)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from wopdsl._described import Described

# ``defer_build``: each model's validator is built on its first use, not at import, so reading
# a log (``wop transcript`` folds saved messages) does not pay for building four of them.

__all__ = ["Message", "Post", "Reply", "Turn", "Vote"]


class Post(Described):
    """A post in a turn result: ``{roomId, text, mentions}`` on the wire."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, defer_build=True,
    )

    room: StrictStr = Field(
        validation_alias=AliasChoices("room", "roomId"), serialization_alias="roomId"
    )
    """The room to post in (``roomId`` in JSON)."""
    text: StrictStr
    """The message text."""
    mentions: list[StrictStr] = Field(default_factory=list)
    """Members of the room whose next turn this message requests."""


class Vote(Described):
    """A vote in a turn result: ``{decision, choice, reason}`` (DESIGN.md §22).

    A voter may vote again while the decision is open; its last vote counts, and the log
    keeps every one.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", defer_build=True,
    )

    decision: StrictStr
    """The decision's id."""
    choice: StrictStr | StrictInt | StrictFloat
    """One of the decision's options, or a score on its scale."""
    reason: StrictStr = ""
    """Why: shown with the tally, and with the dissent when the vote loses."""


class Reply(Described):
    """A turn result: ``{summary, data?, posts?}``.

    Example:
        >>> Reply(summary="Asked for review.",
        ...       posts=[Post(room="review", text="Please review", mentions=["reviewer"])])
        Reply(summary='Asked for review.', ...)
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, defer_build=True,
    )

    summary: StrictStr
    """A short account of the turn (the member's ``result`` in the council answer)."""
    data: Any = None
    """Optional JSON data."""
    posts: list[Post] = Field(default_factory=list)
    """Messages to save; all are checked before any is accepted."""
    votes: list[Vote] = Field(default_factory=list)
    """Votes on the council's open decisions (checked with the posts)."""

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON result shape (``roomId`` keys, no ``data`` when it is null)."""
        # Fields read from each model's __dict__: an attribute of a pydantic model costs a
        # lookup through its __getattr__ hook, and this runs on every turn.
        fields = self.__dict__
        out: dict[str, Any] = {"summary": fields["summary"]}
        if fields["data"] is not None:
            out["data"] = fields["data"]
        posts = fields["posts"]
        if posts:
            out["posts"] = wire = []
            for post in posts:
                values = post.__dict__
                wire.append({"roomId": values["room"], "text": values["text"],
                             "mentions": list(values["mentions"])})
        if fields["votes"]:
            out["votes"] = [{"decision": v.decision, "choice": v.choice, "reason": v.reason}
                            for v in fields["votes"]]
        return out


class Message(Described):
    """A saved message: ``{id, roomId, sender, text, mentions, position}``."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, defer_build=True)

    id: str
    """``team/{sender}/{position}/{postIndex}``."""
    room: str = Field(
        validation_alias=AliasChoices("room", "roomId"), serialization_alias="roomId"
    )
    """The room it was posted in."""
    sender: str
    """The member who posted it."""
    text: str
    """The message text."""
    mentions: list[str] = Field(default_factory=list)
    """Members it requested a turn from."""
    position: int
    """The 1-based dispatch position of the turn that posted it."""

    @property
    def system(self) -> bool:
        """Whether the host wrote it (a round, a decision's outcome, the chair's call)."""
        return self.position == 0 and self.sender == "system"

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON message shape."""
        return {
            "id": self.id,
            "roomId": self.room,
            "sender": self.sender,
            "text": self.text,
            "mentions": list(self.mentions),
            "position": self.position,
        }


class Turn(Described):
    """The input of one member turn, as handlers and script templates see it.

    Read-only, with what it holds: its messages and ``result`` are the run's own state,
    handed over without a copy. A handler builds its reply from copies; changing them in
    place would change what later turns of this process see, but not the run's log.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    task: str
    """The council task."""
    member: str
    """This member's id."""
    role: str
    """This member's role."""
    brief: str
    """This member's brief, rendered for this turn."""
    turn: int
    """1-based count of this member's turns, this one included."""
    result: dict[str, Any] | None
    """This member's previous result, or ``None`` on its first turn."""
    messages: list[Message]
    """The tail of each of this member's rooms plus every trigger, once each, in saved order."""
    triggers: list[Message]
    """The saved messages that requested this turn (empty for an initial turn)."""
    decisions: list[dict[str, Any]] = Field(default_factory=list)
    """The decisions of this member's rooms (DESIGN.md §22): ``{id, room, question,
    options | scale, rule, quorum, open, voter, votes}``, with ``your_vote`` once this member
    voted and, once closed, ``outcome``, ``tally`` and ``dissent`` (``[{voter, choice,
    reason}]``; aliases in anonymous rooms)."""
    rounds: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per room debated in rounds: ``{round, of, blind, anonymous, settled}``."""
    peers: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    """Per anonymous room of this member: the others as it sees them, ``{members, spent}``
    (aliases, in alias order); ``spent``: those who have used all their turns, whom a
    mention may not ask (DESIGN.md §22). A mention may name an alias."""
    elapsed_ms: int = 0
    """How long this turn has been going, in milliseconds of the run's active time (the
    time the run was paused left out): 0 on its first attempt; on a later one (after an
    immediate pause, a host that stopped mid-turn, a failed attempt with retries left), the
    time from its first attempt's start to this one's. A handler doing timed work (a wait,
    a poll against a budget) goes on for the rest rather than start over. A fork runs the
    turns it cut off anew (0). Not in the turn input templates and models see."""

    def room_messages(self, room: str) -> list[Message]:
        """Return the messages of one room, in saved order."""
        return [m for m in self.messages if m.room == room]
