"""How a council decides, as the operator's views show it (DESIGN.md §22).

One read of a run's folded :class:`~wopdsl.state.CouncilState` gives what the terminal UI
and the notebook draw (the web page folds the same facts from the events in JavaScript):

- each round room's round — ``round 1 of 2 · blind · 2 of 3 answered`` —, and which posts of
  a blind room's current round are hidden from the viewer until the round ends;
- each decision, open (how many voted; the running tally only for a viewer who does not vote
  on it, so a person's vote is not anchored on the others') or closed (outcome, tally, the
  dissent with reasons);
- the chair, and its answer once it has spoken.

A viewer is the person at the screen: the human members it may post as. Like a member, it
sees its own posts at once; the others' in a blind round appear when the round ends. The
log, the transcript and ``wop events`` keep every post as saved.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from wopdsl.projections.metrics import decisions_of
from wopdsl.state import CouncilState

__all__ = [
    "ChairView",
    "DecisionView",
    "RoundView",
    "ballot_call",
    "chair_of",
    "decisions_view",
    "dissent_line",
    "hidden_messages",
    "hidden_text",
    "outcome_text",
    "round_of",
    "vote_line",
]


@dataclass(frozen=True, slots=True)
class RoundView:
    """A round room's debate: which round, how many of the members asked have answered."""

    room: str
    number: int
    """The current round (0 before the first begins)."""
    of: int
    """How many rounds the room debates."""
    blind: bool
    anonymous: bool
    settled: bool
    """Whether the last round ended: the debate is over."""
    asked: tuple[str, ...]
    """The members the current round asked."""
    waiting: tuple[str, ...]
    """Of those, who has yet to answer."""

    @property
    def answered(self) -> int:
        """How many of the members asked have answered this round."""
        return len(self.asked) - len(self.waiting)

    @property
    def hiding(self) -> bool:
        """Whether posts of this round are hidden from the other members until it ends."""
        return self.blind and self.number > 0 and not self.settled

    def label(self) -> str:
        """``round 1 of 2 · blind · anonymous · 2 of 3 answered`` (or how the debate ended)."""
        flags = "".join(f" · {flag}" for flag, on in
                        (("blind", self.blind), ("anonymous", self.anonymous)) if on)
        if self.settled:
            return f"{self.number} of {self.of} rounds held{flags} · the debate is over"
        if not self.number:
            return f"{self.of} round{'' if self.of == 1 else 's'}{flags} · not begun"
        return (f"round {self.number} of {self.of}{flags} · {self.answered} of "
                f"{len(self.asked)} answered")


def round_of(state: CouncilState, room_id: str) -> RoundView | None:
    """The round of a room that debates in rounds (``None`` for any other room)."""
    room = state.rooms[room_id]
    if room.rounds is None:
        return None
    return RoundView(room_id, room.round, room.rounds, room.blind, room.anonymous,
                     room.settled, room.round_members, tuple(room.pending))


def hidden_messages(state: CouncilState, room_id: str, viewers: Collection[str]) -> set[str]:
    """Ids of the posts of a blind room's current round that ``viewers`` may not see yet.

    Every post of the round by a member other than the viewers (system turns are never
    hidden); empty between rounds, once the debate is over, and in other rooms.
    """
    room = state.rooms[room_id]
    start = room.hidden_from("")
    return {m.id for m in room.messages[start:] if not m.system and m.sender not in viewers}


def hidden_text(sender: str, number: int) -> str:
    """What a view shows instead of a hidden post."""
    return f"{sender} answered round {number} — hidden until the round ends"


@dataclass(frozen=True, slots=True)
class DecisionView:
    """A decision as a viewer sees it (``Run.decisions`` and who may see the open tally)."""

    id: str
    room: str
    question: str
    open: bool
    voters: tuple[str, ...]
    voted: int
    """Voters who have voted (their last vote counts)."""
    choices: tuple[Any, ...] | None
    """The options (``None`` for a scale)."""
    scale: tuple[int, int] | None
    tally: dict[str, int] | None
    """Votes per choice: once closed, or while open for a viewer who does not vote on it."""
    outcome: Any = None
    mean: float | None = None
    dissent: tuple[dict[str, Any], ...] = ()
    """Once closed: ``{voter, choice, reason}`` of each voter whose last vote lost."""
    mine: tuple[dict[str, Any], ...] = ()
    """The viewers' own last votes ``{voter, choice, reason}``."""
    ballot: tuple[str, ...] = ()
    """The viewers who may vote on it now (open, and a voter)."""

    def headline(self) -> str:
        """``open · 2 of 3 voted · ship 1, hold 1`` or ``ship (ship 2, hold 1; 3 of 3 voted)``."""
        voted = f"{self.voted} of {len(self.voters)} voted"
        counts = ", ".join(f"{c} {n}" for c, n in (self.tally or {}).items())
        if self.open:
            shown = f" · {counts}" if counts else (
                " · the votes show when it closes" if self.tally is None and self.voted else "")
            return f"open · {voted}{shown}"
        return outcome_text(self.outcome, self.tally or {}, voted, self.scale is not None,
                            self.mean)


