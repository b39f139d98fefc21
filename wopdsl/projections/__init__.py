"""Read-side projections of a run's events: transcript and room files.

The transcript names load on first use (they fold the run's state, which builds pydantic
models); the escaping helpers are light, so terminal output can use them from the start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wopdsl.projections.rooms import (
    escape,
    room_lines,
    terminal_safe,
    write_room_files,
)

if TYPE_CHECKING:
    from wopdsl.projections.transcript import (
        TranscriptProjection,
        decision_lines,
        format_line,
        render_transcript,
    )

__all__ = [
    "TranscriptProjection",
    "decision_lines",
    "escape",
    "format_line",
    "render_transcript",
    "room_lines",
    "terminal_safe",
    "write_room_files",
]

_TRANSCRIPT = frozenset({"TranscriptProjection", "decision_lines", "format_line",
                         "render_transcript"})


def __getattr__(name: str) -> Any:
    """Load a transcript name on first use (PEP 562)."""
    if name in _TRANSCRIPT:
        from wopdsl.projections import transcript

        value = getattr(transcript, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, lazy ones included."""
    return sorted({*globals(), *_TRANSCRIPT})
