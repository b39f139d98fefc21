"""MCP tools through the official SDK: a real server process over stdio and over HTTP."""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.openwop_schemas import load_schemas
from tests.tools.conftest import (
    KEY_ENV,
    SECRET,
    SECRET_ENV,
    SECRET_FORMS,
    effects_in,
    free_port,
    tool_council,
    wop_check,
)
from wopdsl import Council
from wopdsl.protocol.check_v2 import as_v2, v2_event_errors
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow  # each test starts a real MCP server process

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))
DONE = Answer({"summary": "done"})


def mcp_council(tools: list[str], **options):  # type: ignore[no-untyped-def]
    council = tool_council(tools=tools, policy=options.pop("policy", None),
                           profile=options.pop("profile", None))
    council.mcp("test", command="python", args=[SERVER], env=["WOPDSL_TEST_EFFECTS"],
                **options)
    return council


def _of(events: list[dict], kind: str) -> list[dict]:
    return [e["payload"] for e in events if e["type"] == kind]


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


async def test_a_stdio_server_is_started_called_and_stopped_with_the_run(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("count", {"label": "a"}), ("count", {"label": "b"})), DONE)
    council = mcp_council(["mcp:test/count"])
    run = await council.arun(store="memory:")
    connection = council.compile().toolsets()["sre"].connections["test"]
    assert connection.protocol == "2026-07-28"  # the official SDK 2.x, newest revision
    assert run.status == "completed", run.error
    assert sorted(e["label"] for e in effects_in(effects)) == ["a", "b"]
    tools = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tools == ["counted a", "counted b"]
    events = run.events.to_list()
    assert {c["transport"] for c in _of(events, "agent.toolCalled")} == {"mcp"}
    opened, closed = _of(events, "tool.session.opened"), _of(events, "tool.session.closed")
    assert [o["toolId"] for o in opened] == ["mcp:test"]
    assert [(c["sessionId"], c["outcome"]) for c in closed] == [
        (opened[0]["sessionId"], "completed")]
    order = [e["type"] for e in events if e["type"].startswith(("tool.", "agent.tool"))]
    assert order[0] == "tool.session.opened" and order[-1] == "tool.session.closed"
    load_schemas().check_events(events)
    served = [as_v2(e) for e in events]  # v2: tool.session-opened / -closed, all valid
    assert {"tool.session-opened", "tool.session-closed"} <= {e["type"] for e in served}
    assert [(e["sequence"], c) for e in served for c in v2_event_errors(e)] == []
    assert _gone(effects_in(effects)[0]["pid"])  # the server exited with the run


async def test_every_tool_of_a_server_and_errors_and_sizes(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("fail", {"message": "no disk"}), ("big", {"megabytes": 1})), DONE)
    run = await mcp_council(["mcp:test/*"]).arun(store="memory:")
    assert run.status == "completed", run.error
    offered = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert offered == {"count", "sleep", "big", "fail", "garbled", "die", "die_loudly",
                       "die_once"}
    contents = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "no disk" in contents[0]
    assert contents[1].startswith("error (RESULT_TOO_LARGE): the result has 1048576 bytes")
    statuses = [r["status"] for r in _of(run.events.to_list(), "agent.toolReturned")]
    assert statuses == ["error", "error"]


async def test_a_hanging_mcp_tool_times_out(server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("sleep", {"seconds": 30})), DONE)
    run = await mcp_council(["mcp:test/sleep"], policy={"sleep": {"timeout_ms": 300}}).arun(
        store="memory:")
    assert run.status == "completed", run.error
    content = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")[
        "content"]
    assert content.startswith("error (TIMEOUT): no answer within 0.3 s")


