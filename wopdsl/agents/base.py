"""The member-engine contract: who produces a member's turns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from wopdsl.model.turns import Turn

__all__ = ["MemberAgent", "turn_context"]


class MemberAgent(ABC):
    """Produces a member's turn results. One instance per member per compiled graph."""

    kind: ClassVar[str]
    """The ``engine`` name in the council file."""

    inline: ClassVar[bool] = False
    """Whether the engine may await a lone turn in its own task rather than a new one.

    For agents whose turns do not depend on running in a task of their own: the ``script``
    engine (no user code) and ``python`` handlers, which keep a context of their own (see
    :func:`wopdsl.agents.python.in_context`), so context variables they set never leak.
    """

    @abstractmethod
    async def take_turn(self, turn: Turn) -> object:
        """Return the raw turn result: a ``Reply``, a JSON dict or a summary string.

        Raises:
            TurnError: the turn failed with a stable code (e.g. ``SCRIPT_EXHAUSTED``).
        """


def turn_context(turn: Turn) -> dict[str, Any]:
    """Return the turn input as plain JSON data (what templates and byte limits see)."""
    return {
        "task": turn.task,
        "member": turn.member,
        "role": turn.role,
        "brief": turn.brief,
        "turn": turn.turn,
        "result": turn.result,
        "messages": [m.to_wire() for m in turn.messages],
        "triggers": [m.to_wire() for m in turn.triggers],
    }
