"""RFC 0101 speaker identity: agent turns carry their roster speakerId; a person's turn is
``from: "user"`` and keeps ``speakerId`` so several people stay distinct."""

from __future__ import annotations

import pytest

import wopdsl

from .helpers import broken, checks, desk, valid


@pytest.fixture
def store(tmp_path):
    st = wopdsl.open_store(tmp_path / "runs.db")
    yield st
    st.close()


async def test_turns_name_their_speaker(store):
    run = await desk().arun(store=store)
    await run.reply("Q4 @assistant", room="desk")
    await run.wait()
    turns = [e["payload"]["turn"] for e in run.events if e["type"] == "conversation.exchanged"]
    assert [(t["from"], t["role"], t["speakerId"]) for t in turns] == [
        ("assistant", "agent", "host:assistant"), ("user", "user", "host:me"),
    ]
    assert [m.sender for m in run.messages] == ["assistant", "me"]  # the fold names people
    assert "me team/me/2/0" in run.transcript
    valid(run)


async def test_the_checker_flags_a_person_named_in_from_and_an_agent_without_speaker(store):
    run = await desk().arun(store=store)
    await run.reply("Q4 @assistant", room="desk")
    events = list(run.events)
    assert checks(events) == set()
    user_turn = broken(events)
    for event in user_turn:
        if event["type"] == "conversation.exchanged" and \
                event["payload"]["turn"]["role"] == "user":
            event["payload"]["turn"]["from"] = "me"
    assert "roster" in checks(user_turn)
    anonymous = broken(events)
    for event in anonymous:
        if event["type"] == "conversation.exchanged" and \
                event["payload"]["turn"]["role"] == "agent":
            del event["payload"]["turn"]["speakerId"]
    assert {"turn", "roster"} <= checks(anonymous)
