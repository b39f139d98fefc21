"""The TUI's read side: a fold of run events into what the screen shows, and its follower.

The fold stores ``last_sequence`` and the follower resumes from it (STYLE example 10), so
starting, attaching, pausing for a human and resuming all read the log the same way. Nothing
here imports Textual or the engine: only event dicts, the public ``wopdsl.Run`` and the public
fold of council semantics, ``wopdsl.CouncilState`` (queue, turns, status), which this module
wraps with what only a screen needs (titles, the event pane, error notes, the roster flag).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from wopdsl_tui.calls import ToolFold

from wopdsl import CouncilState, Message
from wopdsl.projections import escape
from wopdsl.state import MemberState, RoomState

if TYPE_CHECKING:
    import wopdsl
    from wopdsl.state.tools import PendingApproval

__all__ = [
    "ErrorNote",
    "EventLine",
    "MemberInfo",
    "RoomFeed",
    "RoomMessage",
    "RunFold",
    "follow",
]

_ROSTER_EVENTS: Final = frozenset({
    "run.started", "node.started", "node.completed", "node.failed", "node.cancelled",
    "conversation.exchanged", "run.completed", "run.failed", "run.cancelled",
    "provider.usage", "output.chunk", "node.retried", "interrupt.requested",
    "interrupt.resolved", "node.suspended", "node.resumed",
})
"""Event types that may change a member's state or the run's status."""
_MAX_STREAM: Final = 1 << 20
"""Most characters of a streamed answer kept (answers are bounded far below this)."""


RoomMessage = Message
"""A saved message as a room tab shows it: ``id``, ``sender``, ``text``, ``mentions``."""


@dataclass(slots=True)
class RoomFeed:
    """One room as a tab shows it: its title, and the room as the council fold holds it."""

    id: str
    """The room id."""
    title: str
    """The room's title (its id when it has none)."""
    room: RoomState
    """The room's conversation, folded by wopdsl (members, messages, closed)."""

    @property
    def members(self) -> tuple[str, ...]:
        """The room's members, as declared."""
        return self.room.members

    @property
    def messages(self) -> list[Message]:
        """Every saved message, in saved order."""
        return self.room.messages

    @property
    def closed(self) -> bool:
        """Whether the room's conversation is closed."""
        return self.room.closed


MemberInfo = MemberState
"""A member as the roster shows it: role, engine, cap, turns used, failed."""


@dataclass(frozen=True, slots=True)
class EventLine:
    """One event as the event pane lists it (no timestamps: the screen stays deterministic)."""

    sequence: int
    """The event's sequence."""
    type: str
    """The event type."""
    node: str
    """The event's node id, or ``""``."""
    detail: str
    """A short summary of the payload."""

    def __str__(self) -> str:
        return f"{self.sequence:>5} {self.type:<24} {self.node} {self.detail}".rstrip()


@dataclass(frozen=True, slots=True)
class ErrorNote:
    """A failed turn or a failed run."""

    code: str
    """The stable error code."""
    message: str
    """What happened."""
    node: str
    """The member (or ``""`` for the whole run)."""
    traceback: str = ""
    """A failed handler's traceback (``error.details.exception.traceback``), else ``""``."""


