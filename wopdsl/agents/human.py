"""The ``human`` member engine: turns come from a person, through ``Run.reply``."""

from __future__ import annotations

from typing import ClassVar

from wopdsl.agents.base import MemberAgent
from wopdsl.errors import TurnError
from wopdsl.model.turns import Turn

__all__ = ["HumanAgent"]


class HumanAgent(MemberAgent):
    """A placeholder: the engine never dispatches a human turn, it waits for input."""

    kind: ClassVar[str] = "human"

    async def take_turn(self, turn: Turn) -> object:
        """Refuse: a human's turn is posted with ``Run.reply`` / ``wop reply``."""
        raise TurnError("validation_error", f"{turn.member} is a human member; use reply()")
