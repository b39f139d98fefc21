"""The notebook's view model: what ``display(run)`` and the live view show, read once.

:func:`run_view` reads a run's folded :class:`~wopdsl.state.CouncilState` in one catch-up
(the same facts ``run.snapshot()`` reports) into a :class:`RunView`: the status, the roster,
each room's messages and, for a council that deliberates (DESIGN.md §22), each room's round,
the posts of a blind round hidden from the person at the notebook until the round ends, the
decisions and the chair (``wopdsl.projections.deliberation``). The renderers are in
:mod:`wopdsl.projections.notebook`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from wopdsl.model.turns import Message
from wopdsl.projections.deliberation import (
    ChairView,
    DecisionView,
    RoundView,
    chair_of,
    decisions_view,
    hidden_messages,
    round_of,
)
from wopdsl.state import CouncilState

__all__ = ["FailureRow", "HasState", "MemberRow", "MessageRow", "RoomSection", "RunView",
           "Source", "run_view"]


class HasState(Protocol):
    """Anything that reads a run's folded state, such as ``wopdsl.Run``."""

    @property
    def state(self) -> CouncilState:
        """The run's state, caught up with its log."""
        ...


Source = CouncilState | HasState
"""A run's state, or a handle that reads it (``wopdsl.Run``)."""

@dataclass(frozen=True, slots=True)
class MemberRow:
    """One line of the roster."""

    id: str
    """The member id (its address)."""
    role: str
    """What the member does."""
    engine: str
    """``python``, ``script``, ``human`` ..."""
    state: str
    """``queued``, ``running``, ``waiting``, ``done``, ``failed`` or ``idle``."""
    turns: int
    """Turns taken."""
    max_turns: int
    """The member's turn cap."""
    summary: str | None
    """The summary of its last successful turn, if any."""
    usage: str | None = None
    """Model tokens (and cost) of an ``llm`` member, e.g. ``880 tokens · $0.0012``."""


@dataclass(frozen=True, slots=True)
class FailureRow:
    """A member whose last turn failed, with what its handler raised (if recorded)."""

    member: str
    """The member id."""
    code: str
    """The error code, e.g. ``TEAM_NODE_FAILED``."""
    message: str
    """What happened."""
    traceback: str | None
    """The handler's traceback (``node.failed.error.details.exception``), if recorded."""


MessageRow = Message
"""One saved message of a room (``id``, ``sender``, ``text``, ``mentions``)."""


@dataclass(frozen=True, slots=True)
class RoomSection:
    """A room and its messages (possibly only the tail)."""

    id: str
    """The room id."""
    members: tuple[str, ...]
    """Its members, in declaration order."""
    state: str
    """``pending``, ``open`` or ``closed``."""
    messages: tuple[Message, ...]
    """The messages shown, in saved order."""
    hidden: int
    """How many earlier messages were left out (``tail``)."""
    round: RoundView | None = None
    """The room's round, when it debates in rounds."""
    concealed: frozenset[str] = frozenset()
    """Ids of the messages shown as "answered — hidden until the round ends" (a blind
    round's posts by others than the council's human members, until the round ends)."""


@dataclass(frozen=True, slots=True)
class RunView:
    """Everything the renderers show, read once from the run."""

    run_id: str
    """The run id."""
    council: str
    """The council id (``workflowId``)."""
    status: str
    """The run status (``RunSnapshot`` names)."""
    events: int
    """How many events the log holds."""
    roster: tuple[MemberRow, ...]
    """Members in declaration order."""
    rooms: tuple[RoomSection, ...]
    """Rooms in declaration order."""
    waiting_for: tuple[str, ...]
    """Human members whose turn is requested, then those asked to answer an ``a2a``
    member's agent (its question's room's human and external members)."""
    error: dict[str, Any] | None
    """``{code, message}`` when the run failed."""
    usage: str | None = None
    """The run's model tokens (and cost) in total, when models were called."""
    failures: tuple[FailureRow, ...] = ()
    """Members whose last turn failed, in declaration order."""
    decisions: tuple[DecisionView, ...] = ()
    """The council's decisions, as its human members see them."""
    chair: ChairView | None = None
    """The council's chair and its answer."""
    asks: tuple[tuple[str, str, str], ...] = ()
    """Each open question of an ``a2a`` member's agent: ``(member, room, question)``."""


def run_view(run: Source, *, tail: int | None = None) -> RunView:
    """Read what the renderers show from one catch-up of a run's folded state.

    One read keeps the view consistent (status, roster, rooms and event count describe the
    same position in the log) even while another process appends. Names follow the
    ``RunSnapshot`` of ``run.snapshot()``.

    Args:
        run: The run's state, or the run handle (read once).
        tail: Show at most this many messages per room (the latest); ``None`` shows all.
    """
    state = run if isinstance(run, CouncilState) else run.state
    humans = [m for m, member in state.members.items() if member.human]
    asked = state.asks.answerers(state.rooms, state.members)
    roster = []
    for member_id, member in state.members.items():
        result = member.result if isinstance(member.result, dict) else {}
        summary = result.get("summary")
        roster.append(MemberRow(
            id=member_id, role=member.role, engine=member.engine,
            state="waiting" if member_id in asked else state.member_phase(member_id),
            turns=member.turns, max_turns=member.cap,
            summary=summary if isinstance(summary, str) else None,
            usage=state.usage.members[member_id].label()
            if member_id in state.usage.members else None))
    rooms = []
    for room_id, room in state.rooms.items():
        messages = room.messages
        shown = messages if tail is None or len(messages) <= tail else messages[-tail:]
        rooms.append(RoomSection(
            id=room_id, members=room.members,
            state="closed" if room.closed else ("open" if room.opened else "pending"),
            messages=tuple(shown),
            hidden=len(messages) - len(shown), round=round_of(state, room_id),
            concealed=frozenset(hidden_messages(state, room_id, humans))))
    status = state.status
    return RunView(
        run_id=state.run_id, council=state.workflow_id, status=status,
        events=state.last_sequence + 1, roster=tuple(roster), rooms=tuple(rooms),
        waiting_for=tuple(dict.fromkeys([*state.waiting_for, *asked])),
        error=dict(state.error) if state.error and status == "failed" else None,
        usage=state.usage.total.label() if state.usage.total.calls else None,
        failures=tuple(_failures(state)),
        decisions=tuple(decisions_view(state, humans)), chair=chair_of(state),
        asks=tuple((a.member, a.room, a.question) for a in state.asks.open.values()))


def _failures(state: CouncilState) -> list[FailureRow]:
    rows = []
    for member_id, member in state.members.items():
        error = member.error if member.failed else None
        if not error:
            continue
        details = error.get("details")
        exception = details.get("exception") if isinstance(details, dict) else None
        trace = exception.get("traceback") if isinstance(exception, dict) else None
        rows.append(FailureRow(member_id, str(error.get("code", "UNKNOWN")),
                               str(error.get("message", "")),
                               str(trace) if trace else None))
    return rows

