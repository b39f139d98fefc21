"""The store contract, run against the two built-in backends."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from wopdsl.store import MemoryStore, SqliteStore
from wopdsl.testing.store_conformance import StoreConformance


class TestSqliteStore(StoreConformance):
    def make_store(self, tmp_path: Path) -> SqliteStore:
        return SqliteStore(tmp_path / "runs.db")

    def reopen_store(self, tmp_path: Path) -> SqliteStore:
        return SqliteStore(tmp_path / "runs.db")

    def private_store(self, tmp_path: Path) -> SqliteStore:
        return SqliteStore(tmp_path / "runs.db")

    def write_raw_record(self, tmp_path: Path, run_id: str, sequence: int, body: str) -> None:
        with closing(sqlite3.connect(tmp_path / "runs.db")) as conn, conn:
            conn.execute(
                "INSERT INTO events (run_id, sequence, type, body) VALUES (?, ?, 'raw', ?)",
                (run_id, sequence, body),
            )


class TestMemoryStore(StoreConformance):
    def make_store(self, tmp_path: Path) -> MemoryStore:
        return MemoryStore()

    def private_store(self, tmp_path: Path) -> MemoryStore:
        return MemoryStore()
