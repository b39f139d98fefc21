"""The tool loop with Python tools against the scripted OpenAI-wire server (real client)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.openwop_schemas import load_schemas
from tests.tools.conftest import effects_in, tool_council
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

DONE = Answer({"summary": "Restarted the api.", "posts": [
    {"roomId": "ops", "text": "api is back", "mentions": []}]})
TOOLS = ["tests.tools.effects_tools:restart_service", "tests.tools.effects_tools:read_log"]


def _of(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


@pytest.mark.parametrize("stream", [False, True])
async def test_model_calls_tools_in_parallel_then_answers(
        server: ScriptedModelServer, effects: Path, stream: bool) -> None:
    server.add(ToolCalls(("read_log", {"service": "api"}),
                         ("restart_service", {"name": "api", "force": True})), DONE)
    council = tool_council(tools=TOOLS, profile={"stream": stream})
    run = await council.arun(store="memory:")
    assert run.status == "completed", run.error
    assert run.result["agents"][0]["result"]["summary"] == "Restarted the api."
    assert [e["tool"] for e in effects_in(effects)] == ["read_log", "restart_service"] or \
        sorted(e["tool"] for e in effects_in(effects)) == ["read_log", "restart_service"]
    # The tools were offered, and the second call carried both results as tool messages.
    first, second = server.requests
    assert {t["function"]["name"] for t in first.body["tools"]} == {"restart_service",
                                                                     "read_log"}
    tool_messages = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0", "call_1"]
    assert json.loads(tool_messages[0]["content"])["lines"][0] == "api line 0"
    assert tool_messages[1]["content"] == "restarted api"
    events = run.events.to_list()
    called, returned = _of(events, "agent.toolCalled"), _of(events, "agent.toolReturned")
    assert [c["payload"]["callId"] for c in called] == ["call/sre/1/0", "call/sre/1/1"]
    assert {r["payload"]["status"] for r in returned} == {"ok"}
    # hashed by default: no arguments, no results in the log
    assert all("inputs" not in c["payload"] and c["payload"]["argsHash"].startswith("sha256:")
               for c in called)
    assert all("outcome" not in r["payload"] for r in returned)
    assert "restarted api" not in json.dumps(events)
    load_schemas().check_events(events)


async def test_full_observability_puts_arguments_and_results_in_events(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "db"})), DONE)
    run = await tool_council(tools=TOOLS, profile={"observability": "full"}).arun(
        store="memory:")
    assert run.status == "completed", run.error
    events = run.events.to_list()
    assert _of(events, "agent.toolCalled")[0]["payload"]["inputs"] == {"name": "db"}
    assert _of(events, "agent.toolReturned")[0]["payload"]["outcome"] == "restarted db"
    load_schemas().check_events(events)


async def test_bad_calls_are_answered_as_errors_without_calling(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("restart_service", '{"name": "api", '),  # malformed JSON
                         ("restart_service", {"name": 7}),  # wrong type
                         ("drop_database", {}),  # unknown tool
                         ids=("a", "b", "c")), DONE)
    run = await tool_council(tools=TOOLS).arun(store="memory:")
    assert run.status == "completed", run.error
    assert effects_in(effects) == []  # nothing was called
    contents = {m["tool_call_id"]: m["content"] for m in server.requests[1].body["messages"]
                if m["role"] == "tool"}
    assert contents["a"].startswith("error (INVALID_ARGUMENTS): the arguments are not valid")
    assert contents["b"].startswith("error (INVALID_ARGUMENTS): invalid arguments: name")
    assert contents["c"].startswith("error (UNKNOWN_TOOL): there is no tool named "
                                    "'drop_database'")
    codes = [r["payload"]["error"]["code"] for r in _of(run.events.to_list(),
                                                        "agent.toolReturned")]
    assert codes == ["INVALID_ARGUMENTS", "INVALID_ARGUMENTS", "UNKNOWN_TOOL"]
    load_schemas().check_events(run.events.to_list())
