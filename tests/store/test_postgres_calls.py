"""How a drive and a host call a PostgresStore off the event loop (issue 38), on a real server.

Every turn's append leaves the event loop. Through ``asyncio.to_thread`` each hop went
through the loop's default executor, whose threads took turns (a new thread whenever the
previous call's had not yet marked itself idle): two or more cold threads per drive and
about three times the store's CPU per turn. The store now makes its calls on threads of its
own, a drive's consecutive calls on the same one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from wopdsl import Council, Post, Reply, StoreConflict, StoreError, Turn
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store.postgres import PostgresStore
from wopdsl.testing.store_conformance import make_events

TURNS = 30


class RecordingStore(PostgresStore):
    """A PostgresStore that notes the thread each append ran on."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.append_threads: list[threading.Thread] = []

    def append(self, run_id: str, events: Sequence[RunEventDoc], expected_sequence: int,
               **kwargs: Any) -> None:
        self.append_threads.append(threading.current_thread())
        super().append(run_id, events, expected_sequence, **kwargs)


class CountingExecutor(concurrent.futures.ThreadPoolExecutor):
    """The loop's default executor (``asyncio.to_thread``), counting what it is given."""

    submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
               ) -> concurrent.futures.Future[Any]:
        CountingExecutor.submitted += 1
        return super().submit(fn, *args, **kwargs)


def _relay(turns: int) -> Council:
    """Three python members handing over round-robin: ``turns`` turns, one append each."""
    council = Council("relay", task="Pass it on.", global_concurrency=1,
                      max_turns_per_member=turns)
    members = ["m0", "m1", "m2"]
    council.room("all", members=members)
    for index, member in enumerate(members):
        following = members[(index + 1) % len(members)]

        def handler(turn: Turn, index: int = index, following: str = following) -> Reply:
            if (turn.turn - 1) * len(members) + index + 1 >= turns:
                return Reply(summary="Done.")
            return Reply(summary="Handed over.",
                         posts=[Post(room="all", text="over", mentions=[following])])

        council.member(member, role="runner", initial_turn=index == 0)(handler)
    return council


@pytest.fixture
def store(pg_url: str) -> Iterator[RecordingStore]:
    opened = RecordingStore(pg_url)
    try:
        yield opened
    finally:
        opened.close()


async def test_a_drive_appends_on_one_store_thread_not_the_default_executor(
        store: RecordingStore) -> None:
    loop = asyncio.get_running_loop()
    loop.set_default_executor(CountingExecutor(max_workers=8))
    CountingExecutor.submitted = 0
    run = await _relay(TURNS).arun(store=store, run_id="relay")
    assert run.status == "completed"
    assert len(store.append_threads) >= TURNS  # One append per turn, at least.
    # Not one hop through asyncio.to_thread ...
    assert CountingExecutor.submitted == 0
    # ... and every append on the store's own thread: the same one, turn after turn.
    assert {thread.name for thread in store.append_threads} == {"wopdsl-store"}
    assert len(set(store.append_threads)) == 1
    assert threading.main_thread() not in store.append_threads


async def test_a_call_runs_off_the_loop_in_the_callers_context(
        store: RecordingStore) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller's")
    loop_thread = threading.current_thread()

    def where() -> tuple[threading.Thread, str]:
        return threading.current_thread(), var.get()

    thread, seen = await store.call(where)
    assert thread is not loop_thread and seen == "caller's"
    await store.call(store.append, "r1", make_events("r1", 0, 2), 0)
    assert [e["sequence"] for e in await store.call(store.read, "r1")] == [0, 1]
    with pytest.raises(StoreConflict, match="expected to append at sequence 0"):
        await store.call(store.append, "r1", make_events("r1", 0, 1), 0)  # Raised here.


async def test_a_caller_cancelled_mid_call_leaves_the_call_to_finish(
        store: RecordingStore) -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(30)
        return "finished"

    task = asyncio.ensure_future(store.call(slow))
    await asyncio.to_thread(started.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    # The thread is free again, and the store answers.
    assert await store.call(lambda: "next") == "next"
    await store.call(store.append, "r2", make_events("r2", 0, 1), 0)
    assert store.last_sequence("r2") == 0


async def test_closing_the_store_ends_its_threads(pg_url: str) -> None:
    before = set(threading.enumerate())
    opened = PostgresStore(pg_url)
    await opened.call(opened.last_sequence, "none")
    threads = [t for t in set(threading.enumerate()) - before if t.name == "wopdsl-store"]
    assert threads
    opened.close()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    # A call on a closed store still says what a closed store says.
    with pytest.raises(StoreError, match="is closed"):
        await opened.call(opened.last_sequence, "none")
