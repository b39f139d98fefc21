"""The engine's door for people — a human's post or close, checked, then written.

:class:`HumanDoor` validates a human member's input against the council (membership, turn
cap, room, mentions, turn schema) and appends it as the member's turn and the room's
exchange (or the room's close); :class:`~wopdsl.engine.core.Engine` calls it between
batches, holding its lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from wopdsl._ids import message_id
from wopdsl.engine._results import post_problem
from wopdsl.engine._writer import EventWriter
from wopdsl.errors import ValidationError
from wopdsl.protocol import payloads as p

__all__ = ["HumanDoor", "HumanInput"]

_HUMAN_HINT: Final = "post as a human member, in one of its rooms, mentioning members of that room"


@dataclass(frozen=True, slots=True)
class HumanInput:
    """A human's input to a room (RFC 0005 §E resume payload, already parsed)."""

    member: str
    """The human member posting."""
    room: str
    """The room."""
    text: str = ""
    """The message text (``exchange``)."""
    mentions: tuple[str, ...] = ()
    """Members the message requests a turn from."""
    operation: str = "exchange"
    """``exchange`` (post a turn) or ``close`` (end the room's conversation)."""
    outcome: Any = None
    """For ``close``: the conversation's outcome."""


class HumanDoor(EventWriter):
    """Checks and writes a human's input (the caller holds the engine's lock)."""

    def apply_human(self, entry: HumanInput) -> str | None:
        """Validate and append a human's input now (the caller holds the engine lock)."""
        problem = self._human_problem(entry)
        if problem:
            raise ValidationError(problem, hint=_HUMAN_HINT)
        if entry.operation == "close":
            self._close_room(entry.room, entry.outcome, f"closed by {entry.member}")
            self._flush()
            return None
        member = self.state.members[entry.member]
        position = self.state.next_position
        triggers = list(self.state.queue.get(entry.member, []))
        mentions = list(entry.mentions)
        mid = message_id(entry.member, position, 0)
        result = {"summary": entry.text,
                  "posts": [{"roomId": entry.room, "text": entry.text, "mentions": mentions}]}
        self._emit("node.started", p.member_started(
            entry.member, attempt=0, turn=member.turns + 1, position=position,
            triggers=triggers), node_id=entry.member)
        self._emit("node.completed", {"nodeId": entry.member, "outputs": result},
                   node_id=entry.member)
        self._exchange(entry.room, mid, entry.member, entry.text, mentions, human=True)
        self._flush()
        return mid

    def _human_problem(self, entry: HumanInput) -> str | None:
        state = self.state
        if state.terminal:
            return f"run {self.run_id} has ended ({state.terminal}); it takes no more input"
        if state.last_sequence < 0:
            return f"run {self.run_id} has not started"
        member = self.graph.members.get(entry.member)
        if member is None or not member.human:
            humans = [m.id for m in self.graph.members.values() if m.human]
            return (f"'{entry.member}' is not a human member of this council "
                    f"(human members: {', '.join(humans) or 'none'})")
        if entry.operation not in {"exchange", "close"}:
            return f"unknown operation '{entry.operation}' (use 'exchange' or 'close')"
        if entry.operation == "close":
            room = self.graph.rooms.get(entry.room)
            if room is None or entry.member not in room.member_set:
                return f"{entry.member} is not a member of room '{entry.room}'"
            if state.rooms[entry.room].closed:
                return f"the conversation of room '{entry.room}' is already closed"
            return None
        if state.members[entry.member].turns >= member.cap:
            return f"{entry.member} has used all {member.cap} of its turns (max_turns)"
        return post_problem(self.graph, state, entry.member, entry.room, entry.text,
                            list(entry.mentions))
