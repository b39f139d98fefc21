"""Derive OpenTelemetry GenAI spans from a run's events, one event at a time.

The span tree (attribute names from the ``opentelemetry-semantic-conventions`` package):

* ``invoke_workflow {council}``: the run (root): ``gen_ai.operation.name``,
  ``gen_ai.workflow.name``, ``gen_ai.conversation.id`` (the run id); span events for human
  posts, interrupts, resumes and replay divergences; a fork links to its source's root.
* ``invoke_agent {member}``: a member turn, from its ``node.started`` to its
  ``node.completed`` / ``node.failed`` (retries are span events, not new spans).
* ``chat {model}``: a model call, from the turn's previous step to its ``provider.usage``:
  provider, model, usage tokens, finish reason (``stop``; ``tool_calls`` when tool calls
  follow; ``length`` / ``content_filter`` when the answer was cut off or refused); a
  transport failure (``node.retried`` with an error) is a failed ``chat`` span.
* ``execute_tool {tool}``: an ``agent.toolCalled`` … ``agent.toolReturned`` pair, and
  ``wopdsl.approval {tool}``: the wait for a person's decision on a call, under the turn
  (:mod:`~wopdsl.projections.trace._tools`).

Prompt and answer text (``gen_ai.system_instructions``, ``gen_ai.input.messages``,
``gen_ai.output.messages``, tool arguments and results, human post text) are exported only
for members whose model profile says ``observability = "full"``, and only as the log holds
them; keys are never in the log. Timing comes from the events' timestamps.

:meth:`TraceProjection.apply` returns the spans an event completes whose completing event
is after ``export_after``: a process that continues a run (resume, reply) exports only what
it saw happen, and a fork exports nothing of the log it copied from its source.
"""

from __future__ import annotations

from wopdsl._ids import event_id, parse_iso_ms
from wopdsl.projections.trace import _names as gen_ai
from wopdsl.projections.trace._calls import Member, ModelCalls, Turn, finish_reason
from wopdsl.projections.trace._names import ERROR_TYPE
from wopdsl.projections.trace._tools import ToolSpans
from wopdsl.projections.trace.spans import AttrValue, SpanEvent, SpanLink, SpanSpec, span_id
from wopdsl.projections.trace.spans import trace_id as trace_id_of
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.protocol.payloads import MEMBER_TYPE_ID, turn_sender

__all__ = ["TraceProjection"]

_AFTER_USAGE = frozenset({"budget.consumed", "output.chunk"})
"""Events that follow a model call without saying how it ended."""
_ROOT_EVENTS = {"run.resumed": "wopdsl.run.resumed", "replay.diverged": "wopdsl.replay.diverged",
                "interrupt.requested": "wopdsl.interrupt.requested",
                "interrupt.resolved": "wopdsl.interrupt.resolved"}


