"""The deliberation part of the fold (DESIGN.md §22): rounds, ``@all``, votes, the chair.

The engine writes each deliberation fact as an event — a round beginning or the debate
ending, a decision closing, the chair called: ``system`` turns in a room's conversation; a
vote: a turn result's ``votes`` — and this mixin of :class:`~wopdsl.state.CouncilState`
folds them, so every reader derives the same rounds, queue and outcomes from the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wopdsl.state.records import (
    Chair,
    DecisionState,
    Inflight,
    MemberState,
    RoomState,
    VoteRecord,
)

__all__ = ["WAKE_ALL", "DeliberationFold"]

_CHOICE_TYPES = (str, int, float)

WAKE_ALL = "all"
"""The mention that requests a turn of every other member of the room (``@all``)."""


class DeliberationFold:
    """Rounds, ``@all``, votes and the chair, folded (a mixin of ``CouncilState``)."""

    __slots__ = ()

    # The CouncilState fields this mixin reads and writes (declared there).
    members: dict[str, MemberState]
    rooms: dict[str, RoomState]
    queue: dict[str, list[str]]
    inflight: dict[str, Inflight]
    decisions: dict[str, DecisionState]
    chairing: Chair
    aliases: dict[str, str]

    @property
    def chair(self) -> str | None:
        """The chair's member id (``None``: the council has no chair)."""
        return self.chairing.member

    def _setup_deliberation(self, council: dict[str, Any], metadata: dict[str, Any]) -> None:
        """Read the rooms' rounds, the decisions, the chair and the aliases (``run.started``)."""
        self.chairing.member = council.get("council", {}).get("chair")
        aliases = metadata.get("aliases")
        if isinstance(aliases, dict):
            self.aliases.update(aliases)
        for room in council.get("rooms", []):
            state = self.rooms[room["id"]]
            state.rounds = room.get("rounds")
            state.blind = bool(room.get("blind", False))
            state.anonymous = bool(room.get("anonymous", False))
            state.max_wake = room.get("max_wake")
        for decision in council.get("decisions", []):
            room = self.rooms.get(decision.get("room", ""))
            voters = decision.get("voters")
            if voters is None:
                voters = [m for m in room.members if m != self.chair] if room else []
            self.decisions[decision["id"]] = DecisionState(
                decision["id"], decision.get("room", ""), decision, tuple(voters),
                decision.get("quorum") or len(set(voters)))

    def queued_at_start(self, member_id: str, initial_turn: bool) -> bool:
        """Whether a member is queued by ``run.started`` (``initial_turn``).

        Never the chair, nor a member of a round room (each round queues it).
        """
        if not initial_turn or member_id == self.chair:
            return False
        return not any(self.rooms[r].rounds for r in self.members[member_id].rooms)

    # -- mentions ---------------------------------------------------------------------------

    def _request(self, room: RoomState, sender: str, message_id: str,
                 mentions: Iterable[str]) -> None:
        """Queue the members a saved post mentions (its turn's triggers).

        ``@all`` names every other member of the room with turns left (at most
        ``max_wake``); in a round room a mention is a trigger of the member's next round
        instead; the chair's mentions wait for its last turn, and the chair's last turn
        requests nobody.
        """
        chair = self.chairing
        if sender == chair.member and chair.called:
            return
        targets = list(mentions)
        if WAKE_ALL in targets:
            targets = [t for t in targets if t != WAKE_ALL] + self.wakeable(room, sender)
        for target in dict.fromkeys(targets):
            if target not in self.members:
                continue
            if target == chair.member and not chair.called:
                _add_trigger(chair.deferred, message_id)
            elif room.rounds is not None:
                if not room.settled:
                    _add_trigger(room.deferred.setdefault(target, []), message_id)
            else:
                _add_trigger(self.queue.setdefault(target, []), message_id)

    def wakeable(self, room: RoomState, sender: str) -> list[str]:
        """Who an ``@all`` post of ``sender`` in ``room`` wakes.

        The other members with a turn left, the chair aside, in declaration order, at most
        ``max_wake``.
        """
        woken = [m for m, member in self.members.items()
                 if m in room.members and m != sender and m != self.chair and
                 (m in self.queue or member.turns + (m in self.inflight) < member.cap)]
        return woken if room.max_wake is None else woken[: room.max_wake]

    def has_turn_left(self, member_id: str) -> bool:
        """Whether a new turn of the member would stay within its cap."""
        member = self.members[member_id]
        return member.turns + (member_id in self.inflight) < member.cap

    # -- system turns and votes --------------------------------------------------------------

    def _system_turn(self, room: RoomState, content: dict[str, Any], sequence: int) -> None:
        """Apply a deliberation fact a ``system`` turn carries (before it is saved)."""
        opening = content.get("round")
        if isinstance(opening, dict):
            room.round = int(opening.get("number", room.round + 1))
            room.round_start = len(room.messages)
            room.round_posts = {}
            room.round_seq = sequence
            members = [m for m in opening.get("members", ()) if m in self.members]
            room.pending = dict.fromkeys(members)
            room.round_members = tuple(members)
            for member in members:
                triggers = self.queue.setdefault(member, [])
                for message_id in room.deferred.pop(member, ()):
                    _add_trigger(triggers, message_id)
        ending = content.get("rounds")
        if isinstance(ending, dict) and ending.get("finished"):
            room.settled = True
            room.pending.clear()
            room.deferred.clear()
        closing = content.get("decision")
        if isinstance(closing, dict):
            decision = self.decisions.get(str(closing.get("id")))
            if decision is not None:
                decision.closed = True
                decision.outcome = closing.get("outcome")
                decision.summary = closing
        called = content.get("chair")
        chair = self.chairing
        if isinstance(called, dict) and chair.member is not None and not chair.called:
            chair.called = True
            triggers = self.queue.setdefault(chair.member, [])
            for message_id in chair.deferred:
                _add_trigger(triggers, message_id)
            chair.deferred.clear()

    def _cast(self, member_id: str, votes: Any, position: int) -> None:
        """Record the votes of a member's completed turn (``node.completed.outputs.votes``)."""
        if not isinstance(votes, list):
            return
        for vote in votes:
            if not isinstance(vote, dict):
                continue
            decision = self.decisions.get(str(vote.get("decision")))
            choice = vote.get("choice")
            # The engine checked and normalised the vote (wopdsl.engine._results); a log
            # from elsewhere is held to the same shape, `wop check` to the rest.
            if decision is None or decision.closed or member_id not in decision.voter_set or \
                    isinstance(choice, bool) or not isinstance(choice, _CHOICE_TYPES):
                continue
            room = self.rooms.get(decision.room)
            record = VoteRecord(member_id, choice, str(vote.get("reason") or ""), position,
                                room.round if room is not None else 0)
            decision.votes[member_id] = record
            decision.history.append(record)

    def _answered(self, member_id: str, turn: Inflight) -> None:
        """A member's turn ended: it has answered the rounds begun before that turn began."""
        for room_id in self.members[member_id].rooms:
            room = self.rooms[room_id]
            if member_id in room.pending and turn.since > room.round_seq:
                del room.pending[member_id]
        if member_id == self.chairing.member and self.chairing.called:
            self.chairing.done = True

    def round_views(self, member_id: str) -> dict[str, dict[str, Any]]:
        """Per round room of the member: ``{round, of, blind, anonymous, settled}``."""
        views: dict[str, dict[str, Any]] = {}
        for room_id in self.members[member_id].rooms:
            room = self.rooms[room_id]
            if room.rounds is not None:
                view = room.view
                if view is None or view["round"] != room.round or \
                        view["settled"] != room.settled:
                    view = room.view = {"round": room.round, "of": room.rounds,
                                        "blind": room.blind, "anonymous": room.anonymous,
                                        "settled": room.settled}
                views[room_id] = view.copy()  # A member may change its own copy.
        return views


def _add_trigger(triggers: list[str], message_id: str) -> None:
    if not triggers or triggers[-1] != message_id:  # "@x @x" triggers x once
        triggers.append(message_id)
