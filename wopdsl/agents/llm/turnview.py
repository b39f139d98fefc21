"""What an ``llm`` member is offered on a turn of a deliberating council (DESIGN.md §22).

The rooms a member is compiled with carry real ids. On a turn of a council that deliberates,
the turn input says more: a round room that is settled is no longer offered for posts, an
anonymous room shows the others under their aliases (``Turn.peers``, with those who have used
all their turns), and the open decisions the member votes on are offered as votes. A
:class:`TurnView` is that, read from the turn alone, so the prompt's roster, the schema's
room and mention enums and the check of the answer all agree with what the member sees.
"""

from __future__ import annotations

from dataclasses import dataclass

from wopdsl.agents.llm.prompts import RoomView
from wopdsl.agents.llm.votes import VoteOffer, offers_of
from wopdsl.model.turns import Turn

__all__ = ["TurnView", "view_of"]


@dataclass(frozen=True, slots=True)
class TurnView:
    """A turn's rooms, mentions and votes as the member may use them."""

    roster: tuple[RoomView, ...]
    """Every room of the member as the turn shows it (aliases, settled rooms marked)."""
    rooms: tuple[RoomView, ...]
    """The rooms it may post in (settled round rooms left out)."""
    requestable: frozenset[str]
    """The names a mention may use (ids; aliases in anonymous rooms)."""
    spent: tuple[str, ...]
    """Names of those in the rooms it may post in who have used all their turns (never a
    hidden id)."""
    votes: tuple[VoteOffer, ...]
    """The open decisions the member votes on."""


def view_of(turn: Turn, rooms: tuple[RoomView, ...],
            requestable: frozenset[str]) -> TurnView | None:
    """The turn's view, or ``None`` when it shows nothing beyond the compiled rooms.

    Args:
        turn: The turn input.
        rooms: The member's rooms as compiled (real ids).
        requestable: The member ids a mention may request now (the recorder's).
    """
    if not turn.rounds and not turn.peers and not turn.decisions:
        return None
    roster: list[RoomView] = []
    allowed: set[str] = set()
    spent: set[str] = set()
    for room in rooms:
        round_ = turn.rounds.get(room.id) or {}
        peers = turn.peers.get(room.id)
        if peers is not None:
            members = tuple(peers.get("members", ()))
            gone = set(peers.get("spent", ()))
        else:
            members = room.members
            gone = {m for m in members if m not in requestable}
        settled = bool(round_.get("settled"))
        if not settled:  # nobody is mentioned in a settled room: its spent are no news
            allowed.update(m for m in members if m not in gone)
            spent.update(gone)
        roster.append(RoomView(room.id, room.title, members, anonymous=peers is not None,
                               settled=settled))
    return TurnView(tuple(roster), tuple(r for r in roster if not r.settled),
                    frozenset(allowed), tuple(sorted(spent)), offers_of(turn.decisions))
