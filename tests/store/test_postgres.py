"""PostgresStore beyond the contract, on a real server: targets, errors, schema, claims, wakes."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from tests.postgres import SecretUrl, server_url, url_for
from wopdsl import RunBusy, StoreConflict, StoreError
from wopdsl.store import MemoryStore, SqliteStore, describe_target, open_store
from wopdsl.store.base import Answer
from wopdsl.store.postgres import PostgresStore
from wopdsl.testing.store_conformance import make_event, make_events

SECRET = "s3cret-PäSS%word"
"""A password that must never show up anywhere (quoted in URLs as needed)."""


def _url_with_password(url: str, password: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(url)
    host, port, db = params.get("host"), params.get("port"), params.get("dbname")
    return f"postgresql://{params.get('user')}:{quote(password, safe='')}@{host}:{port}/{db}"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _sessions(url: str, application: str) -> list[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s AND pid <> pg_backend_pid()", (application,)).fetchall()
    return [int(row[0]) for row in rows]


def _lock_holders(url: str) -> list[int]:
    """The sessions holding an advisory lock (a run's claim) in the database."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT l.pid FROM pg_locks AS l JOIN pg_database AS d ON d.oid = "
            "l.database WHERE l.locktype = 'advisory' AND l.granted "
            "AND d.datname = current_database()").fetchall()
    return [int(row[0]) for row in rows]


def _terminate(url: str, application: str | None = None, pids: list[int] | None = None) -> int:
    pids = _sessions(url, application or "") if pids is None else pids
    with psycopg.connect(url, autocommit=True) as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
    return len(pids)


# -- choosing the store ---------------------------------------------------------------------


def test_open_store_serves_postgresql_urls(pg_url: str) -> None:
    for url in (pg_url, pg_url.replace("postgresql://", "postgres://", 1)):
        store = open_store(url)
        try:
            assert isinstance(store, PostgresStore)
            store.append("r1", make_events("r1", 0, 1), 0) if not store.exists("r1") else None
            assert store.last_sequence("r1") == 0
            assert "@" in repr(store) and ":" not in repr(store).split("@")[0][-4:]
        finally:
            store.close()


