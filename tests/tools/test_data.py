"""Tool output is data: it cannot post, mention, reach a template or act on a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.tools.conftest import KEY_ENV, effects_in, tool_council, wop_check
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

HOSTILE = ["tests.tools.effects_tools:hostile"]
ROOT = Path(__file__).resolve().parents[2]


async def test_a_result_that_looks_like_a_turn_result_posts_nothing(
        server: ScriptedModelServer) -> None:
    council = tool_council(tools=HOSTILE, humans=("boss",))
    council.room("secret", members=["boss"])
    server.add(ToolCalls(("hostile", {})), Answer({"summary": "read it", "posts": []}))
    run = await council.arun(store="memory:")
    assert run.status == "completed", run.error
    assert run.messages == []  # nothing the tool said became a message
    assert run.state.queue == {}  # nor asked anybody for a turn
    tool = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")
    assert tool["content"].startswith("{{ 7 * 7 }}")  # given as text, never rendered


async def test_a_model_that_copies_tool_output_is_checked_like_any_result(
        server: ScriptedModelServer) -> None:
    council = tool_council(tools=HOSTILE, humans=("boss",))
    council.room("secret", members=["boss"])
    server.add(ToolCalls(("hostile", {})),
               Answer({"summary": "leak", "posts": [{"roomId": "secret", "text": "leak",
                                                     "mentions": ["boss"]}]}),
               Answer({"summary": "again", "posts": [{"roomId": "secret", "text": "leak",
                                                      "mentions": ["boss"]}]}))
    run = await council.arun(store="memory:")
    assert run.status == "failed"  # a room the member is not in: RESULT_INVALID, no post
    assert run.messages == []
    failed = next(e["payload"] for e in run.events if e["type"] == "node.failed")
    assert failed["error"]["code"] == "RESULT_INVALID"


def test_the_terminal_shows_tool_output_escaped(server: ScriptedModelServer,
                                               tmp_path: Path) -> None:
    council = tool_council(tools=HOSTILE, profile={"observability": "full"})
    (tmp_path / "council.toml").write_text(council.to_toml(), encoding="utf-8")
    server.add(ToolCalls(("hostile", {})), Answer({"summary": "done", "posts": [
        {"roomId": "ops", "text": "{{ 7 * 7 }} \x1b[31mred\x1b[0m", "mentions": []}]}))
    env = {**os.environ, "OPENAI_BASE_URL": server.url, KEY_ENV: "k",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "wopdsl", "run", "council.toml", "--store",
                           "runs.db"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    tool_line = next(line for line in done.stdout.splitlines() if "← hostile ok" in line)
    assert "{{ 7 * 7 }} \\x1b[2J\\x1b[31mRED" in tool_line  # escaped, on one line
    assert "[ops] sre team/sre/1/0: {{ 7 * 7 }} \\x1b[31mred\\x1b[0m" in done.stdout


async def test_output_that_is_not_valid_unicode_is_recorded_escaped_and_reaches_the_model(
        server: ScriptedModelServer, effects: Path, tmp_path: Path) -> None:
    server.add(ToolCalls(("garbled", {}), ("raw_bytes", {})), Answer({"summary": "read it"}))
    council = tool_council(tools=["tests.tools.effects_tools:garbled",
                                  "tests.tools.effects_tools:raw_bytes"],
                           profile={"observability": "full"})
    store = tmp_path / "runs.db"
    run = await council.arun(store=str(store))
    assert run.status == "completed", run.error
    assert sorted(e["tool"] for e in effects_in(effects)) == ["garbled", "raw_bytes"]  # once each
    garbled = "a \\udc80 b \U0001f600 c \\ud800"  # lone halves escaped, a pair joined
    raw = "ok \\xff\\xfe café"  # bytes: UTF-8, the rest as \xNN
    tools = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tools == [garbled, raw]
    returned = {e["payload"]["toolName"]: e["payload"] for e in run.events
                if e["type"] == "agent.toolReturned"}  # the two calls ran in parallel
    assert {name: (r["status"], r["outcome"]) for name, r in returned.items()} == {
        "garbled": ("ok", garbled), "raw_bytes": ("ok", raw)}
    assert returned["garbled"]["resultBytes"] == len(garbled.encode())
    wop_check(store, run.run_id)
