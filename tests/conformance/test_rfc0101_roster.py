"""RFC 0101 roster: a turn is accepted only from a participant, with its member's role.

Every path a turn arrives by (``Run.reply`` text, an RFC 0005 §E payload, bare turn fields,
``wop reply --payload`` in a real subprocess): a refused turn is ``validation_error``, appends
nothing, and the run keeps waiting.
"""

from __future__ import annotations

import json

import pytest

import wopdsl

from .helpers import FIXTURE_COUNCIL, MEMBERS, desk, refused, valid

INTRUDER = {"role": "agent", "speakerId": "host:conformance-intruder", "content": {"text": "x"}}


@pytest.fixture
def store(tmp_path):
    st = wopdsl.open_store(tmp_path / "runs.db")
    yield st
    st.close()


async def fixture_run(store):
    run = await wopdsl.load(FIXTURE_COUNCIL).arun(store=store)
    assert run.status == "waiting-input"
    return run


async def test_a_participants_agent_turn_is_accepted(store):
    run = await fixture_run(store)
    await run.reply(resume={"role": "agent", "speakerId": "host:conformance-council-a",
                            "content": {"text": "Q4"}})
    turn = run.events[-1]["payload"]["turn"] if run.events[-1]["type"] == \
        "conversation.exchanged" else None
    exchanged = [e for e in run.events if e["type"] == "conversation.exchanged"]
    assert exchanged[-1]["payload"]["turn"]["speakerId"] == "host:conformance-council-a"
    assert exchanged[-1]["payload"]["turn"]["role"] == "agent"
    assert turn is None or turn["from"] == "conformance-council-a"
    valid(run)


@pytest.mark.parametrize("payload", [
    INTRUDER,
    {"operation": "exchange", "turn": INTRUDER},
    {"role": "agent", "content": {"text": "no speaker"}},
    {"operation": "exchange", "turn": {"role": "agent", "content": "no speaker"}},
    {"role": "system", "speakerId": "host:conformance-council-a", "content": "x"},
], ids=["non-participant", "non-participant-in-exchange", "no-speaker", "no-speaker-in-exchange",
        "system-role"])
async def test_a_turn_outside_the_roster_is_refused(store, payload):
    run = await fixture_run(store)
    await refused(run, run.reply(resume=payload, room="convo"),
                  "speakerId|participant|role")
    assert run.status == "waiting-input"


async def test_roles_must_fit_the_member(store):
    run = await desk().arun(store=store)
    # Negative: a person may not speak as an agent, an external agent not as a user, an
    # agent member of the engine not at all, and speakerId / as_ / from must agree.
    await refused(run, run.reply(resume={"role": "agent", "speakerId": "host:me",
                                         "content": "x"}, room="desk"), "role 'user'")
    await refused(run, run.reply(resume={"role": "user", "content": "x"}, as_="peer",
                                 room="desk"), "role 'agent'")
    await refused(run, run.reply("x", as_="assistant", room="desk"),
                  "not a human or external member")
    await refused(run, run.reply(resume={"role": "agent", "speakerId": "host:peer",
                                         "content": "x"}, as_="me"), "does not match")
    await refused(run, run.reply(resume={"from": "someone", "content": "x"}, as_="me",
                                 room="desk"), "does not match the speaker")
    # Positive: the external peer speaks as agent, the human as user.
    await run.reply(resume={"role": "agent", "speakerId": "host:peer", "content": "hi"})
    await run.reply("Q4 @assistant", as_="me", room="desk")
    exchanged = [e["payload"]["turn"] for e in run.events if e["type"] == "conversation.exchanged"]
    assert [(t["from"], t["role"], t["speakerId"]) for t in exchanged[1:3]] == [
        ("peer", "agent", "host:peer"), ("user", "user", "host:me")]
    await run.wait()
    valid(run)


def test_the_cli_refuses_an_intruder_and_keeps_waiting(wop, tmp_path):
    shutil_copy = FIXTURE_COUNCIL.read_text()
    (tmp_path / "c.toml").write_text(shutil_copy)
    assert wop("run", "c.toml", "--run-id", "r").returncode == 3
    before = wop("events", "r").stdout.count("\n")
    for payload in (INTRUDER, {"operation": "exchange", "turn": INTRUDER},
                    {"role": "agent", "content": "x"}):
        done = wop("reply", "r", "--room", "convo", "--payload", json.dumps(payload))
        assert done.returncode == 2, done.stdout
        assert "error[validation_error]" in done.stderr
        assert "Traceback" not in done.stderr
    assert wop("events", "r").stdout.count("\n") == before
    ok = wop("reply", "r", "--room", "convo", "--as", MEMBERS[0], "--json",
             "--payload", json.dumps({"role": "agent", "speakerId": f"host:{MEMBERS[0]}",
                                      "content": {"text": "Q4"}}))
    assert ok.returncode == 3, ok.stderr  # Still waiting for b and c.
    assert wop("check", "r").returncode == 0
