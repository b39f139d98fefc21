"""Events on the OpenWOP wire (DESIGN.md §7): envelope, room lifecycle, turns, schemas."""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import HUMAN, MakeCouncil
from tests.engine.helpers import of_type, reply, say
from tests.openwop_schemas import load_schemas
from tests.published import RELEASE_TEAM_TOML
from wopdsl import Council, Reply, Run, SqliteStore, Turn
from wopdsl.declare import loads_spec
from wopdsl.protocol.envelope import RunEventDoc

REQUIRED = {"eventId", "runId", "type", "payload", "timestamp", "sequence"}
OPTIONAL = {"nodeId", "schemaVersion", "causationId"}
EVENT_ID = re.compile(r"^[A-Za-z0-9._~-]{16,128}$")


# -- representative runs ---------------------------------------------------------------------


async def published_success(make_council: MakeCouncil, db_path: Path) -> Run:
    return await Council.from_spec(loads_spec(RELEASE_TEAM_TOML)).arun(store=db_path,
                                                                    run_id="ok-run")


async def concurrent_success(make_council: MakeCouncil, db_path: Path) -> Run:
    council = make_council(
        {
            "ann": lambda t: reply("a", say("front", "to bob", "bob"), say("back", "note")),
            "bob": lambda t: reply(f"b{t.turn}", *(
                [say("front", "to ann", "ann")] if t.turn == 1 else [])),
            "cat": lambda t: reply("c", say("back", "cat here")),
        },
        rooms={"front": ["ann", "bob"], "back": ["ann", "cat"], "empty": ["cat"]},
        global_concurrency=2,
    )
    return await council.arun(store=db_path, run_id="busy-run")


async def result_invalid(make_council: MakeCouncil, db_path: Path) -> Run:
    council = make_council(
        {"ok": lambda t: reply("ok", say("all", "fine")),
         "bad": lambda t: reply("bad", say("all", "x", "ghost"))},
        global_concurrency=2,
    )
    return await council.arun(store=db_path, run_id="bad-run")


async def turn_limit(make_council: MakeCouncil, db_path: Path) -> Run:
    council = make_council({"loop": lambda t: reply("again", say("all", "again", "loop"))},
                           max_turns_per_member=2)
    return await council.arun(store=db_path, run_id="limit-run")


async def human_wait(make_council: MakeCouncil, db_path: Path) -> Run:
    council = make_council(
        {"helper": lambda t: reply(f"h{t.turn}", *(
            [say("desk", "what next?", "me")] if t.turn == 1 else [])),
         "me": HUMAN},
        rooms={"desk": ["helper", "me"]},
    )
    run = await council.arun(store=db_path, run_id="human-run")
    assert run.status == "waiting-input"
    return run


async def human_done(make_council: MakeCouncil, db_path: Path) -> Run:
    run = await human_wait(make_council, db_path)
    await run.reply("@helper finish it", room="desk")
    await run.wait()
    assert run.status == "completed"
    return run


async def cancelled(make_council: MakeCouncil, db_path: Path) -> Run:
    run = await human_wait(make_council, db_path)
    await run.cancel()
    return run


RUNS: dict[str, Callable[[MakeCouncil, Path], Awaitable[Run]]] = {
    "success": published_success,
    "concurrent-success": concurrent_success,
    "result-invalid": result_invalid,
    "turn-limit": turn_limit,
    "human-waiting": human_wait,
    "human-completed": human_done,
    "cancelled": cancelled,
}

EXPECTED_STATUS = {
    "success": "completed",
    "concurrent-success": "completed",
    "result-invalid": "failed",
    "turn-limit": "failed",
    "human-waiting": "waiting-input",
    "human-completed": "completed",
    "cancelled": "cancelled",
}


@pytest.fixture(params=list(RUNS))
async def stored_run(request: pytest.FixtureRequest, make_council: MakeCouncil,
                     db_path: Path) -> tuple[str, Run, list[RunEventDoc]]:
    name: str = request.param
    run = await RUNS[name](make_council, db_path)
    assert run.status == EXPECTED_STATUS[name]
    # Read back through a separate connection: what is durable, not what is cached.
    store = SqliteStore(db_path)
    try:
        events = store.read(run.run_id)
    finally:
        store.close()
    return name, run, events


# -- envelope ------------------------------------------------------------------------------


async def test_every_event_has_exactly_the_v1_envelope(
    stored_run: tuple[str, Run, list[RunEventDoc]]
) -> None:
    _, run, events = stored_run
    assert events
    assert [e["sequence"] for e in events] == list(range(len(events)))
    ids = [e["eventId"] for e in events]
    assert len(set(ids)) == len(ids)
    for event in events:
        keys = set(event)
        assert REQUIRED <= keys <= REQUIRED | OPTIONAL, sorted(keys)
        assert event["schemaVersion"] == 1
        assert "engineVersion" not in event
        assert EVENT_ID.match(event["eventId"]), event["eventId"]
        assert event["runId"] == run.run_id
        assert isinstance(event["payload"], dict)
        assert datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).tzinfo
        if "causationId" in event:
            assert event["causationId"] in ids[: event["sequence"]]


