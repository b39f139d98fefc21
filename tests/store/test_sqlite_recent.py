"""A SQLite store's own subscribers take what it just committed without reading it back.

Real SQLite files, real child processes for the other writers. What is checked: the events a
subscriber gets are exactly what ``read`` returns, each once and in order, whoever wrote
them (this object, another object on the file, another process); and this object's own
commits reach its subscribers without a read of the log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.store.test_sqlite_processes import _python
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store import SqliteStore
from wopdsl.store._recent import TRIM_AT, WINDOW_EVENTS
from wopdsl.testing.store_conformance import make_event, make_events

# Appends the events sys.argv[3:] (sequences) to run sys.argv[2] from another process.
APPEND = """
import sys
from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_event
run_id, sequences = sys.argv[2], [int(s) for s in sys.argv[3:]]
events = [make_event(run_id, s, payload={"from": "child"}) for s in sequences]
SqliteStore(sys.argv[1]).append(run_id, events, sequences[0])
"""


class ReadCountingStore(SqliteStore):
    """A real SQLite store that counts the reads of the log that returned events."""

    reads = 0

    def read(self, run_id: str, after: int = -1) -> list[RunEventDoc]:
        events = super().read(run_id, after)
        self.reads += bool(events)
        return events


async def _take(stream: Any, count: int) -> list[RunEventDoc]:
    return [await asyncio.wait_for(anext(stream), 20) for _ in range(count)]


async def _child_appends(db: Path, run_id: str, *sequences: int) -> None:
    child = _python(APPEND, db, run_id, *sequences)
    _, err = await asyncio.to_thread(child.communicate, timeout=60)
    assert child.returncode == 0, err


async def test_own_commits_reach_the_subscriber_without_a_read(tmp_path: Path) -> None:
    store = ReadCountingStore(tmp_path / "runs.db")
    stream = store.subscribe("r1")
    try:
        store.append("r1", make_events("r1", 0, 2), 0)
        got = await _take(stream, 2)  # The backlog before it subscribed: read.
        reads = store.reads
        for turn in range(50):
            batch = [make_event("r1", 2 + 3 * turn + i, payload={"turn": turn, "text": "é\u2028"})
                     for i in range(3)]
            store.append("r1", batch, 2 + 3 * turn)
            got += await _take(stream, 3)
        assert store.reads == reads  # 150 events, not one read back.
        assert got == store.read("r1")  # Exactly what a read returns.
    finally:
        await stream.aclose()
        store.close()


async def test_an_era_3_run_reaches_its_subscriber_with_v1_names(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    payload = {"workflowId": "team", "inputs": {"task": "t"}, "metadata": {},
               "eventLogSchemaVersion": 3}
    stream = store.subscribe("r3")
    try:
        store.append("r3", [make_event("r3", 0, "run.started", payload)], 0)
        await _take(stream, 1)
        store.append("r3", [make_event("r3", 1, "agent.toolCalled", {"callId": "c"})], 1)
        (called,) = await _take(stream, 1)
        assert called["type"] == "agent.toolCalled"  # Stored as agent.tool-called.
        assert [called] == store.read("r3", 0)
    finally:
        await stream.aclose()
        store.close()


async def test_another_processs_append_between_own_commits_comes_once_in_order(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = ReadCountingStore(db)
    store.poll_interval = 0.01
    stream = store.subscribe("r1")
    try:
        store.append("r1", make_events("r1", 0, 3), 0)
        got = await _take(stream, 3)
        # While the subscriber waits: another process appends 3-4; this object then 5-6.
        waiting = asyncio.ensure_future(_take(stream, 2))
        await asyncio.sleep(0.05)
        await _child_appends(db, "r1", 3, 4)
        got += await waiting
        store.append("r1", make_events("r1", 5, 2), 5)
        got += await _take(stream, 2)
        # Not waiting this time: this object appends 7, the child 8, this object 9-10.
        store.append("r1", make_events("r1", 7, 1), 7)
        await _child_appends(db, "r1", 8)
        store.append("r1", make_events("r1", 9, 2), 9)
        got += await _take(stream, 4)
        assert [e["sequence"] for e in got] == list(range(11))
        assert got == store.read("r1")
        assert [e["sequence"] for e in got if e["payload"] == {"from": "child"}] == [3, 4, 8]
    finally:
        await stream.aclose()
        store.close()


async def test_another_object_on_the_file_is_another_writer(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    other = SqliteStore(tmp_path / "runs.db")
    stream = store.subscribe("r1")
    try:
        store.append("r1", make_events("r1", 0, 2), 0)
        other.append("r1", make_events("r1", 2, 2, payload={"from": "other"}), 2)
        store.append("r1", make_events("r1", 4, 2), 4)
        got = await _take(stream, 6)
        assert got == store.read("r1")
        await asyncio.sleep(0.05)  # Nothing more comes (nothing twice).
        extra = asyncio.ensure_future(anext(stream))  # type: ignore[arg-type]
        await asyncio.sleep(0.1)
        assert not extra.done()
        extra.cancel()
        await asyncio.gather(extra, return_exceptions=True)
    finally:
        await stream.aclose()
        store.close()
        other.close()


async def test_a_subscriber_far_behind_reads_the_log(tmp_path: Path) -> None:
    store = ReadCountingStore(tmp_path / "runs.db")
    stream = store.subscribe("r1")
    try:
        store.append("r1", make_events("r1", 0, 1), 0)
        await _take(stream, 1)
        total = 20 * (WINDOW_EVENTS // 20 + 2)  # More than is kept, while it did not read.
        for start in range(1, total + 1, 20):
            store.append("r1", make_events("r1", start, 20), start)
        reads = store.reads
        got = await _take(stream, total)
        assert store.reads == reads + 1  # What was no longer kept: read, in one go.
        assert got == store.read("r1", 0)
    finally:
        await stream.aclose()
        store.close()


async def test_nothing_is_kept_for_a_run_nobody_follows(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    store.append("r1", make_events("r1", 0, 3), 0)
    assert store._recent._runs == {}  # No subscriber: the commits are not kept.
    stream = store.subscribe("r1")
    try:
        await _take(stream, 3)
        for sequence in range(3, 3 + 4 * TRIM_AT):
            store.append("r1", make_events("r1", sequence, 1), sequence)
            await _take(stream, 1)
        # What the subscriber has is dropped as the run goes on.
        assert [len(w.rows) <= TRIM_AT for w in store._recent._runs.values()] == [True]
    finally:
        await stream.aclose()
    assert store._recent._runs == {}  # Its subscriber gone: nothing kept.
    store.close()


async def test_a_subscriber_of_some_types_decodes_only_those(tmp_path: Path) -> None:
    """What a subscriber did not ask for is passed over undecoded (``wop run``'s printer)."""
    from functools import partial

    from wopdsl.store._codec import decode_record
    from wopdsl.store._recent import follow_kept

    store = ReadCountingStore(tmp_path / "runs.db")
    decoded: list[str] = []

    def decode(body: str) -> RunEventDoc:
        event: RunEventDoc = decode_record(body)
        decoded.append(event["type"])
        return event

    kinds = ["node.started", "node.completed", "conversation.exchanged"]
    stream = follow_kept(store._recent, "r1", -1, read=store.read, decode=decode,
                         wait=partial(store.wait_for_change), types={"conversation.exchanged"})
    try:
        store.append("r1", [make_event("r1", 0, "run.started")], 0)
        got: list[RunEventDoc] = []
        for turn in range(20):
            if turn == 1:  # The first turn was read: nothing was kept before it.
                reads = store.reads
            start = 1 + 3 * turn
            store.append("r1", [make_event("r1", start + i, kinds[i]) for i in range(3)], start)
            got += await _take(stream, 1)
        assert store.reads == reads
        assert decoded == ["conversation.exchanged"] * 19  # The other 19 turns: kept.
        assert got == [e for e in store.read("r1") if e["type"] == "conversation.exchanged"]
    finally:
        await stream.aclose()
        store.close()
