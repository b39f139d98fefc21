"""Private: the ``tool_calls`` of a Chat Completions answer, plain or streamed in pieces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StreamedCalls", "ToolCall", "calls_of"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for (``arguments`` is its JSON text, unchecked)."""

    id: str
    name: str
    arguments: str


def calls_of(message: Any) -> tuple[ToolCall, ...]:
    """The function calls of a (non-streamed) assistant message."""
    calls = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = getattr(call, "function", None)
        if function is None:  # a custom (non-function) tool call: not ours
            continue
        calls.append(ToolCall(str(call.id or f"call_{index}"), str(function.name or ""),
                              str(function.arguments or "")))
    return tuple(calls)


class StreamedCalls:
    """Joins streamed ``delta.tool_calls`` pieces (by ``index``) into whole calls."""

    def __init__(self) -> None:
        self._parts: dict[int, list[Any]] = {}

    def add(self, deltas: Any) -> int:
        """Take one chunk's ``delta.tool_calls`` (``None`` is ignored); return its bytes."""
        size = 0
        for delta in deltas or []:
            index = int(getattr(delta, "index", 0) or 0)
            part = self._parts.setdefault(index, ["", "", []])
            if getattr(delta, "id", None):
                part[0] = str(delta.id)
            function = getattr(delta, "function", None)
            if function is not None:
                if getattr(function, "name", None):
                    part[1] += str(function.name)
                    size += len(str(function.name))
                if getattr(function, "arguments", None):
                    part[2].append(str(function.arguments))
                    size += len(part[2][-1].encode("utf-8", "surrogatepass"))
        return size

    def calls(self) -> tuple[ToolCall, ...]:
        """The calls, in index order."""
        return tuple(ToolCall(ident or f"call_{index}", name, "".join(arguments))
                     for index, (ident, name, arguments) in sorted(self._parts.items()))
