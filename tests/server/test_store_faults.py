"""Store faults on a real PostgreSQL server: the host's loop never waits on the store, and runs
go on when the store comes back (issue 20, item 5).

``wop serve`` runs the pingpong council (19 turns of 0.2 s) on a database of its own. The
faults are real: the server terminates the host's sessions (``pg_terminate_backend``), or a
TCP proxy between host and server refuses every connection (the server is down) or passes no
byte (a partition: calls hang). Discovery answers throughout; the run finishes afterwards with
``run.resumed {reason: "store-recovery"}``, no turn lost or run twice. A ``wop run`` whose
store stays away longer than ``WOP_STORE_RECONNECT_S`` stops with a clear ``STORE_ERROR``,
and ``wop resume`` finishes the run once the store is back.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.bounded import bounded_wop
from tests.server.conftest import COUNCILS, Served
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow

SLOW = {"PINGPONG_DELAY": "0.2", "PINGPONG_TURNS": "10", "PYTHONPATH": str(COUNCILS)}
TURNS = 19  # ping 10 turns (its 10th ends the rally), pong 9


def _events(pg_url: str, run_id: str) -> list[dict[str, Any]]:
    from wopdsl.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    try:
        return list(store.read(run_id))  # type: ignore[arg-type]
    finally:
        store.close()


def _wait_turns(pg_url: str, run_id: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = [e for e in _events(pg_url, run_id) if e["type"] == "node.completed"
                and e.get("nodeId") in ("ping", "pong")]
        if len(done) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not reach {count} turns")


def _discovery_answers(served: Served) -> bool:
    with urllib.request.urlopen(served.url + "/.well-known/openwop", timeout=30) as resp:
        return resp.status == 200


def _check_finished(pg_url: str, run_id: str) -> list[dict[str, Any]]:
    """The run completed with every turn exactly once, and says it went on after the outage."""
    events = _events(pg_url, run_id)
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "run.completed"
    resumed = [e for e in events if e["type"] == "run.resumed"]
    assert resumed and resumed[0]["payload"]["reason"] == "store-recovery", resumed
    texts = [e["payload"]["turn"]["content"]["text"] for e in events
             if e["type"] == "conversation.exchanged"]
    expected = [f"{who} hits #{n}" for n in range(1, 10) for who in ("ping", "pong")]
    assert texts == expected, texts
    running: set[str] = set()
    for event in events:  # No member turn started twice without an end in between.
        node, kind = event.get("nodeId"), event["type"]
        if node not in ("ping", "pong"):
            continue
        if kind == "node.started":
            assert node not in running, f"{node} started twice at #{event['sequence']}"
            running.add(node)
        elif kind in ("node.completed", "node.failed", "node.retried"):
            running.discard(node)
    completed = [e for e in events if e["type"] == "node.completed"
                 and e.get("nodeId") in ("ping", "pong")]
    assert len(completed) == TURNS
    return events


_HOST_SESSIONS = ("FROM pg_stat_activity WHERE datname = current_database() AND "
                  "application_name LIKE 'wopdsl%%' AND pid <> pg_backend_pid()")


def _terminate_host_sessions(pg_url: str, at_least: int = 3) -> int:
    """Terminate the host's sessions once ``at_least`` are open (claims, pool and listen).

    A session the host opens lazily or is reopening may be missing for a moment: wait for
    all of them first, so that every kind is cut, not whichever happened to be open.
    """
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        deadline = time.monotonic() + 30
        while conn.execute(f"SELECT count(*) {_HOST_SESSIONS}").fetchone()[0] < at_least \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        rows = conn.execute(f"SELECT pg_terminate_backend(pid, 5000) {_HOST_SESSIONS}"
                            ).fetchall()
    return len(rows)


def _start(served: Served) -> str:
    status, body, _ = served.request("POST", "/v1/runs", {"workflowId": "pingpong"})
    assert status == 201, body
    return str(body["runId"])


def _running_through(pg_url: str, proxy: TcpProxy, serve: Callable[..., Served]
                     ) -> tuple[Served, str]:
    """A host on the store through ``proxy``, with a run four turns in."""
    served = serve(COUNCILS / "pingpong.toml", store=proxy.via(pg_url), env=SLOW)
    run_id = _start(served)
    _wait_turns(pg_url, run_id, 4)
    return served, run_id


def test_terminated_sessions_are_reconnected_and_the_run_goes_on(
        pg_url: str, serve: Callable[..., Served]) -> None:
    served = serve(COUNCILS / "pingpong.toml", store=pg_url, env=SLOW)
    run_id = _start(served)
    _wait_turns(pg_url, run_id, 4)
    killed = _terminate_host_sessions(pg_url)  # Claims, pool and listen: every one.
    assert killed >= 3
    assert _discovery_answers(served)
    snap = served.wait_status(run_id, "completed", timeout=90)
    assert snap["status"] == "completed"
    _check_finished(pg_url, run_id)
    assert "Traceback" not in served.logs()


def test_the_host_answers_while_the_store_is_down_and_the_run_finishes_after(
        pg_url: str, proxy: TcpProxy, serve: Callable[..., Served]) -> None:
    served, run_id = _running_through(pg_url, proxy, serve)
    proxy.down()
    try:
        outage_ends = time.monotonic() + 3
        answered = 0
        while time.monotonic() < outage_ends:
            assert _discovery_answers(served)  # Never waits on the store.
            answered += 1
            time.sleep(0.2)
        assert answered >= 5
        # Reading the run says honestly that the store is away (not "running" as if well).
        status, body, _ = served.request("GET", f"/v1/runs/{run_id}")
        assert status == 503 and body["error"] == "STORE_ERROR", body
        assert (urlsplit(pg_url).password or "") not in body["message"]
    finally:
        proxy.up()
    served.wait_status(run_id, "completed", timeout=90)
    _check_finished(pg_url, run_id)
    password = urlsplit(pg_url).password or ""
    assert password not in served.logs()
    assert "Traceback" not in served.logs()


def test_a_hanging_store_call_does_not_hold_the_hosts_loop(
        pg_url: str, proxy: TcpProxy, serve: Callable[..., Served]) -> None:
    served, run_id = _running_through(pg_url, proxy, serve)
    proxy.stall()  # The engine's next append waits for an answer that does not come.
    try:
        before = len(_events(pg_url, run_id))
        time.sleep(0.6)  # Past the turn in flight: the engine now waits on the store.
        for _ in range(3):
            assert _discovery_answers(served)
        assert len(_events(pg_url, run_id)) <= before + 3  # Nothing passed the line.
    finally:
        proxy.flow()
    served.wait_status(run_id, "completed", timeout=90)
    events = _events(pg_url, run_id)
    assert events[-1]["type"] == "run.completed"
    assert len([e for e in events if e["type"] == "node.completed"
                and e.get("nodeId") in ("ping", "pong")]) == TURNS


def test_wop_run_stops_clearly_when_the_store_stays_away_and_resume_finishes(
        pg_url: str, proxy: TcpProxy, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    url = proxy.via(pg_url)
    env = {**os.environ, **SLOW, "WOP_STORE_RECONNECT_S": "2"}
    env.pop("WOP_STORE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "wopdsl", "run", str(COUNCILS / "pingpong.toml"), "--run-id",
         "gone", "--store", url, "--json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        _wait_turns(pg_url, "gone", 4)
        proxy.down()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, (out, err)
    assert "error[STORE_ERROR]: run gone: the store stayed unreachable for" in err, err
    doc = json.loads(out)
    assert doc["runId"] == "gone" and doc["status"] == "error", doc
    assert doc["error"]["code"] == "STORE_ERROR" and "wop resume" in doc["error"]["hint"]
    assert "Traceback" not in err and err.count("\n") < 40, err  # No flood either.
    assert (urlsplit(pg_url).password or "") not in out + err
    # The log says where the run stopped; it is not pretended finished.
    stopped = _events(pg_url, "gone")
    assert stopped[-1]["type"] not in ("run.completed", "run.failed")
    proxy.up()
    done = bounded_wop("resume", "gone", str(COUNCILS / "pingpong.toml"), "--store", url,
                       cwd=tmp_path, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    events = _events(pg_url, "gone")
    assert events[-1]["type"] == "run.completed"
    completed = [e for e in events if e["type"] == "node.completed"
                 and e.get("nodeId") in ("ping", "pong")]
    assert len(completed) == TURNS
