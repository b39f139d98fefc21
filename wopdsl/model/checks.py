"""The references a field-by-field validation cannot see, checked once per declaration.

Each problem carries a field path such as ``members[1] (reviewer).script[0].posts[0].room``
and a hint, but no source location: the TOML loader adds file, line and column, the
decorator path reports the path alone.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from wopdsl._ids import MAX_SAFE_INT
from wopdsl.errors import Problem
from wopdsl.model._a2a_checks import check_a2a_member
from wopdsl.model._deliberation_checks import check_deliberation
from wopdsl.model._llm_checks import check_budget, check_llm_member
from wopdsl.model._tool_checks import check_tools
from wopdsl.model.spec import CouncilSpec, MemberSpec, RoomSpec

__all__ = ["check_spec"]

_RESERVED_IDS = frozenset({".", ".."})


def check_spec(spec: CouncilSpec) -> list[Problem]:
    """Return every cross-reference problem of ``spec`` (an empty list when it is sound).

    Checks unique member and room ids, ``.``/``..`` ids, room membership, the members x cap
    product, which keys each ``engine`` takes, and every scripted post (room, sender,
    mentions).

    Args:
        spec: A field-valid council declaration.

    Returns:
        The problems, in declaration order, each with a field path and a hint.
    """
    problems: list[Problem] = []
    problems += _check_council(spec)
    problems += check_budget(spec)
    problems += _check_ids([m.id for m in spec.members], "members", "member")
    problems += _check_ids([r.id for r in spec.rooms], "rooms", "room")
    members = [m.id for m in spec.members]
    for index, room in enumerate(spec.rooms):
        problems += _check_room(room, f"rooms[{index}]{_label(room.id)}", members)
    rooms: dict[str, RoomSpec] = {}
    for room in spec.rooms:
        rooms.setdefault(room.id, room)
    for index, member in enumerate(spec.members):
        where = f"members[{index}]{_label(member.id)}"
        problems += _check_engine(member, where)
        problems += check_llm_member(spec, member, where)
        problems += check_a2a_member(member, where)
        problems += check_tools(spec, member, where)
        problems += _check_script(member, where, rooms, members)
    problems += check_deliberation(spec)
    return problems


def _label(ident: str) -> str:
    # Reserved ids stay out of labels: "members[0] (..)" reads like a path.
    return f" ({ident})" if ident not in _RESERVED_IDS else ""


def _listing(ids: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(ids)) if ids else "none"


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _check_council(spec: CouncilSpec) -> list[Problem]:
    problems: list[Problem] = []
    settings = spec.council
    if settings.id in _RESERVED_IDS:
        problems.append(
            Problem(
                f"the council id may not be '{settings.id}'",
                path="council.id",
                hint="use a name such as 'release-team'",
            )
        )
    if not spec.members:
        return problems
    caps = [(m.max_turns, i) for i, m in enumerate(spec.members) if m.max_turns is not None]
    biggest, where = settings.max_turns_per_member, "council.max_turns_per_member"
    for cap, index in caps:
        if cap > biggest:
            biggest = cap
            where = f"members[{index}]{_label(spec.members[index].id)}.max_turns"
    count = len(spec.members)
    if count * biggest > MAX_SAFE_INT:
        problems.append(
            Problem(
                f"members × cap = {count} × {biggest} = {count * biggest} is more than "
                f"2^53−1 ({MAX_SAFE_INT})",
                path=where,
                hint=f"with {count} members, keep every turn cap at most {MAX_SAFE_INT // count}",
            )
        )
    return problems


def _check_ids(ids: Sequence[str], field: str, noun: str) -> list[Problem]:
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for index, ident in enumerate(ids):
        path = f"{field}[{index}]{_label(ident)}.id"
        if ident in _RESERVED_IDS:
            problems.append(
                Problem(
                    f"a {noun} id may not be '{ident}'",
                    path=path,
                    hint=f"ids are addresses, never paths; name the {noun}, e.g. "
                    f"'{'reviewer' if noun == 'member' else 'review'}'",
                )
            )
        if ident in first:
            problems.append(
                Problem(
                    f"duplicate {noun} id '{ident}' (first declared as {field}[{first[ident]}])",
                    path=path,
                    hint=f"{noun} ids must be unique; rename one of the two",
                )
            )
        else:
            first[ident] = index
    return problems


def _check_room(room: RoomSpec, where: str, members: Sequence[str]) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, member in enumerate(room.members):
        path = f"{where}.members[{index}]"
        if member in seen:
            problems.append(
                Problem(
                    f"'{member}' is listed twice in room '{room.id}'",
                    path=path,
                    hint="list each member of a room once",
                )
            )
            continue
        seen.add(member)
        if member not in members:
            problems.append(
                Problem(
                    f"'{member}' is not a declared member (members: {_listing(members)})",
                    path=path,
                    hint=f'declare it in a [[members]] table with id = "{member}", or fix the '
                    f"spelling{_did_you_mean(member, members)}",
                )
            )
    return problems


_OUTSIDE_ENGINES = ("human", "external")
"""Engines whose turns arrive from outside the process (they may name a ``principal``)."""


def _check_engine(member: MemberSpec, where: str) -> list[Problem]:
    problems: list[Problem] = []
    engine = member.engine
    if engine == "script" and not member.script:
        problems.append(
            Problem(
                "engine 'script' needs a non-empty script",
                path=f"{where}.script" if member.script is not None else f"{where}.engine",
                hint='add script = [{ summary = "..." }] with one entry per turn',
            )
        )
    if engine != "script" and member.script is not None:
        problems.append(
            Problem(
                f"script is only for engine 'script' (this member's engine is '{engine}')",
                path=f"{where}.script",
                hint='set engine = "script", or remove the script',
            )
        )
    if engine != "python" and member.handler is not None:
        problems.append(
            Problem(
                f"handler is only for engine 'python' (this member's engine is '{engine}')",
                path=f"{where}.handler",
                hint='remove the handler, or set engine = "python"',
            )
        )
    if member.principal is not None and engine not in _OUTSIDE_ENGINES:
        problems.append(
            Problem(
                f"principal is only for members whose turns come from outside (engine "
                f"{' or '.join(repr(e) for e in _OUTSIDE_ENGINES)}); this member's engine is "
                f"'{engine}'",
                path=f"{where}.principal",
                hint='remove the principal, or set engine = "human"',
            )
        )
    return problems


def _check_script(
    member: MemberSpec, where: str, rooms: dict[str, RoomSpec], members: Sequence[str]
) -> list[Problem]:
    problems: list[Problem] = []
    for step_index, step in enumerate(member.script or []):
        for post_index, post in enumerate(step.posts):
            path = f"{where}.script[{step_index}].posts[{post_index}]"
            room = rooms.get(post.room)
            if room is None:
                hint = (
                    "this council declares no rooms; add a [[rooms]] table or remove the post"
                    if not rooms
                    else "post in a declared room, or declare this one with [[rooms]]"
                    + _did_you_mean(post.room, list(rooms))
                )
                problems.append(
                    Problem(
                        f"room '{post.room}' is not declared (rooms: {_listing(list(rooms))})",
                        path=f"{path}.room",
                        hint=hint,
                    )
                )
                continue
            if member.id not in room.members:
                problems.append(
                    Problem(
                        f"'{member.id}' posts in room '{room.id}' but is not one of its members "
                        f"({_listing(room.members)})",
                        path=f"{path}.room",
                        hint=f"add '{member.id}' to the members of room '{room.id}', or post in "
                        "a room it belongs to",
                    )
                )
            for mention_index, target in enumerate(post.mentions):
                if target in room.members or target == "all":
                    continue
                declared = target in members
                problems.append(
                    Problem(
                        f"mentions '{target}', who is not in room '{room.id}' "
                        f"(its members: {_listing(room.members)})"
                        if declared
                        else f"mentions '{target}', which is not a declared member "
                        f"(members: {_listing(members)})",
                        path=f"{path}.mentions[{mention_index}]",
                        hint=f"add '{target}' to room '{room.id}', or mention one of its members"
                        if declared
                        else f"mention a member of room '{room.id}' ({_listing(room.members)})"
                        + _did_you_mean(target, list(room.members)),
                    )
                )
    return problems
