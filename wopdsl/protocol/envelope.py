"""The OpenWOP v1 ``RunEventDoc`` envelope: a TypedDict for the hot path, a model for reading.

The model (:class:`~wopdsl.protocol.event_model.RunEvent`) is built only when a record is
checked, so reading a log (``wop runs``, ``wop events``) does not load pydantic for it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final, NotRequired, TypedDict

from wopdsl.errors import EventInvalid

if TYPE_CHECKING:
    from wopdsl.protocol.event_model import RunEvent

__all__ = [
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "RunEvent",
    "RunEventDoc",
    "check_event",
]

SCHEMA_VERSION: Final = 1
"""The per-event ``schemaVersion`` wopdsl writes."""

SUPPORTED_SCHEMA_VERSIONS: Final = frozenset({1})
"""The ``schemaVersion`` values wopdsl can fold."""

_EVENT_ID_RE: Final = re.compile(r"^[A-Za-z0-9._~-]{16,128}$")


class RunEventDoc(TypedDict):
    """One persisted event: exactly the v1 ``RunEventDoc`` keys."""

    eventId: str
    """Unique id: 16-128 chars of ``[A-Za-z0-9._~-]``."""
    runId: str
    """The run this event belongs to."""
    type: str
    """Dotted event type, e.g. ``node.started``."""
    payload: dict[str, Any]
    """The type's payload (validates against its ``$defs`` entry)."""
    timestamp: str
    """ISO 8601 UTC time of the event."""
    sequence: int
    """0, 1, 2, ... per run."""
    nodeId: NotRequired[str]
    """Set for node-scoped events."""
    schemaVersion: NotRequired[int]
    """Per-event schema version (wopdsl writes 1)."""
    causationId: NotRequired[str]
    """The ``eventId`` of the event that caused this one."""


def check_event(raw: object, *, where: str = "event") -> RunEventDoc:
    """Validate a raw record as a ``RunEventDoc`` wopdsl can fold.

    Args:
        raw: The decoded JSON record.
        where: A location for error messages (e.g. ``runs.db run r1 #4``).

    Returns:
        The record, typed.

    Raises:
        EventInvalid: when the record is malformed or has an unsupported ``schemaVersion``.
    """
    from pydantic import ValidationError as PydanticValidationError

    from wopdsl.protocol.event_model import RunEvent

    try:
        event = RunEvent.model_validate(raw)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise EventInvalid(
            f"{where}: malformed event record at {path}: {first['msg']}",
            hint="the log was written by another tool or corrupted; restore it from a backup",
        ) from None
    if event.schemaVersion is not None and event.schemaVersion not in SUPPORTED_SCHEMA_VERSIONS:
        raise EventInvalid(
            f"{where}: unsupported schemaVersion {event.schemaVersion} "
            f"(this wopdsl reads {sorted(SUPPORTED_SCHEMA_VERSIONS)})",
            hint="upgrade wopdsl to read this log",
        )
    assert isinstance(raw, dict)
    return raw  # type: ignore[return-value]


def __getattr__(name: str) -> Any:
    """``RunEvent`` loads on first use (PEP 562): it is a pydantic model."""
    if name == "RunEvent":
        from wopdsl.protocol.event_model import RunEvent

        return RunEvent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
