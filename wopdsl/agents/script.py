"""The ``script`` member engine: the n-th turn returns the n-th scripted result."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, NamedTuple

from wopdsl.agents._sandbox import TEMPLATE_MAX_CHARS
from wopdsl.agents.base import MemberAgent
from wopdsl.agents.templates import Renderer, TemplateProblem, compile_with_names
from wopdsl.errors import TurnError
from wopdsl.model.spec import ScriptStep
from wopdsl.model.turns import Turn

__all__ = ["ScriptAgent"]


class _CompiledPost(NamedTuple):
    room: str
    text: Renderer
    mentions: tuple[str, ...]


class _CompiledVote(NamedTuple):
    decision: str
    choice: Renderer | int
    reason: Renderer


class _CompiledStep(NamedTuple):
    summary: Renderer
    data: Any
    posts: tuple[_CompiledPost, ...]
    names: tuple[str, ...]
    """The keys of the turn context the step's templates read (built per turn)."""
    votes: tuple[_CompiledVote, ...] = ()


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
    "decisions": lambda turn: turn.decisions,
    "rounds": lambda turn: turn.rounds,
}


def _compile_step(step: ScriptStep, index: int) -> _CompiledStep:
    # Runs once per step at compile(): a long script has thousands (tuples, not dataclasses).
    summary, used = _compile(step.summary, f"[{index}].summary")
    posts = []
    for number, post in enumerate(step.posts):
        text, names = _compile(post.text, f"[{index}].posts[{number}].text")
        posts.append(_CompiledPost(post.room, text, tuple(post.mentions)))
        if names:
            used = used | names
    votes = []
    for number, vote in enumerate(step.votes):
        choice: Renderer | int
        if isinstance(vote.choice, str):
            choice, names = _compile(vote.choice, f"[{index}].votes[{number}].choice")
            used = used | names
        else:
            choice = vote.choice
        reason, names = _compile(vote.reason, f"[{index}].votes[{number}].reason")
        votes.append(_CompiledVote(vote.decision, choice, reason))
        used = used | names
    return _CompiledStep(summary, step.data, tuple(posts), _context_keys(used), tuple(votes))


def _compile(text: str, where: str) -> tuple[Renderer, frozenset[str]]:
    try:
        return compile_with_names(text)
    except TemplateProblem as exc:
        raise TemplateProblem(str(exc), exc.line, where) from None


@functools.lru_cache(maxsize=256)
def _context_keys(used: frozenset[str]) -> tuple[str, ...]:
    return tuple(name for name in _CONTEXT if name in used)


class ScriptAgent(MemberAgent):
    """Renders scripted results with Jinja2 (sandboxed; context = the turn input).

    Templates compile once, here, at ``compile()``; running out of steps fails the turn with
    ``SCRIPT_EXHAUSTED``. A turn's templates render within ``timeout_s`` together (the
    member's ``turn_timeout_ms``; ``TIMEOUT`` past it), each within the CPU-time bound and
    ``max_chars`` characters (``TEMPLATE_LIMIT`` past them).

    Args:
        steps: The scripted results.
        timeout_s: The turn's time limit in seconds, if any.
        max_chars: The most characters one rendered template may hold (the member's
            ``max_output_bytes``: a longer text could never make a valid result).
    """

    kind: ClassVar[str] = "script"
    inline: ClassVar[bool] = True

    def __init__(self, steps: Sequence[ScriptStep], *, timeout_s: float | None = None,
                 max_chars: int = TEMPLATE_MAX_CHARS) -> None:
        self.steps = tuple(_compile_step(step, i) for i, step in enumerate(steps))
        self.timeout_s = timeout_s
        self.max_chars = max_chars

    @property
    def quick(self) -> bool:
        """A script's turn renders its templates in place and never awaits anything."""
        return True

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
        limit, timeout = self.max_chars, self.timeout_s
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            result: dict[str, Any] = {
                "summary": step.summary(context, max_chars=limit, timeout_s=timeout)}
            if step.data is not None:
                result["data"] = step.data
            for p in step.posts:
                if deadline is not None:
                    timeout = max(0.0, deadline - time.monotonic())
                text = p.text(context, max_chars=limit, timeout_s=timeout)
                result.setdefault("posts", []).append(
                    {"roomId": p.room, "text": text, "mentions": list(p.mentions)})
            for v in step.votes:
                choice = v.choice if isinstance(v.choice, int) else \
                    v.choice(context, max_chars=limit, timeout_s=timeout).strip()
                result.setdefault("votes", []).append(
                    {"decision": v.decision, "choice": choice,
                     "reason": v.reason(context, max_chars=limit, timeout_s=timeout)})
        except TurnError:
            raise
        except Exception as exc:
            raise TurnError(
                "RESULT_INVALID",
                f"script step {turn.turn} of {turn.member} failed to render: {exc}",
            ) from None
        return result
