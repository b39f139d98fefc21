"""Replay and replay-mode forks call no tool (recorded results); branch forks call again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.openwop_schemas import load_schemas
from tests.tools.conftest import effects_in, tool_council
from wopdsl import SqliteStore
from wopdsl.engine import fork
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

TOOLS = ["tests.tools.effects_tools:restart_service"]
DONE = Answer({"summary": "restarted"})


async def _source(server: ScriptedModelServer, db: str):  # type: ignore[no-untyped-def]
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    council = tool_council(tools=TOOLS)
    run = await council.arun(store=db)
    assert run.status == "completed", run.error
    return council, run


def _fork(folder: Path, run, at: int, mode: str) -> str:  # type: ignore[no-untyped-def]
    store = SqliteStore(folder / "runs.db")
    try:
        return fork(store, run.run_id, at, mode=mode)  # type: ignore[arg-type]
    finally:
        store.close()


def _cut_before_the_turn(events: list[dict]) -> int:
    start = next(e["sequence"] for e in events
                 if e["type"] == "node.started" and e.get("nodeId") == "sre")
    return int(start) - 1


async def test_replay_calls_nothing(server: ScriptedModelServer, effects: Path,
                                    tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    _council, run = await _source(server, db)
    assert len(effects_in(effects)) == 1
    replayed = subprocess.run([sys.executable, "-m", "wopdsl", "replay", run.run_id,
                               "--store", db, "--json"], capture_output=True, text=True,
                              check=False)
    assert replayed.returncode == 0, replayed.stderr
    assert len(effects_in(effects)) == 1 and len(server.requests) == 2


async def test_a_replay_fork_uses_the_recorded_results(server: ScriptedModelServer,
                                                       effects: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    council, run = await _source(server, db)
    replay = _fork(tmp_path, run, _cut_before_the_turn(run.events.to_list()), "replay")
    # The model is asked again (members re-execute in a replay) and asks for the same call:
    # its recorded result is used, and the tool is not called.
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    forked = council.open(replay, db)
    assert await forked.resume() == "completed"
    assert len(effects_in(effects)) == 1
    tool = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert tool[0]["content"] == "restarted api"
    assert forked.state.divergences == []
    # A call the source never made is not made either: the model is told.
    other = _fork(tmp_path, run, _cut_before_the_turn(run.events.to_list()), "replay")
    server.add(ToolCalls(("restart_service", {"name": "db"})), DONE)
    changed = council.open(other, db)
    assert await changed.resume() == "completed"
    assert len(effects_in(effects)) == 1
    tool = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert tool[0]["content"].startswith("error (NOT_REPLAYED): this is a replay")
    load_schemas().check_events(changed.events.to_list())


async def test_a_branch_fork_calls_again(server: ScriptedModelServer, effects: Path,
                                         tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    council, run = await _source(server, db)
    branch = _fork(tmp_path, run, _cut_before_the_turn(run.events.to_list()), "branch")
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    forked = council.open(branch, db)
    assert await forked.resume() == "completed"
    assert len(effects_in(effects)) == 2
    load_schemas().check_events(forked.events.to_list())


async def test_a_replay_fork_cut_inside_the_turn_continues_from_the_source(
        server: ScriptedModelServer, effects: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    council, run = await _source(server, db)
    returned = next(e["sequence"] for e in run.events.to_list()
                    if e["type"] == "agent.toolReturned")
    replay = _fork(tmp_path, run, int(returned), "replay")
    branch = _fork(tmp_path, run, int(returned), "branch")
    server.add(DONE)
    forked = council.open(replay, db)
    assert await forked.resume() == "completed"
    assert len(effects_in(effects)) == 1  # the round is rebuilt; only the model is asked
    assert [m["content"] for m in server.requests[-1].body["messages"]
            if m["role"] == "tool"] == ["restarted api"]
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    branched = council.open(branch, db)
    assert await branched.resume() == "completed"
    assert len(effects_in(effects)) == 2  # a branch calls again
    calls = [e["payload"]["callId"] for e in branched.events.to_list()
             if e["type"] == "agent.toolCalled"]
    assert calls == ["call/sre/1/0", "call/sre/1/1"]  # ids stay unique in the fork's log
    load_schemas().check_events(branched.events.to_list())
    load_schemas().check_events(forked.events.to_list())
