"""Pausing and unpausing a run: ``run.paused`` / ``run.resumed {reason: "unpaused"}``.

While paused no turn starts; an immediate pause cuts the running turn off (it runs again as
``attempt + 1`` after unpause, knowing how long it has been going: ``Turn.elapsed_ms``,
pauses left out, a stopped process's time counted, anew in a fork), a draining pause lets it
finish first; a paused run stays paused in another process and across ``resume()``; the
council deadline stops while paused.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeCouncil
from tests.engine.helpers import Calls, member_events, of_type, reply, say, types, wait_for
from wopdsl import Council, Run, RunStateConflict, Turn, attach
from wopdsl.engine import engine_for, fork
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


async def test_who_waits_for_the_run_hears_paused_when_it_is_paused(
        make_council: MakeCouncil, db_path: Path) -> None:
    """A task awaiting ``wait()`` or ``resume()`` while an immediate pause cuts the turn off
    is told ``paused`` (not cancelled), and ``cancelled`` when a cancel does; cancelling
    that task itself still cancels it."""
    calls = Calls()
    run, release, _council = await _writing(make_council, db_path, calls)
    waiting = asyncio.ensure_future(run.wait())
    resuming = asyncio.ensure_future(run.resume())
    doomed = asyncio.ensure_future(run.wait())
    await asyncio.sleep(0)
    doomed.cancel()

    await run.pause("operator break")

    assert await waiting == "paused" and await resuming == "paused"
    with pytest.raises(asyncio.CancelledError):
        await doomed
    await run.unpause()
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(run.wait())
    await asyncio.sleep(0)
    await run.cancel("enough")
    assert await waiting == "cancelled"
    release.set()


class _HandClock:
    """A clock that reads what the test set (the run's event timestamps follow it)."""

    def __init__(self) -> None:
        self.now = 1_767_225_600_000

    def now_ms(self) -> int:
        return self.now


async def test_a_turn_started_again_after_a_pause_knows_how_long_it_ran_pauses_left_out(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    started, release, before = _gate()
    clock = _HandClock()
    council = make_council({"writer": calls.handler(before=before)})
    run = council.start(store=db_path, clock=clock)
    await wait_for(started, "the writer's turn starts")

    clock.now += 400  # The turn runs 400 ms, then the run is paused 10 s.
    await run.pause("operator break")
    clock.now += 10_000
    release.set()
    await run.unpause()
    assert await run.wait() == "completed"

    first, again = (c.input for c in calls.log)
    assert first.elapsed_ms == 0  # A first attempt has run for no time yet.
    assert again.elapsed_ms == 400  # Not 10 400: the paused time is left out.


async def test_a_turn_cut_off_twice_counts_both_runs_and_no_pause(make_council: MakeCouncil,
                                                                   db_path: Path) -> None:
    calls = Calls()
    clock = _HandClock()
    gates = [asyncio.Event(), asyncio.Event(), asyncio.Event()]

    async def before(turn: Turn) -> None:
        attempt = len(calls.log) - 1
        gates[attempt].set()
        if attempt < 2:
            await asyncio.Event().wait()  # Cut off by the pause.

    council = make_council({"writer": calls.handler(before=before)})
    run = council.start(store=db_path, clock=clock)
    for ran, gate in ((250, gates[0]), (150, gates[1])):
        await wait_for(gate, "the writer's attempt starts")
        clock.now += ran
        await run.pause()
        clock.now += 5_000
        await run.unpause()
    await wait_for(gates[2], "the third attempt starts")
    assert await run.wait() == "completed"

    # The same turn three times: each attempt knows all the earlier ones ran, no pause.
    assert [(c.turn, c.input.elapsed_ms) for c in calls.log] == [(1, 0), (1, 250), (1, 400)]


def _open(council: Council, db_path: Path, run_id: str, clock: _HandClock) -> Run:
    """Another handle on a stored run (a restarted process), on the test's clock."""
    store = open_store(db_path)
    return Run(store, run_id, engine=engine_for(council.compile(), store, run_id, clock=clock),
               council=council)


async def test_a_turn_started_again_after_its_process_stopped_counts_the_time_down(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    clock = _HandClock()
    started = asyncio.Event()

    async def before(turn: Turn) -> None:
        if len(calls.log) == 1:
            started.set()
            await asyncio.Event().wait()  # Stopped with its process.

    council = make_council({"writer": calls.handler(before=before)})
    run = council.start(store=db_path, clock=clock)
    await wait_for(started, "the writer's turn starts")
    clock.now += 300  # The turn runs 300 ms, then its process stops (kill -9, a lost host) …
    await run.detach()
    clock.now += 2_000  # … and another one takes the run up 2 s later.
    other = _open(council, db_path, run.run_id, clock)
    assert await other.resume() == "completed"

    # The run was running all along (no pause): the time nobody drove it counts, as it does
    # for the council deadline.
    assert [c.input.elapsed_ms for c in calls.log] == [0, 2_300]
    assert [e["payload"]["reason"] for e in of_type(list(other.events), "run.resumed")] == [
        "crash-recovery"]


async def test_a_fork_runs_the_turn_it_cut_off_anew(make_council: MakeCouncil,
                                                    db_path: Path) -> None:
    calls = Calls()
    clock = _HandClock()
    gates = [asyncio.Event(), asyncio.Event()]

    async def before(turn: Turn) -> None:
        attempt = len(calls.log) - 1
        if attempt < 2:
            gates[attempt].set()
            await asyncio.Event().wait()  # Cut off by a pause.

    council = make_council({"writer": calls.handler(before=before)})
    source = council.start(store=db_path, clock=clock)
    await wait_for(gates[0], "the writer's turn starts")
    clock.now += 300
    await source.pause()
    cut = of_type(list(source.events), "node.started")[-1]["sequence"]
    clock.now += 60_000  # Forked a minute later, at the writer's start.
    forked = _open(council, db_path, fork(open_store(db_path), source.run_id, cut), clock)
    resuming = asyncio.ensure_future(forked.resume())
    await wait_for(gates[1], "the writer's turn starts in the fork")
    clock.now += 200  # Its clock starts with the fork: 200 ms, then a pause.
    await forked.pause()
    await asyncio.gather(resuming, return_exceptions=True)  # The pause ended that drive.
    assert forked.status == "paused"
    await forked.unpause()
    assert await forked.wait() == "completed"

    # Neither the source's 300 ms nor the minute before the fork: the fork's own 200.
    assert [c.input.elapsed_ms for c in calls.log] == [0, 0, 200]
    await source.cancel("done")


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
