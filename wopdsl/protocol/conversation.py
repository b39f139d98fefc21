"""RFC 0005 / RFC 0101 conversation shapes as pydantic models (the project's own copies).

These mirror ``conversation-turn.schema.json`` (v2), ``conversation-event.schema.json`` and
the RFC 0005 §E resume payload. The engine builds events with fast dict builders
(``payloads.py``); these models parse untrusted input (human turns, resume payloads) and let
the conformance tests check both against the published JSON Schemas.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import ConfigDict, Field, StrictInt, StrictStr, model_validator

from wopdsl._described import Described
from wopdsl.protocol.bounds import MAX_DEPTH as BOUNDS_DEPTH

__all__ = [
    "MAX_DEPTH",
    "AgentRef",
    "ConversationClosed",
    "ConversationExchanged",
    "ConversationOpened",
    "ConversationTurn",
    "ResumePayload",
    "json_depth",
    "parse_resume",
]

MAX_DEPTH: Final = BOUNDS_DEPTH
"""Deepest nesting the host accepts in a submitted JSON value (turn content, outcome)."""


class _Wire(Described):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class AgentRef(_Wire):
    """RFC 0101 roster entry: a participant permitted to speak."""

    agentId: StrictStr = Field(pattern=r"^[A-Za-z0-9._~:-]{1,128}$")
    """Roster instance id, ``host:<member>``."""
    name: StrictStr | None = Field(default=None, max_length=256)
    """Display name (the member's role)."""


class ConversationTurn(_Wire):
    """One turn (RFC 0005 §C); agent turns must carry ``speakerId`` (RFC 0101)."""

    messageId: StrictStr = Field(min_length=1, max_length=256)
    """Deterministic dedup key."""
    from_: StrictStr = Field(alias="from", min_length=1, max_length=256)
    """Sender: a member id, or ``system``."""
    to: StrictStr | None = Field(default=None, max_length=256)
    """Optional addressee."""
    groupId: StrictStr | None = Field(default=None, max_length=256)
    """The room id."""
    content: Any
    """``{text, mentions}`` for posts."""
    ts: StrictInt = Field(ge=0)
    """Milliseconds since the epoch."""
    role: Literal["user", "agent", "system"]
    """Who produced the turn."""
    turnIndex: StrictInt = Field(ge=0)
    """0-based index within the conversation."""
    speakerId: StrictStr | None = Field(default=None, min_length=1, max_length=256)
    """Roster instance id of the speaker (required when ``role`` is ``agent``)."""

    @model_validator(mode="after")
    def _agent_turns_name_their_speaker(self) -> ConversationTurn:
        if self.role == "agent" and self.speakerId is None:
            raise ValueError("an agent turn must carry speakerId (RFC 0101)")
        return self


class ConversationOpened(_Wire):
    """``conversation.opened`` payload (v2, with the RFC 0101 roster)."""

    conversationId: StrictStr = Field(min_length=1, max_length=256)
    """``{runId}:room:{roomId}``."""
    participants: list[AgentRef] | None = None
    """The agent members permitted to speak."""
    initialTurn: ConversationTurn
    """The opening ``system`` turn carrying the task."""
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    """The room's turn schema, if any."""


class ConversationExchanged(_Wire):
    """``conversation.exchanged`` payload (v1 ConversationExchangedPayload)."""

    conversationId: StrictStr = Field(min_length=1, max_length=256)
    """The room's conversation."""
    turnIndex: StrictInt = Field(ge=1)
    """1-based index of this turn."""
    turn: ConversationTurn
    """The turn."""


class ConversationClosed(_Wire):
    """``conversation.closed`` payload."""

    conversationId: StrictStr = Field(min_length=1, max_length=256)
    """The room's conversation."""
    turnIndex: StrictInt = Field(ge=0)
    """Equal to ``finalTurn.turnIndex``."""
    finalTurn: ConversationTurn
    """The closing ``system`` turn."""
    outcome: Any = None
    """The conversation's outcome (``null`` on timeout or failure)."""


class ResumePayload(_Wire):
    """RFC 0005 §E resume value: ``{operation, turn, outcome?}``."""

    operation: Literal["exchange", "close"]
    """``exchange`` posts ``turn``; ``close`` ends the conversation."""
    turn: dict[str, Any] | None = None
    """Turn fields: at least ``content`` (``{text, mentions?}`` or a string)."""
    outcome: Any = None
    """For ``close``: the conversation's outcome."""


def parse_resume(value: dict[str, Any]) -> ResumePayload:
    """Parse an RFC 0005 §E payload, also accepting bare turn fields (``{content: ...}``).

    Raises:
        pydantic.ValidationError: the payload has neither shape.
    """
    if "operation" in value:
        return ResumePayload.model_validate(value)
    return ResumePayload(operation="exchange", turn=value)


def json_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Return the nesting depth of ``value``, stopping (iteratively) once past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest
