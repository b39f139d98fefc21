"""Questions ``a2a`` members' agents wait on (``state.asks``; DESIGN.md §25).

An A2A agent that answers a member's message with ``input-required`` suspends the member's
turn. The engine writes the wait: a ``system`` turn in the room quoting the question, an
``interrupt.requested`` of kind ``conversation.exchange`` on the member's node (key
``a2a/<call id>``, :func:`~wopdsl.protocol.payloads.ask_key`; the question as the
``prompt``) and ``node.suspended``. The next post in that room by a human or external member
answers it (``interrupt.resolved`` then ``node.resumed``), and the member's turn runs again,
sending the answer to the agent's task.

Which open question a post answers (:meth:`AskState.answered_by`): the first asking member
the post mentions, else the question asked first in the room. A mention of the member it
answers asks that member for no further turn: the post is its input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wopdsl.state.records import MemberState, RoomState

__all__ = ["AskState", "PendingAsk"]


@dataclass(frozen=True, slots=True)
class PendingAsk:
    """A question of an ``a2a`` member's agent, waiting for an answer in a room."""

    key: str
    """The interrupt key (``a2a/<call id>``)."""
    member: str
    """The ``a2a`` member whose turn waits."""
    room: str
    """The room the answer is posted in."""
    question: str
    """The agent's question (the interrupt's ``prompt``)."""


@dataclass(slots=True)
class AskState:
    """The open questions of a run, in the order they were asked."""

    open: dict[str, PendingAsk] = field(default_factory=dict)

    def requested(self, event: Mapping[str, Any], room: str) -> None:
        """Fold an ``interrupt.requested`` whose key is an ask (its room already resolved)."""
        payload = event["payload"]
        key = str(payload.get("key", ""))
        data = payload.get("data") or {}
        self.open[key] = PendingAsk(key, str(event.get("nodeId", "")), room,
                                    str(data.get("prompt", "")))

    def resolved(self, key: str) -> bool:
        """Fold an ``interrupt.resolved``; return whether it answered a question."""
        return self.open.pop(key, None) is not None

    def answered_by(self, room: str, mentions: list[str] | tuple[str, ...]
                    ) -> PendingAsk | None:
        """The question a post in ``room`` with ``mentions`` answers (``None``: none)."""
        here = [ask for ask in self.open.values() if ask.room == room]
        for ask in here:
            if ask.member in mentions:
                return ask
        return here[0] if here else None

    def rooms(self) -> list[str]:
        """The rooms where a question waits for an answer, in asking order."""
        return list(dict.fromkeys(ask.room for ask in self.open.values()))

    def answerers(self, rooms: Mapping[str, RoomState],
                  members: Mapping[str, MemberState]) -> list[str]:
        """Who is asked: the human and external members of each open question's room.

        In asking order (then the room's order). Views show them waiting for input, as for a
        person whose turn is requested (they are not in ``CouncilState.waiting_for``: no
        turn of theirs is queued).
        """
        return list(dict.fromkeys(
            member for ask in self.open.values() if ask.room in rooms
            for member in rooms[ask.room].members
            if member in members and members[member].awaited))
