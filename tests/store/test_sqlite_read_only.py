"""SqliteStore(read_only=True): reads a store nobody here may write; refuses to append."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from wopdsl import StoreError
from wopdsl.store import SqliteStore, open_store
from wopdsl.testing.store_conformance import make_events


def _store_with_a_run(path: Path) -> list[object]:
    store = SqliteStore(path)
    try:
        store.append("r1", make_events("r1", 0, 3), 0)
        return list(store.read("r1"))
    finally:
        store.close()


def test_read_only_reads_and_refuses_to_append(tmp_path: Path) -> None:
    events = _store_with_a_run(tmp_path / "runs.db")
    store = open_store(tmp_path / "runs.db", create=False, read_only=True)
    try:
        assert store.read("r1") == events
        assert [r.run_id for r in store.runs()] == ["r1"]
        with pytest.raises(StoreError, match="opened read-only") as refused:
            store.append("r1", make_events("r1", 3, 1), 3)
        assert "writable" in refused.value.hint
        with pytest.raises(StoreError, match="opened read-only"), store.claim("r1"):
            pass
    finally:
        store.close()
    assert [e["sequence"] for e in SqliteStore(tmp_path / "runs.db").read("r1")] == [0, 1, 2]


def test_read_only_sees_what_a_live_writer_appended(tmp_path: Path) -> None:
    writer = SqliteStore(tmp_path / "runs.db")
    writer.append("r1", make_events("r1", 0, 2), 0)
    reader = SqliteStore(tmp_path / "runs.db", read_only=True)
    try:
        assert reader.last_sequence("r1") == 1
        writer.append("r1", make_events("r1", 2, 1), 2)  # Still in the WAL, not checkpointed.
        assert reader.last_sequence("r1") == 2
    finally:
        reader.close()
        writer.close()


def test_an_empty_file_reads_as_a_store_without_runs(tmp_path: Path) -> None:
    (tmp_path / "empty.db").write_bytes(b"")
    store = SqliteStore(tmp_path / "empty.db", read_only=True)
    try:
        assert store.runs() == [] and store.read("r1") == [] and not store.exists("r1")
    finally:
        store.close()
    assert (tmp_path / "empty.db").read_bytes() == b""  # Reading wrote nothing.


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_text("not sqlite " * 100)
    for read_only in (True, False):
        with pytest.raises(StoreError, match="not a SQLite database") as failed:
            SqliteStore(tmp_path / "junk.db", read_only=read_only)
        assert "--store" in failed.value.hint


def test_a_folder_or_an_empty_target_is_refused(tmp_path: Path) -> None:
    for target in (tmp_path, str(tmp_path), f"sqlite:///{tmp_path}", "sqlite:///"):
        with pytest.raises(StoreError, match="is a folder, not a store file") as failed:
            open_store(target)
        assert "runs.db" in failed.value.hint
    with pytest.raises(StoreError, match="is a folder"):
        SqliteStore(tmp_path)
    for empty in ("", "  "):
        with pytest.raises(StoreError, match="the store target is empty"):
            open_store(empty)


def test_a_newer_layout_is_refused_read_only_too(tmp_path: Path) -> None:
    _store_with_a_run(tmp_path / "runs.db")
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="layout 99 is newer"):
        SqliteStore(tmp_path / "runs.db", read_only=True)