@dataclass(slots=True)
class RunFold:
    """Everything the screen shows, folded from the run's events in sequence order."""

    last_sequence: int = -1
    """Sequence of the last event applied; the follower resumes after it."""
    run_id: str = ""
    council_id: str = ""
    task: str = ""
    rooms: dict[str, RoomFeed] = field(default_factory=dict)
    council: CouncilState = field(default_factory=CouncilState)
    """The council semantics (queue, in-flight turns, turns used, status), folded by wopdsl."""
    errors: list[ErrorNote] = field(default_factory=list)
    events: list[EventLine] = field(default_factory=list)
    last_mention: dict[str, str] = field(default_factory=dict)
    """Member id -> room of the latest message mentioning it."""
    roster_changed: bool = True
    """Set when an event may change the roster or status; the screen clears it."""
    streams: dict[str, str] = field(default_factory=dict)
    """Member id -> what its model has streamed so far in the turn in flight (the raw answer,
    up to 1 MiB; ``wopdsl.projections.streaming.streamed_text`` reads its posts' text)."""
    tools: ToolFold = field(default_factory=ToolFold)
    """The run's tool calls: approvals asked and decided, calls made, their results."""

    @property
    def members(self) -> dict[str, MemberState]:
        """Members by id, in declaration order."""
        return self.council.members

    @property
    def batch(self) -> int:
        """The highest batch number dispatched so far."""
        return self.council.batch

    @property
    def terminal(self) -> str | None:
        """``completed``, ``failed`` or ``cancelled`` once the run has ended."""
        return self.council.terminal

    @property
    def humans(self) -> list[str]:
        """Human members, in declaration order."""
        return [m.id for m in self.members.values() if m.human]

    @property
    def status(self) -> str:
        """The run status, named as in the OpenWOP ``RunSnapshot``."""
        return self.council.status

    @property
    def waiting_for(self) -> list[str]:
        """Human members whose requested turn is pending, then those asked for an answer.

        Asked: the human and external members of the room of an ``a2a`` member's agent's
        open question.
        """
        council = self.council
        return list(dict.fromkeys([*council.waiting_for,
                                   *council.asks.answerers(council.rooms, council.members)]))

    def asked_in(self, member_id: str) -> str | None:
        """The room where ``member_id`` was asked for input (``None``: none known).

        The latest mention of it when its turn is requested, else the room of the first
        open question of an ``a2a`` member's agent it is in.
        """
        mentioned = self.last_mention.get(member_id)
        if mentioned is not None and member_id in self.council.waiting_for:
            return mentioned
        return next((ask.room for ask in self.council.asks.open.values()
                     if member_id in self.council.rooms[ask.room].members), mentioned)

    def shown_phase(self, member_id: str) -> str:
        """:meth:`phase`, but ``waiting`` for a member asked to answer an agent's question.

        The roster shows such a member as for a person whose turn is requested.
        """
        council = self.council
        if member_id in council.asks.answerers(council.rooms, council.members):
            return "waiting"
        return self.phase(member_id)

    @property
    def approvals(self) -> list[PendingApproval]:
        """Tool calls waiting for a person's decision, in request order."""
        return list(self.council.tools.approvals.values())

    def closed_reason(self, feed: RoomFeed, here: list[str]) -> str | None:
        """Why nobody may post in room ``feed`` from here, or ``None`` when a human may.

        ``here``: the human members of the room.
        """
        if self.terminal is not None:
            return f"The run has {self.terminal}; it takes no more messages."
        if not here:
            others = ", ".join(self.humans)
            return (f"{others} {'is' if len(self.humans) == 1 else 'are'} not in room "
                    f"{feed.id} ({', '.join(feed.members)}); Ctrl+N / Ctrl+P for another room.")
        if feed.closed:
            return f"The conversation of room {feed.id} is closed."
        return None

    def usage(self, member_id: str) -> str | None:
        """The member's model tokens (and cost), e.g. ``880 tokens · $0.0012``, if any."""
        spent = self.council.usage.members.get(member_id)
        return spent.label() if spent is not None else None

    def phase(self, member_id: str) -> str:
        """Return ``queued``, ``running``, ``waiting``, ``failed``, ``done`` or ``idle``.

        The same names as ``run.snapshot()["nodeStates"][member]["status"]``.
        """
        return self.council.member_phase(member_id)

    def apply(self, event: Mapping[str, Any]) -> None:
        """Apply one event (events must arrive in sequence order)."""
        sequence = int(event["sequence"])
        if sequence <= self.last_sequence:
            return
        self.last_sequence = sequence
        kind = str(event["type"])
        payload = event.get("payload") or {}
        node = str(event.get("nodeId") or payload.get("nodeId") or "")
        self.council.apply(event)  # type: ignore[arg-type]
        self.events.append(EventLine(sequence, kind, node, _detail(kind, payload)))
        self.tools.apply(event)
        if kind in _ROSTER_EVENTS:
            self.roster_changed = True
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event, payload)
        if kind == "output.chunk":
            answer = self.streams.get(node, "")
            if len(answer) < _MAX_STREAM:
                self.streams[node] = answer + str(payload.get("chunk", ""))
        elif kind in ("node.started", "node.completed", "node.failed", "node.cancelled",
                      "node.retried"):
            self.streams.pop(node, None)  # a stopped attempt's partial answer is dropped

    def _run_started(self, event: Mapping[str, Any], payload: Mapping[str, Any]) -> None:
        self.run_id = str(event.get("runId", ""))
        self.council_id = str(payload.get("workflowId", ""))
        self.task = str((payload.get("inputs") or {}).get("task", ""))
        council = (payload.get("metadata") or {}).get("council") or {}
        for room in council.get("rooms", []):
            room_id = room["id"]
            self.rooms[room_id] = RoomFeed(room_id, room.get("title") or room_id,
                                           self.council.rooms[room_id])

    def _node_failed(self, event: Mapping[str, Any], payload: Mapping[str, Any]) -> None:
        error = payload.get("error") or {}
        details = error.get("details")
        exception = details.get("exception") if isinstance(details, Mapping) else None
        trace = exception.get("traceback") if isinstance(exception, Mapping) else None
        self.errors.append(ErrorNote(str(error.get("code", "UNKNOWN")),
                                     str(error.get("message", "")),
                                     str(payload.get("nodeId", "")),
                                     str(trace or "")))

    def _exchanged(self, event: Mapping[str, Any], payload: Mapping[str, Any]) -> None:
        room = self._room_of(event)
        if room is None or not room.messages:
            return
        for target in room.messages[-1].mentions:
            self.last_mention[target] = room.id

    def _ended(self, event: Mapping[str, Any], payload: Mapping[str, Any]) -> None:
        error = payload.get("error")
        if isinstance(error, Mapping):
            self.errors.append(ErrorNote(str(error.get("code", "UNKNOWN")),
                                         str(error.get("message", "")),
                                         str(payload.get("failedNodeId", ""))))

    def _room_of(self, event: Mapping[str, Any]) -> RoomFeed | None:
        node = str(event.get("nodeId", ""))
        return self.rooms.get(node.removeprefix("room:")) if node.startswith("room:") else None