async def test_output_that_is_not_valid_unicode_reaches_the_model_escaped(
        server: ScriptedModelServer, effects: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The server's JSON holds lone surrogates (\\udc80), as a JavaScript server sends them:
    # the SDK's parser refuses the line, and the call used to wait into its timeout.
    server.add(ToolCalls(("garbled", {})), DONE)
    run = await mcp_council(["mcp:test/garbled"], profile={"observability": "full"},
                            policy={"garbled": {"timeout_ms": 15000}}).arun(store="memory:")
    assert run.status == "completed", run.error
    expected = "before \\udc80 pair \U0001f600 after \\ud83d"
    tool = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")
    assert tool["content"] == expected
    returned = _of(run.events.to_list(), "agent.toolReturned")
    assert [(r["status"], r["outcome"]) for r in returned] == [("ok", expected)]
    assert [e["tool"] for e in effects_in(effects)] == ["garbled"]
    load_schemas().check_events(run.events.to_list())
    # The SDK's record of the line it refused (a traceback on stderr) is not shown.
    assert [r.getMessage() for r in caplog.records if r.name.startswith("mcp")] == []


async def test_a_server_that_dies_mid_call_fails_the_turn_clearly(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("die", {})))
    run = await mcp_council(["mcp:test/die"]).arun(store="memory:")
    assert run.status == "failed"
    error = _of(run.events.to_list(), "node.failed")[0]["error"]
    assert error["code"] == "TOOL_ERROR"
    assert "MCP server 'test' went away during the call" in error["message"]
    assert "is not made again (its tool is not idempotent)" in error["message"]
    closed = _of(run.events.to_list(), "tool.session.closed")
    assert [c["outcome"] for c in closed] == ["failed"]
    load_schemas().check_events(run.events.to_list())


