"""Where a profile's calls go in tests: a *tap* sends them to a loopback server instead.

The testing plugin records model exchanges to a cassette and replays them
(:mod:`wopdsl.testing.cassette`); it does so on the wire, through a server on loopback that
speaks the OpenAI protocol. A :class:`ModelTap` set on a :class:`~wopdsl.agents.llm.ProfileClient`
names that server's address for the profile, and each call then carries four headers saying
which turn it belongs to (the real ``openai`` client, its HTTP stack and the engine all run
as usual)::

    wop-member: critic       the member
    wop-turn: 2              the member's turn (1 first), as in the turn prompt
    wop-attempt: 0           the turn's attempt, as in node.started (a transport retry adds 1)
    wop-position: 3          the turn's dispatch position in the run (message ids team/critic/3/…)

Without a tap (always, outside tests) nothing changes: no header is sent.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from wopdsl.agents.base import TurnRecorder

__all__ = ["CALL_SITE", "CallSite", "ModelTap"]


@dataclass(frozen=True, slots=True)
class CallSite:
    """The turn a model call belongs to (set by the ``llm`` engine for the turn's task)."""

    member: str
    """The member id."""
    turn: int
    """The member's turn number (1 first)."""
    recorder: TurnRecorder
    """The turn's recorder (its ``attempt`` rises with each transport retry)."""

    def headers(self) -> dict[str, str]:
        """The ``wop-*`` headers a tapped call carries."""
        return {"wop-member": self.member, "wop-turn": str(self.turn),
                "wop-attempt": str(self.recorder.attempt),
                "wop-position": str(self.recorder.position)}


CALL_SITE: ContextVar[CallSite | None] = ContextVar("wopdsl_llm_call_site", default=None)
"""The turn the running task calls the model for (each turn runs in a task of its own)."""


class ModelTap(Protocol):
    """Redirects a profile's calls (see the module docs)."""

    def base_url(self, profile: str, upstream: str | None) -> str:
        """Return the API root to call instead of ``upstream``.

        Args:
            profile: The profile's name (``[models.NAME]``).
            upstream: The API root the profile would call (its ``base_url``, else
                ``$OPENAI_BASE_URL``; ``None``: the ``openai`` client's default).
        """
        ...
