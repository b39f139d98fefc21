"""Read-side projections of a run's events: transcript and room files."""

from wopdsl.projections.rooms import (
    escape,
    room_lines,
    terminal_safe,
    write_room_files,
)
from wopdsl.projections.transcript import TranscriptProjection, format_line, render_transcript

__all__ = [
    "TranscriptProjection",
    "escape",
    "format_line",
    "render_transcript",
    "room_lines",
    "terminal_safe",
    "write_room_files",
]
