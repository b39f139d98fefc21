"""Private: what a cassette says when a replayed request differs from its recording.

:func:`request_diff` is a unified diff of the two requests as YAML; :func:`tool_changes`
names, in a line each, what changed in the parts tools put into a request: the tools the
member is offered (a tool added, removed, or its description or parameters changed), the
arguments of a call the model asked for, and the result a call gave back (the tools run
again in a replay, so a tool that now returns something else changes the next request).
"""

from __future__ import annotations

import difflib
from typing import Any

import yaml

__all__ = ["dump_yaml", "request_diff", "tool_changes"]


class _Dumper(yaml.SafeDumper):
    """Block style for text with line breaks, so prompts read as they were sent."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML writes U+0085 raw outside double quotes, where YAML reads it as a line break.
    style = '"' if "\x85" in value else "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump_yaml(data: Any) -> str:
    """YAML as cassettes are written: key order kept, text with line breaks in block style."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     width=1_000_000, default_flow_style=False)


def request_diff(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """A unified diff of two requests as YAML (``-`` recorded, ``+`` now)."""
    lines = difflib.unified_diff(dump_yaml(recorded).splitlines(),
                                 dump_yaml(now).splitlines(), "recorded", "now", lineterm="")
    return "\n".join(lines)


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _offered(body: dict[str, Any]) -> dict[str, Any]:
    tools = body.get("tools") if isinstance(body, dict) else None
    out: dict[str, Any] = {}
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            out[str(function.get("name", ""))] = function
    return out


def _calls(body: dict[str, Any]) -> tuple[dict[str, tuple[str, Any]], dict[str, Any]]:
    """The tool calls of a request's messages: id → (tool, arguments); id → result."""
    asked: dict[str, tuple[str, Any]] = {}
    results: dict[str, Any] = {}
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                asked[str(call.get("id", ""))] = (str(function.get("name", "")),
                                                  function.get("arguments"))
        if message.get("role") == "tool":
            results[str(message.get("tool_call_id", ""))] = message.get("content")
    return asked, results


def tool_changes(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What changed in the tool parts of a request body, one sentence each (may be none)."""
    lines: list[str] = []
    before, after = _offered(recorded), _offered(now)
    for name in sorted(set(before) | set(after)):
        if name not in after:
            lines.append(f"the member is no longer offered the tool {name!r}")
        elif name not in before:
            lines.append(f"the member is now offered the tool {name!r}, which it was not "
                         "when recorded")
        elif before[name] != after[name]:
            lines.append(f"the definition of the tool {name!r} (its description or "
                         "parameters) changed")
    asked_then, results_then = _calls(recorded)
    asked_now, results_now = _calls(now)
    for ident, (name, arguments) in asked_now.items():
        then = asked_then.get(ident)
        if then is not None and then != (name, arguments):
            lines.append(f"tool call {ident} is now {name}({_short(arguments)}); recorded: "
                         f"{then[0]}({_short(then[1])})")
    for ident, result in results_now.items():
        if ident in results_then and results_then[ident] != result:
            name = asked_now.get(ident, ("?", None))[0]
            lines.append(f"the result of tool call {ident} ({name}) is not the recorded one: "
                         f"now {_short(result)!r}, recorded {_short(results_then[ident])!r}")
    return lines
