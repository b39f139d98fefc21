"""The records a run's fold keeps: its status, its members, in-flight turns and rooms.

:class:`~wopdsl.state.fold.CouncilState` holds them; they are plain slotted dataclasses (no
behaviour beyond a few derived flags), so the fold stays a linear pass over the events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from wopdsl._ids import parse_iso_ms

if TYPE_CHECKING:  # The model loads with the first message folded (wopdsl.model.construct).
    from wopdsl.model.turns import Message

__all__ = [
    "TERMINAL",
    "TERMINAL_EVENTS",
    "Chair",
    "DecisionState",
    "Inflight",
    "MemberState",
    "RoomState",
    "RunStatus",
    "VoteRecord",
    "status_of_event",
    "tags_of",
]


RunStatus = Literal[
    "pending", "running", "waiting-input", "paused", "completed", "failed", "cancelled"]
"""Run status, named as in the OpenWOP ``RunSnapshot`` (``paused``: between ``run.paused`` and
``run.resumed``, an operator's pause)."""

TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
"""Statuses a run never leaves."""

TERMINAL_EVENTS: Final[dict[str, RunStatus]] = {
    "run.completed": "completed",
    "run.failed": "failed",
    "run.cancelled": "cancelled",
}
"""The event type that ends a run, with the status it ends it in."""


def status_of_event(event_type: str) -> RunStatus | None:
    """Return the terminal status an event of ``event_type`` puts a run in, else ``None``."""
    return TERMINAL_EVENTS.get(event_type)


def tags_of(metadata: dict[str, Any]) -> list[str]:
    """The run's tags, from its ``run.started`` metadata (``request.runOptions.tags``).

    Where the HTTP host keeps a request's tags, and ``Council.start(tags=…)`` puts them.
    """
    request = metadata.get("request")
    options = request.get("runOptions") if isinstance(request, dict) else None
    tags = options.get("tags") if isinstance(options, dict) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


@dataclass(slots=True)
class MemberState:
    """One member as the log tells it."""

    id: str
    role: str
    engine: str
    cap: int
    rooms: tuple[str, ...]
    turns: int = 0
    """Turns taken (completed or failed)."""
    result: dict[str, Any] | None = None
    """Last successful result."""
    failed: bool = False
    """Whether its last turn failed."""
    error: dict[str, Any] | None = None
    """The error its last failed turn ended with (``node.failed.error``: code, message and,
    for a handler's exception, ``details.exception`` with type, message and traceback)."""
    awaited: bool = field(init=False, default=False)
    """Whether its turns are submitted from outside (``human`` or ``external``)."""

    def __post_init__(self) -> None:
        self.awaited = self.engine in ("human", "external")  # Read on every dispatch.

    @property
    def human(self) -> bool:
        """Whether a person produces this member's turns."""
        return self.engine == "human"


@dataclass(slots=True)
class Inflight:
    """A member turn whose ``node.started`` is in the log but whose completion is not."""

    member: str
    position: int
    attempt: int
    turn: int
    triggers: list[str]
    retried: bool = False
    """Whether ``node.retried`` already closed this attempt (the next start is due)."""
    suspended: str | None = None
    """The interrupt key the turn waits on (a tool call's approval), while it waits."""
    decided: bool = False
    """Whether the turn's wait was decided (``node.resumed``): it runs again by design, not
    because a run stopped in the middle of it."""
    since: int = -1
    """The sequence of the turn's first ``node.started`` (a round counts turns begun in it)."""
    steered: str | None = None
    """The steering post that stopped this attempt (docs/guides/steering.md): the attempt is
    to end with ``node.retried`` (``STEERED``), its outcome discarded, until a restart that
    carries the post in its triggers."""
    steers: int = 0
    """How many attempts of this turn a steer stopped (they do not count against ``retries``)."""
    began: str = ""
    """When the turn's clock started: its first ``node.started`` (a fork's, for a turn the
    fork cut off)."""
    began_paused_ms: int = 0
    """The run's paused time so far (``paused_total_ms``) when the turn's clock started."""
    elapsed_ms: int = 0
    """The run's active time (pauses left out) from the turn's first ``node.started`` to
    the current attempt's: 0 on a first attempt (``Turn.elapsed_ms``)."""

    def restart(self, attempt: int, timestamp: str, paused_ms: int) -> None:
        """Start the turn again (``node.started`` of a later attempt) at ``timestamp``."""
        self.attempt = attempt
        self.retried, self.suspended, self.decided = False, None, False
        if not self.began:  # Anew: the first start of its clock.
            self.began, self.began_paused_ms = timestamp, paused_ms
            return
        paused = paused_ms - self.began_paused_ms
        self.elapsed_ms = max(0, parse_iso_ms(timestamp) - parse_iso_ms(self.began) - paused)

    def anew(self) -> None:
        """Forget how long the turn has been going: a fork runs the turns it cut off anew."""
        self.began, self.began_paused_ms, self.elapsed_ms = "", 0, 0


@dataclass(slots=True)
class RoomState:
    """A room's conversation as the log tells it."""

    id: str
    members: tuple[str, ...]
    conversation_id: str = ""
    last_event_id: str = ""
    """``eventId`` of the last ``opened``/``exchanged`` (the next turn's ``causationId``)."""
    turn_index: int = 0
    """Index of the last turn (0 = the opening system turn)."""
    opened: bool = False
    closed: bool = False
    gate_resumed: bool = False
    """Whether the room's gate node got its ``node.resumed`` (after ``closed``)."""
    gate_done: bool = False
    """Whether the room's gate node ended (``node.completed``)."""
    messages: list[Message] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    """Each message's input-size term (see ``CouncilState.sizes``), parallel to ``messages``."""
    # -- deliberation (DESIGN.md §22) -------------------------------------------------------
    rounds: int | None = None
    """How many rounds the room debates (``None``: no rounds)."""
    blind: bool = False
    """Whether a round's posts stay hidden from the other members until it ends."""
    anonymous: bool = False
    """Whether members see each other's posts here under aliases."""
    max_wake: int | None = None
    """Most members an ``@all`` post wakes."""
    round: int = 0
    """The current round (0 before the first)."""
    round_start: int = 0
    """Index in ``messages`` of the current round's opening system turn."""
    round_seq: int = -1
    """Sequence of the event that began the current round."""
    pending: dict[str, None] = field(default_factory=dict)
    """Members who have yet to take their turn of the current round (in order)."""
    round_members: tuple[str, ...] = ()
    """The members the current round asked (``len - len(pending)`` have answered)."""
    settled: bool = False
    """Whether the room's last round ended: nobody is queued for it any more."""
    deferred: dict[str, list[str]] = field(default_factory=dict)
    """Mentions in a round room: member → message ids, triggers of its next round."""
    view: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """The round as members see it (``Turn.rounds``), built once per round: a reader's memo,
    not part of the fold (it is left out of equality)."""
    round_posts: dict[str, list[Message]] = field(default_factory=dict)
    """In a blind room: the current round's posts by sender (each sees its own)."""

    def hidden_from(self, viewer: str) -> int:
        """Index from which the room's posts by others are hidden from ``viewer`` (blind).

        ``len(messages)`` when nothing is hidden: the room is not blind, or between rounds.
        """
        if not self.blind or self.settled or not self.round:
            return len(self.messages)
        return self.round_start + 1


@dataclass(slots=True)
class Chair:
    """The council's chair (``[council] chair``) and its last turn, as the log tells them."""

    member: str | None = None
    """The chair's member id (``None``: the council has no chair)."""
    called: bool = False
    """Whether the chair was called to its last turn."""
    done: bool = False
    """Whether the chair's last turn ended (its summary is the result's ``answer``)."""
    deferred: list[str] = field(default_factory=list)
    """Messages that mentioned the chair before it was called: its last turn's triggers."""


@dataclass(slots=True)
class VoteRecord:
    """One vote as the log tells it."""

    voter: str
    choice: Any
    reason: str
    position: int
    """The dispatch position of the turn that cast it."""
    round: int = 0
    """The round of the decision's room when it was cast (0: no rounds)."""


@dataclass(slots=True)
class DecisionState:
    """A ``[[decisions]]`` table's votes and outcome as the log tells them."""

    id: str
    room: str
    definition: dict[str, Any]
    """The decision's JSON definition (``run.started.metadata.council.decisions[]``)."""
    voters: tuple[str, ...]
    quorum: int
    votes: dict[str, VoteRecord] = field(default_factory=dict)
    """Each voter's last vote."""
    history: list[VoteRecord] = field(default_factory=list)
    """Every vote, in log order (changed votes included)."""
    closed: bool = False
    outcome: Any = None
    """The outcome once closed: an option, a score, ``tied``, ``no_majority``, ``no_quorum``."""
    summary: dict[str, Any] | None = None
    """The closing system turn's ``decision`` block: outcome, tally, dissent, votes."""
    view: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What never changes of how a member sees it (id, room, question, options …): a
    reader's memo, not part of the fold (it is left out of equality)."""
    voter_set: frozenset[str] = field(init=False, default=frozenset())
    """``voters`` as a set (who may vote is asked on every turn)."""

    def __post_init__(self) -> None:
        self.voter_set = frozenset(self.voters)
