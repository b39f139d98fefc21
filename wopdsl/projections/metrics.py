"""How a council deliberated, measured from its log (DESIGN.md §22): ``wop metrics``.

Per member: turns, posts, mentions made and answered, votes, flips (a changed vote),
agreement with the outcomes, and — in blind rooms — whether its first answer survived the
debate. Per decision: the outcome, its margin, dissent, flips, unanimity and the outcome the
first round alone would have given. Evaluations (DESIGN.md §23) aggregate these figures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from wopdsl.model.votes import tally
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.protocol.payloads import MEMBER_TYPE_ID
from wopdsl.state import CouncilState, DecisionState

__all__ = ["DecisionMetrics", "MemberMetrics", "RunMetrics", "decisions_of", "metrics_of"]


@dataclass(slots=True)
class MemberMetrics:
    """One member's share of the debate."""

    turns: int = 0
    posts: int = 0
    mentions_made: int = 0
    """Members its posts asked for a turn (``@all`` counted once per member it woke)."""
    mentions_answered: int = 0
    """Of those, how many took a turn with the post among its triggers."""
    votes: int = 0
    flips: int = 0
    """Votes that changed its previous choice on the same decision."""
    agreed: int = 0
    """Closed decisions whose winning option is its last vote."""
    decided: int = 0
    """Closed decisions with a winning option it voted on."""
    first_answers: int = 0
    """Decisions of blind rooms it voted on in the first round."""
    first_answers_kept: int = 0
    """Of those, how many it still held at the end (its first answer survived)."""

    @property
    def agreement(self) -> float | None:
        """Share of decided questions on which it voted with the outcome."""
        return self.agreed / self.decided if self.decided else None

    @property
    def survival(self) -> float | None:
        """Share of its blind first answers it held to the end."""
        return self.first_answers_kept / self.first_answers if self.first_answers else None

    def to_json(self) -> dict[str, Any]:
        """The figures, with ``agreement`` and ``survival`` (``None`` when undefined)."""
        return {**asdict(self), "agreement": self.agreement, "survival": self.survival}


@dataclass(slots=True)
class DecisionMetrics:
    """How one decision was reached."""

    outcome: Any
    voted: int
    voters: int
    margin: float
    dissent: int
    flips: int
    unanimous: bool
    first_round_outcome: Any = None
    """The outcome the first round's votes alone give (rooms with rounds), else ``None``."""
    closed: bool = True

    def to_json(self) -> dict[str, Any]:
        """The figures as JSON data."""
        return asdict(self)


@dataclass(slots=True)
class RunMetrics:
    """A run's deliberation metrics (``Run.metrics()``, ``wop metrics``)."""

    run_id: str
    members: dict[str, MemberMetrics] = field(default_factory=dict)
    decisions: dict[str, DecisionMetrics] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{runId, members: {id: {…}}, decisions: {id: {…}}}``."""
        return {"runId": self.run_id,
                "members": {m: figures.to_json() for m, figures in self.members.items()},
                "decisions": {d: figures.to_json() for d, figures in self.decisions.items()}}


def metrics_of(events: Iterable[RunEventDoc], state: CouncilState | None = None) -> RunMetrics:
    """Measure a run from its events (one pass plus the fold).

    ``state``: the fold of exactly these events, when the caller has it already.
    """
    events = list(events)
    if state is None or state.last_sequence != (events[-1]["sequence"] if events else -1):
        state = CouncilState.fold(events)
    result = RunMetrics(state.run_id, {m: MemberMetrics() for m in state.members})
    asked: dict[str, list[str]] = {}
    """Message id → the members it asked for a turn."""
    for message in state.messages.values():
        member = result.members.get(message.sender)
        if member is None:
            continue
        member.posts += 1
        targets = [t for t in message.mentions if t in state.members]
        if "all" in message.mentions:
            room = state.rooms[message.room]
            targets += [m for m in room.members if m != message.sender and m not in targets]
        asked[message.id] = targets
        member.mentions_made += len(targets)
    for event in events:
        payload = event["payload"]
        if event["type"] != "node.started" or payload.get("typeId") != MEMBER_TYPE_ID or \
                payload.get("attempt", 0):
            continue
        for trigger in payload.get("triggers", ()):
            if payload["nodeId"] in asked.get(trigger, ()):
                result.members[state.messages[trigger].sender].mentions_answered += 1
    for member_id, member in result.members.items():
        member.turns = state.members[member_id].turns
    for decision in state.decisions.values():
        result.decisions[decision.id] = _decision(state, decision, result.members)
    return result


def _decision(state: CouncilState, decision: DecisionState,
              members: dict[str, MemberMetrics]) -> DecisionMetrics:
    last: dict[str, Any] = {}
    first: dict[str, Any] = {}
    flips = 0
    for vote in decision.history:
        figures = members[vote.voter]
        figures.votes += 1
        if vote.voter in last and last[vote.voter] != vote.choice:
            figures.flips += 1
            flips += 1
        last[vote.voter] = vote.choice
        if vote.round <= 1:
            first.setdefault(vote.voter, vote.choice)
    room = state.rooms.get(decision.room)
    rounds = room is not None and room.rounds is not None
    result = tally(decision.definition, last, decision.voters, decision.quorum)
    outcome = decision.outcome if decision.closed else result.outcome
    options = "options" in decision.definition
    if decision.closed and result.decided and options:
        for voter, choice in last.items():
            members[voter].decided += 1
            members[voter].agreed += choice == outcome
    if rounds and room is not None and room.blind:
        for voter, choice in first.items():
            members[voter].first_answers += 1
            members[voter].first_answers_kept += last.get(voter) == choice
    first_outcome = tally(decision.definition, first, decision.voters, 1).outcome \
        if rounds and first else None
    return DecisionMetrics(
        outcome=outcome, voted=result.voted, voters=len(decision.voters),
        margin=round(result.margin, 6), dissent=len(result.dissent), flips=flips,
        unanimous=bool(last) and len(set(map(str, last.values()))) == 1 and
        result.voted == len(decision.voters),
        first_round_outcome=first_outcome, closed=decision.closed)


def decisions_of(state: CouncilState) -> list[dict[str, Any]]:
    """Every decision as the operator sees it (``Run.decisions``).

    The definition, the votes so far, and the outcome, tally and dissent once closed.
    """
    views = []
    for decision in state.decisions.values():
        last = {voter: record.choice for voter, record in decision.votes.items()}
        current = tally(decision.definition, last, decision.voters, decision.quorum)
        view: dict[str, Any] = {
            "id": decision.id, "room": decision.room,
            "question": decision.definition.get("question", ""),
            "open": not decision.closed, "voters": list(decision.voters),
            "quorum": decision.quorum,
            "votes": [{"voter": v, "choice": r.choice, "reason": r.reason}
                      for v, r in decision.votes.items()],
            "tally": current.counts, "changed": len(decision.history) - len(decision.votes),
        }
        if decision.closed and decision.summary is not None:
            view.update(outcome=decision.outcome, tally=decision.summary.get("tally", {}),
                        dissent=decision.summary.get("dissent", []))
        views.append(view)
    return views
