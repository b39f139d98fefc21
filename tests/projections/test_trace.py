"""Spans derived from the log (``wopdsl.projections.trace``): tool calls mapped by their
OpenWOP schema, prompt text only with ``observability = "full"``, and live export from a run
driven in this process (what a notebook does), received by a real OTLP/HTTP receiver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (wopdsl[otel]) is not installed")

from tests.openwop_schemas import load_schemas
from tests.projections.otlp_receiver import OtlpReceiver
from wopdsl import Council, Post, Reply, SqliteStore, Turn
from wopdsl._ids import event_id, iso_ms
from wopdsl.projections.trace.derive import TraceProjection
from wopdsl.projections.trace.spans import SpanSpec, span_id, trace_id

T0 = 1_767_225_600_000


def _log(profile: dict[str, Any]) -> list[dict[str, Any]]:
    """A run whose llm member calls two tools in parallel (one fails) between two calls."""
    council = {"council": {"id": "tooling", "version": 1}, "models": {"m": profile},
               "rooms": [{"id": "desk", "members": ["agent"]}],
               "members": [{"id": "agent", "role": "researcher", "engine": "llm",
                            "model": "m"}]}
    bodies = {"composed": "S\n\nU", "systemPrompt": "S", "userPrompt": "U",
              "variableBindings": {}} if profile.get("observability") == "full" else {}
    usage = {"provider": "openai", "model": "test-model", "inputTokens": 100,
             "outputTokens": 20, "totalTokens": 120, "nodeId": "agent"}
    calls = [("agent.toolCalled", {"agentId": "host:agent", "toolName": "search", "callId": c,
                                   "inputs": {"q": f"query {c}"}, "transport": t})
             for c, t in (("c1", "native"), ("c2", "mcp"))]
    returns = [("agent.toolReturned", {"agentId": "host:agent", "toolName": "search",
                                       "callId": "c1", "outcome": {"hits": 3},
                                       "status": "ok", "durationMs": 4}),
               ("agent.toolReturned", {"agentId": "host:agent", "toolName": "search",
                                       "callId": "c2", "status": "error", "error": {
                                           "code": "TOOL_TIMEOUT", "message": "too slow"}})]
    steps: list[tuple[str, dict[str, Any]]] = [
        ("run.started", {"workflowId": "tooling", "inputs": {"task": "Find out."},
                         "metadata": {"council": council, "councilDigest": "sha256:" + "0" * 64}}),
        ("node.started", {"nodeId": "agent", "typeId": "council.member", "attempt": 0,
                          "turn": 1, "position": 1, "triggers": []}),
        ("prompt.composed", {"nodeId": "agent", "refs": ["prompt:wopdsl.council.system"],
                             "kind": "system+user", "hash": "sha256:" + "1" * 64, **bodies}),
        ("provider.usage", usage),
        *calls, *returns,
        ("provider.usage", {**usage, "inputTokens": 150}),
        ("node.completed", {"nodeId": "agent", "outputs": {"summary": "Found it."}}),
        ("run.completed", {"outputs": {"task": "Find out.", "agents": []}}),
    ]
    events = []
    for sequence, (kind, payload) in enumerate(steps):
        event: dict[str, Any] = {"eventId": event_id("tr", sequence), "runId": "tr",
                                 "type": kind, "payload": payload,
                                 "timestamp": iso_ms(T0 + 10 * sequence), "sequence": sequence,
                                 "schemaVersion": 1}
        if "nodeId" in payload or kind.startswith("agent."):
            event["nodeId"] = "agent"
        events.append(event)
    return events


def _derive(events: list[dict[str, Any]], after: int = -1) -> list[SpanSpec]:
    projection = TraceProjection(export_after=after)
    spans = [s for e in events for s in projection.apply(e)]  # type: ignore[arg-type]
    return spans + projection.finish()


def test_tool_calls_become_execute_tool_spans() -> None:
    events = _log({"model": "test-model", "observability": "full"})
    schemas = load_schemas()
    assert all(not schemas.event_errors(e) for e in events if e["type"].startswith("agent."))
    spans = _derive(events)
    by_name: dict[str, list[SpanSpec]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    [turn] = by_name["invoke_agent agent"]
    tools = sorted(by_name["execute_tool search"], key=lambda s: s.start_ns)
    assert [t.parent_id for t in tools] == [turn.span_id, turn.span_id]
    assert [t.span_id for t in tools] == [span_id("tr", event_id("tr", 4)),
                                          span_id("tr", event_id("tr", 5))]
    ok, failed = tools
    assert ok.attributes["gen_ai.operation.name"] == "execute_tool"
    assert ok.attributes["gen_ai.tool.name"] == "search"
    assert ok.attributes["gen_ai.tool.call.id"] == "c1"
    assert ok.attributes["gen_ai.tool.type"] == "function"
    assert failed.attributes["gen_ai.tool.type"] == "extension"  # an MCP tool
    assert ok.attributes["gen_ai.tool.call.arguments"] == '{"q": "query c1"}'
    assert ok.attributes["gen_ai.tool.call.result"] == '{"hits": 3}'
    assert (ok.start_ns, ok.end_ns) == ((T0 + 40) * 10**6, (T0 + 60) * 10**6)
    assert ok.error is None and failed.error == "TOOL_TIMEOUT: too slow"
    assert failed.attributes["error.type"] == "TOOL_TIMEOUT"
    first, second = sorted(by_name["chat test-model"], key=lambda s: s.start_ns)
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert second.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert second.start_ns == (T0 + 70) * 10**6  # after the last tool returned
    assert first.attributes["gen_ai.system_instructions"] == '[{"type": "text", "content": "S"}]'
    assert '"content": "U"' in str(first.attributes["gen_ai.input.messages"])
    assert "Found it." in str(second.attributes["gen_ai.output.messages"])
    assert turn.attributes["gen_ai.usage.input_tokens"] == 250
    root = by_name["invoke_workflow tooling"][0]
    assert root.parent_id is None and root.span_id == span_id("tr", event_id("tr", 0))
    assert len(spans) == 1 + 1 + 2 + 2


def test_an_approval_wait_is_a_span_and_a_rejection_an_error() -> None:
    # As a real run writes it (tests/tools/test_otel.py has the live one): the model asks
    # for a call, an MCP session opens, the call waits for `oncall`, who rejects it.
    header = _log({"model": "test-model"})[:4]  # run.started … the first provider.usage
    key = "approval/call/agent/1/0"
    title = "agent asks to call restart_service"
    returned = {"agentId": "host:agent", "toolName": "restart_service",
                "callId": "call/agent/1/0", "status": "forbidden", "durationMs": 0,
                "error": {"code": "REJECTED", "message": "not called"}}
    steps: list[tuple[str, dict[str, Any]]] = [
        ("tool.session.opened", {"sessionId": "s", "toolId": "mcp:ops"}),
        ("interrupt.requested", {"kind": "approval", "key": key, "data": {}}),
        ("approval.requested", {"nodeId": "agent", "interruptId": key, "title": title,
                                "artifactId": "call/agent/1/0", "approversList": ["oncall"]}),
        ("node.suspended", {"nodeId": "agent", "interruptId": key, "reason": "approval"}),
        ("approval.rejected", {"gateId": key, "principal": "oncall", "reason": "no"}),
        ("node.resumed", {"nodeId": "agent", "interruptId": key}),
        ("node.retried", {"nodeId": "agent", "attempt": 1}),  # the turn goes on
        ("node.started", {"nodeId": "agent", "typeId": "council.member", "attempt": 1,
                          "turn": 1, "position": 1, "triggers": []}),
        ("agent.toolCalled", {"agentId": "host:agent", "toolName": "restart_service",
                              "callId": "call/agent/1/0", "transport": "native"}),
        ("agent.toolReturned", returned),
        ("provider.usage", header[3]["payload"]),
        ("node.completed", {"nodeId": "agent", "outputs": {"summary": "Left it."}}),
        ("run.completed", {"outputs": {}}),
    ]
    events = header + [{"eventId": event_id("tr", 4 + n), "runId": "tr", "type": kind,
                        "payload": payload, "timestamp": iso_ms(T0 + 10 * (4 + n)),
                        "sequence": 4 + n, "schemaVersion": 1,
                        **({} if kind.startswith("run.") else {"nodeId": "agent"})}
                       for n, (kind, payload) in enumerate(steps)]
    spans = {s.name: s for s in _derive(events)}
    first = min((s for s in _derive(events) if s.name == "chat test-model"),
                key=lambda s: s.start_ns)
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    turn = spans["invoke_agent agent"]
    wait = spans["wopdsl.approval restart_service"]
    assert wait.parent_id == turn.span_id and wait.span_id == span_id("tr", event_id("tr", 6))
    assert (wait.start_ns, wait.end_ns) == ((T0 + 60) * 10**6, (T0 + 80) * 10**6)
    assert wait.attributes["wopdsl.approval.decision"] == "rejected"
    assert wait.attributes["wopdsl.approval.approver"] == "oncall"
    assert wait.attributes["gen_ai.tool.call.id"] == "call/agent/1/0"
    call = spans["execute_tool restart_service"]
    assert call.error == "REJECTED: not called" and call.attributes["error.type"] == "REJECTED"
    assert [e.name for e in turn.events] == ["wopdsl.turn.suspended", "wopdsl.turn.resumed"]


def test_without_full_observability_no_text_leaves() -> None:
    spans = _derive(_log({"model": "test-model"}))
    text = repr([s.attributes for s in spans] + [s.events for s in spans])
    for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                "gen_ai.input.messages", "gen_ai.output.messages",
                "gen_ai.system_instructions"):
        assert key not in text
    assert "query c1" not in text and "Found it." not in text


def test_ids_do_not_depend_on_where_an_export_starts() -> None:
    events = _log({"model": "test-model"})
    whole = {s.span_id: s for s in _derive(events)}
    assert len(whole) == 6
    # A process that took the run over after #5 exports only what completed after it,
    # with the same ids and times; together the two exports are the whole trace.
    live = TraceProjection()
    early = {s.span_id for e in events[:6] for s in live.apply(e)}  # type: ignore[arg-type]
    late = {s.span_id: s for s in _derive(events, after=5)}
    assert early and early.isdisjoint(late)
    assert early | set(late) == set(whole)
    for key, span in late.items():
        assert (span.start_ns, span.end_ns, span.parent_id) == \
            (whole[key].start_ns, whole[key].end_ns, whole[key].parent_id)
    assert TraceProjection().trace_id == 0 and trace_id("tr") != 0


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint)
        yield rx


async def test_a_run_driven_here_exports_live(receiver: OtlpReceiver, tmp_path: Path) -> None:
    # What a notebook does: `await council.arun()` in this process, the endpoint in its
    # environment.
    council = Council("here", task="Talk.")
    council.room("r", members=["a", "b"])

    @council.member("a", role="asker")
    def ask(turn: Turn) -> Reply:
        return Reply(summary="Asked.", posts=[Post(room="r", text="hi @b", mentions=["b"])])

    @council.member("b", role="answerer", initial_turn=False)
    def answer(turn: Turn) -> Reply:
        return Reply(summary="Answered.")

    store = SqliteStore(tmp_path / "runs.db")
    try:
        run = await council.arun(store, "nb")
        assert run.status == "completed"
    finally:
        store.close()
    # The spans go out on the writer's own thread: the run did not wait for them.
    spans = receiver.wait_for(3)
    assert sorted(s.name for s in spans) == ["invoke_agent a", "invoke_agent b",
                                             "invoke_workflow here"]
    assert {s.trace_id for s in spans} == {f"{trace_id('nb'):032x}"}


@pytest.mark.parametrize(("kind", "payload", "reason"), [
    ("agent.toolCalled", {}, "tool_calls"),
    ("tool.session.opened", {}, "tool_calls"),
    ("interrupt.requested", {"kind": "approval"}, "tool_calls"),
    ("approval.requested", {}, "tool_calls"),
    ("budget.exhausted", {"dimension": "toolCalls"}, "tool_calls"),  # a call over budget
    ("budget.exhausted", {"dimension": "tokens"}, "stop"),
    ("interrupt.requested", {"kind": "conversation.start"}, "stop"),
    ("envelope.retry.attempted", {"reason": "truncation"}, "length"),
    ("node.completed", {}, "stop"),
])
def test_the_finish_reason_is_what_follows_the_call(kind: str, payload: dict[str, Any],
                                                    reason: str) -> None:
    from wopdsl.projections.trace._calls import finish_reason

    assert finish_reason({"type": kind, "payload": payload}) == reason  # type: ignore[typeddict-item]


def test_attribute_names_are_the_semantic_conventions() -> None:
    # The span derivation keeps its names without importing OpenTelemetry (`wop trace
    # --tree` needs no extra): each one is the semantic-conventions package's constant.
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
    from opentelemetry.semconv.attributes import error_attributes

    from wopdsl.projections.trace import _names

    names = {name: value for name, value in vars(_names).items() if name.isupper()}
    assert len(names) > 20
    for name, value in names.items():
        source = error_attributes if name.startswith("ERROR_") else gen_ai_attributes
        assert getattr(source, name) == value, name
