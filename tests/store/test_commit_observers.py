"""A store object tells in-process views of its own commits, with the committed events.

Real SQLite files. What is checked: an observer gets each batch this object committed, once,
in order, as the very objects appended, and only after the commit (a refused append tells
nothing); it never hears of another object's commits; one that raises is dropped without
failing the append; and a store that does not tell (the base default) says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from wopdsl.errors import StoreConflict
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store import MemoryStore, SqliteStore
from wopdsl.testing.store_conformance import make_events


def test_an_observer_gets_each_commit_of_its_run_as_appended(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    told: list[Sequence[RunEventDoc]] = []
    stop = store.observe_commits("r1", told.append)
    assert stop is not None
    first, second = make_events("r1", 0, 3), make_events("r1", 3, 2)
    store.append("r1", first, 0)
    store.append("r2", make_events("r2", 0, 2), 0)  # another run: not told
    with pytest.raises(StoreConflict):
        store.append("r1", make_events("r1", 9, 1), 9)  # refused: nothing committed
    store.append("r1", second, 3)
    assert told == [first, second]
    assert told[0] is first and told[1] is second  # the objects appended: no copy, no decode
    assert store.read("r1") == [*first, *second]

    other = SqliteStore(tmp_path / "runs.db")  # another writer on the file: not told here
    other.append("r1", make_events("r1", 5, 1), 5)
    stop()
    store.append("r1", make_events("r1", 6, 1), 6)  # unregistered: not told
    assert len(told) == 2
    other.close()
    store.close()


def test_an_observer_that_raises_is_dropped_and_the_commit_stands(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    calls: list[int] = []
    kept: list[int] = []

    def broken(events: Sequence[RunEventDoc]) -> None:
        calls.append(len(events))
        raise BrokenPipeError("the terminal went away")

    store.observe_commits("r1", broken)
    store.observe_commits("r1", lambda events: kept.append(len(events)))
    with caplog.at_level(logging.WARNING, logger="wopdsl.store"):
        store.append("r1", make_events("r1", 0, 2), 0)  # does not raise
    store.append("r1", make_events("r1", 2, 1), 2)
    assert calls == [2]  # dropped after it failed
    assert kept == [2, 1]  # the others are still told
    assert store.last_sequence("r1") == 2  # both commits are durable
    assert "commit observer of run r1 failed and was dropped: BrokenPipeError" in caplog.text
    store.close()


def test_a_store_that_does_not_tell_says_so() -> None:
    assert MemoryStore().observe_commits("r1", lambda events: None) is None
