"""The pydantic model of a ``RunEventDoc``, for validating records read from outside."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, StrictInt, StrictStr

from wopdsl._described import Described

__all__ = ["RunEvent"]


class RunEvent(Described):
    """A validated ``RunEventDoc`` (used when reading untrusted records)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eventId: StrictStr = Field(min_length=1, max_length=128)
    """Unique id of the event."""
    runId: StrictStr = Field(min_length=1, max_length=128)
    """The run it belongs to."""
    type: StrictStr = Field(min_length=1)
    """Dotted event type."""
    payload: dict[str, Any]
    """Type-specific payload."""
    timestamp: StrictStr
    """ISO 8601 time."""
    sequence: StrictInt = Field(ge=0)
    """Per-run sequence."""
    nodeId: StrictStr | None = Field(default=None, min_length=1, max_length=128)
    """Node the event is scoped to."""
    schemaVersion: StrictInt | None = Field(default=None, ge=0)
    """Per-event schema version."""
    causationId: StrictStr | None = Field(default=None, min_length=1, max_length=128)
    """Event that caused this one."""
