"""RFC 0005 §G continuation: a fork or a crash-resume retries an in-flight turn with
``node.retried`` before its new ``node.started`` (never a node started twice without an end
between); a fork cut at or after ``conversation.closed`` finishes the gate node."""

from __future__ import annotations

import pytest

import wopdsl
from wopdsl.engine import fork

from .helpers import COUNCILS, broken, checks, desk, valid


@pytest.fixture
def store(tmp_path):
    st = wopdsl.open_store(tmp_path / "runs.db")
    yield st
    st.close()


@pytest.mark.parametrize("mode", ["branch", "replay"])
async def test_a_turn_cut_in_flight_is_retried_after_node_retried(store, mode):
    council = wopdsl.load(COUNCILS / "release-team.toml")
    source = await council.arun(store=store, deterministic=True)
    started = [e for e in source.events if e["type"] == "node.started"
               and e["payload"].get("typeId") == "council.member"]
    new_id = fork(store, source.run_id, started[1]["sequence"], mode=mode)
    forked = council.open(new_id, store)
    assert await forked.resume() == "completed"
    tail = [(e["type"], e.get("nodeId")) for e in forked.events][started[1]["sequence"] + 1:]
    member = started[1]["nodeId"]
    assert tail[:3] == [("run.resumed", None), ("node.retried", member),
                        ("node.started", member)]
    retried = next(e for e in forked.events if e["type"] == "node.retried")
    assert retried["payload"] == {"nodeId": member, "attempt": 1}
    valid(forked)


async def test_the_checker_flags_a_node_started_twice(store):
    council = wopdsl.load(COUNCILS / "release-team.toml")
    source = await council.arun(store=store, deterministic=True)
    events = broken(source.events)
    first = next(e for e in events if e["type"] == "node.started"
                 and e["payload"].get("typeId") == "council.member")
    twice = [*events[:first["sequence"] + 1], dict(first, sequence=first["sequence"] + 1)]
    assert "node" in checks(twice)
    assert checks(list(source.events)) == set()


@pytest.mark.parametrize("offset", [0, 1, 2])
async def test_a_fork_at_or_after_closed_finishes_the_gate(store, offset):
    run = await desk().arun(store=store, deterministic=True)
    await run.reply(room="desk", operation="close", outcome={"ok": True})
    await run.wait()
    closed = next(e for e in run.events if e["type"] == "conversation.closed")
    new_id = fork(store, run.run_id, closed["sequence"] + offset)
    forked = desk().open(new_id, store)
    assert await forked.resume() == "completed"
    gate = [e["type"] for e in forked.events if e.get("nodeId") == "room:desk"]
    assert gate[-3:] == ["conversation.closed", "node.resumed", "node.completed"]
    valid(forked)
