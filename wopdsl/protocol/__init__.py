"""OpenWOP wire shapes: the run-event envelope and the payloads councils emit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wopdsl.protocol.envelope import (
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    RunEventDoc,
    check_event,
)

if TYPE_CHECKING:
    from wopdsl.protocol.event_model import RunEvent

__all__ = ["SCHEMA_VERSION", "SUPPORTED_SCHEMA_VERSIONS", "RunEvent", "RunEventDoc", "check_event"]


def __getattr__(name: str) -> Any:
    """``RunEvent`` (a pydantic model) loads on first use (PEP 562)."""
    if name == "RunEvent":
        from wopdsl.protocol.event_model import RunEvent

        return RunEvent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
