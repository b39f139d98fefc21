"""Every store lists a fork with the time it was forked, not its source's start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import wopdsl
from wopdsl.engine import fork
from wopdsl.store import EventStore, MemoryStore, SqliteStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventStore]:
    if request.param == "memory":
        store: EventStore = MemoryStore()
    elif request.param == "sqlite":
        store = SqliteStore(tmp_path / "runs.db")
    else:
        pytest.importorskip("psycopg", reason="needs the postgres extra")
        from wopdsl.store.postgres import PostgresStore

        store = PostgresStore(request.getfixturevalue("pg_url"))
    yield store
    store.close()


async def test_a_fork_starts_when_it_is_forked(any_store: EventStore) -> None:
    council = wopdsl.load(ROOT / "councils" / "release-team.toml")
    source = await council.arun(store=any_store, deterministic=True)  # Times in 2026-01-01.
    new_id = fork(any_store, source.run_id, 8)
    forked_at = any_store.read(new_id)[0]["payload"]["metadata"]["forkedFrom"]["forkedAt"]
    listed = {info.run_id: info.started_at for info in any_store.runs()}
    assert listed == {source.run_id: source.events[0]["timestamp"], new_id: forked_at}
    assert forked_at != source.events[0]["timestamp"]
