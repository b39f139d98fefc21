"""The notebook's approval box (real ipywidgets objects, no kernel): decide a waiting call."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ipywidgets", reason="the jupyter extra (wopdsl[jupyter]) is not installed")

from tests.tools.conftest import effects_in, tool_council
from wopdsl.jupyter import LiveView
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

TOOLS = ["tests.tools.effects_tools:restart_service"]
POLICY = {"restart_service": {"approval": "oncall"}}


async def test_the_box_shows_the_call_and_approves_it(server: ScriptedModelServer,
                                                      effects: Path, tmp_path: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "api"})), Answer({"summary": "done"}))
    run = await tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",)).arun(
        store=str(tmp_path / "runs.db"))
    view = LiveView(run)
    box = view.approval_box
    assert box is not None and box.widget in view.widget.children
    assert box.widget.layout.display == "" and list(box.call.options) == ["call/sre/1/0"]
    assert "oncall</b> to decide: sre asks to call restart_service" in box.what.value
    assert "restart_service({&quot;name&quot;: &quot;api&quot;})" in box.what.value
    box.approve.click()  # a task on the running loop, as a click in Jupyter
    assert box.pending is not None
    assert await box.pending == "call/sre/1/0"
    assert await run.wait() == "completed"
    view.refresh()
    assert box.widget.layout.display == "none" and box.decided == ["call/sre/1/0"]
    assert [e["name"] for e in effects_in(effects)] == ["api"]


async def test_a_rejection_carries_the_reason(server: ScriptedModelServer, effects: Path,
                                              tmp_path: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "api"})), Answer({"summary": "done"}))
    run = await tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",)).arun(
        store=str(tmp_path / "runs.db"))
    box = LiveView(run).approval_box
    assert box is not None
    box.reason.value = "not now"
    assert await box.decide(grant=False) == "call/sre/1/0"
    assert await run.wait() == "completed"
    assert effects_in(effects) == []
    tool = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")
    assert tool["content"].endswith("rejected this call: not now")
    assert await box.decide(grant=True) is None  # nothing waits any more: said, not raised
    assert "no tool call waits" in box.error.value


async def test_no_box_without_approvals(server: ScriptedModelServer, effects: Path) -> None:
    server.add(Answer({"summary": "done"}))
    run = await tool_council(tools=TOOLS).arun(store="memory:")
    assert LiveView(run).approval_box is None
