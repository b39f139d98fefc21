"""open_store picks a backend from a string, the environment or the default path."""

from __future__ import annotations

from pathlib import Path

import pytest

from wopdsl.store import DEFAULT_STORE, MemoryStore, SqliteStore, open_store
from wopdsl.testing.store_conformance import make_events


@pytest.fixture(autouse=True)
def _no_env_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WOP_STORE", raising=False)
    monkeypatch.chdir(tmp_path)


def _sqlite_at(target: object, expected: Path) -> None:
    store = open_store(target)  # type: ignore[arg-type]
    try:
        assert isinstance(store, SqliteStore)
        assert store.path.resolve() == expected.resolve()
        store.append("r1", make_events("r1", 0, 1), 0)
    finally:
        store.close()
    assert expected.is_file()


@pytest.mark.parametrize("target", ["memory:", ":memory:"])
def test_memory(target: str) -> None:
    assert isinstance(open_store(target), MemoryStore)


def test_sqlite_url_relative_to_cwd(tmp_path: Path) -> None:
    _sqlite_at("sqlite:///x.db", tmp_path / "x.db")


def test_sqlite_url_absolute(tmp_path: Path) -> None:
    _sqlite_at(f"sqlite:///{tmp_path / 'abs' / 'runs.db'}", tmp_path / "abs" / "runs.db")


def test_plain_path_string_and_pathlike(tmp_path: Path) -> None:
    _sqlite_at("data/runs.db", tmp_path / "data" / "runs.db")
    _sqlite_at(tmp_path / "other.db", tmp_path / "other.db")


def test_env_wop_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WOP_STORE", str(tmp_path / "env.db"))
    _sqlite_at(None, tmp_path / "env.db")
    monkeypatch.setenv("WOP_STORE", "memory:")
    assert isinstance(open_store(), MemoryStore)


def test_default_is_dot_wop_runs_db_in_cwd(tmp_path: Path) -> None:
    assert DEFAULT_STORE == ".wop/runs.db"
    _sqlite_at(None, tmp_path / ".wop" / "runs.db")


def test_store_object_is_returned_as_is() -> None:
    store = MemoryStore()
    assert open_store(store) is store
