"""Private: the scripted answers of :class:`~wopdsl.testing.model_server.ScriptedModelServer`.

A completion (:class:`Answer`), an HTTP error (:class:`Failure`), a stream cut short
(:class:`Cut`), a dropped connection (:class:`Drop`), a stream that never ends
(:class:`Endless`) and a recorded response (:class:`RawAnswer`); tool calls are
:class:`~wopdsl.testing._tool_answers.ToolCalls`. ``wopdsl.testing.model_server`` exports them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "Cut", "Drop", "Endless", "Failure", "RawAnswer"]


@dataclass(frozen=True)
class Answer:
    """A successful completion.

    Args:
        content: The assistant message: a string, or JSON data (sent as its JSON text).
        usage: ``(prompt_tokens, completion_tokens)``, or ``None`` to send no usage at all.
        delay_s: Seconds to wait before answering (a slow model).
        chunks: How many SSE chunks a streamed answer is split into.
        chunk_delay_s: Seconds between streamed chunks.
        finish_reason: ``stop``, or ``length`` for a truncated answer.
    """

    content: Any
    usage: tuple[int, int] | None = (10, 5)
    delay_s: float = 0.0
    chunks: int = 4
    chunk_delay_s: float = 0.0
    finish_reason: str = "stop"

    @property
    def text(self) -> str:
        """The message content as sent."""
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, ensure_ascii=False)


@dataclass(frozen=True)
class Failure:
    """An HTTP error answer (``{"error": {...}}`` body), e.g. 429, 500 or 401.

    Args:
        status: The HTTP status.
        message: The error message in the body.
        retry_after: A ``Retry-After`` header value (seconds), if any.
        delay_s: Seconds to wait before answering.
    """

    status: int
    message: str = "scripted failure"
    retry_after: str | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class Cut:
    """A streamed answer whose connection drops after ``after_chunks`` chunks."""

    content: Any
    after_chunks: int = 2
    chunks: int = 6

    @property
    def text(self) -> str:
        """The content the stream would have carried in full."""
        return self.content if isinstance(self.content, str) else json.dumps(self.content)


@dataclass(frozen=True)
class Drop:
    """The connection closes as soon as the request is read: no answer at all.

    As a server does with a keep-alive connection it has just timed out.
    """


@dataclass(frozen=True)
class Endless:
    """A stream that never ends by itself: ``piece`` over and over, no ``finish_reason``.

    It goes on until the client hangs up or ``max_s`` passes.

    Args:
        piece: The text of each chunk.
        delay_s: Seconds between chunks.
        max_s: A safety stop for the server thread.
    """

    piece: str = "la "
    delay_s: float = 0.0
    max_s: float = 60.0


@dataclass(frozen=True)
class RawAnswer:
    """A whole response as recorded: the HTTP status, the JSON body and a few headers.

    A 200 body is a ``chat.completion`` (streamed as one chunk per part when the client asks
    for a stream, see :func:`~wopdsl.testing.chat_wire.stream_chunks`); any other status is
    sent as it is, e.g. ``{"error": {...}}`` with a ``Retry-After`` header.
    """

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
