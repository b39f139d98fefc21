"""Approvals: a tool with ``approval = MEMBER`` waits durably for that person's decision."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.openwop_schemas import load_schemas
from tests.tools.conftest import effects_in, tool_council
from wopdsl import ValidationError
from wopdsl.state import wire_status
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

DONE = Answer({"summary": "done"})
TOOLS = ["tests.tools.effects_tools:restart_service", "tests.tools.effects_tools:read_log"]
POLICY = {"restart_service": {"approval": "oncall"}}


def _types(run, *kinds: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [e["type"] for e in run.events if e["type"] in kinds and e.get("nodeId") == "sre"]


async def test_a_granted_call_is_made_after_the_decision(server: ScriptedModelServer,
                                                         effects: Path, tmp_path: Path) -> None:
    server.add(ToolCalls(("read_log", {"service": "api"}),
                         ("restart_service", {"name": "api"})), DONE)
    council = tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",))
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status == "waiting-input"
    assert [e["tool"] for e in effects_in(effects)] == ["read_log"]  # the other call ran
    assert run.state.member_phase("sre") == "waiting"
    waiting = list(run.state.tools.approvals.values())
    assert [(w.approver, w.call_id) for w in waiting] == [("oncall", "call/sre/1/1")]
    with pytest.raises(ValidationError, match="its approver is oncall"):
        await run.approve(as_="sre")
    # The process may go away: another handle on the store decides, and the run goes on.
    again = council.open(run.run_id, str(tmp_path / "runs.db"))
    assert await again.approve(as_="oncall") == "call/sre/1/1"
    assert await again.wait() == "completed"
    assert [e["tool"] for e in effects_in(effects)] == ["read_log", "restart_service"]
    assert len(server.requests) == 2  # the model was not asked again for the round
    tools = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tools[1] == "restarted api"
    assert _types(again, "interrupt.requested", "approval.requested", "node.suspended",
                  "interrupt.resolved", "approval.granted", "node.resumed") == [
        "interrupt.requested", "approval.requested", "node.suspended", "interrupt.resolved",
        "approval.granted", "node.resumed"]
    # The turn runs again because it was decided, not because a run stopped mid-turn.
    assert [e for e in again.events if e["type"] == "run.resumed"] == []
    load_schemas().check_events(again.events.to_list())


async def test_a_rejection_is_the_tools_result(server: ScriptedModelServer,
                                               effects: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    council = tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",))
    run = await council.arun(store="memory:")
    assert run.status == "waiting-input"
    await run.approve(reject=True, reason="not during the sale")
    assert await run.wait() == "completed"
    assert effects_in(effects) == []
    tool = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")
    assert tool["content"] == ("error (REJECTED): not called: oncall rejected this call: not "
                               "during the sale")
    events = run.events.to_list()
    rejected = [e["payload"] for e in events if e["type"] == "approval.rejected"]
    assert rejected == [{"gateId": "approval/call/sre/1/0", "principal": "oncall",
                         "reason": "not during the sale"}]
    returned = next(e["payload"] for e in events if e["type"] == "agent.toolReturned")
    assert returned["status"] == "forbidden"
    load_schemas().check_events(events)


async def test_nothing_to_decide_is_a_clear_error(server: ScriptedModelServer) -> None:
    server.add(DONE)
    run = await tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",)).arun(
        store="memory:")
    assert run.status == "completed"
    with pytest.raises(ValidationError, match="has ended"):
        await run.approve()


async def test_no_other_turn_is_dispatched_while_an_approval_waits(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    council = tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",))
    council.room("notes", members=["scribe"])
    council.add_member("scribe", role="scribe", engine="script",
                       script=[{"summary": "noted"}])
    run = await council.arun(store="memory:")
    assert run.status == "waiting-input"
    started = [e.get("nodeId") for e in run.events if e["type"] == "node.started"]
    assert "scribe" not in started  # queued behind the waiting turn, not run beside it
    assert "scribe" in run.state.queue
    await run.approve()
    assert await run.wait() == "completed"
    events = run.events.to_list()
    granted = next(e["sequence"] for e in events if e["type"] == "approval.granted")
    scribe = next(e["sequence"] for e in events
                  if e["type"] == "node.started" and e.get("nodeId") == "scribe")
    assert scribe > granted
    assert [e["tool"] for e in effects_in(effects)] == ["restart_service"]


async def test_the_wire_says_waiting_approval_when_only_approvals_wait(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    run = await tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",)).arun(
        store="memory:")
    assert run.status == "waiting-input"  # The fold: a person must act.
    snap = run.snapshot()  # The RunSnapshot: it is an approval the run waits for.
    assert (snap["status"], snap["currentNodeId"]) == ("waiting-approval", "sre")
    assert wire_status(run.state) == "waiting-approval"
    # Decided for the approver by someone else (a host's caller): the log names them.
    assert await run.approve(principal="alice") == "call/sre/1/0"
    assert await run.wait() == "completed"
    events = run.events.to_list()
    assert [e["payload"]["resumeValue"]["decidedBy"] for e in events
            if e["type"] == "interrupt.resolved"] == ["alice"]
    assert [e["payload"] for e in events if e["type"] == "approval.granted"] == [
        {"gateId": "approval/call/sre/1/0", "principal": "alice"}]
    load_schemas().check_events(events)


async def test_a_person_awaited_beside_an_approval_keeps_waiting_input(
        server: ScriptedModelServer, effects: Path) -> None:
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    council = tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",))
    council.human("boss", initial_turn=True)
    council.room("board", members=["boss"])
    run = await council.arun(store="memory:")
    assert run.state.tools.approvals and run.state.waiting_for == ["boss"]
    snap = run.snapshot()
    assert (snap["status"], snap["currentNodeId"]) == ("waiting-input", "room:board")
    assert wire_status(run.state) == run.status == "waiting-input"
