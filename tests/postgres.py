"""A real PostgreSQL server for the tests: one fresh database per test.

The server comes from ``$WOPDSL_TEST_POSTGRES`` (a connection string whose role may create
databases), which ``.ci/postgres.sh`` starts and prints. Without it the PostgreSQL tests are
skipped, and say how to start one; in CI (``CI=true``) they fail instead, never skip.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

ENV = "WOPDSL_TEST_POSTGRES"


class SecretUrl(str):
    """A connection string whose ``repr`` hides its password.

    pytest prints a failing test's arguments (``pg_url = ...``) with ``repr``: the database
    password must not reach the test output, so every URL handed to a test is one of these.
    It is still a ``str`` for every driver and subprocess that uses it.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        from wopdsl.store._pg_connect import redact

        return repr(redact(str(self)))


def server_url() -> str:
    """The admin connection string, or skip (fail in CI) when no server is configured."""
    url = os.environ.get(ENV, "")
    if url:
        return SecretUrl(url)
    reason = (f"no PostgreSQL server: set {ENV} (e.g. {ENV}=\"$(.ci/postgres.sh)\", which "
              "installs and starts one on loopback)")
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason}; CI never skips these tests", pytrace=False)
    pytest.skip(reason)


def url_for(database: str, base: str | None = None) -> str:
    """``base`` (the server's ``postgresql://`` URL) pointed at another database."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base or server_url())
    return SecretUrl(urlunsplit(parts._replace(path=f"/{database}")))


def admin_execute(statement: str, *params: object) -> list[tuple[object, ...]]:
    """Run one statement on the server's own database (autocommit) and return its rows."""
    import psycopg

    with psycopg.connect(server_url(), autocommit=True) as conn:
        cursor = conn.execute(statement, params or None)
        return cursor.fetchall() if cursor.description else []


@contextmanager
def fresh_database() -> Iterator[str]:
    """Create an empty database, yield its URL, and drop it (and its sessions) afterwards."""
    import psycopg

    base = server_url()
    name = f"wopdsl_t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url_for(name, base)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            for attempt in range(50):  # An autovacuum worker may hold on for a moment.
                try:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                    break
                except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectInUse):
                    if attempt == 49:
                        raise
                    time.sleep(0.1)
