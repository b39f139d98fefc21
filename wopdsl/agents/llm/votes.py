"""The votes an ``llm`` member may cast on a turn (DESIGN.md §22): their schema and check.

A turn offers the open decisions the member votes on, read from the turn input's
``decisions``, as an object with one property per decision (its id): ``{"choice", "reason"}``,
the decision's options (or every score of its scale) the only choices, a reason required. An
object rather than a list of ``{decision, …}``: a grammar then holds the model to one vote
per decision, which no list schema that strict modes accept can say. A decision the member
has voted on already may be ``null`` (its last vote stands). The schema holds to OpenAI's
strict structured outputs (every property required, no extra ones, ``anyOf`` below the root)
and to llama.cpp's grammars. Whatever the server does, the answer's votes are checked here
(the list form ``[{decision, choice, reason}]`` of a turn result is accepted too) and by the
engine after: messages name the vote and the allowed values, never an excerpt of the answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from wopdsl.model.votes import MAX_REASON_CHARS, choice_problem

__all__ = ["VOTE_FIELDS", "VoteOffer", "VoteProblem", "check_votes", "offers_of",
           "votes_schema"]

VOTE_FIELDS: Final[dict[str, str]] = {
    "votes": "Your vote on each open decision you vote on, under the decision's id. Your "
             "last vote on a decision counts; null keeps a vote you gave before.",
    "choice": "Your choice: one of the decision's options, or a whole score on its scale.",
    "reason": "Why you chose it, in one or two sentences of your own.",
}
"""The instruction for each field of a vote (schema ``description``s and the system prompt)."""

MAX_ENUM_SCORES: Final = 101
"""A scale with at most this many scores offers each as an enum (strict modes and grammars
hold an enum everywhere); a wider one is an integer whose description names the range (some
strict modes refuse ``minimum``/``maximum``; the check holds it to the scale either way)."""


@dataclass(frozen=True, slots=True)
class VoteOffer:
    """An open decision the member votes on, as its turn schema offers it."""

    id: str
    options: tuple[str, ...] | None
    scale: tuple[int, int] | None
    voted: bool
    """Whether the member has voted on it already (then a new vote is optional)."""

    def definition(self) -> dict[str, Any]:
        """The decision as :func:`~wopdsl.model.votes.choice_problem` reads it."""
        if self.options is not None:
            return {"id": self.id, "options": list(self.options)}
        return {"id": self.id, "scale": list(self.scale or (0, 0))}

    def allowed(self) -> str:
        """The choices, for a message: ``ship, hold`` or ``1..10``."""
        if self.options is not None:
            return ", ".join(self.options)
        low, high = self.scale or (0, 0)
        return f"{low}..{high}"


def offers_of(decisions: Iterable[dict[str, Any]]) -> tuple[VoteOffer, ...]:
    """The open decisions a member votes on, from a turn input's ``decisions``."""
    offers = []
    for view in decisions:
        if not view.get("open") or not view.get("voter"):
            continue
        options = view.get("options")
        scale = view.get("scale")
        offers.append(VoteOffer(
            str(view["id"]), tuple(options) if options is not None else None,
            (int(scale[0]), int(scale[1])) if options is None and scale else None,
            "your_vote" in view))
    return tuple(offers)


def votes_schema(offers: tuple[VoteOffer, ...], reason_chars: int) -> dict[str, Any]:
    """The ``votes`` property of the turn result: one property per offered decision."""
    properties: dict[str, Any] = {}
    for offer in offers:
        vote = _vote_schema(offer, reason_chars)
        properties[offer.id] = vote if not offer.voted else {
            "anyOf": [vote, {"type": "null"}]}
    return {"type": "object", "description": VOTE_FIELDS["votes"], "properties": properties,
            "required": list(properties), "additionalProperties": False}


def _vote_schema(offer: VoteOffer, reason_chars: int) -> dict[str, Any]:
    choice: dict[str, Any]
    if offer.options is not None:
        choice = {"type": "string", "enum": list(offer.options)}
    else:
        low, high = offer.scale or (0, 0)
        choice = {"type": "integer"}
        if high - low < MAX_ENUM_SCORES:
            choice["enum"] = list(range(low, high + 1))
        else:
            choice["description"] = f"{VOTE_FIELDS['choice']} From {low} to {high}."
    choice.setdefault("description", VOTE_FIELDS["choice"])
    return {
        "type": "object",
        "properties": {
            "choice": choice,
            "reason": {"type": "string", "description": VOTE_FIELDS["reason"],
                       "minLength": 1, "maxLength": reason_chars},
        },
        "required": ["choice", "reason"],
        "additionalProperties": False,
    }