def outcome_text(outcome: Any, tally: dict[str, Any], voted: str, scale: bool,
                 mean: Any = None) -> str:
    """A closed decision: ``ship (ship 2, hold 1; 3 of 3 voted)`` (scale: the median)."""
    counts = ", ".join(f"{choice} {count}" for choice, count in tally.items())
    if scale:
        counts = "median score" + (f"; mean {mean:.3g}" if isinstance(mean, int | float) else "")
    return f"{outcome} ({counts}; {voted})"


def decisions_view(state: CouncilState, viewers: Collection[str] = ()) -> list[DecisionView]:
    """Every decision of the run as ``viewers`` see it (see :class:`DecisionView`)."""
    views = []
    humans = {m for m in viewers if m in state.members}
    for doc in decisions_of(state):
        decision = state.decisions[doc["id"]]
        definition = decision.definition
        mine = tuple(v for v in doc["votes"] if v["voter"] in humans)
        voting = humans & set(decision.voters)
        summary = decision.summary or {}
        scale = definition.get("scale")
        views.append(DecisionView(
            id=doc["id"], room=doc["room"], question=str(doc["question"]), open=doc["open"],
            voters=tuple(decision.voters), voted=len(doc["votes"]),
            choices=tuple(definition["options"]) if "options" in definition else None,
            scale=(int(scale[0]), int(scale[1])) if isinstance(scale, list) else None,
            tally=None if doc["open"] and voting else _ordered(doc["tally"], scale is not None),
            outcome=doc.get("outcome"), mean=summary.get("mean"),
            dissent=tuple(doc.get("dissent") or ()), mine=mine,
            ballot=tuple(sorted(voting)) if doc["open"] else ()))
    return views


def _ordered(tally: dict[str, int], scale: bool) -> dict[str, int]:
    """Options in declared order (as counted); scores from the lowest."""
    return dict(sorted(tally.items(), key=lambda item: float(item[0]))) if scale else tally


@dataclass(frozen=True, slots=True)
class ChairView:
    """The council's chair and its last word."""

    member: str
    called: bool
    """Whether every decision closed and the chair was called to its last turn."""
    done: bool
    answer: str | None
    """Its summary: the run's ``answer`` (once it has spoken)."""

    def label(self) -> str:
        """What the chair is doing, or its answer."""
        if self.done:
            return self.answer or "(no answer)"
        if self.called:
            return "has the last word (its answer is the run's answer)"
        return "speaks last, once every decision is closed"


def chair_of(state: CouncilState) -> ChairView | None:
    """The chair (``None`` when the council has none)."""
    chair = state.chairing
    if chair.member is None:
        return None
    answer = state.result().get("answer") if chair.done else None
    return ChairView(chair.member, chair.called, chair.done,
                     None if answer is None else str(answer))


def dissent_line(dissent: dict[str, Any], show: Callable[[str], str] = str) -> str:
    """``dissent: cfo (hold): billing risk stands``."""
    reason = show(str(dissent.get("reason") or ""))
    return f"dissent: {dissent.get('voter')} ({dissent.get('choice')})" + \
        (f": {reason}" if reason else "")


def vote_line(vote: dict[str, Any]) -> str:
    """``founder voted hold: billing risk``."""
    return f"{vote['voter']} voted {vote['choice']}" + \
        (f": {vote['reason']}" if vote.get("reason") else "")


def ballot_call(decision: DecisionView) -> str:
    """How to vote on it from Python: ``await run.vote("ship", "ship|hold", reason="…")``."""
    if decision.choices is not None:
        choice = '"' + "|".join(str(c) for c in decision.choices) + '"'
    else:
        low, high = decision.scale or (0, 0)
        choice = f"{low}..{high}"
    who = f', as_="{decision.ballot[0]}"' if len(decision.ballot) > 1 else ""
    return f'await run.vote("{decision.id}", {choice}, reason="…"{who})'


MAX_LISTED_SCORES = 101
"""A scale with more scores than this offers only its ends and middle to pick from."""


def choices_of(decision: DecisionView) -> tuple[str, ...]:
    """What a ballot offers: the options, or a scale's scores (a wide one: ends and middle).

    Any score on the scale may still be voted (typed, or ``run.vote``).
    """
    if decision.choices is not None:
        return tuple(str(c) for c in decision.choices)
    low, high = decision.scale or (0, 0)
    if high - low + 1 <= MAX_LISTED_SCORES:
        return tuple(str(n) for n in range(low, high + 1))
    return tuple(dict.fromkeys(str(n) for n in (low, (low + high) // 2, high)))
