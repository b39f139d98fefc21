"""Subscribers of a SQLite store waiting on many runs: woken by what changed, not by polling."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.store.test_sqlite_processes import _python
from wopdsl.errors import StoreError
from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_event, make_events

# Appends one event to run "r7" from another process (SQLite's other connection).
ONE_APPEND = """
import sys
from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_event
SqliteStore(sys.argv[1]).append("r7", [make_event("r7", 0, payload={"from": "child"})], 0)
"""


async def _stop(waiting: list[asyncio.Future[object]], streams: list[object],
                store: SqliteStore) -> None:
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    for stream in streams:
        await stream.aclose()  # type: ignore[attr-defined]
    store.close()


class CountingStore(SqliteStore):
    """A real SQLite store that counts the reads of a run's last sequence."""

    checks = 0

    def last_sequence(self, run_id: str) -> int:
        self.checks += 1
        return super().last_sequence(run_id)


async def test_idle_subscribers_of_many_runs_do_not_each_poll_the_log(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "runs.db")
    store.poll_interval = 0.01
    streams = [store.subscribe(f"r{i}") for i in range(40)]
    waiting = [asyncio.ensure_future(anext(stream)) for stream in streams]  # type: ignore[arg-type]
    try:
        await asyncio.sleep(0.5)  # 50 poll intervals
        # Each subscriber checked its run once before sleeping; polling every interval
        # would have made 40 x 50 checks.
        assert store.checks <= 2 * len(streams)
        assert not any(task.done() for task in waiting)
        store.append("r3", make_events("r3", 0, 1), 0)  # An append here wakes its run only.
        first = await asyncio.wait_for(waiting[3], 5)
        assert first == make_event("r3", 0)
        await asyncio.sleep(0.05)
        assert [i for i, task in enumerate(waiting) if task.done()] == [3]
    finally:
        await _stop(waiting, streams, store)


async def test_another_processs_append_reaches_its_run_among_many(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    streams = [store.subscribe(f"r{i}") for i in range(20)]
    waiting = [asyncio.ensure_future(anext(stream)) for stream in streams]  # type: ignore[arg-type]
    try:
        await asyncio.sleep(0.1)
        child = _python(ONE_APPEND, db)
        first = await asyncio.wait_for(waiting[7], 20)
        assert first["payload"] == {"from": "child"}
        _, err = await asyncio.to_thread(child.communicate, timeout=30)
        assert child.returncode == 0, err
        await asyncio.sleep(0.2)  # Several poll intervals: the others were woken, not fed.
        assert [i for i, task in enumerate(waiting) if task.done()] == [7]
    finally:
        await _stop(waiting, streams, store)


async def test_a_subscriber_waiting_when_its_store_closes_gets_the_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    store.poll_interval = 60.0  # Only the close itself can wake it in time.
    stream = store.subscribe("r1")
    waiting = asyncio.ensure_future(anext(stream))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        await asyncio.wait_for(waiting, 5)
    await stream.aclose()  # type: ignore[attr-defined]
