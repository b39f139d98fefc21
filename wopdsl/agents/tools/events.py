"""The payloads a turn with tools writes (``run-event-payloads.schema.json`` ``$defs``).

* ``agent.toolCalled`` ``{agentId, toolName, callId, argsHash, transport, inputs?}`` and
  ``agent.toolReturned`` ``{agentId, toolName, callId, status, durationMs, resultHash,
  resultBytes, outcome? | error?}`` (RFC 0064): arguments and results appear only under
  ``observability = "full"``, cut at :data:`MAX_EVENT_TEXT` characters (marked), the hashes
  always (SHA-256 of the canonical JSON of the arguments, of the result text);
* ``tool.session.opened`` / ``tool.session.closed`` ``{sessionId, toolId, outcome}`` around
  the calls of one turn to one MCP server (RFC 0078 §D, content-free);
* for approvals, ``interrupt.requested`` (``kind: "approval"``), ``approval.requested`` and
  ``node.suspended`` (RFC 0051 and interrupt.md).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from wopdsl.agents.tools.base import ToolOutput
from wopdsl.agents.tools.journal import RecordedCall

__all__ = ["MAX_EVENT_TEXT", "REPEAT", "approval_key", "approval_payloads", "args_hash",
           "tool_called", "tool_returned"]

MAX_EVENT_TEXT: Final = 16_384
"""Characters of arguments or of a result an event carries under ``observability = "full"``
(the whole of them is kept privately, see :mod:`wopdsl.agents.tools.journal`)."""


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def args_hash(arguments: str) -> str:
    """SHA-256 of the arguments' canonical JSON (sorted keys, no spaces).

    Of the raw text when it is not JSON.
    """
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return _sha(arguments)
    return _sha(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def tool_called(agent: str, call: RecordedCall, transport: str, *, full: bool,
                repeated: bool = False) -> dict[str, Any]:
    """The ``agent.toolCalled`` payload."""
    payload: dict[str, Any] = {"agentId": agent, "toolName": call.name or "?",
                               "callId": call.call_id, "argsHash": args_hash(call.arguments),
                               "transport": transport}
    if repeated:
        payload["repeated"] = True
    if full:
        text = call.arguments
        try:
            payload["inputs"] = json.loads(text) if len(text) <= MAX_EVENT_TEXT else text[
                :MAX_EVENT_TEXT]
        except ValueError:
            payload["inputs"] = text[:MAX_EVENT_TEXT]
        if len(text) > MAX_EVENT_TEXT:
            payload["inputsTruncated"] = True
    return payload


def tool_returned(agent: str, call: RecordedCall, output: ToolOutput, status: str,
                  duration_ms: int, *, full: bool, code: str | None = None) -> dict[str, Any]:
    """The ``agent.toolReturned`` payload (``code``: the error's code when not ``ok``)."""
    payload: dict[str, Any] = {"agentId": agent, "toolName": call.name or "?",
                               "callId": call.call_id, "status": status,
                               "durationMs": max(0, duration_ms),
                               "resultHash": _sha(output.text),
                               "resultBytes": len(output.text.encode("utf-8", "replace"))}
    if status == "ok" and not output.error:
        if full:
            payload["outcome"] = output.text[:MAX_EVENT_TEXT]
            if len(output.text) > MAX_EVENT_TEXT:
                payload["outcomeTruncated"] = True
        return payload
    message = output.text[:MAX_EVENT_TEXT] if full else (
        "the tool reported an error" if output.error and code is None
        else f"the call failed ({code or 'TOOL_ERROR'}); observability = \"hashed\" keeps "
             "its message out of the log")
    payload["error"] = {"code": code or "TOOL_ERROR", "message": message or "error"}
    return payload


REPEAT: Final = "#repeat"
"""Ends the key of an approval to make a call again (it was in flight at a crash)."""


def approval_key(call_id: str, *, repeat: bool = False) -> str:
    """The interrupt key (and ``interruptId``) of the approval of a call."""
    return f"approval/{call_id}{REPEAT if repeat else ''}"


def approval_payloads(member: str, call: RecordedCall, approver: str, *, full: bool,
                      repeat: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """``interrupt.requested``, ``approval.requested`` and ``node.suspended``, in order."""
    key = approval_key(call.call_id, repeat=repeat)
    title = (f"{member} asks to call {call.name or '?'} again (it was in flight when the run "
             "stopped)" if repeat else f"{member} asks to call {call.name or '?'}")
    data: dict[str, Any] = {"artifactId": call.call_id, "artifactType": "tool-call",
                            "title": title, "actions": ["accept", "reject"],
                            "approversList": [approver],
                            "description": f"arguments {args_hash(call.arguments)}"}
    if full:
        data["artifactData"] = {"tool": call.name, "arguments": call.arguments[:MAX_EVENT_TEXT]}
    return [
        ("interrupt.requested", {"kind": "approval", "key": key, "data": data}),
        ("approval.requested", {"nodeId": member, "interruptId": key,
                                "artifactId": call.call_id, "artifactType": "tool-call",
                                "title": title, "actions": ["accept", "reject"],
                                "approversList": [approver]}),
        ("node.suspended", {"nodeId": member, "interruptId": key, "kind": "approval",
                            "key": key, "reason": "approval"}),
    ]
