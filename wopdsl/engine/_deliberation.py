"""Private: how a council decides, written between batches (DESIGN.md §22).

:class:`Deliberation` writes each fact as a ``system`` turn in a room's conversation (the
fold, :class:`~wopdsl.state.deliberation.DeliberationFold`, applies them): a round begins
(queueing its members) once every member has answered the last one, the debate ends after
the last round, a decision closes once its quorum voted and no voter is queued (in a round
room: once the room settles; in any case before the run would end), and the chair is called
once nothing else is queued and every decision is closed.
"""

from __future__ import annotations

from typing import Any

from wopdsl.engine._writer import EventWriter
from wopdsl.model.votes import NO_MAJORITY, NO_QUORUM, TIED, tally
from wopdsl.state import DecisionState, RoomState

__all__ = ["Deliberation", "decision_block"]

_OUTCOME_TEXT = {TIED: "tied", NO_MAJORITY: "no majority", NO_QUORUM: "no quorum"}


class Deliberation(EventWriter):
    """Rounds, decisions and the chair, between batches (the caller commits)."""

    def _deliberate(self) -> None:
        """Write what the log now implies: rounds, closed decisions, the chair's call."""
        state = self.state
        if not self.graph.deliberates:
            return
        queue, inflight = state.queue, state.inflight
        for room_id, room in state.rooms.items():
            if room.rounds is None or room.settled or room.closed:
                continue
            if room.pending:
                first = next(iter(room.pending))  # Usually queued or running: not done yet.
                if first in queue or first in inflight or \
                        any(m in queue or m in inflight for m in room.pending):
                    continue
            self._next_round(room_id, room)
        quiet = not state.queue and not state.inflight
        for decision in state.decisions.values():
            if not decision.closed and self._closes(decision, quiet):
                self._close_decision(decision)
        chair = state.chair
        if chair is not None and quiet and not state.chairing.called and \
                all(d.closed for d in state.decisions.values()):
            member = state.members[chair]
            where = next((r for r in member.rooms if not state.rooms[r].closed), None)
            if where is not None:
                self._note(where, "Every decision is closed: the chair has the last word.",
                           chair={"member": chair})

    def _next_round(self, room_id: str, room: RoomState) -> None:
        state = self.state
        if room.round < (room.rounds or 0):
            members = [m for m in room.members if m != state.chair and
                       (m in state.queue or state.has_turn_left(m))]
            if room.anonymous:  # In alias order: the speaking order reveals nobody.
                members.sort(key=lambda m: (len(state.aliases.get(m, "")),
                                            state.aliases.get(m, m)))
            if members:
                number = room.round + 1
                self._note(room_id, f"Round {number} of {room.rounds} begins: "
                           f"{len(members)} member{'s' if len(members) != 1 else ''} answer.",
                           round={"number": number, "of": room.rounds, "members": members})
                return
        done = room.round
        text = (f"Round {done} of {room.rounds} ended: the debate is over." if done
                else "No member has a turn left: the debate is over.")
        self._note(room_id, text, rounds={"finished": True, "of": room.rounds, "held": done})

    def _closes(self, decision: DecisionState, quiet: bool) -> bool:
        state = self.state
        room = state.rooms.get(decision.room)
        if room is None or room.closed or quiet:
            return True
        if room.rounds is not None:
            return room.settled
        busy = any(v in state.queue or v in state.inflight for v in decision.voters)
        return len(decision.votes) >= decision.quorum and not busy

    def _close_decision(self, decision: DecisionState) -> None:
        block = decision_block(decision)
        room = self.state.rooms.get(decision.room)
        if room is None or room.closed:
            return  # Its room ended without it (a person closed it): no outcome to announce.
        outcome = block["outcome"]
        shown = _OUTCOME_TEXT.get(outcome, outcome) if isinstance(outcome, str) else outcome
        if "scale" in block:
            counts = "median" if block["mean"] is None else \
                f"median score; mean {block['mean']:.3g}"
        else:
            counts = ", ".join(f"{choice} {count}" for choice, count in block["tally"].items())
        dissent = len(block["dissent"])
        text = (f"Decision '{decision.id}' closed: {shown} ({counts}; {block['voted']} of "
                f"{len(decision.voters)} voted"
                + (f"; {dissent} dissent" if dissent else "") + ").")
        self._note(decision.room, text, decision=block)


def decision_block(decision: DecisionState) -> dict[str, Any]:
    """A decision's outcome as the log records it when it closes (and the result lists)."""
    definition = decision.definition
    last = {voter: record.choice for voter, record in decision.votes.items()}
    result = tally(definition, last, decision.voters, decision.quorum)
    block: dict[str, Any] = {
        "id": decision.id, "question": definition.get("question", ""),
        "outcome": result.outcome,
        "tally": result.counts, "voted": result.voted, "voters": list(decision.voters),
        "quorum": decision.quorum,
        "votes": [{"voter": v, "choice": r.choice, "reason": r.reason}
                  for v, r in decision.votes.items()],
        "dissent": [{"voter": v, "choice": decision.votes[v].choice,
                     "reason": decision.votes[v].reason} for v in result.dissent],
        "margin": round(result.margin, 6),
        "changed": len(decision.history) - len(decision.votes),
    }
    if "options" in definition:
        block["rule"] = definition.get("rule", "majority")
    else:
        block["scale"] = list(definition.get("scale") or ())
        block["mean"] = None if result.mean is None else round(result.mean, 6)
    return block