class TraceProjection(ModelCalls, ToolSpans):
    """A run's spans, derived as its events are applied (see the module docs).

    Args:
        export_after: Spans completed by events up to this sequence are not returned
            (another process, or the fork's source, exported them).
    """

    def __init__(self, export_after: int = -1) -> None:
        self.export_after = export_after
        self.run_id = ""
        self.trace_id = 0
        self.root: SpanSpec | None = None
        self.last_sequence = -1
        self._last_ns = 0
        self._members: dict[str, Member] = {}
        self._turns: dict[str, Turn] = {}
        self._tools: dict[str, tuple[str, SpanSpec]] = {}
        self._approvals: dict[str, SpanSpec] = {}
        self._content = False

    # -- public --------------------------------------------------------------------------

    def apply(self, event: RunEventDoc) -> list[SpanSpec]:
        """Apply one event (in sequence order); return the spans it completes for export."""
        self.last_sequence = event["sequence"]
        now = parse_iso_ms(event["timestamp"]) * 1_000_000
        self._last_ns = now
        out: list[SpanSpec] = []
        kind = event["type"]
        if kind == "run.started":
            self._started(event, now)
            return out
        root = self.root
        if root is None:
            return out
        if root.start_ns == 0 and event["sequence"] > self.export_after:
            root.start_ns = now  # a fork's root starts where the fork goes on
        payload = event["payload"]
        node = str(event.get("nodeId") or payload.get("nodeId")
                   or str(payload.get("agentId", "")).removeprefix("host:"))
        turn = self._turns.get(node)
        if turn is not None and turn.pending is not None and kind not in _AFTER_USAGE:
            out.append(self._finish_call(turn, finish_reason(event), event))
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event, now, node, out)
        elif kind in _ROOT_EVENTS:
            self._root_event(_ROOT_EVENTS[kind], now, event)
        if kind in ("run.completed", "run.failed", "run.cancelled"):
            out.extend(self._end(event, now))
        return [s for s in out if s.released_at > self.export_after]

    def finish(self) -> list[SpanSpec]:
        """End what an export after the fact can: pending model calls and the root span.

        For a run that has not ended, the root ends at the last event; turns still open
        are left out.
        """
        out = [self._finish_call(t, "stop", None) for t in self._turns.values() if t.pending]
        if self.root is not None and self.root.end_ns == 0:
            self.root.start_ns = self.root.start_ns or self._last_ns  # a fork not gone on
            self.root.end_ns = self._last_ns
            self.root.released_at = self.last_sequence
            out.append(self.root)
        return [s for s in out if s.released_at > self.export_after]

    # -- the run -------------------------------------------------------------------------

    def _started(self, event: RunEventDoc, now: int) -> None:
        payload = event["payload"]
        self.run_id = event["runId"]
        self.trace_id = trace_id_of(self.run_id)
        metadata = payload.get("metadata") or {}
        council = metadata.get("council") or {}
        models = council.get("models") or {}
        for member in council.get("members", []):
            profile = models.get(member.get("model") or "", {})
            full = profile.get("observability") == "full"
            self._members[member["id"]] = Member(member.get("engine", "python"),
                                                  member.get("role", ""), full,
                                                  str(profile.get("model", "")))
            self._content = self._content or full
        name = payload["workflowId"]
        root = SpanSpec(f"invoke_workflow {name}", span_id(self.run_id, event["eventId"]), None,
                        now, attributes={
                            gen_ai.GEN_AI_OPERATION_NAME: "invoke_workflow",
                            gen_ai.GEN_AI_WORKFLOW_NAME: name,
                            gen_ai.GEN_AI_CONVERSATION_ID: self.run_id,
                            "wopdsl.run.id": self.run_id,
                            "wopdsl.council.digest": str(metadata.get("councilDigest", "")),
                        })
        origin = metadata.get("forkedFrom") or {}
        if origin.get("runId"):
            source = str(origin["runId"])
            cut = int(origin.get("atSequence", 0))
            self.export_after = max(self.export_after, cut)
            root.start_ns = 0  # set by the first event after the cut
            root.attributes.update({"wopdsl.fork.source_run_id": source,
                                    "wopdsl.fork.at_sequence": cut,
                                    "wopdsl.fork.mode": str(origin.get("mode", "branch"))})
            root.links.append(SpanLink(trace_id_of(source), span_id(source, event_id(source, 0)),
                                       {"wopdsl.link": "forked-from",
                                        "wopdsl.fork.at_sequence": cut}))
        self.root = root

    def _end(self, event: RunEventDoc, now: int) -> list[SpanSpec]:
        root = self.root
        assert root is not None
        out = [self._finish_call(t, "stop", event) for t in self._turns.values() if t.pending]
        status = event["type"].removeprefix("run.")
        root.attributes["wopdsl.run.status"] = status
        error = event["payload"].get("error") or {}
        if status != "completed":
            code = str(error.get("code") or status.upper())
            root.error = f"{code}: {error.get('message', status)}"
            root.attributes[ERROR_TYPE] = code
        root.end_ns = now
        root.released_at = event["sequence"]
        out.append(root)
        return out

    def _root_event(self, name: str, now: int, event: RunEventDoc) -> None:
        assert self.root is not None
        if event["sequence"] <= self.export_after and self.root.start_ns == 0:
            return  # copied from a fork's source: that trace has it
        payload = event["payload"]
        attributes: dict[str, AttrValue] = {"wopdsl.event.sequence": event["sequence"]}
        for key in ("kind", "key", "interruptId", "sourceRunId", "atSequence",
                    "divergenceKind"):
            value = payload.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                attributes[f"wopdsl.{key}"] = value
        self.root.events.append(SpanEvent(name, now, attributes))

    # -- member turns --------------------------------------------------------------------

    def _node_started(self, event: RunEventDoc, now: int, node: str,
                      out: list[SpanSpec]) -> None:
        payload = event["payload"]
        member = self._members.get(node)
        if payload.get("typeId") != MEMBER_TYPE_ID or member is None or \
                member.engine in ("human", "external"):
            return
        turn = self._turns.get(node)
        if turn is not None:  # the next attempt of the same turn
            turn.span.attributes["wopdsl.turn.attempt"] = int(payload.get("attempt", 0))
            turn.mark_ns = now
            return
        assert self.root is not None
        attributes: dict[str, AttrValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: "invoke_agent", gen_ai.GEN_AI_AGENT_NAME: node,
            gen_ai.GEN_AI_AGENT_ID: f"host:{node}", gen_ai.GEN_AI_AGENT_DESCRIPTION: member.role,
            gen_ai.GEN_AI_CONVERSATION_ID: self.run_id, "wopdsl.member.engine": member.engine,
            "wopdsl.turn": int(payload.get("turn", 0)),
            "wopdsl.turn.position": int(payload.get("position", 0)),
            "wopdsl.turn.attempt": int(payload.get("attempt", 0)),
            "wopdsl.turn.triggers": [str(t) for t in payload.get("triggers", [])]}
        if member.model:
            attributes[gen_ai.GEN_AI_REQUEST_MODEL] = member.model
        start = max(now, self.root.start_ns)
        span = SpanSpec(f"invoke_agent {node}", span_id(self.run_id, event["eventId"]),
                        self.root.span_id, start, attributes=attributes)
        self._turns[node] = Turn(span, start)

    def _node_ended(self, event: RunEventDoc, now: int, node: str,
                    out: list[SpanSpec]) -> None:
        turn = self._turns.pop(node, None)
        if turn is None:
            return
        span = turn.span
        payload = event["payload"]
        if event["type"] == "node.completed":
            outputs = payload.get("outputs") or {}
            posts = outputs.get("posts", []) if isinstance(outputs, dict) else []
            span.attributes["wopdsl.turn.posts"] = len(posts)
        else:
            error = payload.get("error") or {}
            code = str(error.get("code") or "CANCELLED")
            span.error = f"{code}: {error.get('message', 'the turn was cancelled')}"
            span.attributes[ERROR_TYPE] = code
        span.end_ns = now
        span.released_at = event["sequence"]
        out.append(span)

    # -- posts ---------------------------------------------------------------------------

    def _exchanged(self, event: RunEventDoc, now: int, node: str,
                   out: list[SpanSpec]) -> None:
        turn = event["payload"].get("turn") or {}
        sender = turn_sender(turn)
        member = self._members.get(sender)
        if member is None or member.engine not in ("human", "external"):
            return
        if event["sequence"] <= self.export_after and self.root and self.root.start_ns == 0:
            return
        content = turn.get("content") or {}
        attributes: dict[str, AttrValue] = {
            "wopdsl.member": sender, "wopdsl.room": str(turn.get("groupId", "")),
            "wopdsl.message.id": str(turn.get("messageId", "")),
            "wopdsl.mentions": [str(m) for m in content.get("mentions", [])]
            if isinstance(content, dict) else []}
        if self._content and isinstance(content, dict):
            attributes["wopdsl.text"] = str(content.get("text", ""))
        name = "wopdsl.human.post" if member.engine == "human" else "wopdsl.external.post"
        assert self.root is not None
        self.root.events.append(SpanEvent(name, now, attributes))


_HANDLERS = {
    "node.started": TraceProjection._node_started,
    "node.completed": TraceProjection._node_ended,
    "node.failed": TraceProjection._node_ended,
    "node.cancelled": TraceProjection._node_ended,
    "node.retried": ModelCalls._step,
    "envelope.retry.attempted": ModelCalls._step,
    "envelope.retry.exhausted": ModelCalls._step,
    "prompt.composed": ModelCalls._prompt,
    "output.chunk": ModelCalls._chunk,
    "provider.usage": ModelCalls._usage,
    "agent.toolCalled": ToolSpans._tool_called,
    "agent.toolReturned": ToolSpans._tool_returned,
    "approval.requested": ToolSpans._approval_asked,
    "approval.granted": ToolSpans._approval_decided,
    "approval.rejected": ToolSpans._approval_decided,
    "node.suspended": ToolSpans._suspension,
    "node.resumed": ToolSpans._suspension,
    "conversation.exchanged": TraceProjection._exchanged,
}
