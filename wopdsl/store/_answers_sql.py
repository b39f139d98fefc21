"""Private: idempotency answers in SQL stores (SQLite and PostgreSQL share the statements).

A host keeps the answer to each request sent with an ``Idempotency-Key`` in the store the
runs live in, so a retry gets the same answer after a restart, and from another host on the
same store. The first answer kept for a scope wins (insert-if-absent).
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from wopdsl.store.base import Answer

__all__ = ["COLUMNS", "SQLITE_TABLE", "from_row", "params"]

COLUMNS: Final = "scope, fingerprint, status, body, created_at"
"""The columns of an answer's row, in :func:`params` order."""

SQLITE_TABLE: Final = """
CREATE TABLE IF NOT EXISTS idempotency (
    scope       TEXT    NOT NULL PRIMARY KEY,
    fingerprint TEXT    NOT NULL,
    status      INTEGER NOT NULL,
    body        TEXT    NOT NULL,
    created_at  REAL    NOT NULL
)"""
"""The SQLite table, made by every writer that opens a file (older layouts included)."""


def params(answer: Answer) -> tuple[str, str, int, str, float]:
    """The row of ``answer``: scope, fingerprint, status, body (JSON text), created_at."""
    return (answer.scope, answer.fingerprint, answer.status,
            orjson.dumps(answer.body).decode(), answer.created_at)


def from_row(row: tuple[Any, ...] | None) -> Answer | None:
    """The answer in a ``(scope, fingerprint, status, body, created_at)`` row."""
    if row is None:
        return None
    scope, fingerprint, status, body, created = row
    return Answer(str(scope), str(fingerprint), int(status), orjson.loads(body),
                  float(created))
