"""A store object skips re-reading a run's end after its own append; others still conflict."""

from __future__ import annotations

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
