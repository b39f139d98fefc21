"""How a council decides (DESIGN.md §22): the ``[[decisions]]`` tables and scripted votes.

A decision belongs to one room; its voters (by default every member of the room but the
chair) vote with a turn result's ``votes``. Each decision has either ``options`` (a choice
among names, settled by ``rule``) or a ``scale`` (a score, settled by the median). The rules
themselves are in :mod:`wopdsl.model.votes`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, StrictInt, StrictStr, model_validator

from wopdsl._described import Described
from wopdsl._ids import IDENT_PATTERN, MAX_SAFE_INT
from wopdsl.model.votes import Rule

__all__ = ["DecisionSpec", "ScriptVote"]


_Ident = Annotated[StrictStr, Field(pattern=IDENT_PATTERN, min_length=1, max_length=64)]


class DecisionSpec(Described):
    """A ``[[decisions]]`` table: a question a room's voters settle by voting."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: _Ident
    """The decision's id (what votes name)."""
    room: _Ident
    """The room where it is debated; its outcome is announced there."""
    question: StrictStr = Field(min_length=1, max_length=2000)
    """The question put to the voters."""
    options: list[_Ident] | None = None
    """The choices (at least two, distinct); or give ``scale``."""
    scale: tuple[StrictInt, StrictInt] | None = None
    """``[lowest, highest]`` for a score (integers); the outcome is the median."""
    voters: list[_Ident] | None = None
    """Who votes (default: the room's members but the chair)."""
    rule: Rule = "majority"
    """``majority`` (over half the votes), ``two_thirds``, ``unanimous`` or ``plurality``."""
    quorum: Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INT)] | None = None
    """Votes needed before it may close (default: every voter)."""

    @model_validator(mode="after")
    def _options_or_scale(self) -> DecisionSpec:
        if (self.options is None) == (self.scale is None):
            raise ValueError("a decision needs either options = [...] (a choice) or "
                             "scale = [lowest, highest] (a score), not both or neither")
        if self.scale is not None and self.scale[0] >= self.scale[1]:
            raise ValueError(f"scale = [{self.scale[0]}, {self.scale[1]}]: the lowest score "
                             "must be below the highest")
        return self


class ScriptVote(Described):
    """A vote in a scripted turn; ``choice`` and ``reason`` strings are Jinja2 templates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: _Ident
    """The decision voted on."""
    choice: StrictStr | StrictInt
    """An option, or a score on the decision's scale."""
    reason: StrictStr = ""
    """Why (a Jinja2 template)."""
