"""Restarts, a second host on the same store, and deadlines fired by the host on time."""

from __future__ import annotations

import signal
import time
from datetime import datetime
from typing import Any

import pytest

from wopdsl import CouncilState, SqliteStore

SLOW = {"PINGPONG_DELAY": "0.15", "PINGPONG_TURNS": "10"}
LONG = {"PINGPONG_DELAY": "0.2", "PINGPONG_TURNS": "30"}


def _log(store_path: Any, run_id: str) -> list[dict[str, Any]]:
    store = SqliteStore(store_path)
    try:
        return store.read(run_id)
    finally:
        store.close()


def _no_double_drive(events: list[dict[str, Any]]) -> None:
    """No member node is started twice without an end (or a retry) between."""
    open_nodes: set[str] = set()
    for event in events:
        node = event.get("nodeId", "")
        if node.startswith("room:") or not node:
            continue
        if event["type"] == "node.started":
            assert node not in open_nodes, f"{node} started twice at #{event['sequence']}"
            open_nodes.add(node)
        elif event["type"] in ("node.completed", "node.failed", "node.retried",
                               "node.cancelled"):
            open_nodes.discard(node)


def _wait_for(store_path: Any, run_id: str, predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate(_log(store_path, run_id)):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_host_killed_mid_run_resumes_it_when_restarted(serve: Any) -> None:
    first = serve(env=SLOW)
    run_id = first.request("POST", "/v1/runs", {"workflowId": "pingpong"})[1]["runId"]
    _wait_for(first.store, run_id,
              lambda log: sum(e["type"] == "node.completed" for e in log) >= 3)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    killed_at = len(_log(first.store, run_id))
    assert CouncilState.fold(_log(first.store, run_id)).status == "running"
    second = serve(store=first.store, env=SLOW)
    snap = second.wait_status(run_id, "completed", timeout=60)
    assert snap["status"] == "completed"
    events = _log(first.store, run_id)
    assert len(events) > killed_at
    turns = [e["nodeId"] for e in events if e["type"] == "node.completed" and
             not e.get("nodeId", "").startswith("room:")]
    # Every turn exactly once: none lost, none repeated, no post saved twice.
    assert sorted(turns) == ["ping"] * 10 + ["pong"] * 9
    texts = [m["content"]["text"] for m in snap["channels"]["court"]]
    assert len(texts) == len(set(texts)) == 18
    assert "resumed 1 unfinished run" in second.logs()


@pytest.mark.slow
def test_a_second_host_never_drives_a_run_the_first_holds(serve: Any) -> None:
    # Long enough (30 × 0.2 s) that the second host is up while the first still drives it,
    # even when starting a process takes seconds on a loaded machine.
    first = serve(env=LONG)
    run_id = first.request("POST", "/v1/runs", {"workflowId": "pingpong"})[1]["runId"]
    _wait_for(first.store, run_id,
              lambda log: sum(e["type"] == "node.completed" for e in log) >= 2)
    second = serve(store=first.store, env=LONG)
    # The second host answers for the run (reads) but does not execute it.
    assert second.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "running"
    first.wait_status(run_id, "completed", timeout=60)
    events = _log(first.store, run_id)
    _no_double_drive(events)
    assert not any(e["type"] in ("run.resumed", "node.retried") for e in events)
    assert "executing in another process" in second.logs()
    second.stop()
    assert "Traceback" not in second.logs() + first.logs()


def test_the_host_fires_a_waiting_runs_timeout_on_time(serve: Any) -> None:
    served = serve()
    run_id = served.request("POST", "/v1/runs", {"workflowId": "deadline"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    # Nobody touches the run: only its own deadline (timeout_ms = 1500) can end it.
    _wait_for(served.store, run_id, lambda log: log[-1]["type"] == "run.failed", timeout=10)
    events = _log(served.store, run_id)
    assert events[-1]["payload"]["error"]["code"] == "TIMEOUT"
    started = datetime.fromisoformat(events[0]["timestamp"].replace("Z", "+00:00"))
    failed = datetime.fromisoformat(events[-1]["timestamp"].replace("Z", "+00:00"))
    assert 1.4 <= (failed - started).total_seconds() < 2.5
    closed = [e for e in events if e["type"] == "conversation.closed"]
    assert closed and closed[0]["payload"]["outcome"] is None


def test_a_restarted_host_fires_the_timeouts_of_waiting_runs(serve: Any) -> None:
    first = serve()
    run_id = first.request("POST", "/v1/runs", {"workflowId": "deadline"})[1]["runId"]
    first.wait_status(run_id, "waiting-input")
    first.stop()
    second = serve(store=first.store)
    _wait_for(second.store, run_id, lambda log: log[-1]["type"] == "run.failed", timeout=10)
    assert _log(second.store, run_id)[-1]["payload"]["error"]["code"] == "TIMEOUT"
