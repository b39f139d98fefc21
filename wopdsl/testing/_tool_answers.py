"""Private: scripted answers that ask for tool calls (see :class:`ToolCalls`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolCalls"]


@dataclass(frozen=True)
class ToolCalls:
    """An answer asking for function calls, as a model in a tool loop answers.

    Args:
        calls: ``(name, arguments)`` pairs, in order: arguments as JSON data (sent as its
            JSON text) or as a string sent verbatim (malformed JSON too).
        text: Assistant text sent with the calls (usually none).
        usage: ``(prompt_tokens, completion_tokens)``, or ``None``.
        delay_s: Seconds to wait before answering.
        chunks: How many SSE pieces each call's arguments are split into when streamed.
        ids: The calls' ids (default ``call_<n>``, numbered by the server).

    Example:
        >>> ToolCalls(("read_log", {"service": "api"}), ("restart", '{"name": '))
        ... # doctest: +ELLIPSIS
        ToolCalls(...)
    """

    calls: tuple[tuple[str, Any], ...]
    text: str = ""
    usage: tuple[int, int] | None = (20, 10)
    delay_s: float = 0.0
    chunks: int = 3
    ids: tuple[str, ...] = field(default=())

    def __init__(self, *calls: tuple[str, Any], text: str = "",
                 usage: tuple[int, int] | None = (20, 10), delay_s: float = 0.0,
                 chunks: int = 3, ids: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "calls", tuple(calls))
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "usage", usage)
        object.__setattr__(self, "delay_s", delay_s)
        object.__setattr__(self, "chunks", chunks)
        object.__setattr__(self, "ids", tuple(ids))

    def wire(self, first_id: int) -> list[dict[str, Any]]:
        """The calls as the ``tool_calls`` of an assistant message."""
        out = []
        for index, (name, arguments) in enumerate(self.calls):
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            ident = self.ids[index] if index < len(self.ids) else f"call_{first_id + index}"
            out.append({"id": ident, "type": "function",
                        "function": {"name": name, "arguments": text}})
        return out

    def message(self, first_id: int) -> dict[str, Any]:
        """The assistant message of a plain (non-streamed) answer."""
        return {"role": "assistant", "content": self.text or None,
                "tool_calls": self.wire(first_id)}

    def deltas(self, first_id: int) -> list[dict[str, Any]]:
        """The ``delta`` of each streamed chunk, in order (role, text, then each call)."""
        out: list[dict[str, Any]] = [{"role": "assistant", "content": self.text or None}]
        for index, call in enumerate(self.wire(first_id)):
            text = call["function"]["arguments"]
            out.append({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                        "function": {"name": call["function"]["name"],
                                                     "arguments": ""}}]})
            size = max(1, -(-len(text) // max(1, self.chunks)))
            for start in range(0, len(text), size):
                out.append({"tool_calls": [{"index": index, "function": {
                    "arguments": text[start:start + size]}}]})
        return out
