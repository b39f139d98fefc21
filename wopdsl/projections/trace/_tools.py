"""Private: the tool half of :class:`~wopdsl.projections.trace.derive.TraceProjection`.

* ``execute_tool {tool}``: an ``agent.toolCalled`` … ``agent.toolReturned`` pair (same
  ``callId``), under the member's turn span: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.type`` (``extension`` for an MCP tool, else ``function``), ERROR with
  ``error.type`` when the call failed or was rejected; arguments and result only under
  ``observability = "full"``.
* ``wopdsl.approval {tool}``: the wait for a person's decision, from ``approval.requested``
  to ``approval.granted`` / ``approval.rejected`` (same interrupt id), under the turn span;
  the call itself, once granted, is an ``execute_tool`` span after it. The turn span gets
  ``wopdsl.turn.suspended`` / ``wopdsl.turn.resumed`` events around the wait.
"""

from __future__ import annotations

import json
from typing import Any

from wopdsl.projections.trace import _names as gen_ai
from wopdsl.projections.trace._calls import Member, Turn
from wopdsl.projections.trace._names import ERROR_TYPE
from wopdsl.projections.trace.spans import AttrValue, SpanEvent, SpanSpec, span_id
from wopdsl.protocol.envelope import RunEventDoc

__all__ = ["ToolSpans"]


def _text(value: Any) -> str:
    """An argument or result as exported: text as it is, other JSON data as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class ToolSpans:
    """Tool calls and approvals of the turns in flight (see the module docs)."""

    run_id: str
    _members: dict[str, Member]
    _turns: dict[str, Turn]
    _tools: dict[str, tuple[str, SpanSpec]]
    """Open ``execute_tool`` spans by call id, with their member."""
    _approvals: dict[str, SpanSpec]
    """Open approval waits by interrupt id."""

    def _member_of(self, event: RunEventDoc, node: str) -> str:
        return node or str(event["payload"].get("agentId", "")).removeprefix("host:")

    def _tool_called(self, event: RunEventDoc, now: int, node: str,
                     out: list[SpanSpec]) -> None:
        payload = event["payload"]
        member = self._member_of(event, node)
        turn = self._turns.get(member)
        if turn is None:
            return
        name = str(payload.get("toolName", ""))
        call_id = str(payload.get("callId", ""))
        attributes: dict[str, AttrValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: "execute_tool", gen_ai.GEN_AI_TOOL_NAME: name,
            gen_ai.GEN_AI_TOOL_CALL_ID: call_id,
            gen_ai.GEN_AI_TOOL_TYPE: "extension" if payload.get("transport") == "mcp"
            else "function"}
        if payload.get("repeated"):
            attributes["wopdsl.tool.repeated"] = True
        if "inputs" in payload and self._members[member].full:
            attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = _text(payload["inputs"])
        span = SpanSpec(f"execute_tool {name}", span_id(self.run_id, event["eventId"]),
                        turn.span.span_id, now, attributes=attributes)
        self._tools[call_id] = (member, span)

    def _tool_returned(self, event: RunEventDoc, now: int, node: str,
                       out: list[SpanSpec]) -> None:
        payload = event["payload"]
        member, span = self._tools.pop(str(payload.get("callId", "")), ("", None))
        if span is None:
            return
        status = str(payload.get("status", "error" if payload.get("error") else "ok"))
        if status != "ok":
            error = payload.get("error") or {}
            span.error = f"{error.get('code', status)}: {error.get('message', status)}"
            span.attributes[ERROR_TYPE] = str(error.get("code", status))
        if "outcome" in payload and self._members[member].full:
            span.attributes[gen_ai.GEN_AI_TOOL_CALL_RESULT] = _text(payload["outcome"])
        span.end_ns = now
        span.released_at = event["sequence"]
        out.append(span)
        if member in self._turns:
            self._turns[member].mark_ns = now

    def _approval_asked(self, event: RunEventDoc, now: int, node: str,
                        out: list[SpanSpec]) -> None:
        payload = event["payload"]
        turn = self._turns.get(node)
        if turn is None:
            return
        key = str(payload.get("interruptId", ""))
        title = str(payload.get("title", ""))
        # The title says "<member> asks to call <tool>[ again …]": the tool's name.
        tool = title.split(" asks to call ", 1)[-1].split(" ", 1)[0] if \
            " asks to call " in title else str(payload.get("artifactId", ""))
        approvers = payload.get("approversList") or []
        attributes: dict[str, AttrValue] = {
            gen_ai.GEN_AI_TOOL_NAME: tool,
            gen_ai.GEN_AI_TOOL_CALL_ID: str(payload.get("artifactId", "")),
            "wopdsl.approval.id": key,
            "wopdsl.approval.approver": ", ".join(str(a) for a in approvers),
            "wopdsl.approval.repeat": key.endswith("#repeat")}
        self._approvals[key] = SpanSpec(f"wopdsl.approval {tool}",
                                        span_id(self.run_id, event["eventId"]),
                                        turn.span.span_id, now, attributes=attributes)

    def _approval_decided(self, event: RunEventDoc, now: int, node: str,
                          out: list[SpanSpec]) -> None:
        payload = event["payload"]
        span = self._approvals.pop(str(payload.get("gateId", "")), None)
        if span is None:
            return
        granted = event["type"] == "approval.granted"
        span.attributes["wopdsl.approval.decision"] = "granted" if granted else "rejected"
        span.attributes["wopdsl.approval.principal"] = str(payload.get("principal", ""))
        span.end_ns = now
        span.released_at = event["sequence"]
        out.append(span)

    def _suspension(self, event: RunEventDoc, now: int, node: str,
                    out: list[SpanSpec]) -> None:
        turn = self._turns.get(node)
        if turn is None:
            return
        payload = event["payload"]
        turn.resumed = event["type"] == "node.resumed"
        name = "wopdsl.turn.resumed" if turn.resumed else "wopdsl.turn.suspended"
        turn.span.events.append(SpanEvent(name, now, {
            "wopdsl.interruptId": str(payload.get("interruptId", "")),
            "wopdsl.event.sequence": event["sequence"]}))
