"""Durable event stores: ``SqliteStore`` (default), ``PostgresStore``, ``MemoryStore``.

:func:`open_store` is the one place a store target (``--store``, ``WOP_STORE``, ``store=``)
is turned into a store. ``PostgresStore`` is imported only when asked for, so ``import
wopdsl`` does not load psycopg.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from wopdsl.errors import RunNotFound, StoreError
from wopdsl.store._pg_connect import redact
from wopdsl.store.base import Answer, EventStore, RunInfo, require_run
from wopdsl.store.memory import MemoryStore
from wopdsl.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from wopdsl.store.postgres import PostgresStore

__all__ = [
    "DEFAULT_STORE",
    "Answer",
    "EventStore",
    "MemoryStore",
    "PostgresStore",
    "RunInfo",
    "SqliteStore",
    "describe_target",
    "is_file_target",
    "is_memory",
    "open_store",
    "require_run",
    "store_target",
]

DEFAULT_STORE = ".wop/runs.db"
"""Where runs are kept unless ``--store``, ``WOP_STORE`` or ``store=`` says otherwise."""

_MEMORY: Final = frozenset({"memory:", ":memory:"})
_SQLITE_URL: Final = "sqlite:///"
_POSTGRES: Final = ("postgresql://", "postgres://")
_URL: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def store_target(target: str | os.PathLike[str] | None = None) -> str:
    """The store a target names: ``target``, else ``$WOP_STORE``, else ``.wop/runs.db``.

    It may hold a password (a ``postgresql://`` URL): print :func:`describe_target` of it.
    """
    if target is not None:
        return os.fspath(target)
    return os.environ.get("WOP_STORE") or DEFAULT_STORE


def is_memory(target: str | os.PathLike[str] | None) -> bool:
    """Whether ``target`` names an in-memory store (gone when the process ends)."""
    return store_target(target) in _MEMORY


def is_file_target(target: str | os.PathLike[str] | None) -> bool:
    """Whether ``target`` names a SQLite file (a path or ``sqlite:///``), not a server."""
    text = store_target(target)
    return text not in _MEMORY and (text.startswith(_SQLITE_URL) or not _URL.match(text))


def describe_target(target: str | os.PathLike[str] | None) -> str:
    """Return the store ``target`` names, fit to print: a URL's password becomes ``***``.

    Example:
        >>> describe_target("postgresql://wop:s3cret@db:5432/runs")
        'postgresql://wop:***@db:5432/runs'
    """
    text = store_target(target)
    return text if is_file_target(text) or text in _MEMORY else redact(text)


def open_store(
    target: str | os.PathLike[str] | EventStore | None = None, *, create: bool = True,
    read_only: bool = False,
) -> EventStore:
    """Open an event store.

    Args:
        target: A store object (returned as is); ``"memory:"``; ``"sqlite:///path.db"`` or a
            plain path to a SQLite file; ``"postgresql://USER:PASSWORD@HOST:PORT/DB"`` (or
            ``postgres://``; needs ``wopdsl[postgres]``); or ``None`` for ``$WOP_STORE`` or
            ``.wop/runs.db``.
        create: When false, a SQLite file (or a database without the store's tables) that
            does not exist yet is not created and :class:`~wopdsl.RunNotFound` is raised
            instead (reading needs existing runs).
        read_only: Open a SQLite file for reading only, so a file (or folder) this process
            cannot write can still be read; appending to it raises ``StoreError``. Other
            stores ignore it.

    Returns:
        The store.

    Raises:
        StoreError: an empty target, a folder, a URL scheme wopdsl does not serve, or a
            store that cannot be opened (the message names the server, never a password).

    Example:
        >>> store = open_store("memory:")
    """
    if isinstance(target, EventStore):
        return target
    text = store_target(target)
    if not text.strip():
        raise StoreError("the store target is empty",
                         hint=f"name a store file (e.g. {DEFAULT_STORE}), a postgresql:// URL "
                              "or memory:, or leave --store out for the default")
    if text in _MEMORY:
        return MemoryStore()
    if text.startswith(_POSTGRES):
        from wopdsl.store.postgres import PostgresStore

        return PostgresStore(text, create=create)
    scheme = _URL.match(text)
    if scheme and not text.startswith(_SQLITE_URL):
        if scheme[1].lower() == "sqlite":
            raise StoreError(f"{text}: a SQLite URL takes three slashes and a path",
                             hint="write sqlite:///path/to/runs.db (or just the path)")
        raise StoreError(
            f"{redact(text)}: wopdsl has no store for {scheme[1]}:// URLs",
            hint="use a SQLite file (a path or sqlite:///path.db), postgresql://USER:PASSWORD@"
                 "HOST:PORT/DATABASE, or memory:",
        )
    path = Path(text.removeprefix(_SQLITE_URL))
    if not path.name or path.is_dir():
        raise StoreError(f"{text} is a folder, not a store file",
                         hint=f"point --store (or WOP_STORE) at a file, e.g. "
                              f"{path / 'runs.db'}")
    if not create and not path.is_file():
        raise RunNotFound(
            f"no store at {text}: it has no runs yet",
            hint="start a run with `wop run FILE`, or point --store (or WOP_STORE) "
                 "at the store that holds the run",
        )
    return SqliteStore(path, read_only=read_only)


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":  # Lazily: it imports psycopg.
        from wopdsl.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
