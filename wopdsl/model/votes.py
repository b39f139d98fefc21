"""The rules of votes (DESIGN.md §22): a choice checked against a decision, a decision settled.

Pure functions over a decision's JSON definition (no pydantic), so the fold, the engine, the
views and the metrics agree on every outcome and a reader of a log loads nothing heavy.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "MAX_REASON_CHARS",
    "NO_MAJORITY",
    "NO_QUORUM",
    "RESERVED_MEMBER_IDS",
    "TIED",
    "Rule",
    "Tally",
    "choice_problem",
    "tally",
]

Rule = Literal["majority", "two_thirds", "unanimous", "plurality"]
"""How a decision with ``options`` is settled from each voter's last vote."""

TIED: Final = "tied"
"""Outcome when the leading options have as many votes each."""
NO_MAJORITY: Final = "no_majority"
"""Outcome when no option reaches the rule's share (and the leaders are not tied)."""
NO_QUORUM: Final = "no_quorum"
"""Outcome when fewer voters than the quorum voted."""
MAX_REASON_CHARS: Final = 2000
"""The longest reason a vote may carry."""
RESERVED_MEMBER_IDS: Final = frozenset({"all"})
"""Member ids a council may not use: ``@all`` wakes every other member of a room."""


def choice_problem(decision: Mapping[str, Any], choice: Any) -> tuple[str | None, Any]:
    """Check a vote's ``choice`` against a decision (its JSON definition).

    Returns:
        ``(problem, normalised choice)``: an option matched case-insensitively is returned
        as declared; a score as an ``int`` when whole, else a ``float``.
    """
    options = decision.get("options")
    if options is not None:
        if isinstance(choice, str):
            if choice in options:
                return None, choice
            folded = {o.casefold(): o for o in options}
            if choice.strip().casefold() in folded:
                return None, folded[choice.strip().casefold()]
        return (f"choice {choice!r} is not an option of decision '{decision.get('id')}' "
                f"({', '.join(options)})"), None
    low, high = decision.get("scale") or (0, 0)
    score: Any = choice
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            score = None
    if isinstance(score, bool) or not isinstance(score, int | float) or \
            not math.isfinite(score) or not low <= score <= high:
        return (f"choice {choice!r} is not a score on the scale of decision "
                f"'{decision.get('id')}' ({low}..{high})"), None
    return None, int(score) if float(score).is_integer() else float(score)


@dataclass(frozen=True, slots=True)
class Tally:
    """A decision's outcome from each voter's last vote."""

    outcome: Any
    """The winning option or the median score, or ``tied``/``no_majority``/``no_quorum``."""
    counts: dict[str, int]
    """Votes per option, every option listed (scale decisions: per score given)."""
    voted: int
    """How many voters voted."""
    dissent: tuple[str, ...]
    """Voters whose last vote differs from the winning option (for a scale: by more than a
    quarter of the scale's range from the median)."""
    margin: float
    """The winner's lead over the runner-up as a share of the votes (0 when none won)."""
    mean: float | None = None
    """For a scale: the mean score."""

    @property
    def decided(self) -> bool:
        """Whether an option won (or a score was settled)."""
        return self.outcome not in (TIED, NO_MAJORITY, NO_QUORUM)


_SHARE: Final[dict[str, float]] = {"majority": 0.5, "two_thirds": 2 / 3, "unanimous": 1.0}


def tally(decision: Mapping[str, Any], votes: Mapping[str, Any], voters: Sequence[str],
          quorum: int) -> Tally:
    """Settle a decision (its JSON definition) from ``votes``: voter → last choice."""
    cast = {v: votes[v] for v in voters if v in votes}
    voted = len(cast)
    options = decision.get("options")
    if options is None:
        return _scale_tally(decision, cast, quorum)
    counts = {option: 0 for option in options}
    for choice in cast.values():
        counts[choice] = counts.get(choice, 0) + 1
    if voted < quorum or voted == 0:
        return Tally(NO_QUORUM, counts, voted, (), 0.0)
    ranked = Counter(counts).most_common()
    (leader, most), runner = ranked[0], (ranked[1][1] if len(ranked) > 1 else 0)
    rule = decision.get("rule", "majority")
    if most == runner:
        outcome: str = TIED
    elif rule == "plurality":
        outcome = leader
    elif rule == "majority":
        outcome = leader if most > voted * _SHARE[rule] else NO_MAJORITY
    else:
        outcome = leader if most >= voted * _SHARE[rule] - 1e-9 else NO_MAJORITY
    if outcome in (TIED, NO_MAJORITY):
        return Tally(outcome, counts, voted, (), 0.0)
    dissent = tuple(v for v, choice in cast.items() if choice != outcome)
    return Tally(outcome, counts, voted, dissent, (most - runner) / voted)


def _scale_tally(decision: Mapping[str, Any], cast: Mapping[str, Any], quorum: int) -> Tally:
    scores = [float(v) for v in cast.values()]
    counts: dict[str, int] = {}
    for given in cast.values():
        counts[str(given)] = counts.get(str(given), 0) + 1
    if len(scores) < quorum or not scores:
        return Tally(NO_QUORUM, counts, len(scores), (), 0.0)
    median = statistics.median(scores)
    low, high = decision.get("scale") or (0, 1)
    spread = (high - low) / 4
    dissent = tuple(v for v, score in cast.items() if abs(float(score) - median) > spread)
    value: Any = int(median) if median.is_integer() else median
    return Tally(value, counts, len(scores), dissent, 0.0, statistics.fmean(scores))
