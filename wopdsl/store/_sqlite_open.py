"""Private: open a SQLite store file for writing (WAL, layout) or for reading only."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Final

from wopdsl.errors import StoreError
from wopdsl.store._answers_sql import SQLITE_TABLE

__all__ = ["LAYOUT_VERSION", "connect_reader", "connect_writer", "read_only_hint",
           "unwritable"]

LAYOUT_VERSION: Final = 2
"""The table layout this package writes, kept in ``PRAGMA user_version``.

1: the tables below. 2: the same tables, and a body that holds a number the fast decoder
cannot read back exactly (an integer beyond 64 bits) starts with a space (see
:func:`~wopdsl.store._codec.encode_event`), so every other body may be decoded by orjson."""

_LAYOUT: Final = """
CREATE TABLE IF NOT EXISTS events (
    run_id   TEXT    NOT NULL,
    sequence INTEGER NOT NULL,
    type     TEXT    NOT NULL,
    body     TEXT    NOT NULL,
    PRIMARY KEY (run_id, sequence)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT NOT NULL PRIMARY KEY,
    workflow_id TEXT NOT NULL,
    started_at  TEXT NOT NULL
);
"""
_PRIVATE: Final = """
CREATE TABLE IF NOT EXISTS private (
    run_id TEXT NOT NULL,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
)"""
"""A run's private records (:meth:`~wopdsl.store.base.EventStore.save_private`): made by
every writer that opens a file, so files of any layout get it; older wopdsl ignores it."""

# The runs table is written once per run, by its first append. A run's last event is found
# through the primary key's index (one B-tree descent, as cheap as a runs-table lookup), so
# appends skip an UPDATE per transaction.

_PAGE_SIZE: Final = 1024
"""Bytes per page of a new store file. Every commit writes each page it touches to the WAL
whole, and an append touches the last page of the events table and of its key, so small
pages write (and checkpoints later sync) about half the bytes of SQLite's default 4096 for
the same events. Files made with another page size keep it."""
_CHECKPOINT_BYTES: Final = 4 * 1024 * 1024
"""The WAL is checkpointed into the database once it holds this much (SQLite's default)."""

_READONLY_ERRORS: Final = ("readonly", "read-only", "unable to open", "permission denied")


def unwritable(path: Path) -> str | None:
    """What keeps this process from writing the store ``path``, or ``None``.

    SQLite writes the file and, next to it, ``-wal``, ``-shm`` and ``-claims`` files, so
    both the file (when it exists) and its folder must be writable.
    """
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is read-only"
    if not os.access(path.parent, os.W_OK):
        return f"its folder {path.parent} is read-only"
    return None


def read_only_hint(path: Path) -> str:
    """How to get past a store this process cannot write."""
    return (f"make {path} and its folder writable (SQLite writes {path.name}-wal, "
            f"{path.name}-shm and {path.name}-claims next to it), or point --store (or "
            "WOP_STORE) at a writable location; reading commands (wop runs, events, "
            "transcript, replay) work on a read-only store")


def connect_writer(path: Path, timeout: float) -> tuple[sqlite3.Connection, int]:
    """Open ``path`` read-write in WAL mode, creating its tables; return it and its layout.

    Raises:
        StoreError: SQLite failed, the file or folder is read-only, or the layout is newer.
    """
    reason = unwritable(path)
    if reason is not None:
        raise StoreError(f"cannot write the store {path}: {reason}", hint=read_only_hint(path))
    try:
        conn = sqlite3.connect(
            path,
            timeout=timeout,
            isolation_level=None,  # We issue BEGIN/COMMIT ourselves.
            check_same_thread=False,  # Guarded by the store's lock instead.
        )
    except sqlite3.Error as exc:
        raise _open_failure(path, exc) from exc
    try:
        # Before WAL mode: the page size of a new file is fixed by its first write.
        conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        conn.execute(f"PRAGMA wal_autocheckpoint = {_CHECKPOINT_BYTES // page_size}")
        layout = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if layout == 0:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _LAYOUT.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {LAYOUT_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            layout = LAYOUT_VERSION
        _check_layout(path, layout)
        conn.execute(SQLITE_TABLE)  # Idempotency answers (any layout; IF NOT EXISTS).
        conn.execute(_PRIVATE)
    except sqlite3.Error as exc:
        conn.close()
        raise _open_failure(path, exc) from exc
    except BaseException:
        conn.close()
        raise
    return conn, layout


def connect_reader(path: Path, timeout: float) -> tuple[sqlite3.Connection, int]:
    """Open ``path`` for reading only (``mode=ro``); return it and its layout (0: empty).

    A WAL database needs its ``-shm`` file even to be read; when the folder is read-only
    and nobody left one, the file is opened ``immutable=1`` (it cannot change: nobody can
    write it from here either).

    Raises:
        StoreError: the file cannot be read, is not a database, or its layout is newer.
    """
    uri = path.resolve().as_uri()
    last: sqlite3.Error | None = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"{uri}?{query}", uri=True, timeout=timeout,
                                   isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            last = exc
            continue
        try:
            layout = int(conn.execute("PRAGMA user_version").fetchone()[0])
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            conn.close()
            last = exc
            if not any(word in str(exc).lower() for word in _READONLY_ERRORS):
                break
            continue
        try:
            _check_layout(path, layout)
            if layout == 0:  # An empty file: read it as a store without runs.
                for statement in _LAYOUT.split(";"):
                    if statement.strip():
                        conn.execute(statement.replace("CREATE TABLE", "CREATE TEMP TABLE"))
        except BaseException:
            conn.close()
            raise
        return conn, layout
    assert last is not None
    raise _open_failure(path, last) from last


def _check_layout(path: Path, layout: int) -> None:
    if layout > LAYOUT_VERSION:
        raise StoreError(
            f"{path}: store layout {layout} is newer than this wopdsl understands "
            f"({LAYOUT_VERSION})",
            hint="upgrade wopdsl to open this store",
        )


def _open_failure(path: Path, exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if "not a database" in text:
        return StoreError(f"cannot open {path}: the file is not a SQLite database",
                          hint="point --store (or WOP_STORE) at a wopdsl store file or a new "
                               "path")
    if not os.access(path, os.R_OK):
        return StoreError(f"cannot open {path}: permission denied ({text})",
                          hint=f"make {path} readable, or point --store (or WOP_STORE) at "
                               "another store")
    if any(word in text.lower() for word in _READONLY_ERRORS):
        return StoreError(f"cannot open {path}: {text}", hint=read_only_hint(path))
    return StoreError(f"cannot open {path}: {text}")
