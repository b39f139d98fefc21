"""RFC 0005 interrupts while a conversation waits: each awaited turn (a person's, an external
agent's) is an ``interrupt.requested`` of kind ``conversation.exchange``; the turn landing
appends ``interrupt.resolved`` first. All payloads validate against the v1 schemas."""

from __future__ import annotations

import pytest

import wopdsl

from .helpers import FIXTURE_COUNCIL, MEMBERS, desk, valid


@pytest.fixture
def store(tmp_path):
    st = wopdsl.open_store(tmp_path / "runs.db")
    yield st
    st.close()


def of(run, type_):
    return [e for e in run.events if e["type"] == type_]


async def test_each_wait_is_requested_and_resolved_when_the_turn_lands(store):
    run = await wopdsl.load(FIXTURE_COUNCIL).arun(store=store)
    asked = of(run, "interrupt.requested")[1:]  # [0] is the room's conversation.start
    assert [a["payload"]["kind"] for a in asked] == ["conversation.exchange"] * 3
    cid = f"{run.run_id}:room:convo"
    assert [a["payload"]["key"] for a in asked] == [f"{cid}:exchange:{m}:1" for m in MEMBERS]
    assert all(a["payload"]["data"]["conversationId"] == cid for a in asked)
    assert not of(run, "interrupt.resolved")
    for member in MEMBERS:
        await run.reply(f"{member} votes Q4", as_=member)
        resolved = of(run, "interrupt.resolved")[-1]
        assert resolved["payload"]["interruptId"] == f"{cid}:exchange:{member}:1"
        assert "kind" not in resolved["payload"]  # the v1 enum lacks conversation kinds
        follows = run.events[resolved["sequence"] + 1]
        assert follows["type"] == "node.started" and follows["nodeId"] == member
    assert await run.wait() == "completed"
    valid(run)


async def test_a_join_nobody_asked_for_resolves_nothing(store):
    run = await desk().arun(store=store)
    await run.reply(resume={"role": "agent", "speakerId": "host:peer", "content": "unasked"})
    assert [e["payload"]["interruptId"] for e in of(run, "interrupt.resolved")] == []
    await run.reply("Q4 @assistant", room="desk")  # me was asked: resolved
    assert [e["payload"]["interruptId"] for e in of(run, "interrupt.resolved")] == [
        f"{run.run_id}:room:desk:exchange:me:1"]
    await run.wait()
    valid(run)
