"""Private: the CLI's output streams, safe for a terminal whatever members and people wrote.

Every byte the CLI prints goes through :class:`SafeText`: control characters (ANSI and OSC
escape sequences, carriage returns, NUL, C1) and bidirectional formatting characters in
message text, roles, ids or error messages are shown escaped instead of acting on the
terminal. JSON output is written ASCII-only, so it passes through unchanged and stays valid.
"""

from __future__ import annotations

import io
from typing import TextIO

from wopdsl.projections import terminal_safe

__all__ = ["SafeText"]


class SafeText(io.TextIOBase):
    """A text stream that escapes what a terminal would act on before passing it on."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        """The stream written to."""

    def write(self, text: str) -> int:
        """Write ``text`` with control and bidirectional characters escaped."""
        self.stream.write(terminal_safe(text))
        return len(text)

    def flush(self) -> None:
        """Flush the underlying stream."""
        self.stream.flush()

    def writable(self) -> bool:
        """Always: this is an output stream."""
        return True

    def isatty(self) -> bool:
        """Whether the underlying stream is a terminal."""
        return self.stream.isatty()

    def fileno(self) -> int:
        """The underlying stream's file descriptor."""
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """The underlying stream's encoding."""
        return getattr(self.stream, "encoding", None) or "utf-8"
