"""Durable event stores: ``SqliteStore`` (default) and ``MemoryStore``, picked by a string."""

from __future__ import annotations

import os
from pathlib import Path

from wopdsl.store.base import EventStore, RunInfo
from wopdsl.store.memory import MemoryStore
from wopdsl.store.sqlite import SqliteStore

__all__ = ["DEFAULT_STORE", "EventStore", "MemoryStore", "RunInfo", "SqliteStore", "open_store"]

DEFAULT_STORE = ".wop/runs.db"
"""Where runs are kept unless ``--store``, ``WOP_STORE`` or ``store=`` says otherwise."""


def open_store(target: str | os.PathLike[str] | EventStore | None = None) -> EventStore:
    """Open an event store.

    Args:
        target: A store object (returned as is); ``"memory:"``; ``"sqlite:///path.db"`` or a
            plain path to a SQLite file; or ``None`` for ``$WOP_STORE`` or ``.wop/runs.db``.

    Returns:
        The store.

    Example:
        >>> store = open_store("memory:")
    """
    if isinstance(target, EventStore):
        return target
    if target is None:
        target = os.environ.get("WOP_STORE") or DEFAULT_STORE
    text = os.fspath(target)
    if text in {"memory:", ":memory:"}:
        return MemoryStore()
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    return SqliteStore(Path(text))
