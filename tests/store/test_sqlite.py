"""SqliteStore specifics: file layout, damaged files, locking, wake-ups."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from wopdsl.errors import EventInvalid, StoreConflict, StoreError
from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_event, make_events


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def store(db: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(db)
    yield store
    store.close()


def _raw(db: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(db)) as conn, conn:
        return conn.execute(sql, args).fetchall()


def test_file_is_wal_with_normal_sync_and_parent_dirs_created(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "a" / "b" / "runs.db")
    try:
        assert store._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store._conn.execute("PRAGMA synchronous").fetchone() == (1,)
        assert repr(store) == f"SqliteStore({str(tmp_path / 'a' / 'b' / 'runs.db')!r})"
    finally:
        store.close()


def test_a_new_file_has_small_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    # Small pages halve the bytes each commit writes to the WAL; the WAL budget stays 4 MiB.
    store = SqliteStore(tmp_path / "new.db")
    try:
        store.append("r1", make_events("r1", 0, 3), 0)
        assert store._conn.execute("PRAGMA page_size").fetchone() == (1024,)
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (4096,)
    finally:
        store.close()
    old = tmp_path / "old.db"
    with closing(sqlite3.connect(old)) as conn:
        conn.execute("PRAGMA page_size = 4096")
        conn.execute("CREATE TABLE unrelated (x)")
    store = SqliteStore(old)
    try:
        store.append("r1", make_events("r1", 0, 3), 0)
        assert store._conn.execute("PRAGMA page_size").fetchone() == (4096,)
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (1024,)
        assert [e["sequence"] for e in store.read("r1")] == [0, 1, 2]
    finally:
        store.close()


def test_bodies_are_compact_utf8_json(store: SqliteStore, db: Path) -> None:
    store.append("r1", [make_event("r1", 0, payload={"text": "日本 ✓"})], 0)
    ((body, kind),) = _raw(db, "SELECT body, type FROM events")
    assert isinstance(body, str)
    assert "日本 ✓" in body and ", " not in body and '": ' not in body
    assert kind == "node.started"


def test_not_json_names_file_run_and_sequence(store: SqliteStore, db: Path) -> None:
    store.append("r1", make_events("r1", 0, 2), 0)
    _raw(db, "INSERT INTO events VALUES ('r1', 2, 'x', '{broken')")
    with pytest.raises(EventInvalid) as caught:
        store.read("r1")
    text = str(caught.value)
    assert f"{db} run r1 #2: record is not valid JSON" in text
    assert "hint:" in text
    assert "error[EVENT_INVALID]" in caught.value.render()


def test_record_in_the_wrong_row_is_rejected(store: SqliteStore, db: Path) -> None:
    store.append("r1", make_events("r1", 0, 1), 0)
    body = json.dumps(make_event("other", 1))
    _raw(db, "INSERT INTO events VALUES ('r1', 1, 'x', ?)", body)
    with pytest.raises(EventInvalid, match=r"r1 #1: record says run other #1, not the row"):
        store.read("r1")


def test_gap_in_the_log_is_rejected(store: SqliteStore, db: Path) -> None:
    store.append("r1", make_events("r1", 0, 3), 0)
    _raw(db, "DELETE FROM events WHERE sequence = 1")
    with pytest.raises(EventInvalid, match=r"r1 #2: log has a gap \(expected #1 next\)"):
        store.read("r1")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"schemaVersion": 2}, "unsupported schemaVersion 2"),
        ({"schemaVersion": "1"}, "schemaVersion"),
        ({"sequence": True}, "sequence"),
        ({"payload": []}, "payload"),
        ({"extra": 1}, "extra"),
        ({"eventId": ""}, "eventId"),
        ({"nodeId": 7}, "nodeId"),
    ],
)
def test_malformed_fields_are_rejected_with_the_field_named(
    store: SqliteStore, db: Path, change: dict[str, object], words: str
) -> None:
    body = json.dumps({**make_event("r1", 0), **change})
    _raw(db, "INSERT INTO events VALUES ('r1', 0, 'x', ?)", body)
    with pytest.raises(EventInvalid) as caught:
        store.read("r1")
    assert words in str(caught.value)
    assert f"{db} run r1 #0" in str(caught.value)


def test_optional_keys_may_be_null(store: SqliteStore, db: Path) -> None:
    body = json.dumps({**make_event("r1", 0), "nodeId": None, "schemaVersion": None})
    _raw(db, "INSERT INTO events VALUES ('r1', 0, 'x', ?)", body)
    assert store.read("r1")[0]["nodeId"] is None


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(StoreError, match="not a SQLite database"):
        SqliteStore(path)


def test_newer_layout_is_refused(db: Path) -> None:
    SqliteStore(db).close()
    _raw(db, "PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="layout 99 is newer"):
        SqliteStore(db)


def test_damaged_runs_table_turns_into_a_conflict(store: SqliteStore, db: Path) -> None:
    # A runs row without events makes the first append hit the unique constraint.
    _raw(db, "INSERT INTO runs VALUES ('r1', 'w', 't')")
    with pytest.raises(StoreConflict):
        store.append("r1", make_events("r1", 0, 2), 0)
    assert _raw(db, "SELECT count(*) FROM events") == [(0,)]


def test_a_writer_that_stays_locked_gets_a_store_error(db: Path) -> None:
    store = SqliteStore(db, busy_timeout=0.1)
    blocker = sqlite3.connect(db, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match=r"stayed locked for 0\.1 s") as caught:
            store.append("r1", make_events("r1", 0, 1), 0)
        assert type(caught.value) is StoreError
        assert store.read("r1") == []  # Readers are not blocked by the writer (WAL).
        blocker.execute("ROLLBACK")
        store.append("r1", make_events("r1", 0, 1), 0)
        assert store.last_sequence("r1") == 0
    finally:
        blocker.close()
        store.close()


def test_closed_store_says_so(db: Path) -> None:
    store = SqliteStore(db)
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.read("r1")
    with pytest.raises(StoreError, match="is closed"):
        store.append("r1", make_events("r1", 0, 1), 0)


async def _next_within(stream: object, seconds: float) -> object:
    return await asyncio.wait_for(anext(stream), seconds)  # type: ignore[call-overload]


async def test_same_process_appends_wake_subscribers_without_polling(db: Path) -> None:
    # With a 60 s poll interval only the in-process wake-up can deliver within the timeout.
    writer, reader = SqliteStore(db), SqliteStore(db)
    for handle in (writer, reader):
        handle.poll_interval = 60.0
    same = reader.subscribe("r1")
    other = writer.subscribe("r1")
    try:
        pending = asyncio.gather(_next_within(same, 2.0), _next_within(other, 2.0))
        await asyncio.sleep(0.05)
        writer.append("r1", make_events("r1", 0, 1), 0)
        first, second = await pending
        assert first == second == make_event("r1", 0)
    finally:
        await same.aclose()  # type: ignore[attr-defined]
        await other.aclose()  # type: ignore[attr-defined]
        writer.close()
        reader.close()


STDLIB = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def test_records_are_the_standard_librarys_compact_json(store: SqliteStore, db: Path) -> None:
    # The fast encoder writes what json would, on its fast path and its fallbacks; only a
    # float's spelling may differ (1e-7 for 1e-07), never its value.
    payloads: list[dict[str, object]] = [
        {"nodeId": "n", "text": "héllo — 日本語 🎉 \"q\" \\ \n\t\u0001\u007f\u2028 null"},
        {"nodeId": "n", "outputs": {"summary": "s", "data": None}},  # null: exact fallback
        {"nodeId": "n", "big": 2**70},  # beyond 64 bits: exact fallback
        {"nodeId": "n", "keys": {1: "int", None: "null", 2.5: "float"}},  # non-string keys
        {"nodeId": "n", "tuple": (1, [2, {"x": ()}])},
    ]
    floats = {"nodeId": "n", "floats": [0.5, 1e16, 1e-7, 123456789.125, -0.0, 2.5e-308]}
    events = [make_event("r1", i, payload=payload)
              for i, payload in enumerate([*payloads, floats])]
    store.append("r1", events, 0)
    bodies = [body for (body,) in _raw(db, "SELECT body FROM events ORDER BY sequence")]
    # What only the standard library encodes is marked with a leading space, so that it is
    # also read back by the standard library (orjson would read 2**70 as a float).
    exact = [" " if i in (2, 3) else "" for i in range(len(payloads))]
    assert bodies[:-1] == [mark + STDLIB.encode(e) for mark, e in zip(exact, events, strict=False)]
    assert json.loads(bodies[-1]) == json.loads(STDLIB.encode(events[-1]))
    assert store.read("r1")[2]["payload"]["big"] == 2**70


def test_a_layout_1_file_is_read_with_the_exact_decoder(db: Path) -> None:
    # Layout 1 wrote huge integers unmarked: its bodies never go to orjson.
    SqliteStore(db).close()
    body = STDLIB.encode(make_event("r1", 0, payload={"nodeId": "n", "big": 10**30}))
    _raw(db, "PRAGMA user_version = 1")
    _raw(db, "INSERT INTO events VALUES ('r1', 0, 'node.started', ?)", body)
    store = SqliteStore(db)
    try:
        assert store.read("r1")[0]["payload"]["big"] == 10**30
        store.append("r1", make_events("r1", 1, 1), 1)
        assert [e["sequence"] for e in store.read("r1")] == [0, 1]
        assert _raw(db, "PRAGMA user_version") == [(1,)]
    finally:
        store.close()


def test_a_lone_surrogate_is_refused_as_event_invalid(store: SqliteStore) -> None:
    store.append("r1", make_events("r1", 0, 1), 0)
    with pytest.raises(EventInvalid, match="cannot be stored as JSON"):
        store.append("r1", [make_event("r1", 1, payload={"text": "bad \ud800 text"})], 1)
    assert store.last_sequence("r1") == 0


CLAIMER = """
import sys, time
from wopdsl.store import SqliteStore
with SqliteStore(sys.argv[1]).claim(sys.argv[2]):
    print("claimed", flush=True)
    time.sleep(60)
"""


def test_a_claim_holds_across_processes_until_its_holder_dies(db: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", CLAIMER, str(db), "r1"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "claimed"
        store = SqliteStore(db)
        try:
            assert store.driven("r1") is True and store.driven("r2") is False
            with pytest.raises(StoreConflict, match="executing in another process"), \
                    store.claim("r1"):
                pass  # pragma: no cover - refused
            with store.claim("r2"):  # Another run of the same file is free.
                assert store.driven("r2") is True  # Held here.
            assert store.driven("r1") is True  # Asking took nothing: still held there.
            os.kill(holder.pid, signal.SIGKILL)  # The OS drops the lock with its process.
            holder.communicate(timeout=30)
            assert store.driven("r1") is False
            with store.claim("r1"):
                pass
        finally:
            store.close()
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.communicate()
