"""The ``script`` member engine: the n-th turn returns the n-th scripted result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from wopdsl.agents._templates import Renderer, compile_template
from wopdsl.agents.base import MemberAgent, turn_context
from wopdsl.errors import TurnError
from wopdsl.model.spec import ScriptStep
from wopdsl.model.turns import Turn

__all__ = ["ScriptAgent"]


@dataclass(frozen=True, slots=True)
class _CompiledPost:
    room: str
    text: Renderer
    mentions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _CompiledStep:
    summary: Renderer
    data: Any
    posts: tuple[_CompiledPost, ...]


class ScriptAgent(MemberAgent):
    """Renders scripted results with Jinja2 (sandboxed; context = the turn input).

    Templates compile once, here, at ``compile()``; running out of steps fails the turn with
    ``SCRIPT_EXHAUSTED``.
    """

    kind: ClassVar[str] = "script"

    def __init__(self, steps: Sequence[ScriptStep]) -> None:
        self.steps = tuple(
            _CompiledStep(
                summary=compile_template(step.summary),
                data=step.data,
                posts=tuple(
                    _CompiledPost(p.room, compile_template(p.text), tuple(p.mentions))
                    for p in step.posts
                ),
            )
            for step in steps
        )

    async def take_turn(self, turn: Turn) -> object:
        """Render step ``turn.turn`` of the script."""
        if turn.turn > len(self.steps):
            raise TurnError(
                "SCRIPT_EXHAUSTED",
                f"{turn.member} has {len(self.steps)} scripted turns; turn {turn.turn} was "
                "requested",
                {"steps": len(self.steps), "turn": turn.turn},
            )
        step = self.steps[turn.turn - 1]
        context = turn_context(turn)
        try:
            result: dict[str, Any] = {"summary": step.summary(context)}
            if step.data is not None:
                result["data"] = step.data
            if step.posts:
                result["posts"] = [
                    {"roomId": p.room, "text": p.text(context), "mentions": list(p.mentions)}
                    for p in step.posts
                ]
        except Exception as exc:
            raise TurnError(
                "RESULT_INVALID",
                f"script step {turn.turn} of {turn.member} failed to render: {exc}",
            ) from None
        return result
