"""OpenWOP wire shapes: the run-event envelope and the payloads councils emit."""

from wopdsl.protocol.envelope import (
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    RunEvent,
    RunEventDoc,
    check_event,
)

__all__ = ["SCHEMA_VERSION", "SUPPORTED_SCHEMA_VERSIONS", "RunEvent", "RunEventDoc", "check_event"]
