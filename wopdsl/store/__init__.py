"""Durable event stores: ``SqliteStore`` (default) and ``MemoryStore``, picked by a string."""

from __future__ import annotations

import os
from pathlib import Path

from wopdsl.errors import RunNotFound
from wopdsl.store.base import EventStore, RunInfo, require_run
from wopdsl.store.memory import MemoryStore
from wopdsl.store.sqlite import SqliteStore

__all__ = [
    "DEFAULT_STORE",
    "EventStore",
    "MemoryStore",
    "RunInfo",
    "SqliteStore",
    "is_memory",
    "open_store",
    "require_run",
    "store_target",
]

DEFAULT_STORE = ".wop/runs.db"
"""Where runs are kept unless ``--store``, ``WOP_STORE`` or ``store=`` says otherwise."""

_MEMORY = frozenset({"memory:", ":memory:"})
_SQLITE_URL = "sqlite:///"


def store_target(target: str | os.PathLike[str] | None = None) -> str:
    """The store a target names: ``target``, else ``$WOP_STORE``, else ``.wop/runs.db``."""
    return os.fspath(target) if target else (os.environ.get("WOP_STORE") or DEFAULT_STORE)


def is_memory(target: str | os.PathLike[str] | None) -> bool:
    """Whether ``target`` names an in-memory store (gone when the process ends)."""
    return store_target(target) in _MEMORY


def open_store(
    target: str | os.PathLike[str] | EventStore | None = None, *, create: bool = True
) -> EventStore:
    """Open an event store.

    Args:
        target: A store object (returned as is); ``"memory:"``; ``"sqlite:///path.db"`` or a
            plain path to a SQLite file; or ``None`` for ``$WOP_STORE`` or ``.wop/runs.db``.
        create: When false, a SQLite file that does not exist yet is not created and
            :class:`~wopdsl.RunNotFound` is raised instead (reading needs existing runs).

    Returns:
        The store.

    Example:
        >>> store = open_store("memory:")
    """
    if isinstance(target, EventStore):
        return target
    text = store_target(target)
    if text in _MEMORY:
        return MemoryStore()
    path = Path(text.removeprefix(_SQLITE_URL))
    if not create and not path.is_file():
        raise RunNotFound(
            f"no store at {text}: it has no runs yet",
            hint="start a run with `wop run FILE`, or point --store (or WOP_STORE) "
                 "at the store that holds the run",
        )
    return SqliteStore(path)
