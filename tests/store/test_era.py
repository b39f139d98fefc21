"""The era key and the writer rule (v2 ``persistence.md`` §The era key), on real stores.

A run whose ``run.started`` says ``eventLogSchemaVersion: 3`` is stored in v2 vocabulary: the
types v2 renames go into the table (its ``type`` column and the body) under their v2 names
(``agent.tool-called``); a run without the key (era 2, what wopdsl wrote before) keeps v1
names. Reading gives wopdsl's names back either way, from any store object.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wopdsl.store import EventStore, SqliteStore
from wopdsl.testing._store_cases import make_event

Raw = Callable[[str], list[tuple[str, str]]]


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path
           ) -> Iterator[tuple[Callable[[], EventStore], Raw]]:
    """A factory of store objects on one database, and its raw ``(type, body)`` rows."""
    opened: list[EventStore] = []
    if request.param == "sqlite":
        path = tmp_path / "runs.db"

        def make() -> EventStore:
            opened.append(SqliteStore(path))
            return opened[-1]

        def raw(run_id: str) -> list[tuple[str, str]]:
            with sqlite3.connect(path) as conn:
                return list(conn.execute("SELECT type, body FROM events WHERE run_id = ? "
                                         "ORDER BY sequence", (run_id,)))
    else:
        psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
        from wopdsl.store.postgres import PostgresStore

        url = request.getfixturevalue("pg_url")

        def make() -> EventStore:
            opened.append(PostgresStore(url))
            return opened[-1]

        def raw(run_id: str) -> list[tuple[str, str]]:
            with psycopg.connect(url) as conn:
                return [(t, str(b)) for t, b in conn.execute(
                    "SELECT type, body FROM wopdsl_events WHERE run_id = %s ORDER BY sequence",
                    (run_id,))]
    yield make, raw
    for store in opened:
        store.close()


def _started(run_id: str, era: int | None) -> Any:
    payload: dict[str, Any] = {"workflowId": "team", "inputs": {"task": "t"}, "metadata": {}}
    if era is not None:
        payload["eventLogSchemaVersion"] = era
    return make_event(run_id, 0, "run.started", payload)


def _tool_events(run_id: str, start: int) -> list[Any]:
    return [make_event(run_id, start, "tool.session.opened", {"sessionId": "s"}),
            make_event(run_id, start + 1, "agent.toolCalled", {"callId": "c"}),
            make_event(run_id, start + 2, "node.started", {"nodeId": "a"})]


def test_an_era_3_run_is_stored_in_v2_vocabulary(stores: Any) -> None:
    make, raw = stores
    store = make()
    store.append("r3", [_started("r3", 3)], 0)
    store.append("r3", _tool_events("r3", 1), 1)  # The era is read back from the store.
    store.append("r3b", [_started("r3b", 3), *_tool_events("r3b", 1)], 0)  # One batch.

    for run_id in ("r3", "r3b"):
        rows = raw(run_id)
        assert [t for t, _ in rows] == ["run.started", "tool.session-opened",
                                        "agent.tool-called", "node.started"]
        assert '"type":"agent.tool-called"' in rows[2][1]
        for reader in (store, make()):  # A fresh object (no cache) reads the same.
            assert [e["type"] for e in reader.read(run_id)] == [
                "run.started", "tool.session.opened", "agent.toolCalled", "node.started"]


def test_an_era_2_log_keeps_its_v1_names(stores: Any) -> None:
    make, raw = stores
    store = make()
    store.append("r2", [_started("r2", None)], 0)
    store.append("r2", _tool_events("r2", 1), 1)
    assert [t for t, _ in raw("r2")] == ["run.started", "tool.session.opened",
                                         "agent.toolCalled", "node.started"]
    assert [e["type"] for e in make().read("r2")] == [t for t, _ in raw("r2")]


def test_a_fork_of_an_era_2_run_is_a_new_run_of_era_3(stores: Any) -> None:
    from wopdsl import fork

    make, raw = stores
    store = make()
    store.append("old", [_started("old", None)], 0)
    forked = fork(store, "old", 0, run_id="new")
    store.append(forked, _tool_events(forked, 1), 1)
    assert [e["payload"].get("eventLogSchemaVersion") for e in store.read(forked)][:1] == [3]
    assert "agent.tool-called" in [t for t, _ in raw(forked)]
    assert [e["type"] for e in make().read(forked)][2] == "agent.toolCalled"
