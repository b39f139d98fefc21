"""Steering ``llm`` members (DESIGN.md §24): streams aborted at once, tool calls finished.

The members are driven by the scripted OpenAI-wire server. A steer mid-stream closes the
member's model stream within 200 ms (the server sees the hang-up), the partial output is
dropped and the member runs again with the post in its prompt; the tokens the stopped call
spent count. A steer while a sync or an async python tool runs lets the call finish and be
recorded, then restarts the turn, which is given the call's result instead of making it again.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.llm.conftest import KEY_ENV
from tests.tools.conftest import tool_council, wop_check
from tests.tools.test_pause import DONE, assert_made_once, given, kinds, release, steps, until
from wopdsl import Council
from wopdsl.testing.model_server import Answer, Endless, ScriptedModelServer, ToolCalls

__all__ = ["release"]  # the fixture

RUN = "steered-llm-run-0001"


def board(**settings: object) -> Council:
    """``cfo`` (an llm member) and the person ``me`` in room ``board``."""
    council = Council("steer-board", task="Set the budget.", max_turns_per_member=1,
                      **settings)  # type: ignore[arg-type]
    council.model("m", model="test-model", api_key_env=KEY_ENV, retry_backoff_ms=1)
    council.room("board", members=["me", "cfo"])
    council.human("me")
    council.add_member("cfo", role="cfo", engine="llm", model="m")
    return council


FIXED = Answer({"summary": "2M it is", "posts": [
    {"roomId": "board", "text": "Budget: 2M", "mentions": []}]})


async def test_a_steer_mid_stream_closes_the_stream_at_once_and_restarts_with_the_post(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    server.add(Endless("thinking about 5M ", delay_s=0.005), FIXED, member="cfo")
    db = tmp_path / "runs.db"
    run = board(max_tokens=100_000).start(store=db, run_id=RUN)
    await until(lambda: any(e["type"] == "output.chunk" for e in run.events.to_list()),
                "the cfo's answer streams")

    began = time.monotonic()
    post = await run.reply("@cfo the budget is fixed at 2M", room="board", steer=True)
    await until(lambda: server.requests[0].ended is not None, "the stream is closed")

    assert server.requests[0].hung_up  # the client closed it: aborted, not finished
    assert server.requests[0].ended - began < 0.2  # type: ignore[operator]
    assert await run.wait() == "completed", run.error
    assert len(server.requests) == 2
    prompt = str(server.requests[1].body["messages"])
    assert "the budget is fixed at 2M" in prompt and post in prompt
    assert [(m.sender, m.text) for m in run.messages] == [
        ("me", "@cfo the budget is fixed at 2M"), ("cfo", "Budget: 2M")]
    assert run.result is not None
    assert run.result["agents"][1]["result"]["summary"] == "2M it is"
    events = run.events.to_list()
    stopped, finished = [e["payload"] for e in events if e["type"] == "provider.usage"]
    assert stopped["outputTokens"] > 0  # what was streamed before the stop was spent
    assert stopped["inputTokens"] > 0 and finished == {**finished, "inputTokens": 10,
                                                       "outputTokens": 5}
    assert run.state.usage.total.total_tokens == stopped["totalTokens"] + 15  # budgets see it
    spent = [e["payload"]["consumed"] for e in events if e["type"] == "budget.consumed"]
    assert spent[-1] == stopped["totalTokens"] + 15
    assert [(e["type"], e["payload"].get("attempt")) for e in events
            if e.get("nodeId") == "cfo" and e["type"].startswith("node.")] == [
        ("node.started", 0), ("node.retried", 1), ("node.started", 1), ("node.completed", None)]
    wop_check(db, RUN)


@pytest.mark.parametrize("tool", ["slow_restart", "slow_deploy"])  # sync and async
async def test_a_steer_lets_the_tool_call_in_flight_finish_and_the_rerun_uses_its_result(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path,
        tool: str) -> None:
    server.add(ToolCalls((tool, {"name": "api"})), DONE)
    council = tool_council(tools=[f"tests.tools.effects_tools:{tool}"], humans=("me",))
    db = tmp_path / "runs.db"
    run = council.start(store=db, run_id=RUN)
    await until(lambda: steps(effects, tool) == ["begun"], f"{tool} is called")

    post = await asyncio.wait_for(
        run.reply("@sre check the database first", room="ops", steer=True), 5)
    await asyncio.sleep(0.2)
    events = run.events.to_list()
    assert "node.retried" not in kinds(events)  # the turn waits for its call ...
    assert kinds(events, "agent.toolCalled", "agent.toolReturned") == ["agent.toolCalled"]
    release.touch()  # ... which ends, is recorded, and then the turn stops and runs again

    assert await run.wait() == "completed", run.error
    assert_made_once(run, effects, tool)  # made once: not lost, not repeated
    events = run.events.to_list()
    assert kinds(events, "agent.toolReturned", "node.retried", "node.started")[-3:] == [
        "agent.toolReturned", "node.retried", "node.started"]
    assert len(server.requests) == 2  # the rerun was given the result, not asked to call
    assert given(server) == [{"slow_restart": "restarted api",
                              "slow_deploy": "deployed api"}[tool]]
    assert post in str(server.requests[1].body["messages"])
    wop_check(db, RUN)
