"""The official ``@ag-ui/client`` ``HttpAgent`` (node) chats with councils on `wop serve`.

A real host subprocess on loopback; the client is the npm package, run by our driver
(``tests/agui/driver.mjs``). Its ``runAgent`` applies the client's own enforcement and
verifier to every event, and the driver parses each with ``@ag-ui/core``'s ``EventSchemas``
(generated from the AG-UI 1.0 JSON Schema); the same events are checked here with the
official Python types and the 1.0 rules. Councils: a script council with a person (answered
through ``resume``), and an ``llm`` council on the scripted model server: streamed tokens, a
tool call that waits for its approval, then the person's turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agui.client import agui_client, drive
from tests.agui.events import check_stream, final_state
from tests.server.conftest import ALICE, COUNCILS, Served
from tests.server.web_browser import host_path

pytest.importorskip("ag_ui", reason="needs ag-ui-protocol (the server extra)")

TOOLS = Path(__file__).resolve().parent / "web_tools"


def _clean(step: dict[str, Any]) -> None:
    """No error, no event the schemas refuse, no warning of the client; the 1.0 rules hold."""
    assert step["error"] is None, step["error"]
    assert step["invalid"] == [], step["invalid"]
    assert step["warnings"] == [], step["warnings"]
    check_stream(step["events"])


def test_a_script_council_and_its_person_in_the_official_client(
        serve: Any, tokens_file: Path) -> None:
    agui_client()
    served: Served = serve(COUNCILS, args=("--tokens", str(tokens_file)), token=ALICE)
    steps = drive(f"{served.url}/agui/desk", "client-thread-1", [
        {"message": "Help me with my order"},
        {"resume": {"human_turn": {"text": "A refund please, @bot"}}},
    ], token=ALICE)
    first, second = steps
    for step in steps:
        _clean(step)
    [asked] = first["interrupts"]
    assert asked["reason"] == "human_turn" and asked["metadata"]["wopdsl"]["member"] == "visitor"
    bot = [m for m in first["messages"] if m.get("name") == "bot"]
    assert [m["content"] for m in bot] == ["Hello! What do you need, @visitor?"]
    assert first["state"]["status"] == "waiting-input"
    assert second["interrupts"] == [] and second["state"]["status"] == "completed"
    said = [(m.get("name"), m["role"], m["content"]) for m in second["messages"]
            if m.get("name")]
    assert said == [("bot", "assistant", "Hello! What do you need, @visitor?"),
                    ("visitor", "user", "A refund please, @bot"),
                    ("bot", "assistant", "You asked: A refund please, @bot")]
    assert second["result"]["task"] == "Help me with my order"
    assert second["state"] == final_state(second["events"], first["state"])


def test_an_llm_council_streams_calls_a_tool_after_its_approval_and_asks_the_person(
        serve: Any, tmp_path: Path) -> None:
    agui_client()
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

    report = "I restarted the api: it answers 200 again. @oncall, please confirm."
    with ScriptedModelServer() as model:
        model.add(ToolCalls(("restart_service", {"service": "api"})),
                  Answer({"summary": "Restarted.", "posts": [
                      {"roomId": "ops", "text": report, "mentions": ["oncall"]}]},
                      chunks=8, chunk_delay_s=0.08))
        served = serve(TOOLS, env={"OPENAI_BASE_URL": model.url,
                                   "WOPDSL_TEST_MODEL_KEY": "sk-agui-secret",
                                   "PYTHONPATH": host_path(TOOLS)})
        steps = drive(f"{served.url}/agui/desk", "client-thread-2", [
            {"message": "The api answers 503. Fix it."},
            {"resume": {"tool_approval": {"action": "accept", "comment": "go"}}},
            {"resume": {"human_turn": "Confirmed, thanks."}},
        ])
    for step in steps:
        _clean(step)
        assert "sk-agui-secret" not in str(step)
    asking, working, closing = steps
    [approval] = asking["interrupts"]
    assert approval["reason"] == "tool_approval" and approval["toolCallId"] == "call/sre/1/0"
    calls = [c for m in asking["messages"] for c in m.get("toolCalls") or []]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("call/sre/1/0", "restart_service", '{"service": "api"}')]
    assert asking["state"]["approvals"] and asking["state"]["status"] == "waiting-approval"
    # Approved: the tool's result, then the report streamed token by token, then the person.
    [result] = [m for m in working["messages"] if m["role"] == "tool"]
    assert result["toolCallId"] == "call/sre/1/0" and result["content"].endswith(
        "api restarted")
    deltas = [e for e in working["events"] if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(deltas) > 2 and "".join(e["delta"] for e in deltas) == report
    [person] = working["interrupts"]
    assert person["reason"] == "human_turn"
    assert working["state"]["roster"]["sre"]["turnsLeft"] == 1
    usage = next(e for e in working["events"] if e["type"] == "RUN_FINISHED")["usage"]
    assert usage[0]["model"] == "test-model" and usage[0]["totalTokens"] > 0
    assert closing["interrupts"] == [] and closing["state"]["status"] == "completed"
    assert [m["content"] for m in closing["messages"] if m.get("name") == "oncall"] == [
        "Confirmed, thanks."]
