"""The store contract, unchanged, against a real PostgreSQL server (one database per test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.postgres import fresh_database
from wopdsl.testing.store_conformance import StoreConformance


class TestPostgresStore(StoreConformance):
    url: str

    @pytest.fixture(autouse=True)
    def _database(self) -> Iterator[None]:
        with fresh_database() as url:
            self.url = url
            yield

    def make_store(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        from wopdsl.store.postgres import PostgresStore

        return PostgresStore(self.url)

    def reopen_store(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        return self.make_store(tmp_path)

    def private_store(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        return self.make_store(tmp_path)

    def write_raw_record(self, tmp_path: Path, run_id: str, sequence: int, body: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO wopdsl_events (run_id, sequence, type, body) "
                "VALUES (%s, %s, 'raw', %s)",
                (run_id, sequence, body),
            )
