"""The records a run's fold keeps: its status, its members, in-flight turns and rooms.

:class:`~wopdsl.state.fold.CouncilState` holds them; they are plain slotted dataclasses (no
behaviour beyond a few derived flags), so the fold stays a linear pass over the events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:  # The model loads with the first message folded (wopdsl.model.construct).
    from wopdsl.model.turns import Message

__all__ = [
    "TERMINAL",
    "TERMINAL_EVENTS",
    "Inflight",
    "MemberState",
    "RoomState",
    "RunStatus",
    "status_of_event",
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

    @property
    def human(self) -> bool:
        """Whether a person produces this member's turns."""
        return self.engine == "human"

    @property
    def awaited(self) -> bool:
        """Whether its turns are submitted from outside (``human`` or ``external``)."""
        return self.engine in ("human", "external")


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
