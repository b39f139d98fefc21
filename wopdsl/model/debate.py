"""The bounds of a council's debate (DESIGN.md §22): who votes, how many turns rounds allow."""

from __future__ import annotations

from wopdsl.model.spec import CouncilSpec, DecisionSpec

__all__ = ["turn_bound", "voters_of"]


def turn_bound(spec: CouncilSpec, member_id: str, cap: int) -> int:
    """The most turns a member can take in one run: its cap, or less with rounds.

    A member in round rooms only takes one turn per round (a mention there requests no
    extra turn); the chair one more, its last. In any other room mentions may use its cap.
    """
    rooms = [room for room in spec.rooms if member_id in room.members]
    chair = spec.council.chair == member_id
    if not rooms or any(room.rounds is None for room in rooms):
        return cap
    rounds = 0 if chair else sum(room.rounds or 0 for room in rooms)
    return min(cap, rounds + chair)


def voters_of(spec: CouncilSpec, decision: DecisionSpec) -> list[str]:
    """The decision's voters: as declared, else its room's members but the chair."""
    if decision.voters is not None:
        return list(decision.voters)
    room = next((r for r in spec.rooms if r.id == decision.room), None)
    if room is None:
        return []
    return [m for m in room.members if m != spec.council.chair]
