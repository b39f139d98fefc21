"""The PostgreSQL store's tables: created and migrated by the store, versioned in a table.

Every object is named ``wopdsl_*`` and lives in the connection's current schema (the first
of its ``search_path``, ``public`` by default), so several stores can share one database in
separate schemas (``?options=-csearch_path%3Dteam_a``) and a store can share a schema with
other tables.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Final

from wopdsl.errors import RunNotFound
from wopdsl.store._answers_sql import COLUMNS
from wopdsl.store._pg_connect import Target

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION: Final = 3
"""The layout this module writes, kept in ``wopdsl_schema.version``."""

_MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    1: (
        "CREATE TABLE wopdsl_schema (version integer NOT NULL)",
        # One row per run, written by its first append; ``position`` orders runs oldest first.
        """CREATE TABLE wopdsl_runs (
            position    bigint GENERATED ALWAYS AS IDENTITY,
            run_id      text NOT NULL PRIMARY KEY,
            workflow_id text NOT NULL,
            started_at  text NOT NULL
        )""",
        # The log. ``body`` is the event's JSON text exactly as encoded (json/jsonb would
        # normalise numbers such as -0.0 and 1e16, or refuse \\u0000), ``type`` a copy for
        # queries. The primary key is the optimistic-concurrency backstop.
        """CREATE TABLE wopdsl_events (
            run_id   text   NOT NULL,
            sequence bigint NOT NULL,
            type     text   NOT NULL,
            body     text   NOT NULL,
            PRIMARY KEY (run_id, sequence)
        )""",
        # One call, one round trip, one transaction per append: check the run's length,
        # insert the batch, register a new run, and notify listeners at commit. Returns the
        # run's last sequence before the call; anything but p_expected - 1 means nothing
        # was written. A concurrent writer at the same sequence fails on the primary key.
        """CREATE FUNCTION wopdsl_append(
            p_run text, p_expected bigint, p_types text[], p_bodies text[],
            p_workflow text, p_started text, p_channel text
        ) RETURNS bigint LANGUAGE plpgsql AS $$
        DECLARE
            held bigint;
        BEGIN
            SELECT max(sequence) INTO held FROM wopdsl_events WHERE run_id = p_run;
            held := coalesce(held, -1);
            IF held + 1 <> p_expected THEN
                RETURN held;
            END IF;
            INSERT INTO wopdsl_events (run_id, sequence, type, body)
            SELECT p_run, p_expected + n - 1, t, b
            FROM unnest(p_types, p_bodies) WITH ORDINALITY AS x(t, b, n);
            IF p_expected = 0 THEN
                INSERT INTO wopdsl_runs (run_id, workflow_id, started_at)
                VALUES (p_run, p_workflow, p_started);
            END IF;
            PERFORM pg_notify(p_channel, p_run);
            RETURN held;
        END $$""",
    ),
    2: (
        # The answers a host gave to requests sent with an Idempotency-Key (see
        # EventStore.remember_answer): kept for their retries, across restarts and hosts.
        """CREATE TABLE wopdsl_idempotency (
            scope       text             NOT NULL PRIMARY KEY,
            fingerprint text             NOT NULL,
            status      integer          NOT NULL,
            body        text             NOT NULL,
            created_at  double precision NOT NULL
        )""",
    ),
    # A run's private records beside its log (EventStore.save_private): tool arguments and
    # results that the events carry only as hashes.
    3: (
        """CREATE TABLE wopdsl_private (
            run_id text NOT NULL,
            key    text NOT NULL,
            value  text NOT NULL,
            PRIMARY KEY (run_id, key)
        )""",
    ),
}

SAVE_PRIVATE: Final = (
    "INSERT INTO wopdsl_private (run_id, key, value) SELECT %s, k, v FROM unnest(%s::text[], "
    "%s::text[]) AS x(k, v) ON CONFLICT (run_id, key) DO UPDATE SET value = EXCLUDED.value"
)
READ_PRIVATE: Final = (
    "SELECT key, value FROM wopdsl_private WHERE run_id = %s AND left(key, %s) = %s"
)

APPEND: Final = "SELECT wopdsl_append(%s, %s, %b, %b, %s, %s, %s)"
REMEMBER: Final = ("INSERT INTO wopdsl_idempotency VALUES (%s, %s, %s, %s, %s) "
                   "ON CONFLICT (scope) DO NOTHING")
RECALL: Final = f"SELECT {COLUMNS} FROM wopdsl_idempotency WHERE scope = %s"
FORGET: Final = "DELETE FROM wopdsl_idempotency WHERE created_at < %s"
SELECT_LAST: Final = "SELECT max(sequence) FROM wopdsl_events WHERE run_id = %s"
SELECT_EVENTS: Final = (
    "SELECT sequence, body FROM wopdsl_events WHERE run_id = %s AND sequence > %s "
    "ORDER BY sequence"
)
SELECT_RUNS: Final = """
SELECT r.run_id, r.workflow_id, r.started_at, e.sequence, e.type
FROM wopdsl_runs AS r
CROSS JOIN LATERAL (
    SELECT sequence, type FROM wopdsl_events
    WHERE run_id = r.run_id ORDER BY sequence DESC LIMIT 1
) AS e
ORDER BY r.position
"""


def key(schema: str, name: str) -> int:
    """A signed 64-bit advisory-lock key for ``name`` in ``schema`` (locks are per database)."""
    digest = hashlib.blake2b(f"wopdsl\0{schema}\0{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def channel(schema: str) -> str:
    """The ``LISTEN`` channel of the store in ``schema`` (notifications are per database)."""
    return "wopdsl_" + hashlib.blake2b(schema.encode(), digest_size=8).hexdigest()


def prepare(conn: psycopg.Connection, target: Target, *, create: bool = True) -> str:
    """Create or migrate the store's tables in ``conn``'s current schema; return the schema.

    Concurrent hosts opening a new database at once are serialised by an advisory lock, so
    the tables are made exactly once.

    Raises:
        RunNotFound: ``create`` is false and the schema has no store tables yet.
        StoreError: no schema to create the tables in, a schema newer than this wopdsl, or
            the role may not create or read them.
    """
    import psycopg

    try:
        row = conn.execute("SELECT current_schema()").fetchone()
        schema = row[0] if row else None
        if schema is None:
            raise target.error("use", "the search_path names no existing schema",
                               "create the schema, or fix search_path in the connection string")
        row = conn.execute("SHOW server_encoding").fetchone()
        if row and str(row[0]).upper() not in {"UTF8", "SQL_ASCII"}:
            raise target.error("use", f"the database's encoding is {row[0]}; events are "
                               "Unicode text", "create the database with ENCODING 'UTF8'")
        version = _version(conn)
        if version == SCHEMA_VERSION:
            return str(schema)
        _check_known(version, target)
        if version == 0 and not create:
            raise RunNotFound(
                f"no store at {target.where} (schema {schema}): it has no runs yet",
                hint="start a run with `wop run FILE`, or point --store (or WOP_STORE) at "
                     "the store that holds the run")
        # A session lock taken before the transaction: the transaction then starts after
        # the other host's commit and sees its tables (catalog caches are refreshed when a
        # transaction starts, not when an advisory lock is granted).
        lock = key(schema, "migrate")
        conn.execute("SELECT pg_advisory_lock(%s)", (lock,))
        try:
            with conn.transaction():
                version = _version(conn)  # Another host may have done it meanwhile.
                _check_known(version, target)
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in _MIGRATIONS[step]:
                        conn.execute(statement)  # static DDL
                if version == 0:
                    conn.execute("INSERT INTO wopdsl_schema (version) VALUES (%s)",
                                  (SCHEMA_VERSION,))
                else:
                    conn.execute("UPDATE wopdsl_schema SET version = %s", (SCHEMA_VERSION,))
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (lock,))
        return str(schema)
    except psycopg.Error as exc:
        raise target.error("prepare the wopdsl tables in", exc) from None


def _version(conn: psycopg.Connection) -> int:
    """The schema's recorded version, 0 when the store's tables do not exist yet."""
    row = conn.execute("SELECT to_regclass('wopdsl_schema') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute("SELECT max(version) FROM wopdsl_schema").fetchone()
    return int(found[0]) if found and found[0] is not None else 0


def _check_known(version: int, target: Target) -> None:
    if version > SCHEMA_VERSION:
        raise target.error(
            "use", f"its wopdsl tables have schema version {version}, newer than this wopdsl "
                   f"understands ({SCHEMA_VERSION})",
            "upgrade wopdsl on this host (every host sharing the database needs the same "
            "or a newer release)",
        )
