"""The ``human`` and ``external`` member engines: turns submitted from outside the engine.

A person (``human``) or an agent outside the process (``external``: an HTTP client, an A2A
peer) submits the member's turns through ``Run.reply`` / ``wop reply``; the engine never
dispatches them, it waits for them.
"""

from __future__ import annotations

from typing import ClassVar

from wopdsl.agents.base import MemberAgent
from wopdsl.errors import TurnError
from wopdsl.model.turns import Turn

__all__ = ["ExternalAgent", "HumanAgent"]


class HumanAgent(MemberAgent):
    """A placeholder: the engine never dispatches a human turn, it waits for input."""

    kind: ClassVar[str] = "human"

    async def take_turn(self, turn: Turn) -> object:
        """Refuse: a human's turn is posted with ``Run.reply`` / ``wop reply``."""
        raise TurnError("validation_error", f"{turn.member} is a human member; use reply()")


class ExternalAgent(MemberAgent):
    """A placeholder: an outside agent submits this member's turns (``role: "agent"``)."""

    kind: ClassVar[str] = "external"

    async def take_turn(self, turn: Turn) -> object:
        """Refuse: an external member's turn is submitted with ``Run.reply(as_=...)``."""
        raise TurnError("validation_error", f"{turn.member} is an external member; its turns "
                        "are submitted with reply(as_=...)")