async def test_every_event_validates_against_the_openwop_schemas(
    stored_run: tuple[str, Run, list[RunEventDoc]]
) -> None:
    schemas = load_schemas()
    _, _, events = stored_run
    assert schemas.check_events(events) == len(events)


def test_the_schema_helper_rejects_broken_events() -> None:
    """A negative control: the validator behind the test above is not vacuous."""
    schemas = load_schemas()
    turn = {"messageId": "team/a/1/0", "from": "a", "role": "agent",
            "content": {"text": "hi", "mentions": []}, "ts": 1, "turnIndex": 1,
            "groupId": "all", "speakerId": "host:a"}
    good: RunEventDoc = {
        "eventId": "evt.run-0001.000000000007", "runId": "run-0001",
        "type": "conversation.exchanged", "sequence": 7, "schemaVersion": 1,
        "timestamp": "2026-01-01T00:00:00.000Z", "nodeId": "room:all",
        "payload": {"conversationId": "run-0001:room:all", "turnIndex": 1, "turn": turn},
    }
    assert schemas.event_errors(good) == []
    no_speaker = copy.deepcopy(good)
    del no_speaker["payload"]["turn"]["speakerId"]
    extra_key = copy.deepcopy(good)
    extra_key["engineVersion"] = 1  # type: ignore[typeddict-unknown-key]
    zero_index = copy.deepcopy(good)
    zero_index["payload"]["turnIndex"] = 0
    for broken in (no_speaker, extra_key, zero_index):
        assert schemas.event_errors(broken), broken


# -- the room lifecycle ----------------------------------------------------------------------


def room_events(events: Sequence[RunEventDoc], room: str) -> list[RunEventDoc]:
    return [e for e in events if e.get("nodeId") == f"room:{room}"]


async def test_each_room_follows_the_conversation_lifecycle(
    stored_run: tuple[str, Run, list[RunEventDoc]]
) -> None:
    name, run, events = stored_run
    by_id = {e["eventId"]: e for e in events}
    rooms = [r["id"] for r in events[0]["payload"]["metadata"]["council"]["rooms"]]
    assert rooms
    for room in rooms:
        mine = room_events(events, room)
        kinds = [e["type"] for e in mine]
        assert kinds[:4] == ["node.started", "interrupt.requested", "node.suspended",
                             "conversation.opened"], room
        started, interrupt, suspended, opened = mine[:4]
        assert started["payload"]["typeId"] == "core.conversationGate"
        cid = f"{run.run_id}:room:{room}"
        assert interrupt["payload"]["kind"] == "conversation.start"
        assert interrupt["payload"]["data"]["conversationId"] == cid
        assert suspended["payload"]["reason"] == "conversation-input"
        assert "kind" not in suspended["payload"]
        assert opened["causationId"] == suspended["eventId"]
        assert opened["payload"]["conversationId"] == cid
        initial = opened["payload"]["initialTurn"]
        assert (initial["role"], initial["turnIndex"]) == ("system", 0)
        assert initial["content"]["text"] == events[0]["payload"]["inputs"]["task"]
        # Waits for a person's turn (interrupt.requested / .resolved) sit between turns.
        waits = {"interrupt.requested", "interrupt.resolved"}
        mine = mine[:4] + [e for e in mine[4:] if e["type"] not in waits]
        kinds = [e["type"] for e in mine]
        middle = kinds[4:]
        exchanged = [e for e in mine[4:] if e["type"] == "conversation.exchanged"]
        if name == "human-waiting":
            assert set(middle) <= {"conversation.exchanged"}
        else:
            assert middle[len(exchanged):] == ["conversation.closed", "node.resumed",
                                               "node.completed"], room
            closed = mine[4 + len(exchanged)]
            assert closed["payload"]["turnIndex"] == len(exchanged) + 1
            assert closed["payload"]["finalTurn"]["turnIndex"] == len(exchanged) + 1
            assert closed["payload"]["finalTurn"]["role"] == "system"
            assert closed["causationId"] == (exchanged[-1] if exchanged else opened)["eventId"]
            assert mine[-2]["causationId"] == closed["eventId"]  # node.resumed
        # turnIndex contiguous from 1; each exchanged chains to the room's previous turn.
        previous = opened
        for index, event in enumerate(exchanged, start=1):
            assert event["payload"]["turnIndex"] == index
            assert event["payload"]["turn"]["turnIndex"] == index
            assert event["payload"]["conversationId"] == cid
            assert event["payload"]["turn"]["groupId"] == room
            assert by_id[event["causationId"]] is previous
            previous = event
    last = events[-1]["type"]
    terminal = {"completed": "run.completed", "failed": "run.failed",
                "cancelled": "run.cancelled"}.get(run.status)
    if terminal is None:
        assert not [e for e in events if e["type"].startswith("run.") and e["sequence"] > 0]
    else:
        assert last == terminal
        assert [e["type"] for e in events].count(terminal) == 1


