"""`wop` on a real PostgreSQL server: every command, clear store errors, several hosts."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.cli.conftest import Wop, _env, json_lines
from wopdsl.protocol.envelope import RunEventDoc


def _password(url: str) -> str:
    password = urlsplit(url).password
    assert password, "the test server's URL carries a password"
    return password


def _read(url: str, run_id: str) -> list[RunEventDoc]:
    from wopdsl.store.postgres import PostgresStore

    store = PostgresStore(url)
    try:
        return store.read(run_id)
    finally:
        store.close()


def _clean(result: subprocess.CompletedProcess[str], url: str) -> subprocess.CompletedProcess[str]:
    """The command's output never holds the password, nor a traceback."""
    secret = _password(url)
    assert secret not in result.stdout and secret not in result.stderr
    assert "Traceback" not in result.stderr
    return result


def test_every_read_command_works_on_postgresql(wop: Wop, release_team: Path,
                                                pg_url: str) -> None:
    ran = _clean(wop("run", str(release_team), "--run-id", "r1", "--store", pg_url), pg_url)
    assert ran.returncode == 0, ran.stderr
    assert "completed: run r1" in ran.stdout
    assert f"store postgresql://wop:***@{urlsplit(pg_url).hostname}" in ran.stdout

    runs = _clean(wop("runs", "--json", "--store", pg_url), pg_url)
    assert [(r["runId"], r["status"]) for r in json.loads(runs.stdout)] == [("r1", "completed")]
    events = _clean(wop("events", "r1", "--store", pg_url), pg_url)
    assert json_lines(events.stdout) == _read(pg_url, "r1")
    assert _password(pg_url) not in json.dumps(_read(pg_url, "r1"))  # Nor in any event.
    replay = _clean(wop("replay", "r1", "--json", "--store", pg_url), pg_url)
    assert replay.returncode == 0 and json.loads(replay.stdout)["status"] == "completed"
    transcript = _clean(wop("transcript", "r1", "--store", pg_url), pg_url)
    assert transcript.returncode == 0 and "room " in transcript.stdout

    forked = _clean(wop("fork", "r1", "--from", "5", "--run-id", "f1", "--mode", "replay",
                        "--store", pg_url), pg_url)
    assert forked.returncode == 0, forked.stderr
    assert _read(pg_url, "f1")[-1]["type"] == "run.completed"
    again = _clean(wop("transcript", "f1", "--store", pg_url), pg_url)
    assert again.stdout == transcript.stdout  # A replay fork re-runs the same council.
    missing = _clean(wop("events", "nope", "--store", pg_url), pg_url)
    assert missing.returncode == 2
    assert "error[RUN_NOT_FOUND]: run nope not found in postgresql://wop:***@" in missing.stderr


def test_wop_store_names_the_database_and_a_human_replies(wop: Wop, human_council: Path,
                                                          pg_url: str) -> None:
    env = {**_env(), "WOP_STORE": pg_url}
    waiting = _clean(wop("run", str(human_council), "--run-id", "h1", env=env), pg_url)
    assert waiting.returncode == 3, waiting.stderr
    assert "reply with: wop reply h1 --room desk" in waiting.stdout  # No --store: WOP_STORE.

    replied = _clean(wop("reply", "h1", "--room", "desk", "Aurora", env=env), pg_url)
    assert replied.returncode == 0, replied.stderr
    assert "[desk] me team/me/2/0: Aurora" in replied.stdout
    assert "completed: run h1" in replied.stdout
    resumed = _clean(wop("resume", "h1", env=env), pg_url)
    assert resumed.returncode == 0  # A finished run stays finished.
    assert _read(pg_url, "h1")[-1]["type"] == "run.completed"


def test_listing_an_empty_database_creates_nothing(wop: Wop, pg_url: str) -> None:
    import psycopg

    listed = _clean(wop("runs", "--store", pg_url), pg_url)
    assert listed.returncode == 0 and listed.stdout.startswith("no runs in postgresql://wop:***@")
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('wopdsl_events')").fetchone() == (None,)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("case", ["down", "password", "database", "malformed", "scheme"])
def test_store_errors_exit_2_with_host_and_reason(wop: Wop, tmp_path: Path, pg_url: str,
                                                  case: str) -> None:
    parts = urlsplit(pg_url)
    secret = "Sup3r-Secret-Pw"
    host = f"{parts.hostname}:{parts.port}"
    url, words = {
        "down": (f"postgresql://wop:{secret}@127.0.0.1:{_closed_port()}/x", ["refused"]),
        "password": (f"postgresql://wop:{secret}@{host}{parts.path}",
                     ["password authentication failed", host]),
        "database": (pg_url.replace(parts.path, "/wopdsl_missing"),
                     ['database "wopdsl_missing" does not exist', host]),
        "malformed": (f"postgresql://wop:{secret}%zz@{host}/x?bogus=1",
                      ["not a valid PostgreSQL connection string"]),
        "scheme": (f"mysql://wop:{secret}@{host}/x", ["no store for mysql:// URLs"]),
    }[case]
    other = {"down": ["tui", "r1"], "password": ["events", "r1"], "database": ["replay", "r1"],
             "malformed": ["resume", "r1"], "scheme": ["fork", "r1", "--from", "1"]}[case]
    for args in (["runs"], other):
        result = wop(*args, "--store", url)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("error[STORE_ERROR]: "), result.stderr
        for word in words:
            assert word in result.stderr
        assert secret not in result.stdout + result.stderr
        assert _password(pg_url) not in result.stdout + result.stderr
        assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # No SQLite file was made.


