"""An A2A client's message to a task as a turn of the run: who speaks, in which room.

The client answers as the member the run waits for: the one ``human`` or ``external``
member whose turn is requested, else the one an ``a2a`` member's question waits on (its
room's only such member), else the council's only ``human`` member. ``metadata.member`` and
``metadata.room`` of the message choose when that is ambiguous. The turn then passes the
same checks as a turn resolved over HTTP (:mod:`wopdsl.server.turns`: roster, role,
principal, mentions), before anything is appended; the door of the run checks the rest.
"""

from __future__ import annotations

from typing import Any

from a2a.utils.errors import InvalidParamsError

from wopdsl import CouncilState, MemberSpec
from wopdsl.model.mentions import parse_mentions
from wopdsl.server.access import Access
from wopdsl.server.errors import ApiError
from wopdsl.server.host import Host
from wopdsl.server.turns import check_mentions, resolve_speaker

__all__ = ["speaker_turn"]

_ROLES = {"human": "user", "external": "agent"}


def speaker_turn(host: Host, state: CouncilState, text: str, metadata: dict[str, Any],
                 access: Access, principal: str) -> tuple[str, str, dict[str, Any]]:
    """Return ``(member, room, resume payload)`` of the client's message to the run.

    Raises:
        InvalidParamsError: who speaks or where is unclear, or the turn is refused.
    """
    members = {m["id"]: MemberSpec.model_validate(m)
               for m in state.council.get("members", []) if isinstance(m, dict)}
    member = str(metadata.get("member") or _default_member(state, members))
    spec = members.get(member)
    if spec is None or spec.engine not in _ROLES:
        outside = sorted(m for m, s in members.items() if s.engine in _ROLES)
        raise InvalidParamsError(message=f"{member or 'nobody'} cannot speak from outside the "
                                 f"council (its human and external members: "
                                 f"{', '.join(outside) or 'none'}); name one in "
                                 "message.metadata.member")
    room = str(metadata.get("room") or _default_room(state, member))
    if room not in state.rooms:
        raise InvalidParamsError(message=f"no room {room!r} in this council (rooms: "
                                 f"{', '.join(state.rooms)}); name one in "
                                 "message.metadata.room")
    resume = {"role": _ROLES[spec.engine], "speakerId": f"host:{member}",
              "content": {"text": text, "mentions": parse_mentions(text)}}
    try:
        speaker = resolve_speaker(state, members, room, resume)
        access.check(principal, state, "post", speaker.member, speaker.principal)
        check_mentions(state, room, resume)
    except ApiError as exc:
        raise InvalidParamsError(message=exc.message) from None
    return speaker.member, room, resume


def _default_member(state: CouncilState, members: dict[str, MemberSpec]) -> str:
    waiting = state.waiting_for
    if len(waiting) == 1:
        return waiting[0]
    asked = state.asks.answerers(state.rooms, state.members)
    if len(asked) == 1:
        return asked[0]
    humans = [m for m, spec in members.items() if spec.engine == "human"]
    if len(humans) == 1 and not waiting:
        return humans[0]
    return ""


def _default_room(state: CouncilState, member: str) -> str:
    asked = state.interrupts.get(member)
    if asked is not None:
        return asked[1]
    rooms = [r for r in state.members[member].rooms if not state.rooms[r].closed]
    questions = [r for r in state.asks.rooms() if r in rooms]
    if len(questions) == 1:
        return questions[0]
    if len(rooms) == 1:
        return rooms[0]
    return ""
