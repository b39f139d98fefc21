"""Pausing and unpausing a run: ``run.paused`` / ``run.resumed {reason: "unpaused"}``.

While paused no turn starts; an immediate pause cuts the running turn off (it runs again as
``attempt + 1`` after unpause), a draining pause lets it finish first; a paused run stays
paused in another process and across ``resume()``; the council deadline stops while paused.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeCouncil
from tests.engine.helpers import Calls, member_events, of_type, reply, say, types, wait_for
from wopdsl import Council, Run, RunStateConflict, Turn, attach
from wopdsl.store import open_store


def _gate() -> tuple[asyncio.Event, asyncio.Event, Any]:
    """A handler step that says it started and waits until released."""
    started, release = asyncio.Event(), asyncio.Event()

    async def before(turn: Turn) -> None:
        started.set()
        await release.wait()

    return started, release, before


async def _writing(make_council: MakeCouncil, db_path: Path, calls: Calls, **settings: Any
                   ) -> tuple[Run, asyncio.Event, Council]:
    """A one-member council started, its writer's turn running until the event is set."""
    started, release, before = _gate()
    council = make_council({"writer": calls.handler(before=before)}, **settings)
    run = council.start(store=db_path, deterministic="timeout_ms" not in settings)
    await wait_for(started, "the writer's turn starts")
    return run, release, council


async def test_an_immediate_pause_cuts_the_turn_off_and_unpause_runs_it_again(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    run, release, _council = await _writing(make_council, db_path, calls)

    await run.pause("operator break")

    assert run.status == "paused"
    events = list(run.events)
    assert events[-1]["type"] == "run.paused"
    assert events[-1]["payload"] == {"reason": "operator break"}
    assert not of_type(events, "node.completed", "node.failed", "node.cancelled")
    await asyncio.sleep(0.05)
    assert len(calls.log) == 1  # Nothing else started while paused.
    assert await run.wait() == "paused"

    release.set()
    assert await run.unpause() == "running"
    assert await run.wait() == "completed"

    events = list(run.events)
    resumed = of_type(events, "run.resumed")
    assert [e["payload"] for e in resumed] == [{"reason": "unpaused", "retrying": ["writer"]}]
    assert member_events(events) == [
        ("node.started", "writer"), ("node.retried", "writer"), ("node.started", "writer"),
        ("node.completed", "writer")]
    assert [c.turn for c in calls.log] == [1, 1]  # The same turn, twice.


async def test_a_draining_pause_lets_the_running_turn_finish_and_starts_no_other(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    started, release, before = _gate()

    def writer(turn: Turn) -> Any:
        return reply("draft", say("all", "review this", "reviewer"))

    council = make_council({"writer": calls.handler(writer, before=before),
                            "reviewer": calls.handler()}, waiting=["reviewer"])
    run = council.start(store=db_path, deterministic=True)
    await wait_for(started, "the writer's turn starts")

    pausing = asyncio.ensure_future(run.pause("drain", drain=True))
    await asyncio.sleep(0.05)
    assert not pausing.done()  # It waits for the running turn.
    release.set()
    await pausing

    assert await run.wait() == "paused"
    events = list(run.events)
    assert types(events)[-1] == "run.paused"
    assert member_events(events) == [("node.started", "writer"), ("node.completed", "writer")]
    assert calls.order == ["writer"]  # The reviewer was requested but did not start.

    await run.unpause()
    assert await run.wait() == "completed"
    assert calls.order == ["writer", "reviewer"]
    assert [e["payload"] for e in of_type(list(run.events), "run.resumed")] == [
        {"reason": "unpaused"}]


async def test_pause_and_unpause_refuse_what_the_status_does_not_allow(
        make_council: MakeCouncil, db_path: Path) -> None:
    run, release, _council = await _writing(make_council, db_path, Calls())

    with pytest.raises(RunStateConflict) as not_paused:
        await run.unpause()
    assert not_paused.value.details == {"runId": run.run_id, "runStatus": "running"}
    assert not_paused.value.wire_code == "run_state_conflict"

    await run.pause()
    count = len(run.events)
    with pytest.raises(RunStateConflict) as twice:
        await run.pause()
    assert twice.value.details["runStatus"] == "paused"
    assert len(run.events) == count  # Refused: nothing appended.

    release.set()
    await run.unpause()
    assert await run.wait() == "completed"
    for act in (run.pause(), run.unpause()):
        with pytest.raises(RunStateConflict) as ended:
            await act
        assert ended.value.wire_code == "run_terminal"
        assert ended.value.details["runStatus"] == "completed"


async def test_a_run_waiting_for_a_person_is_not_paused(make_council: MakeCouncil,
                                                       db_path: Path) -> None:
    council = make_council({"writer": lambda t: reply("ask", say("all", "ok?", "alice")),
                            "alice": "human"})
    run = await council.arun(store=db_path, deterministic=True)
    assert run.status == "waiting-input"
    with pytest.raises(RunStateConflict) as waiting:
        await run.pause()
    assert waiting.value.details["runStatus"] == "waiting-input"


async def test_a_paused_run_stays_paused_in_another_process_until_unpaused(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    run, release, council = await _writing(make_council, db_path, calls)
    await run.pause()
    await run.detach()
    release.set()

    # Another handle (another process: a restarted host, `wop resume`) leaves it paused.
    other = council.open(run.run_id, open_store(db_path))
    assert await other.resume() == "paused"
    assert len(calls.log) == 1
    assert attach(open_store(db_path), run.run_id).status == "paused"

    await other.unpause()
    assert await other.wait() == "completed"
    assert len(calls.log) == 2


async def test_a_paused_run_can_be_cancelled(make_council: MakeCouncil, db_path: Path) -> None:
    run, _release, _council = await _writing(make_council, db_path, Calls())
    await run.pause()

    await run.cancel("no longer needed")

    assert run.status == "cancelled"
    events = list(run.events)
    assert types(events)[-1] == "run.cancelled"
    assert of_type(events, "node.cancelled")[0]["nodeId"] == "writer"


async def test_the_council_deadline_does_not_count_paused_time(make_council: MakeCouncil,
                                                              db_path: Path) -> None:
    calls = Calls()
    run, release, _council = await _writing(make_council, db_path, calls, timeout_ms=1500)
    await run.pause()
    await asyncio.sleep(2.0)  # Longer than timeout_ms: the clock is stopped.
    release.set()

    await run.unpause()

    assert await run.wait() == "completed"
    assert not [e for e in run.events if e["type"] == "run.failed"]
