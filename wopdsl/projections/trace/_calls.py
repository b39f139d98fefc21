"""Private: the model-call half of :class:`~wopdsl.projections.trace.derive.TraceProjection`.

A ``chat`` span runs from the turn's previous step (its prompt, a repair, a retry, a tool's
return) to the call's ``provider.usage``; it is held until the member's next event says how
the call ended (its finish reason), then released.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Final

from wopdsl.projections.trace import _names as gen_ai
from wopdsl.projections.trace._names import ERROR_TYPE
from wopdsl.projections.trace.spans import AttrValue, SpanEvent, SpanSpec, span_id
from wopdsl.protocol.envelope import RunEventDoc

__all__ = ["Member", "ModelCalls", "Turn", "finish_reason"]

_FINISH: Final = {"truncation": "length", "refusal": "content_filter"}
_TOOL_STEPS: Final = frozenset({"agent.toolCalled", "tool.session.opened", "approval.requested"})
"""What follows a model call that asked for tool calls (an MCP session opens first, an
approval is asked before its call)."""


@dataclass(slots=True)
class Member:
    """What the trace needs to know of a member: engine, role, and its model profile's."""

    engine: str
    role: str
    full: bool
    model: str


@dataclass(slots=True)
class Turn:
    """A member turn in flight and its model call in progress."""

    span: SpanSpec
    mark_ns: int
    """When the turn's current step began (the next model call starts there)."""
    prompt: dict[str, str] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    pending: SpanSpec | None = None
    """The last model call, until the next event says how it ended."""
    resumed: bool = False
    """The turn was resumed after a wait (an approval): its next attempt continues it."""


class ModelCalls:
    """Prompts, streamed text, repairs, retries and usage of the turns in flight."""

    run_id: str
    _members: dict[str, Member]
    _turns: dict[str, Turn]

    def _prompt(self, event: RunEventDoc, now: int, node: str, out: list[SpanSpec]) -> None:
        turn = self._turns.get(node)
        if turn is None:
            return
        turn.mark_ns = now
        payload = event["payload"]
        if self._members[node].full:
            turn.prompt = {k: str(payload[k]) for k in ("systemPrompt", "userPrompt")
                           if k in payload}

    def _chunk(self, event: RunEventDoc, now: int, node: str, out: list[SpanSpec]) -> None:
        turn = self._turns.get(node)
        if turn is not None and self._members[node].full:
            turn.text.append(str(event["payload"].get("chunk", "")))

    def _step(self, event: RunEventDoc, now: int, node: str, out: list[SpanSpec]) -> None:
        """A repair, a retry or a tool's return: the next model call starts here."""
        turn = self._turns.get(node)
        if turn is None:
            return
        payload = event["payload"]
        if event["type"] == "node.retried" and turn.resumed and not payload.get("lastError"):
            turn.resumed = False  # the turn goes on after its wait: no retry to report
            turn.mark_ns = now
            return
        if event["type"] == "node.retried":
            error = payload.get("lastError") or {}
            turn.span.events.append(SpanEvent("wopdsl.turn.retried", now, {
                "wopdsl.attempt": int(payload.get("attempt", 0)),
                "wopdsl.delay_ms": int(payload.get("delayMs", 0)),
                ERROR_TYPE: str(error.get("code") or "interrupted")}))
            if error:  # a model call that failed in transport
                call = self._call_span(turn, node, event, now)
                call.error = f"{error.get('code')}: {error.get('message', '')}"
                call.attributes[ERROR_TYPE] = str(error.get("code", ""))
                out.append(call)
        else:
            reason = payload.get("reason") or payload.get("finalReason") or ""
            turn.span.events.append(SpanEvent(f"wopdsl.{event['type']}", now,
                                              {"wopdsl.reason": str(reason)}))
        turn.mark_ns = now

    def _usage(self, event: RunEventDoc, now: int, node: str, out: list[SpanSpec]) -> None:
        turn = self._turns.get(node)
        if turn is None:
            return
        payload = event["payload"]
        call = self._call_span(turn, node, event, now)
        call.attributes.update({
            gen_ai.GEN_AI_PROVIDER_NAME: str(payload.get("provider", "")),
            gen_ai.GEN_AI_RESPONSE_MODEL: str(payload.get("model", "")),
            gen_ai.GEN_AI_USAGE_INPUT_TOKENS: int(payload.get("inputTokens", 0)),
            gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: int(payload.get("outputTokens", 0))})
        if "costEstimateUsd" in payload:
            call.attributes["wopdsl.cost.estimate_usd"] = float(payload["costEstimateUsd"])
        turn.span.attributes[gen_ai.GEN_AI_PROVIDER_NAME] = str(payload.get("provider", ""))
        totals = turn.span.attributes
        for key, field_ in ((gen_ai.GEN_AI_USAGE_INPUT_TOKENS, "inputTokens"),
                            (gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, "outputTokens")):
            before = totals.get(key, 0)
            totals[key] = (before if isinstance(before, int) else 0) + \
                int(payload.get(field_, 0))
        turn.pending = call
        turn.mark_ns = now

    def _call_span(self, turn: Turn, node: str, event: RunEventDoc, now: int) -> SpanSpec:
        member = self._members[node]
        model = member.model or str(event["payload"].get("model", ""))
        attributes: dict[str, AttrValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: "chat", gen_ai.GEN_AI_REQUEST_MODEL: model,
            gen_ai.GEN_AI_CONVERSATION_ID: self.run_id, gen_ai.GEN_AI_OUTPUT_TYPE: "json",
            gen_ai.GEN_AI_AGENT_NAME: node}
        if turn.prompt:
            if "systemPrompt" in turn.prompt:
                attributes[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS] = json.dumps(
                    [{"type": "text", "content": turn.prompt["systemPrompt"]}])
            if "userPrompt" in turn.prompt:
                attributes[gen_ai.GEN_AI_INPUT_MESSAGES] = json.dumps([{
                    "role": "user",
                    "parts": [{"type": "text", "content": turn.prompt["userPrompt"]}]}])
        return SpanSpec(f"chat {model}", span_id(self.run_id, event["eventId"]),
                        turn.span.span_id, turn.mark_ns, now, "client", attributes,
                        released_at=event["sequence"])

    def _finish_call(self, turn: Turn, reason: str, event: RunEventDoc | None) -> SpanSpec:
        call = turn.pending
        assert call is not None
        turn.pending = None
        call.attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = [reason]
        answer = "".join(turn.text)
        turn.text = []
        if not answer and event is not None and event["type"] == "node.completed" and \
                call.attributes.get(gen_ai.GEN_AI_INPUT_MESSAGES):
            answer = json.dumps(event["payload"].get("outputs"), ensure_ascii=False)
        if answer and self._members[str(call.attributes[gen_ai.GEN_AI_AGENT_NAME])].full:
            call.attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES] = json.dumps([{
                "role": "assistant", "parts": [{"type": "text", "content": answer}],
                "finish_reason": reason}])
        if event is not None:
            call.released_at = event["sequence"]
        return call


def finish_reason(event: RunEventDoc) -> str:
    """How the previous model call ended, from the event that follows it."""
    kind = event["type"]
    payload = event["payload"]
    if kind in _TOOL_STEPS or payload.get("kind") in ("approval", "budget-tool-calls") or \
            (kind == "budget.exhausted" and payload.get("dimension") == "toolCalls"):
        return "tool_calls"
    reason = payload.get("reason") or payload.get("finalReason")
    if kind.startswith("envelope.retry.") and reason:
        return _FINISH.get(str(reason), "stop")
    return "stop"