async def test_turns_carry_speaker_ids_for_agents_and_role_user_for_humans(
    make_council: MakeCouncil, db_path: Path
) -> None:
    run = await human_done(make_council, db_path)

    turns = [e["payload"]["turn"] for e in of_type(run.events, "conversation.exchanged")]
    assert [(t["from"], t["role"], t.get("speakerId")) for t in turns] == [
        ("helper", "agent", "host:helper"),
        ("user", "user", "host:me"),
    ]
    assert [t["messageId"] for t in turns] == ["team/helper/1/0", "team/me/2/0"]
    assert turns[1]["content"] == {"text": "@helper finish it", "mentions": ["helper"]}
    assert all(isinstance(t["ts"], int) for t in turns)
    (opened,) = of_type(run.events, "conversation.opened")
    assert opened["payload"]["participants"] == [{"agentId": "host:helper", "name": "helper"}]


async def test_run_started_carries_the_whole_council(make_council: MakeCouncil,
                                                     db_path: Path) -> None:
    run = await published_success(make_council, db_path)

    started = run.events[0]
    assert started["type"] == "run.started"
    payload = started["payload"]
    assert payload["workflowId"] == "release-team"
    assert payload["inputs"] == {"task": "Prepare a release note."}
    assert loads_spec(RELEASE_TEAM_TOML).definition() == (
        payload["metadata"]["council"])
    assert payload["metadata"]["councilDigest"] == loads_spec(RELEASE_TEAM_TOML).digest()


async def test_a_members_node_started_is_durable_before_its_handler_runs(
    make_council: MakeCouncil, db_path: Path
) -> None:
    seen: dict[str, list[tuple[str, str | None, int | None]]] = {}

    def look(turn: Turn) -> Reply:
        # A separate connection to the file sees only what was committed.
        store = SqliteStore(db_path)
        try:
            events = store.read("durable")
        finally:
            store.close()
        seen[f"{turn.member}:{turn.turn}"] = [
            (e["type"], e.get("nodeId"), e["payload"].get("attempt")) for e in events
            if e["type"].startswith("node.") and not e.get("nodeId", "").startswith("room:")]
        return reply("looked", *([say("all", "again", "one")] if turn.member == "two" else []))

    council = make_council({"one": look, "two": look}, global_concurrency=2)

    run = await council.arun(store=db_path, run_id="durable")

    assert run.status == "completed"
    batch = [("node.started", "one", 0), ("node.started", "two", 0)]
    assert seen["one:1"] == batch
    assert seen["two:1"] == batch
    assert seen["one:2"] == [*batch, ("node.completed", "one", None),
                             ("node.completed", "two", None), ("node.started", "one", 0)]


class _Transactions(SqliteStore):
    """A real SQLite store that records the events of each committed append."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.committed: list[list[tuple[str, str | None]]] = []

    def append(self, run_id: str, events: Sequence[RunEventDoc],
               expected_sequence: int) -> None:
        super().append(run_id, events, expected_sequence)
        # Member events by member; of the rooms' events only the exchanged posts.
        self.committed.append([
            (e["type"], None if e["type"] == "conversation.exchanged" else e.get("nodeId"))
            for e in events if e["type"] == "conversation.exchanged"
            or not e.get("nodeId", "").startswith("room:")])


async def test_a_settled_batch_is_committed_with_the_next_dispatch(
    make_council: MakeCouncil, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No groups of quick turns (tests/engine/test_quick_groups.py): one turn per commit.
    monkeypatch.setattr("wopdsl.engine._batches._YIELD_EVERY", 0.0)
    council = make_council({
        "one": lambda t: reply(f"o{t.turn}", *([say("all", "to two", "two")]
                                               if t.turn < 3 else [])),
        "two": lambda t: reply(f"t{t.turn}", say("all", "to one", "one")),
    }, waiting=["two"])
    store = _Transactions(db_path)

    run = await council.arun(store=store, run_id="grouped")

    assert run.status == "completed"
    member_turns = [t for t in store.committed if any(n in ("one", "two") for _, n in t)]
    done = ("node.completed", "one"), ("node.completed", "two")
    # One transaction per turn: each settlement shares its commit with the next dispatch.
    assert member_turns == [
        [("node.started", "one")],
        [done[0], ("conversation.exchanged", None), ("node.started", "two")],
        [done[1], ("conversation.exchanged", None), ("node.started", "one")],
        [done[0], ("conversation.exchanged", None), ("node.started", "two")],
        [done[1], ("conversation.exchanged", None), ("node.started", "one")],
        [done[0], ("run.completed", None)],
    ]
    assert [e["sequence"] for e in run.events] == list(range(len(run.events)))
