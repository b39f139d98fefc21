"""What a replay mismatch says about tools (``wopdsl.testing._cassette_diff.tool_changes``)."""

from __future__ import annotations

from typing import Any

from wopdsl.testing._cassette_diff import tool_changes


def _body(*, tools: list[str], args: str, result: str) -> dict[str, Any]:
    return {
        "tools": [{"type": "function", "function": {"name": n, "parameters": {}}}
                  for n in tools],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "restart", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": result},
        ],
    }


def test_each_tool_change_is_named() -> None:
    recorded = _body(tools=["restart", "read_log"], args='{"name": "api"}', result="ok")
    now = _body(tools=["restart", "count"], args='{"name": "db"}', result="fine")
    now["tools"][0]["function"]["parameters"] = {"type": "object"}
    assert tool_changes(recorded, now) == [
        "the member is now offered the tool 'count', which it was not when recorded",
        "the member is no longer offered the tool 'read_log'",
        "the definition of the tool 'restart' (its description or parameters) changed",
        'tool call call_1 is now restart({"name": "db"}); recorded: restart({"name": "api"})',
        "the result of tool call call_1 (restart) is not the recorded one: now 'fine', "
        "recorded 'ok'",
    ]
    assert tool_changes(recorded, recorded) == []
    assert tool_changes({"messages": "odd"}, {"tools": None}) == []
