"""The ``script`` member engine: the n-th turn returns the n-th scripted result."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, NamedTuple

from wopdsl.agents.base import MemberAgent
from wopdsl.agents.templates import Renderer, compile_with_names
from wopdsl.errors import TurnError
from wopdsl.model.spec import ScriptStep
from wopdsl.model.turns import Turn

__all__ = ["ScriptAgent"]


class _CompiledPost(NamedTuple):
    room: str
    text: Renderer
    mentions: tuple[str, ...]


class _CompiledStep(NamedTuple):
    summary: Renderer
    data: Any
    posts: tuple[_CompiledPost, ...]
    names: tuple[str, ...]
    """The keys of the turn context the step's templates read (built per turn)."""


_CONTEXT: Final[dict[str, Callable[[Turn], Any]]] = {
    # The keys of ``turn_context(turn)``, each built only when a template reads it.
    "task": lambda turn: turn.task,
    "member": lambda turn: turn.member,
    "role": lambda turn: turn.role,
    "brief": lambda turn: turn.brief,
    "turn": lambda turn: turn.turn,
    "result": lambda turn: turn.result,
    "messages": lambda turn: [m.to_wire() for m in turn.messages],
    "triggers": lambda turn: [m.to_wire() for m in turn.triggers],
}


def _compile_step(step: ScriptStep) -> _CompiledStep:
    # Runs once per step at compile(): a long script has thousands (tuples, not dataclasses).
    summary, used = compile_with_names(step.summary)
    posts = []
    for post in step.posts:
        text, names = compile_with_names(post.text)
        posts.append(_CompiledPost(post.room, text, tuple(post.mentions)))
        if names:
            used = used | names
    return _CompiledStep(summary, step.data, tuple(posts), _context_keys(used))


@functools.lru_cache(maxsize=256)
def _context_keys(used: frozenset[str]) -> tuple[str, ...]:
    return tuple(name for name in _CONTEXT if name in used)


class ScriptAgent(MemberAgent):
    """Renders scripted results with Jinja2 (sandboxed; context = the turn input).

    Templates compile once, here, at ``compile()``; running out of steps fails the turn with
    ``SCRIPT_EXHAUSTED``.
    """

    kind: ClassVar[str] = "script"
    inline: ClassVar[bool] = True

    def __init__(self, steps: Sequence[ScriptStep]) -> None:
        self.steps = tuple(_compile_step(step) for step in steps)

    async def take_turn(self, turn: Turn) -> object:
        """Render step ``turn.turn`` of the script."""
        if turn.turn > len(self.steps):
            raise TurnError(
                "SCRIPT_EXHAUSTED",
                f"{turn.member} has {len(self.steps)} scripted "
                f"turn{'' if len(self.steps) == 1 else 's'}; turn {turn.turn} was requested",
                {"steps": len(self.steps), "turn": turn.turn},
            )
        step = self.steps[turn.turn - 1]
        # The same values as turn_context(turn), for the keys the templates read only.
        context = {name: _CONTEXT[name](turn) for name in step.names}
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
