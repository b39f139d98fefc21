"""OpenWOP conversation conformance (RFC 0005 / RFC 0101) with real runs on SQLite.

Every run here is checked event by event against the published schemas in
``shared/openwop/schemas`` (see ``tests/openwop_schemas.py``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError as PydanticValidationError

import wopdsl
from wopdsl import Council, Post, Reply
from wopdsl.engine import fork
from wopdsl.protocol.conversation import ConversationTurn, parse_resume
from wopdsl.protocol.payloads import post_turn

from ..openwop_schemas import load_schemas

ROOT = Path(__file__).resolve().parents[2]
COUNCILS = ROOT / "councils"


@pytest.fixture
def schemas():
    return load_schemas()


@pytest.fixture
def store(tmp_path):
    st = wopdsl.open_store(tmp_path / "runs.db")
    yield st
    st.close()


def desk(**settings) -> Council:
    """An agent and a human in one room, plus a side room the human is not in."""
    council = Council("desk", task="Plan the launch.", max_turns_per_member=3, **settings)
    council.room("desk", members=["assistant", "me"])
    council.room("side", members=["assistant"])
    council.human("me", role="founder")

    @council.member(role="assistant")
    async def assistant(turn):
        if turn.turn == 1:
            return Reply(summary="asked", posts=[
                Post(room="desk", text="Q3 or Q4, @me?", mentions=["me"]),
                Post(room="side", text="note to self", mentions=[])])
        return Reply(summary=f"heard {turn.triggers[0].text}")

    return council


def by_type(events, type_):
    return [e for e in events if e["type"] == type_]


# -- every event validates ---------------------------------------------------------------


async def test_every_event_of_many_runs_validates(schemas, store):
    runs = []
    runs.append(await wopdsl.load(COUNCILS / "release-team.toml").arun(store=store))
    runs.append(await wopdsl.load(COUNCILS / "incident-response.toml").arun(store=store))
    waiting = await desk().arun(store=store)
    assert waiting.status == "waiting-input"
    runs.append(waiting)
    assert schemas.check_events(store.read(waiting.run_id)) > 0
    await waiting.reply("Q4 @assistant", room="desk")
    assert await waiting.wait() == "completed"

    failing = Council("fails", task="t")
    failing.room("r", members=["a"])

    @failing.member(role="a")
    def a(turn):
        raise RuntimeError("boom")

    runs.append(await failing.arun(store=store))
    slow = Council("slow", task="t", timeout_ms=50)
    slow.room("r", members=["s"])

    @slow.member(role="s")
    async def s(turn):
        await asyncio.sleep(2)

    runs.append(await slow.arun(store=store))
    cancelled = await desk().arun(store=store)
    await cancelled.cancel()
    runs.append(cancelled)
    source = runs[1]
    starts = [e for e in source.events if e["type"] == "node.started"
              and e["payload"]["typeId"] == "council.member"]
    forked = wopdsl.load(COUNCILS / "incident-response.toml").open(
        fork(store, source.run_id, starts[1]["sequence"], mode="replay"), store)
    await forked.resume()
    runs.append(forked)
    statuses = [r.status for r in runs]
    assert statuses == ["completed", "completed", "completed", "failed", "failed", "cancelled",
                        "completed"]
    total = sum(schemas.check_events(store.read(r.run_id)) for r in runs)
    assert total > 100


# -- lifecycle per room (RFC 0005 §B, §D) ------------------------------------------------


async def test_room_lifecycle_and_contiguous_turn_indexes(schemas, store):
    run = await wopdsl.load(COUNCILS / "incident-response.toml").arun(store=store)
    events = list(run.events)
    schemas.check_events(events)
    for room in ("war-room", "ops", "commander-comms"):
        node = f"room:{room}"
        mine = [e for e in events if e.get("nodeId") == node]
        types = [e["type"] for e in mine]
        assert types[:4] == ["node.started", "interrupt.requested", "node.suspended",
                             "conversation.opened"]
        assert types[-3:] == ["conversation.closed", "node.resumed", "node.completed"]
        assert set(types[4:-3]) <= {"conversation.exchanged"}
        suspended, opened = mine[2], mine[3]
        assert "kind" not in suspended["payload"]
        assert opened["causationId"] == suspended["eventId"]
        cid = f"{run.run_id}:room:{room}"
        assert {e["payload"]["conversationId"] for e in mine[3:-2]} == {cid}
        indexes = [e["payload"]["turnIndex"] for e in mine if e["type"] == "conversation.exchanged"]
        assert indexes == list(range(1, len(indexes) + 1))
        closed = mine[-3]["payload"]
        assert closed["turnIndex"] == closed["finalTurn"]["turnIndex"] == len(indexes) + 1
        assert opened["payload"]["initialTurn"]["turnIndex"] == 0
        assert opened["payload"]["initialTurn"]["role"] == "system"


async def test_no_exchange_after_close_late_human_turn_refused(store):
    council = Council("two-rooms", task="t", max_turns_per_member=2)
    council.room("desk", members=["assistant", "me"])
    council.room("lobby", members=["assistant", "me"])
    council.human("me")

    @council.member(role="assistant")
    def assistant(turn):
        return Reply(summary="asked", posts=[Post(room="desk", text="@me?", mentions=["me"])])

    run = await council.arun(store=store)
    await run.reply(room="desk", operation="close", outcome={"decision": "Q4"})
    assert run.status == "waiting-input"  # the person can still answer in the lobby
    closed = by_type(run.events, "conversation.closed")
    assert closed[0]["payload"]["outcome"] == {"decision": "Q4"}
    count = len(run.events)
    with pytest.raises(wopdsl.ValidationError, match="closed") as info:
        await run.reply("one more thing", room="desk")
    assert info.value.code == "validation_error"
    assert len(run.events) == count
    await run.reply(room="lobby", operation="close")
    assert await run.wait() == "completed"


async def test_closing_a_persons_last_room_drops_their_request(store):
    run = await desk().arun(store=store)
    await run.reply(room="desk", operation="close", outcome=None)
    assert await run.wait() == "completed"
    with pytest.raises(wopdsl.ValidationError, match="ended"):
        await run.reply("late", room="desk")


# -- roster (RFC 0101) -------------------------------------------------------------------


async def test_roster_and_speaker_ids(schemas, store):
    run = await desk().arun(store=store)
    await run.reply("Q4 @assistant", room="desk")
    await run.wait()
    events = list(run.events)
    schemas.check_events(events)
    opened = {e["nodeId"]: e["payload"] for e in by_type(events, "conversation.opened")}
    assert opened["room:desk"]["participants"] == [{"agentId": "host:assistant",
                                                    "name": "assistant"}]
    for event in by_type(events, "conversation.exchanged"):
        turn = event["payload"]["turn"]
        if turn["role"] == "user":
            assert turn["from"] == "user" and turn["speakerId"] == "host:me"
        else:
            assert turn["role"] == "agent" and turn["speakerId"] == f"host:{turn['from']}"


async def test_turn_from_non_participant_is_refused_and_nothing_appended(store):
    run = await desk().arun(store=store)
    count = len(run.events)
    for kwargs in ({"room": "side", "as_": "me"}, {"room": "desk", "as_": "assistant"},
                   {"room": "nowhere", "as_": "me"}):
        with pytest.raises(wopdsl.ValidationError):
            await run.reply("hello", **kwargs)
    assert len(run.events) == count


def test_agent_turn_without_speaker_is_refused_by_the_wire_model():
    turn = post_turn("team/a/1/0", "a", human=False, text="x", mentions=[], ts=1, index=1,
                     room_id="r")
    ConversationTurn.model_validate(turn)
    del turn["speakerId"]
    with pytest.raises(PydanticValidationError, match="speakerId"):
        ConversationTurn.model_validate(turn)


async def test_oversize_roster_refused_and_fixture_council_runs(schemas, store):
    oversize = wopdsl.load(COUNCILS / "conformance-multi-party-council-oversize.toml")
    with pytest.raises(wopdsl.ValidationError, match="maxParticipants") as info:
        await oversize.arun(store=store, run_id="oversize")
    assert info.value.code == "validation_error"
    assert not store.exists("oversize")
    allowed = await oversize.arun(store=store, max_participants=64)
    assert allowed.status == "completed"

    council = wopdsl.load(COUNCILS / "conformance-multi-party-council.toml")
    run = await council.arun(store=store)
    assert run.status == "waiting-input"
    opened = by_type(run.events, "conversation.opened")[0]["payload"]
    assert [p["agentId"] for p in opened["participants"]] == [
        "host:conformance-council-a", "host:conformance-council-b", "host:conformance-council-c"]
    for member in ("conformance-council-a", "conformance-council-b", "conformance-council-c"):
        await run.reply(resume={"operation": "exchange", "turn": {
            "role": "agent", "speakerId": f"host:{member}", "content": {"text": "Q4"}}})
    assert await run.wait() == "completed"
    schemas.check_events(run.events)


def test_cli_refusal_is_a_clear_message(tmp_path):
    db = tmp_path / "runs.db"
    council = COUNCILS / "conformance-multi-party-council.toml"
    run = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(db), "run", str(council),
                          "--json"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 3, run.stderr
    run_id = json.loads(run.stdout)["runId"]
    refused = subprocess.run(
        [sys.executable, "-m", "wopdsl", "--store", str(db), "reply", run_id, "--room", "convo",
         "--as", "conformance-council-a", "hi @nobody"], capture_output=True, text=True,
        cwd=tmp_path)
    assert refused.returncode == 2
    assert "error[validation_error]" in refused.stderr + refused.stdout
    assert "Traceback" not in refused.stderr
    oversize = subprocess.run(
        [sys.executable, "-m", "wopdsl", "--store", str(db), "run",
         str(COUNCILS / "conformance-multi-party-council-oversize.toml")],
        capture_output=True, text=True, cwd=tmp_path)
    assert oversize.returncode == 2
    assert "error[validation_error]" in oversize.stderr + oversize.stdout
    assert "maxParticipants" in oversize.stderr + oversize.stdout


# -- human input: RFC 0005 §E ------------------------------------------------------------


async def test_resume_payloads_exchange_bare_and_close(store):
    run = await desk().arun(store=store)
    mid = await run.reply(room="desk", resume={
        "operation": "exchange",
        "turn": {"content": {"text": "Q4 please", "mentions": ["assistant"]}}})
    assert mid is not None
    assert await run.wait() == "completed"
    assert [m.text for m in run.messages][-1] == "Q4 please"
    assert run.result["agents"][1]["result"]["summary"] == "heard Q4 please"
    run2 = await desk().arun(store=store)
    await run2.reply(room="desk", resume={"content": {"text": "bare @assistant"}})
    await run2.wait()
    assert any(m.text == "bare @assistant" for m in run2.messages)
    assert parse_resume({"content": "x"}).operation == "exchange"
    run3 = await desk().arun(store=store)
    with pytest.raises(wopdsl.ValidationError, match="operation must be 'exchange' or 'close'"):
        await run3.reply(room="desk", resume={"operation": "shout"})


# -- turn schemas ------------------------------------------------------------------------


SHORT = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 12}}}


async def test_turn_schema_human_violation_is_validation_error(store):
    council = Council("schema", task="t", max_turns_per_member=2)
    council.room("r", members=["bot", "me"], turn_schema=SHORT)
    council.human("me")

    @council.member(role="bot")
    def bot(turn):
        return Reply(summary="hi", posts=[Post(room="r", text="ok @me", mentions=["me"])])

    run = await council.arun(store=store)
    assert run.status == "waiting-input"
    opened = by_type(run.events, "conversation.opened")[0]["payload"]
    assert opened["schema"] == SHORT
    count = len(run.events)
    with pytest.raises(wopdsl.ValidationError, match="turn_schema"):
        await run.reply("this text is far too long for the schema", room="r")
    assert len(run.events) == count
    await run.reply("short", room="r")
    assert await run.wait() == "completed"


async def test_turn_schema_member_violation_is_result_invalid(store):
    council = Council("schema2", task="t")
    council.room("r", members=["bot"], turn_schema=SHORT)

    @council.member(role="bot")
    def bot(turn):
        return Reply(summary="hi", posts=[Post(room="r", text="much too long for the room")])

    run = await council.arun(store=store)
    failed = by_type(run.events, "node.failed")[0]["payload"]["error"]
    assert failed["code"] == "RESULT_INVALID" and "turn_schema" in failed["message"]
    assert run.error["code"] == "TEAM_NODE_FAILED"
    assert not by_type(run.events, "conversation.exchanged")


# -- council timeout (RFC 0005 §I) -------------------------------------------------------


async def test_council_timeout_closes_every_conversation(schemas, store):
    council = Council("late", task="t", timeout_ms=100, global_concurrency=2)
    council.room("a", members=["slow", "quick"])
    council.room("b", members=["slow"])

    @council.member(role="slow")
    async def slow(turn):
        await asyncio.sleep(3)

    @council.member(role="quick")
    def quick(turn):
        return Reply(summary="done", posts=[Post(room="a", text="quick note")])

    run = await council.arun(store=store)
    assert run.status == "failed" and run.error["code"] == "TIMEOUT"
    closed = by_type(run.events, "conversation.closed")
    assert len(closed) == 2
    for event in closed:
        assert event["payload"]["outcome"] is None
        final = event["payload"]["finalTurn"]
        assert final["role"] == "system" and "timeout_ms" in final["content"]["text"]
    assert [m.text for m in run.messages] == ["quick note"]
    schemas.check_events(run.events)


# -- snapshot and capabilities -----------------------------------------------------------


async def test_run_snapshot_validates(schemas, store):
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator({"$ref": schemas.documents["run-snapshot.schema.json"]["$id"]},
                                     registry=schemas.registry)
    waiting = await desk().arun(store=store)
    snap = waiting.snapshot()
    assert snap["status"] == "waiting-input" and snap["currentNodeId"] == "room:desk"
    assert not list(validator.iter_errors(snap))
    done = await wopdsl.load(COUNCILS / "release-team.toml").arun(store=store)
    snap = done.snapshot()
    assert snap["status"] == "completed"
    assert snap["nodeStates"]["writer"]["turns"] == 2
    assert [t["messageId"] for t in snap["channels"]["review"]] == ["team/writer/1/0",
                                                                    "team/reviewer/2/0"]
    assert not list(validator.iter_errors(snap))


def test_capabilities_document(tmp_path):
    out = subprocess.run([sys.executable, "-m", "wopdsl", "capabilities"], capture_output=True,
                         text=True, check=True, cwd=tmp_path)
    doc = json.loads(out.stdout)
    assert doc["protocolVersion"] == "1.0"
    assert doc["conversationPrimitive"] is True
    assert doc["multiPartyConversation"]["supported"] is True
    assert doc["multiPartyConversation"]["maxParticipants"] >= 3
    for key in ("supportedEnvelopes", "schemaVersions", "limits"):
        assert key in doc
    assert set(doc["limits"]) >= {"clarificationRounds", "schemaRounds", "envelopesPerTurn"}


async def test_own_wire_models_parse_every_conversation_payload(store):
    from wopdsl.protocol.conversation import (
        ConversationClosed,
        ConversationExchanged,
        ConversationOpened,
    )

    models = {"conversation.opened": ConversationOpened,
              "conversation.exchanged": ConversationExchanged,
              "conversation.closed": ConversationClosed}
    run = await wopdsl.load(COUNCILS / "incident-response.toml").arun(store=store)
    waiting = await desk().arun(store=store)
    await waiting.reply("Q4 @assistant", room="desk")
    await waiting.wait()
    seen = set()
    for event in [*run.events, *waiting.events]:
        model = models.get(event["type"])
        if model is not None:
            parsed = model.model_validate(event["payload"])
            assert parsed.model_dump(by_alias=True, exclude_none=True) == {
                k: v for k, v in event["payload"].items() if v is not None}
            seen.add(event["type"])
    assert seen == set(models)