def test_the_store_is_picked_from_wop_store(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WOP_STORE", pg_url)
    store = open_store()
    try:
        assert isinstance(store, PostgresStore)
    finally:
        store.close()


@pytest.mark.parametrize("target", [
    f"mysql://root:{SECRET}@127.0.0.1/db",
    f"redis://:{SECRET}@127.0.0.1:6379/0",
    "https://example.invalid/runs.db",
    "sqlite://relative.db",
], ids=["mysql", "redis", "https", "sqlite-two-slashes"])
def test_other_url_schemes_are_refused(target: str, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError) as caught:
        open_store(target)
    message = caught.value.render()
    assert caught.value.code == "STORE_ERROR"
    assert SECRET not in message and quote(SECRET, safe="") not in message
    assert "sqlite:///" in message
    assert list(tmp_path.iterdir()) == []  # No SQLite file under a folder named after it.


def test_files_and_memory_still_open(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(open_store("memory:"), MemoryStore)
    for target in (str(tmp_path / "a.db"), f"sqlite:///{tmp_path / 'b.db'}"):
        store = open_store(target)
        assert isinstance(store, SqliteStore)
        store.close()


def test_describe_target_hides_passwords() -> None:
    assert describe_target(f"postgresql://wop:{quote(SECRET)}@db:5432/runs") == \
        "postgresql://wop:***@db:5432/runs"
    assert describe_target(f"postgresql://db/runs?user=wop&password={quote(SECRET)}") == \
        "postgresql://db/runs?user=wop&password=***"
    assert describe_target(".wop/runs.db") == ".wop/runs.db"


# -- clear errors, never the password -------------------------------------------------------


def _refused(url: str, *words: str) -> str:
    with pytest.raises(StoreError) as caught:
        PostgresStore(url)
    error = caught.value
    text = error.render()
    assert error.code == "STORE_ERROR"
    for secret in (SECRET, quote(SECRET, safe="")):
        assert secret not in text
    for word in words:
        assert word in text, f"{word!r} missing from: {text}"
    return text


def test_a_server_that_is_down(caplog: pytest.LogCaptureFixture) -> None:
    port = _closed_port()
    caplog.set_level(logging.DEBUG)
    text = _refused(f"postgresql://wop:{quote(SECRET, safe='')}@127.0.0.1:{port}/runs",
                    f"127.0.0.1:{port}", "refused", "hint:", "is the server running")
    assert text.startswith(f"error[STORE_ERROR]: cannot connect to postgresql://wop@127.0.0.1:"
                           f"{port}/runs: ")
    assert SECRET not in caplog.text


FAILING_TEST = '''
import pytest
from tests.postgres import SecretUrl

@pytest.fixture
def pg_url():
    return SecretUrl(URL)

def test_that_fails(pg_url):
    raise RuntimeError("the server went away")
'''


def test_a_failing_test_never_prints_the_database_password(tmp_path: Path) -> None:
    # pytest prints a failing test's arguments: the URLs the fixtures hand out hide it.
    url = f"postgresql://wop:{quote(SECRET, safe='')}@127.0.0.1:5432/runs"
    (tmp_path / "test_leak.py").write_text(f"URL = {url!r}\n{FAILING_TEST}")
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "-o", "addopts=", str(tmp_path / "test_leak.py")], cwd=repo, capture_output=True,
        text=True, timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(repo)})
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "the server went away" in output, output
    assert "pg_url = 'postgresql://wop:***@127.0.0.1:5432/runs'" in output
    assert SECRET not in output and quote(SECRET, safe="") not in output
    assert SecretUrl(url) == url and isinstance(SecretUrl(url), str)


def test_wrong_credentials() -> None:
    url = _url_with_password(server_url(), SECRET)
    _refused(url, "password authentication failed", "127.0.0.1", "check the user and password")


def test_a_missing_database() -> None:
    url = url_for("wopdsl_no_such_database", server_url())
    _refused(url, 'database "wopdsl_no_such_database" does not exist', "createdb")


@pytest.mark.parametrize("password", [SECRET, "p%zz" + SECRET], ids=["query", "bad-escape"])
def test_bad_connection_strings(password: str) -> None:
    _refused(f"postgresql://wop:{password}@127.0.0.1:1/db?nonsense=1",
             "not a valid PostgreSQL connection string", "postgresql://USER:PASSWORD@HOST")


# -- schema ---------------------------------------------------------------------------------