_Handler = Callable[[RunFold, Mapping[str, Any], Mapping[str, Any]], None]
_HANDLERS: Final[dict[str, _Handler]] = {
    "run.started": RunFold._run_started,
    "node.failed": RunFold._node_failed,
    "conversation.exchanged": RunFold._exchanged,
    "run.completed": RunFold._ended,
    "run.failed": RunFold._ended,
    "run.cancelled": RunFold._ended,
}


def _detail(kind: str, payload: Mapping[str, Any]) -> str:
    """Return a one-line summary of an event's payload for the event pane."""
    if kind == "conversation.exchanged":
        turn = payload.get("turn") or {}
        return f"{turn.get('messageId', '')} from {turn.get('from', '')}"
    if kind == "node.started" and "position" in payload:
        return f"turn {payload.get('turn', '?')} attempt {payload.get('attempt', 0)}"
    if kind in {"node.failed", "run.failed"}:
        error = payload.get("error") or {}
        return f"error[{error.get('code', 'UNKNOWN')}]"
    if kind == "run.started":
        return str(payload.get("workflowId", ""))
    if kind in ("agent.toolCalled", "agent.toolReturned"):
        status = f" {payload['status']}" if "status" in payload else ""
        # A tool name is what the model asked for: shown escaped, never acted on.
        return escape(f"{payload.get('toolName', '')} {payload.get('callId', '')}{status}")
    if kind == "approval.requested":
        return escape(str(payload.get("artifactId", "")))
    if kind in ("approval.granted", "approval.rejected"):
        return escape(f"{payload.get('gateId', '')} by {payload.get('principal', '')}")
    return ""


async def follow(run: wopdsl.Run, fold: RunFold) -> AsyncIterator[Mapping[str, Any]]:
    """Fold ``run``'s events into ``fold`` as they are saved; yield each once applied.

    Subscribes to the run's store after ``fold.last_sequence`` (catch up, then live, also
    across processes), so a paused run is followed on and posts made here, in another
    terminal or by another process show up. Ends when the run has ended.

    Args:
        run: The run handle (started here, or attached to a stored run).
        fold: The fold to update; following resumes after its ``last_sequence``.
    """
    if fold.terminal is not None:
        return
    events = run.store.subscribe(run.run_id, fold.last_sequence)
    try:
        async for event in events:
            fold.apply(event)
            yield event
            if fold.terminal is not None:
                return
    finally:
        # Close the subscription now, not whenever the garbage collector gets to it.
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
