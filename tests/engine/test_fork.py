"""Fork a run at a sequence: branch and replay modes, divergence, byte-identical channels."""

import json
from pathlib import Path

import pytest

import wopdsl
from wopdsl import Council, Post, Reply
from wopdsl._ids import parse_iso_ms
from wopdsl.engine import fork
from wopdsl.state import channels

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path):
    return wopdsl.open_store(tmp_path / "runs.db")


def _member_starts(events):
    return [e for e in events
            if e["type"] == "node.started" and not e["nodeId"].startswith("room:")]


async def test_replay_fork_of_deterministic_council_gives_identical_channels(store):
    council = wopdsl.load(ROOT / "councils" / "incident-response.toml")
    source = await council.arun(store=store, deterministic=True)
    assert source.status == "completed"
    cut = _member_starts(source.events)[2]["sequence"]
    new_id = fork(store, source.run_id, cut, mode="replay")
    forked = council.open(new_id, store)
    assert await forked.resume() == "completed"
    assert forked.state.divergences == []
    assert json.dumps(channels(forked.state)) == json.dumps(channels(source.state))
    assert forked.result == source.result
    started = forked.events[0]["payload"]["metadata"]["forkedFrom"]
    assert parse_iso_ms(started.pop("forkedAt")) > 0
    assert started == {"runId": source.run_id, "atSequence": cut, "mode": "replay"}


async def test_shared_prefix_is_the_source_log_with_ids_rewritten(store):
    council = wopdsl.load(ROOT / "councils" / "release-team.toml")
    source = await council.arun(store=store, deterministic=True)
    cut = _member_starts(source.events)[1]["sequence"] - 1
    new_id = fork(store, source.run_id, cut, mode="branch")
    events = store.read(new_id)
    assert [e["sequence"] for e in events] == list(range(len(events)))
    for mine, theirs in zip(events[1 : cut + 1], source.events[1 : cut + 1], strict=True):
        assert mine["type"] == theirs["type"]
        assert mine["runId"] == new_id and mine["eventId"] != theirs["eventId"]
        if "causationId" in theirs:
            assert mine["causationId"].startswith(f"evt.{new_id}.")
    opened = next(e for e in events if e["type"] == "conversation.opened")
    assert opened["payload"]["conversationId"] == f"{new_id}:room:review"
    forked = council.open(new_id, store)
    assert await forked.resume() == "completed"
    assert forked.transcript == source.transcript


async def test_replay_fork_records_divergence_when_a_member_changes(store):
    def build(answer):
        council = Council("diverge", task="t", max_turns_per_member=2)
        council.room("r", members=["a", "b"])

        @council.member(role="asker")
        def a(turn):
            if turn.turn == 1:
                return Reply(summary="ask", posts=[Post(room="r", text="q", mentions=["b"])])
            return Reply(summary="done")

        @council.member(role="answerer", initial_turn=False)
        def b(turn):
            return Reply(summary=answer)

        return council

    source = await build("yes").arun(store=store, deterministic=True)
    cut = _member_starts(source.events)[0]["sequence"]
    new_id = fork(store, source.run_id, cut, mode="replay")
    forked = build("no").open(new_id, store)
    await forked.resume()
    kinds = [d["divergenceKind"] for d in forked.state.divergences]
    assert kinds == ["output"]
    diverged = next(e for e in forked.events if e["type"] == "replay.diverged")
    assert diverged["payload"]["sourceRunId"] == source.run_id
    src_event = source.events[diverged["payload"]["atSequence"]]
    assert src_event["type"] == "node.completed" and src_event["nodeId"] == "b"


async def test_replay_fork_never_reasks_a_human(store):
    council = wopdsl.load(ROOT / "councils" / "conformance-multi-party-council.toml")
    source = await council.arun(store=store, deterministic=True)
    assert source.status == "waiting-input"
    for member in ("conformance-council-a", "conformance-council-b", "conformance-council-c"):
        await source.reply(f"{member} says Q4", as_=member)
    assert await source.wait() == "completed"
    opened = max(e["sequence"] for e in source.events if e["type"] == "conversation.opened")
    new_id = fork(store, source.run_id, opened, mode="replay")
    forked = council.open(new_id, store)
    assert await forked.resume() == "completed"
    assert forked.state.divergences == []
    assert forked.transcript == source.transcript


def test_fork_refuses_bad_points(store):
    council = wopdsl.load(ROOT / "councils" / "release-team.toml")
    source = council.run(store=store)
    with pytest.raises(wopdsl.ValidationError, match="forkable range"):
        fork(store, source.run_id, 1)
    with pytest.raises(wopdsl.ValidationError, match="forkable range"):
        fork(store, source.run_id, 10_000)
    with pytest.raises(wopdsl.RunNotFound):
        fork(store, "nope", 5)


async def test_cut_inside_a_settlement_reruns_that_turn(store):
    council = wopdsl.load(ROOT / "councils" / "release-team.toml")
    source = await council.arun(store=store, deterministic=True)
    completed = next(e for e in source.events
                     if e["type"] == "node.completed" and e["nodeId"] == "writer")
    # Cut between the writer's completion and its post: the fork must re-run that turn.
    new_id = fork(store, source.run_id, completed["sequence"], mode="branch")
    copied = store.read(new_id)
    assert copied[-1]["type"] == "node.started" and copied[-1]["nodeId"] == "writer"
    forked = council.open(new_id, store)
    assert await forked.resume() == "completed"
    retried = [e for e in forked.events if e["type"] == "node.started" and e["nodeId"] == "writer"]
    assert [e["payload"]["attempt"] for e in retried][:2] == [0, 1]
    assert forked.transcript == source.transcript