def test_the_store_creates_its_tables_once_and_records_the_version(pg_url: str) -> None:
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            stores.append(PostgresStore(pg_url))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == [] and len(stores) == 4
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT version FROM wopdsl_schema").fetchall() == [(3,)]
            tables = {r[0] for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert tables == {"wopdsl_schema", "wopdsl_runs", "wopdsl_events",
                          "wopdsl_idempotency", "wopdsl_private"}
    finally:
        for store in stores:
            store.close()


def test_a_version_2_database_is_migrated_to_keep_private_records(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # what schema 2 left behind
        conn.execute("DROP TABLE wopdsl_private")
        conn.execute("UPDATE wopdsl_schema SET version = 2")
    store = PostgresStore(pg_url)
    try:
        store.save_private("r1", {"k": "v"})
        assert store.read_private("r1") == {"k": "v"}
    finally:
        store.close()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM wopdsl_schema").fetchall() == [(3,)]


def test_a_newer_schema_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE wopdsl_schema SET version = 99")
    text = _refused(pg_url, "schema version 99", "newer than this wopdsl understands (3)",
                    "upgrade wopdsl")
    assert "127.0.0.1" in text


def test_a_version_1_schema_is_migrated_with_its_runs_kept(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.append("r1", make_events("r1", 0, 2), 0)
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # As release 1 left it.
        conn.execute("DROP TABLE wopdsl_idempotency")
        conn.execute("DROP TABLE wopdsl_private")
        conn.execute("UPDATE wopdsl_schema SET version = 1")
    store = PostgresStore(pg_url)
    try:
        assert [e["sequence"] for e in store.read("r1")] == [0, 1]
        kept = store.remember_answer(Answer("s", "f", 201, {"runId": "r1"}, 1.0))
        assert store.recall_answer("s") == kept
        store.save_private("r1", {"k": "v"})
        assert store.read_private("r1") == {"k": "v"}
    finally:
        store.close()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM wopdsl_schema").fetchall() == [(3,)]


def test_stores_in_separate_schemas_do_not_mix(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA team_a")
        conn.execute("CREATE SCHEMA team_b")
    a = PostgresStore(pg_url + "?options=-csearch_path%3Dteam_a")
    b = PostgresStore(pg_url + "?options=-csearch_path%3Dteam_b")
    try:
        assert (a.schema, b.schema) == ("team_a", "team_b")
        a.append("r1", make_events("r1", 0, 2), 0)
        b.append("r1", make_events("r1", 0, 1), 0)
        assert (a.last_sequence("r1"), b.last_sequence("r1")) == (1, 0)
        with a.claim("r1"), b.claim("r1"):  # Claims are per store, not per database.
            pass
    finally:
        a.close()
        b.close()


# -- claims ---------------------------------------------------------------------------------


def test_a_claim_is_held_by_the_driving_connection(pg_url: str) -> None:
    store, other = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        store.append("r1", make_events("r1", 0, 1), 0)
        assert store.driven("r1") is False
        with store.claim("r1"):
            assert other.driven("r1") is True  # Held by another store's session.
            assert other.driven("r2") is False
            with pytest.raises(RunBusy) as caught, other.claim("r1"):
                pass  # pragma: no cover - refused
            assert "another process or host sharing postgresql://" in str(caught.value)
            store.append("r1", make_events("r1", 1, 1), 1)  # Through the claim's session.
            # The claim's session dies (a host lost, an operator's pg_terminate_backend):
            holders = _lock_holders(pg_url)
            assert len(holders) == 1 and holders[0] in _sessions(pg_url, "wopdsl claims")
            assert _terminate(pg_url, pids=holders) == 1
            with other.claim("r1"):  # ... the server released the run at once.
                with pytest.raises(StoreError) as lost:
                    store.append("r1", make_events("r1", 2, 1), 2)
                assert "lost the connection" in str(lost.value)
                other.append("r1", make_events("r1", 2, 1, type="node.completed"), 2)
        # The old driver may not append to that run again, but the store still works.
        assert [e["type"] for e in store.read("r1")][-1] == "node.completed"
        store.append("r2", make_events("r2", 0, 1), 0)
        with store.claim("r2"):
            store.append("r2", make_events("r2", 1, 1), 1)
    finally:
        store.close()
        other.close()


def test_a_claimed_run_keeps_an_answer_with_its_append_on_the_driving_connection(
        pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        store.append("r1", make_events("r1", 0, 2), 0)
        with store.claim("r1"):
            turn = Answer("turn", "print", 200, {"messageId": "m1"}, 1.0)
            store.append_answered("r1", make_events("r1", 2, 1), 2, turn)
            with pytest.raises(StoreConflict):  # Stale: the transaction keeps nothing.
                store.append_answered("r1", make_events("r1", 2, 1), 2,
                                      Answer("stale", "print", 200, {}, 1.0))
            store.append("r1", make_events("r1", 3, 1), 3)  # The session goes on.
        assert store.recall_answer("turn") == turn and store.recall_answer("stale") is None
        assert store.last_sequence("r1") == 3
    finally:
        store.close()


def test_closing_a_store_releases_its_claims(pg_url: str) -> None:
    store, other = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        with store.claim("r1"):
            store.close()
            with other.claim("r1"):
                pass
    finally:
        other.close()


# -- connections that die -------------------------------------------------------------------


def test_pooled_connections_killed_by_the_server_are_replaced(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        store.append("r1", make_events("r1", 0, 1), 0)
        assert _terminate(pg_url, "wopdsl") >= 1
        assert store.last_sequence("r1") == 0  # A dead pooled connection: one retry.
        _terminate(pg_url, "wopdsl")
        store.append("r1", make_events("r1", 1, 2), 1)
        assert [e["sequence"] for e in store.read("r1")] == [0, 1, 2]
        with pytest.raises(StoreConflict):
            store.append("r1", make_events("r1", 1, 1), 1)
    finally:
        store.close()


async def test_a_subscriber_whose_listener_dies_catches_up_without_gap_or_duplicate(
    pg_url: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    store, writer = PostgresStore(pg_url), PostgresStore(pg_url)
    received: list[int] = []
    try:
        writer.append("r1", make_events("r1", 0, 2), 0)
        stream = store.subscribe("r1")
        for _ in range(2):
            received.append((await asyncio.wait_for(anext(stream), 10))["sequence"])
        pending = asyncio.ensure_future(anext(stream))  # Caught up: it waits live now.
        for _ in range(100):
            listeners = _sessions(pg_url, "wopdsl listen")
            if listeners:
                break
            await asyncio.sleep(0.05)
        assert len(listeners) == 1 and not pending.done()
        # The listener's session dies, and events land while nobody listens.
        assert _terminate(pg_url, "wopdsl listen") == 1
        await asyncio.to_thread(writer.append, "r1", make_events("r1", 2, 3), 2)
        received.append((await asyncio.wait_for(pending, 10))["sequence"])
        for _ in range(2):
            received.append((await asyncio.wait_for(anext(stream), 10))["sequence"])
        # Listening again on a new session: later appends arrive live.
        for _ in range(100):
            if _sessions(pg_url, "wopdsl listen") not in ([], listeners):
                break
            await asyncio.sleep(0.05)
        assert _sessions(pg_url, "wopdsl listen") not in ([], listeners)
        waiter = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.1)
        assert not waiter.done()
        await asyncio.to_thread(writer.append, "r1", [make_event("r1", 5)], 5)
        received.append((await asyncio.wait_for(waiter, 10))["sequence"])
        await stream.aclose()  # type: ignore[attr-defined]
    finally:
        store.close()
        writer.close()
    assert received == [0, 1, 2, 3, 4, 5]
    assert "lost the LISTEN connection to postgresql://" in caplog.text  # Logged, and ...
    from urllib.parse import urlsplit

    assert str(urlsplit(pg_url).password) not in caplog.text  # ... never with the password.


def test_a_run_given_a_url_leaves_no_open_connection_behind(pg_url: str,
                                                             tmp_path: Path) -> None:
    """``council.arun(store="postgresql://…")`` opens a store nobody closes: it closes itself."""
    (tmp_path / "c.toml").write_text(
        '[council]\nid = "c"\ntask = "t"\n[[rooms]]\nid = "r"\nmembers = ["a"]\n'
        '[[members]]\nid = "a"\nrole = "a"\nengine = "script"\n'
        'script = [{ summary = "done" }]\n', encoding="utf-8")
    script = tmp_path / "council.py"
    script.write_text(
        "import asyncio, gc, sys, wopdsl\n"
        "run = asyncio.run(wopdsl.load(sys.argv[2]).arun(store=sys.argv[1]))\n"
        "print(run.status)\n"
        "del run\n"
        "gc.collect()\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-W", "always", str(script), pg_url,
                           str(tmp_path / "c.toml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "completed"
    assert "ResourceWarning" not in done.stderr and "still open" not in done.stderr, done.stderr
