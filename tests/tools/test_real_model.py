"""An ``llm`` member with a tool against the real small model (llama-server + SmolLM2-135M).

The model's answers are not judged; the protocol is: every request offers the tool
(``tools``) and the server accepts it (200); a tool's result goes back to the server as a tool
message answering the assistant's call; when the model asks for a call, ``agent.toolCalled``
and ``agent.toolReturned`` are recorded; the run ends completed, failed with a documented
error code, or waiting — never a traceback; the events validate and ``wop check`` passes.

SmolLM2's chat template renders no tools (llama-server takes ``tools`` and answers with text),
so the model may never ask for a call itself. The second test therefore gets its call from the
scripted server, waits for an approval, and continues against the real model: the round with
the call and its result is what the real server reads next.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.openwop_schemas import load_schemas
from tests.real_model import llama_url
from tests.tcp_proxy import TcpProxy
from tests.tools.conftest import KEY_ENV, effects_in, tool_council
from wopdsl import Council, SqliteStore
from wopdsl.testing.model_proxy import ModelProxy
from wopdsl.testing.model_server import ScriptedModelServer, ToolCalls

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

TOOLS = ["tests.tools.effects_tools:restart_service"]
PROFILE = {"max_output_tokens": 200, "retry_backoff_ms": 1}
ENDED = {"completed", "failed", "waiting-input"}
CODES = {"RESULT_INVALID", "TOOL_ERROR", "TOOL_LIMIT", "MODEL_ERROR", "BUDGET_EXHAUSTED"}
"""The documented codes a turn of a small model may fail with (docs/errors.md)."""


@pytest.fixture
def proxy() -> Iterator[ModelProxy]:
    """A recording proxy in front of the real server."""
    with ModelProxy(llama_url(), set_fields={"seed": 11}) as recording:
        yield recording


def _wop_check(db: Path, run_id: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "WOP_STORE"}
    checked = subprocess.run([sys.executable, "-m", "wopdsl", "check", run_id, "--store",
                              str(db)], env=env, capture_output=True, text=True, timeout=120,
                             check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Traceback" not in checked.stdout + checked.stderr


def _check_protocol(events: list[dict[str, Any]], proxy: ModelProxy, status: str) -> None:
    """What holds whatever the model said."""
    load_schemas().check_events(events)  # type: ignore[arg-type]
    assert proxy.calls and all(call.status == 200 for call in proxy.calls)
    for call in proxy.calls:
        body = call.body
        messages = body["messages"]
        if "tools" in body:  # offered until the turn's calls are spent
            assert [t["function"]["name"] for t in body["tools"]] == ["restart_service"]
            assert body["tools"][0]["function"]["parameters"]["required"] == ["name"]
        asked = {c["id"] for m in messages if m["role"] == "assistant"
                 for c in m.get("tool_calls") or []}
        answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        assert answered == asked  # every call the model made has its result, in order
    called = [e["payload"] for e in events if e["type"] == "agent.toolCalled"]
    returned = [e["payload"] for e in events if e["type"] == "agent.toolReturned"]
    assert [c["callId"] for c in called] == [r["callId"] for r in returned]
    assert status in ENDED
    end = {"completed": "run.completed", "failed": "run.failed"}.get(status)
    assert end is None or events[-1]["type"] == end
    failed = [e["payload"]["error"] for e in events if e["type"] == "node.failed"]
    assert all(error["code"] in CODES for error in failed), failed
    assert all("Traceback" not in error["message"] for error in failed)


def _port(url: str) -> int:
    return urlsplit(url).port or 80


def _events(db: Path, run_id: str) -> list[dict[str, Any]]:
    store = SqliteStore(db)
    try:
        return list(store.read(run_id))  # type: ignore[arg-type]
    finally:
        store.close()


async def test_a_member_offered_a_tool_by_the_real_model(
        proxy: ModelProxy, effects: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", proxy.url)
    monkeypatch.setenv(KEY_ENV, "sk-local")
    council = tool_council(tools=TOOLS, profile=PROFILE, member={"max_tool_calls": 2})
    db = tmp_path / "runs.db"
    run = await council.arun(store=str(db))
    assert run.status in ENDED, run.error
    first = proxy.calls[0].body
    assert first["tools"][0]["type"] == "function"
    assert first["response_format"]["type"] == "json_schema"
    events = _events(db, run.run_id)
    _check_protocol(events, proxy, run.status)
    made = [e for e in events if e["type"] == "agent.toolCalled"]
    assert len(effects_in(effects)) <= len(made)  # a call is recorded before it is made
    _wop_check(db, run.run_id)


async def test_a_tool_result_goes_back_to_the_real_model(
        proxy: ModelProxy, effects: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-local")

    def council() -> Council:
        return tool_council(tools=TOOLS, profile=PROFILE, humans=("oncall",),
                            policy={"restart_service": {"approval": "oncall"}})

    db = tmp_path / "runs.db"
    # The run records its model server's URL: one loopback address, a TCP line that leads
    # to the scripted server first, then to the real one.
    with ScriptedModelServer() as scripted, TcpProxy("127.0.0.1", _port(scripted.url)) as line:
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{line.port}/v1")
        scripted.add(ToolCalls(("restart_service", {"name": "api"})))
        run = await council().arun(store=str(db))
        assert run.status == "waiting-input", run.error
        line.down()
        line.target = ("127.0.0.1", _port(proxy.url))
        line.up()
        again = council().open(run.run_id, str(db))  # as a new process would
        assert await again.approve(as_="oncall") == "call/sre/1/0"
        assert await again.wait() in ENDED
    assert len(scripted.requests) == 1
    assert [e["name"] for e in effects_in(effects)] == ["api"]
    body = proxy.calls[0].body
    assert "tools" in body
    messages = body["messages"]
    call = next(m for m in messages if m["role"] == "assistant")
    assert call["tool_calls"][0]["function"] == {"name": "restart_service",
                                                "arguments": json.dumps({"name": "api"})}
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool == {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"],
                    "content": "restarted api"}
    events = _events(db, run.run_id)
    _check_protocol(events, proxy, again.status)
    assert [e["type"] for e in events if e["type"].startswith("agent.tool")][:2] == [
        "agent.toolCalled", "agent.toolReturned"]
    _wop_check(db, run.run_id)
