"""A store object skips re-reading a run's end after its own append; others still conflict."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from wopdsl.errors import StoreConflict
from wopdsl.store import SqliteStore
from wopdsl.testing.store_conformance import make_events


def test_an_append_by_another_writer_after_ours_is_a_conflict(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    ours, theirs = SqliteStore(db), SqliteStore(db)
    ours.append("r1", make_events("r1", 0, 3), 0)
    theirs.append("r1", make_events("r1", 3, 2), 3)

    with pytest.raises(StoreConflict, match="the log holds 5 events"):
        ours.append("r1", make_events("r1", 3, 4), 3)
    assert [e["sequence"] for e in ours.read("r1")] == [0, 1, 2, 3, 4]
    assert theirs.read("r1") == ours.read("r1")

    # Appending where the log really ends still works, and keeps working.
    ours.append("r1", make_events("r1", 5, 1), 5)
    ours.append("r1", make_events("r1", 6, 1), 6)
    with pytest.raises(StoreConflict):
        theirs.append("r1", make_events("r1", 6, 1), 6)
    assert ours.last_sequence("r1") == theirs.last_sequence("r1") == 6


def test_a_shorter_append_by_another_writer_is_a_conflict_too(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    ours, theirs = SqliteStore(db), SqliteStore(db)
    ours.append("r1", make_events("r1", 0, 1), 0)
    theirs.append("r1", make_events("r1", 1, 1), 1)
    # Their event took our first row: the whole batch is refused, nothing of it is kept.
    with pytest.raises(StoreConflict):
        ours.append("r1", make_events("r1", 1, 5), 1)
    assert [e["sequence"] for e in ours.read("r1")] == [0, 1]


def test_a_wrong_expected_sequence_is_still_refused(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    store.append("r1", make_events("r1", 0, 2), 0)
    with pytest.raises(StoreConflict):
        store.append("r1", make_events("r1", 3, 1), 3)  # a gap
    with pytest.raises(StoreConflict):
        store.append("r1", make_events("r1", 1, 1), 1)  # behind
    store.append("r1", make_events("r1", 2, 1), 2)
    assert store.last_sequence("r1") == 2


def _statements(store: SqliteStore) -> list[str]:
    """The SQL the store's connection runs from now on (its first word each)."""
    seen: list[str] = []
    store._conn.set_trace_callback(lambda sql: seen.append(sql.split()[0].upper()))
    return seen


def test_a_short_append_after_our_own_is_one_statement_and_others_a_transaction(
        tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    seen = _statements(store)
    store.append("r1", make_events("r1", 0, 3), 0)  # The run's first: its length is read.
    assert seen[0] == "BEGIN" and seen[-1] == "COMMIT" and "SELECT" in seen
    seen.clear()
    store.append("r1", make_events("r1", 3, 3), 3)  # A turn: one INSERT, its own transaction.
    assert seen == ["INSERT"]
    seen.clear()
    store.append("r1", make_events("r1", 6, 9), 6)  # Longer than one statement holds.
    assert seen[0] == "BEGIN" and seen[-1] == "COMMIT" and set(seen[1:-1]) == {"INSERT"}
    other = SqliteStore(tmp_path / "runs.db")
    other.append("r1", make_events("r1", 15, 1), 15)
    seen.clear()
    with pytest.raises(StoreConflict, match="the log holds 16 events"):
        store.append("r1", make_events("r1", 15, 2), 15)
    assert seen == ["INSERT", "SELECT"]  # The key refused it; the length says how much.
    assert [e["sequence"] for e in store.read("r1")] == list(range(16))


def test_a_one_statement_append_refused_on_a_later_row_keeps_none_of_its_rows(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    store.append("r1", make_events("r1", 0, 3), 0)
    # Another tool wrote row #5 of the run: our next append clashes on its third row.
    stray = make_events("r1", 5, 1)[0]
    with sqlite3.connect(db) as raw:
        raw.execute("INSERT INTO events VALUES (?, ?, ?, ?)",
                    ("r1", 5, stray["type"], json.dumps(stray)))
    with pytest.raises(StoreConflict):
        store.append("r1", make_events("r1", 3, 4), 3)
    with sqlite3.connect(db) as raw:
        rows = raw.execute("SELECT sequence FROM events WHERE run_id = 'r1' ORDER BY 1")
        assert [sequence for (sequence,) in rows] == [0, 1, 2, 5]  # Nothing of #3, #4, #6.
