"""Who a submitted turn is from and which room it goes to, when the caller does not say.

``Run.reply`` (and through it ``wop reply``, the TUI, the notebook) posts as the one member
whose turn is awaited, else the only human member, in that member's only open room (or its
only room where an ``a2a`` member's agent waits for an answer); a resume
payload's ``speakerId`` and ``groupId`` name them instead. An ambiguous default is refused with
a :class:`~wopdsl.errors.ValidationError` saying how to choose (the door then checks the rest).
"""

from __future__ import annotations

from typing import Any, overload

from wopdsl.errors import ValidationError
from wopdsl.state import CouncilState

__all__ = ["address", "default_member", "default_room", "group_of", "speaker_of"]


def address(state: CouncilState, member: str | None, room: str | None,
            resume: Any) -> tuple[str | None, str | None]:
    """Return ``(member, room)`` for a submission, the caller's choices kept, defaults filled.

    Without ``resume`` both are required (else ``ValidationError``); with one, the member may
    stay ``None`` (its ``speakerId`` decides) and so may the room (its ``groupId`` decides).
    """
    if resume is None:
        member = member or default_member(state)
        return member, room or default_room(state, member)
    member = member or speaker_of(resume) or default_member(state, required=False)
    if room is None and group_of(resume) is None and member is not None:
        room = default_room(state, member)
    return member, room


@overload
def default_member(state: CouncilState) -> str: ...
@overload
def default_member(state: CouncilState, *, required: bool) -> str | None: ...
def default_member(state: CouncilState, *, required: bool = True) -> str | None:
    """The member to post as: the one whose turn is awaited, else the only human member.

    Raises:
        ValidationError: ``required`` and no single member fits (none, or several humans).
    """
    humans = [m.id for m in state.members.values() if m.human]
    waiting = state.waiting_for
    if len(waiting) == 1:
        return waiting[0]
    if len(humans) == 1:
        return humans[0]
    if not required:
        return None
    if not humans:
        raise ValidationError("this council has no human member to post as",
                              hint="declare a member with engine = \"human\", or pass "
                                   "as_='<external member>'")
    raise ValidationError(f"several human members ({', '.join(humans)}); say which",
                          hint="pass as_='<member>' (CLI: --as MEMBER)")


def default_room(state: CouncilState, member: str) -> str:
    """The member's only open room, else its only room where an agent's question waits.

    Raises:
        ValidationError: the member has no open room, or several.
    """
    rooms = state.members[member].rooms if member in state.members else ()
    open_rooms = [r for r in rooms if not state.rooms[r].closed]
    if len(open_rooms) == 1:
        return open_rooms[0]
    asked = [r for r in state.asks.rooms() if r in open_rooms]
    if len(asked) == 1:
        return asked[0]
    raise ValidationError(f"{member} is in rooms {', '.join(rooms) or 'none'}; say which",
                          hint="pass room='<room>' (CLI: --room ROOM)")


def speaker_of(resume: Any) -> str | None:
    """The member a resume payload's ``speakerId`` names (``host:<member>``), if any."""
    turn = resume.get("turn") if isinstance(resume, dict) and "operation" in resume else resume
    speaker = turn.get("speakerId") if isinstance(turn, dict) else None
    return speaker[5:] if isinstance(speaker, str) and speaker.startswith("host:") else None


def group_of(resume: Any) -> str | None:
    """The room a resume payload's ``groupId`` names, if any."""
    turn = resume.get("turn") if isinstance(resume, dict) and "operation" in resume else resume
    group = turn.get("groupId") if isinstance(turn, dict) else None
    return group if isinstance(group, str) else None