async def test_what_a_dying_server_printed_is_quoted_without_the_secrets_passed_to_it(
        server: ScriptedModelServer, effects: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    server.add(ToolCalls(("die_loudly", {})))
    council = mcp_council(["mcp:test/die_loudly"])
    council._mcp["test"]["env"] = ["WOPDSL_TEST_EFFECTS", SECRET_ENV]
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status == "failed"
    events = run.events.to_list()
    error = _of(events, "node.failed")[0]["error"]
    assert "went away during the call" in error["message"]
    assert ("its stderr ends: 'dying with [REDACTED] [REDACTED] [REDACTED] [REDACTED]'"
            in error["message"]), error
    stored = (tmp_path / "runs.db").read_bytes().decode("utf-8", "replace")
    for text in (json.dumps(events), stored):
        for form in SECRET_FORMS:
            assert form not in text


async def test_a_server_that_died_is_restarted_for_an_idempotent_call(
        server: ScriptedModelServer, effects: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_DIE_MARKER", str(tmp_path / "died"))
    server.add(ToolCalls(("die_once", {})), ToolCalls(("count", {"label": "after"})), DONE)
    council = mcp_council(["mcp:test/die_once", "mcp:test/count"],
                          policy={"die_once": {"idempotent": True}})
    council._mcp["test"]["env"] = ["WOPDSL_TEST_EFFECTS", "MCP_TEST_DIE_MARKER"]
    run = await council.arun(store="memory:")
    assert run.status == "completed", run.error
    done = effects_in(effects)
    assert [e["tool"] for e in done] == ["die_once", "die_once", "count"]
    assert done[0]["pid"] != done[1]["pid"] == done[2]["pid"]  # a new server process
    tools = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert tools == ["alive again", "counted after"]
    events = run.events.to_list()
    sessions = [(e["type"], e["payload"]["sessionId"], e["payload"].get("outcome"))
                for e in events if e["type"].startswith("tool.session")]
    assert sessions == [("tool.session.opened", "session/sre/1/0/test/1", None),
                        ("tool.session.closed", "session/sre/1/0/test/1", "failed"),
                        ("tool.session.opened", "session/sre/1/0/test/2", None),
                        ("tool.session.closed", "session/sre/1/0/test/2", "completed")]
    assert [c.get("repeated", False) for c in _of(events, "agent.toolCalled")] == [False,
                                                                                  False]
    load_schemas().check_events(events)


async def test_a_tool_the_server_lacks_fails_the_turn_naming_it(
        server: ScriptedModelServer, tmp_path: Path, effects: Path) -> None:
    # (`wop run` refuses it before writing anything: tests/tools/test_example.py)
    run = await mcp_council(["mcp:test/nope"]).arun(store=str(tmp_path / "runs.db"))
    assert run.status == "failed"
    error = _of(run.events.to_list(), "node.failed")[0]["error"]
    assert error["code"] == "TOOL_ERROR"
    assert ("MCP server 'test' has no tool 'nope' (it lists: big, count, die, die_loudly, "
            "die_once, fail, garbled, sleep)") in error["message"]
    assert server.requests == []
    wop_check(tmp_path / "runs.db", run.run_id)


DOWN = [("stdio", "could not be reached: MCPError: Connection closed (its stderr ends: "
                  "'no such service')"),
        ("http", "could not be reached: ConnectError: All connection attempts failed")]


@pytest.mark.parametrize(("kind", "why"), DOWN, ids=[kind for kind, _ in DOWN])
async def test_a_server_that_is_down_fails_the_run_naming_it(
        server: ScriptedModelServer, tmp_path: Path, kind: str, why: str) -> None:
    council = tool_council(tools=["mcp:ops/count"])
    if kind == "stdio":  # a command that fails to start
        council.mcp("ops", command=sys.executable, args=[
            "-c", "import sys; print('no such service', file=sys.stderr); sys.exit(5)"])
    else:  # nothing listens there
        council.mcp("ops", url=f"http://127.0.0.1:{free_port()}/mcp")
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status == "failed"
    events = run.events.to_list()
    failed = _of(events, "node.failed")[0]
    assert failed["nodeId"] == "sre" and failed["error"]["code"] == "TOOL_ERROR"
    assert f"MCP server 'ops' {why}" in failed["error"]["message"], failed
    assert failed["error"]["details"] == {"server": "ops"}
    assert run.error is not None and run.error["details"] == {"nodeError": "TOOL_ERROR"}
    assert f"member sre failed: TOOL_ERROR: MCP server 'ops' {why}" in run.error["message"]
    assert server.requests == []  # the model was never called
    wop_check(tmp_path / "runs.db", run.run_id)


async def test_a_waiting_run_needs_its_server_only_for_a_turn_that_uses_it(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    council = Council("ops-team", task="Fix the outage.")
    council.model("m", model="test-model", api_key_env=KEY_ENV)
    council.room("ops", members=["boss", "sre"])
    council.human("boss", initial_turn=True)
    council.add_member("sre", role="sre", engine="llm", model="m", tools=["mcp:ops/count"],
                       initial_turn=False)
    council.mcp("ops", url=f"http://127.0.0.1:{free_port()}/mcp")
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status == "waiting-input", run.error  # nothing needed the server yet
    await run.reply("@sre look at the api", as_="boss", room="ops")
    assert await run.wait() == "failed"
    failed = _of(run.events.to_list(), "node.failed")[0]["error"]
    assert failed["code"] == "TOOL_ERROR" and "MCP server 'ops' could not be reached" in \
        failed["message"]
    wop_check(tmp_path / "runs.db", run.run_id)


async def test_an_http_server_gets_headers_from_the_environment_never_logged(
        server: ScriptedModelServer, http_server: str, effects: Path,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TEST_MCP_AUTH", "Bearer sentinel-7f3a9c-secret")
    server.add(ToolCalls(("count", {"label": "over-http"})), DONE)
    council = tool_council(tools=["mcp:remote/count"], profile={"observability": "full"})
    council.mcp("remote", url=http_server, headers={"Authorization": "TEST_MCP_AUTH"})
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status == "completed", run.error
    assert [e["label"] for e in effects_in(effects)] == ["over-http"]
    stored = (tmp_path / "runs.db").read_bytes()
    assert b"sentinel-7f3a9c" not in stored
    assert "sentinel-7f3a9c" not in json.dumps(run.events.to_list())
    load_schemas().check_events(run.events.to_list())
    # Without the variable: the turn fails clearly, naming the variable, never a value.
    monkeypatch.delenv("TEST_MCP_AUTH")
    failed = await council.arun(store="memory:")
    assert failed.status == "failed" and failed.error is not None
    assert "environment variable TEST_MCP_AUTH, which is not set" in failed.error["message"]
    # A wrong value: refused by the server, and the error does not echo it.
    monkeypatch.setenv("TEST_MCP_AUTH", "Bearer wrong-sentinel-55")
    failed = await council.arun(store="memory:")
    assert failed.status == "failed" and failed.error is not None
    assert "MCP server 'remote' could not be reached" in failed.error["message"]
    assert "wrong-sentinel-55" not in json.dumps(failed.events.to_list())


def test_every_value_passed_to_a_server_is_redacted_in_every_form() -> None:
    from wopdsl.agents.tools.mcp_wire import secrets_redactor

    redact = secrets_redactor(["Bearer tok-0123456789", "header-value-77"],
                              "http://user:url-pass-secret@127.0.0.1:1/mcp")
    token_b64 = base64.b64encode(b"tok-0123456789").decode()
    said = (f"Bearer tok-0123456789 | TOK-0123456789 | 9876543210-kot | {token_b64} | "
            "header-value-77 | url-pass-secret | ok")
    assert redact(said) == ("[REDACTED] | [REDACTED] | [REDACTED] | [REDACTED] | "
                            "[REDACTED] | [REDACTED] | ok")
