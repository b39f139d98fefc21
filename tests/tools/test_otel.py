"""OpenTelemetry with tools, end to end: a real `wop run --otel` child whose llm member calls a
python tool (approved by a person with `wop approve`) and the tools of a real MCP server
(official SDK, streamable HTTP with a secret header), against the scripted model server
answering with `tool_calls`; the spans are received by a real OTLP/HTTP receiver (protobuf
decoded with `opentelemetry-proto`), live and again from the log by `wop trace`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (wopdsl[otel]) is not installed")
pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.cli.conftest import stored_events
from tests.projections.otlp_receiver import OtlpReceiver, Received
from tests.tools.conftest import (
    APPROVED_BY_ONCALL,
    EFFECTS_ENV,
    KEY_ENV,
    MCP_TOKEN,
    effects_in,
)
from wopdsl._ids import parse_iso_ms
from wopdsl.projections.trace.spans import span_id, trace_id
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow  # real `wop` children and a real MCP server process

API_KEY = "sk-SENTINEL-tools-otel-3e9d1c7b5a"
AUTH_ENV = "TRACE_MCP_AUTH"

OPS = '''\
import json, os


def restart_service(name: str) -> str:
    """Restart a service.

    Args:
        name: The service to restart.
    """
    with open(os.environ["WOPDSL_TEST_EFFECTS"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"tool": "restart_service", "name": name}) + "\\n")
    return f"restarted {name}"
'''

COUNCIL = '''\
[council]
id = "ops-traced"
task = "Fix the outage."

[mcp.remote]
url = "{url}"
headers = {{ Authorization = "{auth_env}" }}

[models.m]
model = "test-model"
api_key_env = "{key_env}"
retry_backoff_ms = 1
observability = "{observability}"

[[rooms]]
id = "ops"
members = ["sre", "oncall"]

[[members]]
id = "sre"
role = "sre"
engine = "llm"
model = "m"
tools = ["ops:restart_service", "mcp:remote/count", "mcp:remote/fail"]
''' + APPROVED_BY_ONCALL

CALLS = ToolCalls(("count", {"label": "disk-usage-7c2"}), ("fail", {"message": "disk full"}),
                  ("restart_service", {"name": "api-gateway-41b"}))
DONE = Answer({"summary": "api restarted", "posts": [
    {"roomId": "ops", "text": "api is back", "mentions": []}]})


def _setup(folder: Path, model: ScriptedModelServer, mcp_url: str, receiver: OtlpReceiver, *,
           observability: str) -> dict[str, str]:
    (folder / "ops.py").write_text(OPS, encoding="utf-8")
    (folder / "ops.toml").write_text(COUNCIL.format(
        url=mcp_url, auth_env=AUTH_ENV, key_env=KEY_ENV, observability=observability),
        encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "WOP_"))}
    env.update({"PYTHONIOENCODING": "utf-8", "OPENAI_BASE_URL": model.url, KEY_ENV: API_KEY,
                AUTH_ENV: f"Bearer {MCP_TOKEN}", EFFECTS_ENV: str(folder / "effects.jsonl"),
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
    return env


def _wop(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wopdsl", *args, "--store", "runs.db"],
                          cwd=folder, env=env, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)


def _ids(spans: list[Received]) -> set[tuple[str, str, str, int, int]]:
    return {(s.trace_id, s.span_id, s.parent_id, s.start, s.end) for s in spans}


def _by_event(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


def _ns(event: dict) -> int:
    return parse_iso_ms(event["timestamp"]) * 1_000_000


def _wire(receiver: OtlpReceiver) -> bytes:
    return b"".join(body for _, body in receiver.requests)


def test_tool_calls_and_an_approval_are_traced_live_and_from_the_log(
        tmp_path: Path, http_server: str) -> None:
    with OtlpReceiver() as receiver, ScriptedModelServer() as model:
        model.add(CALLS, DONE)
        env = _setup(tmp_path, model, http_server, receiver, observability="hashed")
        first = _wop(tmp_path, env, "run", "ops.toml", "--run-id", "r1", "--otel")
        assert first.returncode == 3, first.stdout + first.stderr  # waits for oncall
        waiting = list(receiver.spans)
        decided = _wop(tmp_path, env, "approve", "r1", "--as", "oncall", "--otel")
        assert decided.returncode == 0, decided.stdout + decided.stderr
        live = waiting + [s for s in receiver.spans if s not in waiting]
        events = stored_events(tmp_path / "runs.db", "r1")

        assert [e["tool"] for e in effects_in(tmp_path / "effects.jsonl")] == [
            "count", "restart_service"]
        trace = f"{trace_id('r1'):032x}"
        assert {s.trace_id for s in live} == {trace}
        assert len({s.span_id for s in live}) == len(live)  # nothing exported twice
        # The first process exported what ended before the wait: the first model call and
        # the MCP calls (made while the python tool's call waits).
        assert sorted(s.name for s in waiting) == [
            "chat test-model", "execute_tool count", "execute_tool fail"]

        [root] = [s for s in live if not s.parent_id]
        assert root.name == "invoke_workflow ops-traced"
        assert root.attributes["wopdsl.run.status"] == "completed"
        [turn] = [s for s in live if s.parent_id == root.span_id]
        [started] = [e for e in _by_event(events, "node.started") if e["nodeId"] == "sre"][:1]
        assert turn.name == "invoke_agent sre"
        assert turn.span_id == f"{span_id('r1', started['eventId']):016x}"
        below = sorted((s for s in live if s.parent_id == turn.span_id), key=lambda s: s.start)
        assert {s.name for s in below} == {
            "chat test-model", "execute_tool count", "execute_tool fail",
            "execute_tool restart_service", "wopdsl.approval restart_service"}
        assert len(live) == 1 + 1 + len(below) and len(below) == 6  # two chat spans
        chats = [s for s in below if s.name == "chat test-model"]
        assert [c.attributes["gen_ai.response.finish_reasons"] for c in chats] == [
            ["tool_calls"], ["stop"]]
        usage = _by_event(events, "provider.usage")
        assert [c.span_id for c in chats] == [
            f"{span_id('r1', u['eventId']):016x}" for u in usage]

        called = {e["payload"]["toolName"]: e for e in _by_event(events, "agent.toolCalled")}
        returned = {e["payload"]["toolName"]: e for e in _by_event(events, "agent.toolReturned")}
        tools = {s.attributes["gen_ai.tool.name"]: s for s in below
                 if s.name.startswith("execute_tool ")}
        for name, kind in (("count", "extension"), ("fail", "extension"),
                           ("restart_service", "function")):
            span = tools[name]
            assert span.kind == 1  # SPAN_KIND_INTERNAL
            assert span.span_id == f"{span_id('r1', called[name]['eventId']):016x}"
            assert span.attributes["gen_ai.operation.name"] == "execute_tool"
            assert span.attributes["gen_ai.tool.call.id"] == called[name]["payload"]["callId"]
            assert span.attributes["gen_ai.tool.type"] == kind
            assert (span.start, span.end) == (_ns(called[name]), _ns(returned[name]))
            # observability = "hashed": neither arguments nor results leave the process
            assert "gen_ai.tool.call.arguments" not in span.attributes
            assert "gen_ai.tool.call.result" not in span.attributes
        assert tools["count"].status == (0, "")
        assert tools["restart_service"].status == (0, "")
        code, message = tools["fail"].status
        assert code == 2 and message.startswith("TOOL_ERROR: ")  # STATUS_CODE_ERROR
        assert tools["fail"].attributes["error.type"] == "TOOL_ERROR"
        assert chats[0].end <= min(t.start for t in tools.values())
        assert max(t.end for t in tools.values()) <= chats[1].start + 1

        # The wait for the approval: a span from the request to the decision.
        [wait] = [s for s in below if s.name == "wopdsl.approval restart_service"]
        [asked] = _by_event(events, "approval.requested")
        [granted] = _by_event(events, "approval.granted")
        assert wait.span_id == f"{span_id('r1', asked['eventId']):016x}"
        assert (wait.start, wait.end) == (_ns(asked), _ns(granted))
        assert wait.attributes["wopdsl.approval.approver"] == "oncall"
        assert wait.attributes["wopdsl.approval.decision"] == "granted"
        assert wait.attributes["gen_ai.tool.call.id"] == \
            called["restart_service"]["payload"]["callId"]
        assert wait.end <= tools["restart_service"].start
        assert wait.attributes["wopdsl.approval.principal"] == "oncall"
        key = asked["payload"]["interruptId"]
        assert [(name, attrs.get("wopdsl.interruptId")) for name, _, attrs in turn.events] == [
            ("wopdsl.turn.suspended", key), ("wopdsl.turn.resumed", key)]  # no "retried"
        root_events = [name for name, _, _ in root.events]
        assert "wopdsl.interrupt.requested" in root_events
        assert "wopdsl.interrupt.resolved" in root_events

        wire = _wire(receiver)
        for secret in (API_KEY, MCP_TOKEN):  # the key and the MCP header's value
            assert secret.encode() not in wire
            assert secret not in first.stdout + first.stderr + decided.stdout + decided.stderr
        for text in ("disk-usage-7c2", "disk full", "api-gateway-41b", "restarted api"):
            assert text.encode() not in wire  # arguments and results stay hashed

        # From the log, twice: the very same spans, ids and times as the live export.
        for _ in range(2):
            receiver.spans.clear()
            again = _wop(tmp_path, env, "trace", "r1")
            assert again.returncode == 0, again.stderr
            assert f"exported {len(live)} spans of run r1 (trace {trace})" in again.stdout
            assert _ids(receiver.spans) == _ids(live)
            assert {s.span_id: (s.name, s.attributes, s.status) for s in receiver.spans} == \
                {s.span_id: (s.name, s.attributes, s.status) for s in live}
        tree = _wop(tmp_path, env, "trace", "r1", "--tree")
        assert tree.returncode == 0, tree.stderr
        assert "wopdsl.approval restart_service" in tree.stdout
        assert "execute_tool fail" in tree.stdout and "ERROR TOOL_ERROR" in tree.stdout


def test_full_observability_exports_arguments_and_results_but_no_secret(
        tmp_path: Path, http_server: str) -> None:
    with OtlpReceiver() as receiver, ScriptedModelServer() as model:
        model.add(ToolCalls(("count", {"label": "disk-usage-7c2"})), DONE)
        env = _setup(tmp_path, model, http_server, receiver, observability="full")
        done = _wop(tmp_path, env, "run", "ops.toml", "--run-id", "r2")
        assert done.returncode == 0, done.stdout + done.stderr
        [span] = [s for s in receiver.spans if s.name == "execute_tool count"]
        assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == {
            "label": "disk-usage-7c2"}
        assert span.attributes["gen_ai.tool.call.result"] == "counted disk-usage-7c2"
        wire = _wire(receiver)
        assert API_KEY.encode() not in wire and MCP_TOKEN.encode() not in wire