class VoteProblem(Exception):
    """A vote that is not valid; the message names it (``votes[0].choice …``)."""


def check_votes(votes: Any, offers: tuple[VoteOffer, ...], decisions: Iterable[dict[str, Any]],
                reason_chars: int | None) -> list[dict[str, Any]]:
    """Check an answer's ``votes``; return them as ``[{decision, choice, reason}]``.

    Args:
        votes: The answer's ``votes``: ``{decision id: {choice, reason} | null}``, or a list
            of ``{decision, choice, reason}``.
        offers: The open decisions the member votes on.
        decisions: The turn input's ``decisions`` (to name a closed one's outcome).
        reason_chars: The longest reason (``None``: :data:`MAX_REASON_CHARS`).

    Raises:
        VoteProblem: naming the vote and what is wrong with it.
    """
    by_id = {offer.id: offer for offer in offers}
    cast = _entries(votes)
    known = {str(view.get("id")): view for view in decisions}
    may = ", ".join(by_id) or "none"
    limit = MAX_REASON_CHARS if reason_chars is None else min(reason_chars, MAX_REASON_CHARS)
    checked: list[dict[str, Any]] = []
    for where, name, vote in cast:
        if where is None:  # under a key: name it only when it is a decision's id
            where = f"votes.{name}" if name in by_id or name in known else \
                'a key of "votes"'
            if vote is not None and (not isinstance(vote, dict) or
                                     set(vote) - {"choice", "reason"}):
                raise VoteProblem(f'{where} must be an object with "choice" and "reason" '
                                  "only, or null")
        offer = by_id.get(name) if isinstance(name, str) else None
        if offer is None:
            view = known.get(name) if isinstance(name, str) else None
            why = ("is closed (outcome: " + str(view.get("outcome")) + ")" if view is not None
                   and not view.get("open") else "is not a decision you vote on"
                   if view is not None else "is not a decision of this council")
            subject = f"{where}.decision" if where.startswith("votes[") else where
            raise VoteProblem(f"{subject} {why}; you may vote on: {may}")
        if vote is None:
            continue  # the last vote stands (checked below when there is none)
        if any(c["decision"] == offer.id for c in checked):
            raise VoteProblem(f"{where} votes on '{offer.id}' a second time; one vote per "
                              "decision")
        problem, choice = choice_problem(offer.definition(), vote.get("choice"))
        if problem is not None:
            raise VoteProblem(f"{where}.choice is not one of the choices of '{offer.id}' "
                              f"({offer.allowed()})")
        reason = vote.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise VoteProblem(f"{where}.reason is missing: give the reason for your vote")
        if len(reason) > limit:
            raise VoteProblem(f"{where}.reason is longer than {limit} characters")
        checked.append({"decision": offer.id, "choice": choice, "reason": reason})
    owed = [offer.id for offer in offers if not offer.voted and
            not any(c["decision"] == offer.id for c in checked)]
    if owed:
        raise VoteProblem(f'"votes" has no vote on {", ".join(owed)}: vote on each open '
                          "decision you have not voted on yet")
    return checked


def _entries(votes: Any) -> list[tuple[str | None, Any, Any]]:
    """``(where, decision, vote)`` of each vote, in the answer's order.

    ``where`` is ``None`` for a vote under a key (named once the key is known to be an id);
    ``vote`` is ``None`` when it is null.
    """
    if votes is None:
        return []
    if isinstance(votes, dict):
        return [(None, name, vote) for name, vote in votes.items()]
    if not isinstance(votes, list):
        raise VoteProblem('"votes" must be an object with a vote under each decision id')
    listed: list[tuple[str | None, Any, Any]] = []
    for index, vote in enumerate(votes):
        where = f"votes[{index}]"
        if not isinstance(vote, dict) or set(vote) - {"decision", "choice", "reason"}:
            raise VoteProblem(f'{where} must be an object with "decision", "choice" and '
                              '"reason" only')
        listed.append((where, vote.get("decision"), vote))
    return listed