# -- several hosts on one database ------------------------------------------------------------

HANDLERS = """\
import time
from pathlib import Path

from wopdsl import Post, Reply

GATE = Path(__file__).with_name("gate")

PLAN = {
    ("lead", 1): [("all", "kick-off @a @b", ["a", "b"])],
    ("a", 1): [("all", "a1 @b", ["b"])],
    ("b", 1): [("all", "b1 @c", ["c"])],
    ("c", 1): [("all", "c1 @a", ["a"])],
    ("b", 2): [("all", "b2 @lead", ["lead"])],
    ("a", 2): [("all", "a2 @c", ["c"])],
    ("c", 2): [("all", "c2 @lead", ["lead"])],
    ("lead", 2): [("all", "wrap-up", [])],
}


def member(turn):
    time.sleep(0.05)
    if (turn.member, turn.turn) == ("c", 1):  # The host is killed while it waits here.
        deadline = time.monotonic() + 60
        while not GATE.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    posts = [Post(room=room, text=text, mentions=mentions)
             for room, text, mentions in PLAN.get((turn.member, turn.turn), [])]
    return Reply(summary=f"{turn.member} turn {turn.turn}", posts=posts)
"""

COUNCIL = """\
[council]
id = "hosts"
task = "Pass messages around."
max_turns_per_member = 3

[[rooms]]
id = "all"
members = ["lead", "a", "b", "c"]
""" + "".join(
    f'\n[[members]]\nid = "{m}"\nrole = "{m}"\nhandler = "hosts_handlers:member"\n'
    + ("" if m == "lead" else "initial_turn = false\n")
    for m in ("lead", "a", "b", "c"))


def _host(tmp_path: Path, url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "wopdsl", *args, "--store", url], cwd=tmp_path, env=_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")


@pytest.mark.slow
def test_a_run_whose_host_is_killed_is_finished_by_another_exactly_once(
    wop: Wop, tmp_path: Path, pg_url: str
) -> None:
    (tmp_path / "hosts_handlers.py").write_text(HANDLERS, encoding="utf-8")
    (tmp_path / "hosts.toml").write_text(COUNCIL, encoding="utf-8")
    # Host 1 drives run k1; host 2 drives its own run k2 on the same database meanwhile.
    host1 = _host(tmp_path, pg_url, "run", "hosts.toml", "--run-id", "k1")
    host2 = _host(tmp_path, pg_url, "run", "hosts.toml", "--run-id", "k2")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(e["type"] == "node.started" and e.get("nodeId") == "c"
                   for e in _read(pg_url, "k1")):
                break
            assert host1.poll() is None, host1.communicate()
            time.sleep(0.02)
        else:
            raise AssertionError("host 1 never got going")
        # While host 1 lives, no other host may drive k1.
        busy = _clean(wop("resume", "k1", "--store", pg_url), pg_url)
        assert busy.returncode == 1, busy.stderr
        assert "error[STORE_CONFLICT]: run k1 is executing in another process or host" \
            in busy.stderr
        os.kill(host1.pid, signal.SIGKILL)
        host1.communicate(timeout=30)
        assert host1.returncode == -signal.SIGKILL
        before = _read(pg_url, "k1")
        assert before[-1]["type"] == "node.started" and before[-1].get("nodeId") == "c"
        (tmp_path / "gate").touch()
        # Two hosts race to take the orphaned run over: one finishes it, the other is
        # refused or finds it finished.
        takers = [_host(tmp_path, pg_url, "resume", "k1") for _ in range(2)]
        outcomes = []
        for taker in takers:
            out, err = taker.communicate(timeout=120)
            assert "Traceback" not in err and _password(pg_url) not in out + err
            outcomes.append((taker.returncode, err))
        assert 0 in [code for code, _ in outcomes], outcomes
        for code, err in outcomes:
            assert code == 0 or (code == 1 and "error[STORE_CONFLICT]" in err), err
        _, err2 = host2.communicate(timeout=120)
        assert host2.returncode == 0, err2
    finally:
        for proc in (host1, host2):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    k1, k2 = _read(pg_url, "k1"), _read(pg_url, "k2")
    assert k1[-1]["type"] == "run.completed"
    assert k1[: len(before)] == before  # The takeover appended after what host 1 stored.
    assert [e["sequence"] for e in k1] == list(range(len(k1)))
    # Every message exactly once, and the same messages as the run nobody interrupted.
    texts = [wop("transcript", run, "--store", pg_url).stdout for run in ("k1", "k2")]
    assert texts[0] == texts[1]
    lines = [line.split() for line in texts[0].splitlines() if " team/" in line]
    ids = [parts[1] for parts in lines]
    assert len(ids) >= 6 and len(set(ids)) == len(ids), texts[0]
    assert texts[0].count("kick-off @a @b") == 1 and texts[0].count("wrap-up") == 1
    posted = [e for e in k1 if e["type"] == "node.completed"
              and e["payload"].get("typeId") == "council.member"]
    assert len(posted) == len([e for e in k2 if e["type"] == "node.completed"
                               and e["payload"].get("typeId") == "council.member"])
