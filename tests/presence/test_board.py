"""The presence board (RFC 0110, DESIGN.md §24): who watches and types, across processes.

Real SQLite stores: two handles (as two front ends), and a second process joining as another
person. Presence never enters the run's log or a fork, and only a room's people join it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import HUMAN, MakeCouncil
from wopdsl import Presence, Run, ValidationError, attach, fork
from wopdsl.store import open_store

RUN = "presence-run-000001"


async def _board(make_council: MakeCouncil, db: Path) -> Run:
    council = make_council({"cfo": [{"summary": "drafted"}], "ann": HUMAN, "bob": HUMAN},
                           rooms={"board": ["ann", "bob", "cfo"], "side": ["ann", "cfo"]})
    return await council.arun(store=db, run_id=RUN, deterministic=True)


async def _next(updates: object, want: dict[str, object]) -> dict[str, object]:
    """The first snapshot of ``updates`` (an async iterator) whose fields are ``want``."""
    async def scan() -> dict[str, object]:
        async for snap in updates:  # type: ignore[attr-defined]
            doc = snap.to_json()
            if all(doc[k] == v for k, v in want.items()):
                return doc
        raise AssertionError("the watch ended")

    try:
        return await asyncio.wait_for(scan(), 10)
    except TimeoutError:
        raise AssertionError(f"no snapshot with {want}") from None


async def test_two_front_ends_see_who_watches_and_who_types(make_council: MakeCouncil,
                                                           db_path: Path) -> None:
    run = await _board(make_council, db_path)
    events = run.events.to_list()
    other = attach(open_store(db_path), RUN)  # another front end, its own connection
    updates = other.presence.watch(["board"]).__aiter__()
    cid = f"{RUN}:room:board"
    assert await _next(updates, {}) == {"conversationId": cid, "present": [], "typing": []}

    ann = await run.presence.join("board", "ann")
    await _next(updates, {"present": ["user:ann"], "typing": []})
    await ann.set_typing(True)
    await _next(updates, {"typing": ["user:ann"]})
    bob = await other.presence.join("board", "bob")
    await _next(updates, {"present": ["user:ann", "user:bob"]})
    await ann.leave()
    assert await _next(updates, {"present": ["user:bob"]}) == {
        "conversationId": cid, "present": ["user:bob"], "typing": []}
    await bob.leave()

    assert run.events.to_list() == events  # never an event of the run
    copy = fork(open_store(db_path), RUN, len(events) - 1)
    assert open_store(db_path).read_private(copy, "presence/") == {}  # nor of a fork


async def test_a_person_in_another_process_appears_and_goes(make_council: MakeCouncil,
                                                           db_path: Path) -> None:
    run = await _board(make_council, db_path)
    updates = run.presence.watch(["board"]).__aiter__()
    script = textwrap.dedent(f"""
        import asyncio, sys
        from wopdsl import attach
        from wopdsl.store import open_store

        async def main():
            run = attach(open_store({str(db_path)!r}), {RUN!r})
            session = await run.presence.join("board", "bob")
            await session.set_typing(True)
            print("typing", flush=True)
            sys.stdin.readline()
            await session.leave()

        asyncio.run(main())
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert await _next(updates, {"present": ["user:bob"], "typing": ["user:bob"]})
        assert child.stdin is not None
        child.stdin.write("done\n")
        child.stdin.flush()
        await _next(updates, {"present": []})
    finally:
        child.communicate(timeout=30)
    assert child.returncode == 0


async def test_watching_stops_counting_after_the_ttl_and_typing_sooner(
        make_council: MakeCouncil, db_path: Path) -> None:
    run = await _board(make_council, db_path)
    now = [1_000_000.0]
    board = Presence(run.store, RUN, lambda: run.state, clock=lambda: now[0])
    ann = await board.join("board", "ann")
    await ann.set_typing(True)
    assert board.snapshot("board").typing == ("user:ann",)
    now[0] += 6  # past TYPING_TTL_S, within WATCH_TTL_S
    assert (board.snapshot("board").present, board.snapshot("board").typing) == (
        ("user:ann",), ())
    now[0] += 5  # past WATCH_TTL_S without a heartbeat: gone
    assert board.snapshot("board").present == ()
    await ann.refresh()
    assert board.snapshot("board").present == ("user:ann",)
    await board.close()


@pytest.mark.parametrize(("room", "member", "says"), [
    ("board", "cfo", "'cfo' is not a person in room 'board'"),
    ("side", "bob", "'bob' is not a person in room 'side'"),
    ("attic", "ann", "room 'attic' does not exist"),
])
async def test_only_a_rooms_people_join_its_presence(make_council: MakeCouncil, db_path: Path,
                                                    room: str, member: str, says: str) -> None:
    run = await _board(make_council, db_path)
    with pytest.raises(ValidationError) as refused:
        await run.presence.join(room, member)
    assert says in refused.value.message
    assert open_store(db_path).read_private(RUN, "presence/") == {}
