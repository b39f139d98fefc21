"""Replay never calls the model; resume re-calls only the turn in flight; replay forks compare."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.llm.conftest import llm_council
from tests.llm.test_run import events_of, payloads, post
from tests.openwop_schemas import load_schemas
from wopdsl import SqliteStore
from wopdsl.engine import fork
from wopdsl.testing.model_server import Answer, ScriptedModelServer


async def test_replay_and_reopen_never_call_the_model(server: ScriptedModelServer,
                                                      tmp_path: Path) -> None:
    server.add(Answer(post("asked", "desk", "check", "critic")), member="writer")
    server.add(Answer({"summary": "checked"}), member="critic")
    council = llm_council()
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status == "completed"
    calls = len(server.requests)
    reopened = council.open(run.run_id, str(tmp_path / "runs.db"))
    assert await reopened.resume() == "completed"  # a finished run: folds, appends nothing
    assert reopened.result == run.result
    assert len(server.requests) == calls
    assert len(events_of(tmp_path / "runs.db", run.run_id)) == len(run.events)


async def test_resume_re_calls_only_the_turn_in_flight(server: ScriptedModelServer,
                                                       tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    server.add(Answer(post("asked", "desk", "check", "critic")), member="writer")
    server.add(Answer({"summary": "too late"}, delay_s=30), member="critic")
    council = llm_council()
    run = council.start(store=db)
    for _ in range(200):  # until the critic's call is on the wire
        if any(r.member == "critic" for r in server.requests):
            break
        await asyncio.sleep(0.02)
    await run.detach()  # the process "dies" with the critic's turn in flight
    assert [r.member for r in server.requests] == ["writer", "critic"]
    server.add(Answer({"summary": "checked"}), member="critic")
    resumed = council.open(run.run_id, db)
    assert await resumed.resume() == "completed"
    assert [r.member for r in server.requests] == ["writer", "critic", "critic"]
    events = events_of(tmp_path / "runs.db", run.run_id)
    load_schemas().check_events(events)
    critic = [(e["type"], e["payload"].get("attempt")) for e in events
              if e.get("nodeId") == "critic" and e["type"] in ("node.started", "node.retried")]
    assert critic == [("node.started", 0), ("node.retried", 1), ("node.started", 1)]
    # The detached call was sent: its prompt was spent, and counts (estimated: the server
    # never answered), then the resumed call's usage.
    assert [u["nodeId"] for u in payloads(events, "provider.usage")] == [
        "writer", "critic", "critic"]
    assert [e["payload"]["fields"] for e in events if e["type"] == "log.appended"] == [
        {"estimated": True}]
    assert resumed.result["agents"][1]["result"] == {"summary": "checked"}


async def test_replay_fork_re_calls_and_records_divergence(server: ScriptedModelServer,
                                                           tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    server.add(Answer(post("asked", "desk", "check", "critic")), member="writer")
    server.add(Answer({"summary": "checked"}), member="critic")
    council = llm_council()
    source = await council.arun(store=db)
    assert source.status == "completed"
    store = SqliteStore(tmp_path / "runs.db")
    try:
        critic_start = next(e["sequence"] for e in source.events
                            if e["type"] == "node.started" and e.get("nodeId") == "critic")
        same = fork(store, source.run_id, critic_start - 1, mode="replay")
        changed = fork(store, source.run_id, critic_start - 1, mode="replay")
    finally:
        store.close()
    server.add(Answer({"summary": "checked"}), member="critic")
    forked = council.open(same, db)
    assert await forked.resume() == "completed"
    assert forked.state.divergences == []
    server.add(Answer({"summary": "a different verdict"}), member="critic")
    other = council.open(changed, db)
    assert await other.resume() == "completed"
    assert [d["divergenceKind"] for d in other.state.divergences] == ["output"]
    assert len(server.requests) == 4  # each fork re-called the critic once, nobody else
    load_schemas().check_events(other.events)
