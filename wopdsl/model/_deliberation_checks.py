"""Private: the cross-references of deliberation (DESIGN.md §22) a field check cannot see.

Rounds, the chair, ``[[decisions]]`` and scripted votes: each problem names its field path
and how to fix it (the TOML loader adds file, line and column).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from wopdsl.errors import Problem
from wopdsl.model.debate import voters_of
from wopdsl.model.spec import CouncilSpec, DecisionSpec, RoomSpec
from wopdsl.model.votes import RESERVED_MEMBER_IDS, choice_problem

__all__ = ["check_deliberation"]


def check_deliberation(spec: CouncilSpec) -> list[Problem]:
    """Return the problems of the council's rounds, chair, decisions and scripted votes."""
    problems: list[Problem] = []
    for index, member in enumerate(spec.members):
        if member.id in RESERVED_MEMBER_IDS:
            problems.append(Problem(
                f"'{member.id}' is a reserved id: @{member.id} wakes every other member of "
                "a room", path=f"members[{index}].id",
                hint=f"rename the member, e.g. '{member.id}-members'"))
    members = [m.id for m in spec.members]
    problems += _check_chair(spec, members)
    for index, room in enumerate(spec.rooms):
        problems += _check_room(room, f"rooms[{index}] ({room.id})")
    problems += _check_decisions(spec, members)
    problems += _check_script_votes(spec)
    return problems


def _check_chair(spec: CouncilSpec, members: Sequence[str]) -> list[Problem]:
    chair = spec.council.chair
    if chair is None:
        return []
    if chair not in members:
        return [Problem(f"chair '{chair}' is not a declared member (members: "
                        f"{', '.join(members) or 'none'})", path="council.chair",
                        hint=f"name one of the members{_did_you_mean(chair, members)}")]
    if not any(chair in room.members for room in spec.rooms):
        return [Problem(f"chair '{chair}' is in no room, so it could not see the debate it "
                        "closes", path="council.chair",
                        hint=f"add '{chair}' to the members of the room where the council "
                        "debates")]
    return []


def _check_room(room: RoomSpec, where: str) -> list[Problem]:
    if room.blind and room.rounds is None:
        return [Problem(f"room '{room.id}' is blind but has no rounds: blindness hides a "
                        "round's posts until the round ends", path=f"{where}.blind",
                        hint="add rounds = N (how many rounds the room debates), or remove "
                        "blind")]
    return []


def _check_decisions(spec: CouncilSpec, members: Sequence[str]) -> list[Problem]:
    problems: list[Problem] = []
    rooms = {room.id: room for room in spec.rooms}
    seen: dict[str, int] = {}
    for index, decision in enumerate(spec.decisions):
        where = f"decisions[{index}] ({decision.id})"
        if decision.id in seen:
            problems.append(Problem(
                f"duplicate decision id '{decision.id}' (first declared as "
                f"decisions[{seen[decision.id]}])", path=f"{where}.id",
                hint="decision ids must be unique; rename one of the two"))
        seen.setdefault(decision.id, index)
        room = rooms.get(decision.room)
        if room is None:
            problems.append(Problem(
                f"room '{decision.room}' is not declared (rooms: "
                f"{', '.join(rooms) or 'none'})", path=f"{where}.room",
                hint="name the room where the decision is debated"
                + _did_you_mean(decision.room, list(rooms))))
            continue
        if decision.options is not None and len(set(decision.options)) != len(decision.options):
            twice = sorted({o for o in decision.options if decision.options.count(o) > 1})
            problems.append(Problem(
                f"options are not distinct: {', '.join(twice)} listed more than once",
                path=f"{where}.options", hint="list each option once"))
        if decision.scale is not None and "rule" in decision.model_fields_set:
            problems.append(Problem(
                "rule applies to options; a scale decision is settled by the median score",
                path=f"{where}.rule", hint="remove rule, or give options instead of scale"))
        problems += _check_voters(spec, decision, room, where, members)
    return problems


def _check_voters(spec: CouncilSpec, decision: DecisionSpec, room: RoomSpec, where: str,
                  members: Sequence[str]) -> list[Problem]:
    problems: list[Problem] = []
    chair = spec.council.chair
    for index, voter in enumerate(decision.voters or ()):
        path = f"{where}.voters[{index}]"
        if voter not in room.members:
            problems.append(Problem(
                f"voter '{voter}' is not a member of room '{room.id}' ({', '.join(room.members)})"
                if voter in members else
                f"voter '{voter}' is not a declared member (members: {', '.join(members)})",
                path=path, hint=f"voters debate in the decision's room; add '{voter}' to room "
                f"'{room.id}', or remove it from voters"
                + _did_you_mean(voter, list(room.members))))
        elif voter == chair:
            problems.append(Problem(
                f"the chair '{voter}' cannot vote: it speaks once every decision is closed",
                path=path, hint="remove the chair from voters"))
    if decision.voters is not None and len(set(decision.voters)) != len(decision.voters):
        problems.append(Problem("a voter is listed twice", path=f"{where}.voters",
                                hint="list each voter once"))
    voters = voters_of(spec, decision)
    if not voters:
        problems.append(Problem(
            f"decision '{decision.id}' has no voters (room '{room.id}' holds only the chair)",
            path=f"{where}.voters", hint="add voters, or members to the room"))
    elif decision.quorum is not None and decision.quorum > len(set(voters)):
        problems.append(Problem(
            f"quorum {decision.quorum} is more than the {len(set(voters))} voters "
            f"({', '.join(dict.fromkeys(voters))}): the decision could never close with a "
            "quorum", path=f"{where}.quorum",
            hint=f"set quorum to at most {len(set(voters))}, or add voters"))
    return problems


def _check_script_votes(spec: CouncilSpec) -> list[Problem]:
    problems: list[Problem] = []
    decisions = {d.id: d for d in spec.decisions}
    for m_index, member in enumerate(spec.members):
        for s_index, step in enumerate(member.script or ()):
            for v_index, vote in enumerate(step.votes):
                where = f"members[{m_index}] ({member.id}).script[{s_index}].votes[{v_index}]"
                decision = decisions.get(vote.decision)
                if decision is None:
                    problems.append(Problem(
                        f"decision '{vote.decision}' is not declared (decisions: "
                        f"{', '.join(decisions) or 'none'})", path=f"{where}.decision",
                        hint="declare it with [[decisions]], or vote on a declared one"
                        + _did_you_mean(vote.decision, list(decisions))))
                    continue
                if member.id not in voters_of(spec, decision):
                    problems.append(Problem(
                        f"{member.id} is not a voter of decision '{decision.id}' (voters: "
                        f"{', '.join(voters_of(spec, decision)) or 'none'})",
                        path=f"{where}.decision",
                        hint=f"add '{member.id}' to the decision's voters, or remove the vote"))
                if isinstance(vote.choice, str) and "{" in vote.choice:
                    continue  # A template: checked when it renders.
                problem, _ = choice_problem(decision.model_dump(), vote.choice)
                if problem:
                    problems.append(Problem(problem, path=f"{where}.choice",
                                            hint="vote for one of the options, or a score on "
                                            "the scale"))
    return problems


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
