"""The tool loop with Python tools against the scripted OpenAI-wire server (real client)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.openwop_schemas import load_schemas
from tests.tools.conftest import effects_in, tool_council
from wopdsl.protocol.check_v2 import as_v2, v2_event_errors
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
    # Served under v2: the codemap's names, and every event valid against the v2 schemas.
    served = [as_v2(e) for e in events]
    assert {"agent.tool-called", "agent.tool-returned"} <= {e["type"] for e in served}
    assert not {"agent.toolCalled", "agent.toolReturned"} & {e["type"] for e in served}
    assert [(e["sequence"], c) for e in served for c in v2_event_errors(e)] == []


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


async def test_a_hanging_tool_times_out_and_the_model_is_told(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("hang", {"seconds": 30})), DONE)
    council = tool_council(tools=["tests.tools.effects_tools:hang"],
                           policy={"hang": {"timeout_ms": 200}})
    run = await council.arun(store="memory:")
    assert run.status == "completed", run.error
    tool_message = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")
    assert tool_message["content"].startswith("error (TIMEOUT): no answer within 0.2 s")
    returned = _of(run.events.to_list(), "agent.toolReturned")[0]["payload"]
    assert returned["status"] == "error" and returned["error"]["code"] == "TIMEOUT"


async def test_a_ten_megabyte_result_is_refused_not_cut(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("huge", {"megabytes": 10})), DONE)
    run = await tool_council(tools=["tests.tools.effects_tools:huge"]).arun(store="memory:")
    assert run.status == "completed", run.error
    content = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")[
        "content"]
    assert content == ("error (RESULT_TOO_LARGE): the result has 10485760 bytes, more than "
                       "max_result_bytes (65536); ask for less")
    events = run.events.to_list()
    assert max(len(json.dumps(e)) for e in events) < 20_000  # nothing of it in the log
    assert _of(events, "agent.toolReturned")[0]["payload"]["error"]["code"] == \
        "RESULT_TOO_LARGE"


async def test_tool_errors_are_data_up_to_the_bound(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("fail", {"message": "disk full"})),
               ToolCalls(("fail", {"message": "still full"})), DONE)
    run = await tool_council(tools=["tests.tools.effects_tools:fail"]).arun(store="memory:")
    assert run.status == "completed", run.error
    contents = [m["content"] for m in server.requests[2].body["messages"] if m["role"] == "tool"]
    assert contents == ["error (TOOL_ERROR): RuntimeError: disk full",
                        "error (TOOL_ERROR): RuntimeError: still full"]
    # Past the bound (three errors handed back per turn), the turn fails.
    server.add(*[ToolCalls(("fail", {"message": str(i)})) for i in range(4)])
    run = await tool_council(tools=["tests.tools.effects_tools:fail"]).arun(store="memory:")
    assert run.status == "failed"
    failed = _of(run.events.to_list(), "node.failed")[0]["payload"]["error"]
    assert failed["code"] == "TOOL_ERROR" and "4 tool calls" in failed["message"]


async def test_max_tool_calls_per_turn_asks_for_the_answer(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "a"}), ("restart_service", {"name": "b"})),
               DONE)
    council = tool_council(tools=TOOLS, member={"max_tool_calls": 2})
    run = await council.arun(store="memory:")
    assert run.status == "completed", run.error
    last = server.requests[-1].body
    assert "tools" not in last and last["messages"][-1]["content"].startswith(
        "You have made the 2 tool calls")
    # A model that calls tools anyway fails the turn with TOOL_LIMIT.
    server.add(ToolCalls(("restart_service", {"name": "a"}), ("restart_service", {"name": "b"})),
               ToolCalls(("restart_service", {"name": "c"})))
    run = await tool_council(tools=TOOLS, member={"max_tool_calls": 2}).arun(store="memory:")
    assert run.status == "failed"
    assert _of(run.events.to_list(), "node.failed")[0]["payload"]["error"]["code"] == \
        "TOOL_LIMIT"
    assert len(effects_in(effects)) == 4
    load_schemas().check_events(run.events.to_list())


async def test_the_run_budget_counts_tool_calls(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "a"})),
               ToolCalls(("restart_service", {"name": "b"})))
    run = await tool_council(tools=TOOLS, max_tool_calls=1).arun(store="memory:")
    assert run.status == "failed"
    assert run.error["code"] == "BUDGET_EXHAUSTED"
    assert [e["name"] for e in effects_in(effects)] == ["a"]
    events = run.events.to_list()
    assert _of(events, "budget.reserved")[0]["payload"]["effectiveBudget"] == {
        "maxToolCalls": 1}
    assert _of(events, "budget.exhausted")[0]["payload"] == {
        "dimension": "toolCalls", "consumed": 1, "limit": 1}
    assert _of(events, "cap.breached")[0]["payload"]["kind"] == "budget-tool-calls"
    load_schemas().check_events(events)


async def test_registered_tools_sync_and_async(server: ScriptedModelServer) -> None:
    council = tool_council(tools=["lookup", "shout"])
    seen: list[str] = []

    @council.tool(name="lookup")
    async def find(key: str) -> str:
        """Look a key up."""
        seen.append(key)
        return key.upper()

    @council.tool
    def shout(text: str, times: int = 1) -> list[str]:
        """Shout some text."""
        return [text.upper()] * times

    server.add(ToolCalls(("lookup", {"key": "k"}), ("shout", {"text": "hi", "times": 2})), DONE)
    run = await council.arun(store="memory:")
    assert run.status == "completed", run.error
    contents = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert contents == ["K", '["HI", "HI"]'] and seen == ["k"]
    offered = {t["function"]["name"]: t["function"] for t in server.requests[0].body["tools"]}
    assert offered["shout"]["parameters"]["properties"]["times"] == {"default": 1,
                                                                     "type": "integer"}
    assert offered["lookup"]["description"] == "Look a key up."
