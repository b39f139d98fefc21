"""``POST /v1/runs/{id}:pause`` while a tool call is in flight (issue 32 item 6).

A real ``wop serve`` on loopback runs an llm member (the scripted OpenAI-wire server) whose
non-idempotent Python tool (sync or async) is in flight when ``:pause`` (``immediate``)
arrives: the pause waits for the call to end and be recorded, the run pauses, resumes and
completes, and the effect happened once. ``kill -9`` of the host during such a pause leaves
the call in doubt only when it really is (DESIGN.md §20).
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.openwop_schemas import load_schemas
from tests.server.conftest import REPO, Served, start_server
from tests.tools.conftest import EFFECTS_ENV, KEY_ENV, effects_in
from tests.tools.effects_tools import RELEASE_ENV
from wopdsl import SqliteStore
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow

COUNCIL = f'''\
[council]
id = "ops"
task = "Fix the outage."

[models.m]
model = "test-model"
api_key_env = "{KEY_ENV}"
retry_backoff_ms = 1

[[rooms]]
id = "ops"
members = ["sre"]

[[members]]
id = "sre"
role = "sre"
engine = "llm"
model = "m"
tools = ["tests.tools.effects_tools:slow_restart", "tests.tools.effects_tools:slow_deploy"]
'''
DONE = Answer({"summary": "done", "posts": [
    {"roomId": "ops", "text": "the service is back", "mentions": []}]})
RESULTS = {"slow_restart": "restarted api", "slow_deploy": "deployed api"}


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def host(tmp_path: Path, model: ScriptedModelServer) -> Iterator[Callable[[], Served]]:
    """Start ``wop serve`` on the council (again on the same store, after a kill)."""
    council = tmp_path / "ops.toml"
    council.write_text(COUNCIL, encoding="utf-8")
    env = {"OPENAI_BASE_URL": model.url, KEY_ENV: "sk-test",
           EFFECTS_ENV: str(tmp_path / "effects.jsonl"), RELEASE_ENV: str(tmp_path / "release"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                         if p)}
    started: list[Served] = []

    def go() -> Served:
        served = start_server(tmp_path, council, env=env, store=tmp_path / "runs.db")
        started.append(served)
        return served

    yield go
    for served in started:
        served.stop()


def steps(tmp_path: Path, tool: str) -> list[str]:
    return [e["step"] for e in effects_in(tmp_path / "effects.jsonl") if e["tool"] == tool]


def events(served: Served, run_id: str) -> list[dict[str, Any]]:
    status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events")
    assert status == 200, page
    return list(page["events"])


def kinds(found: list[dict[str, Any]], *types: str) -> list[str]:
    return [e["type"] for e in found if e["type"] in types]


def until(ready: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.01)


def held_call(served: Served, model: ScriptedModelServer, tmp_path: Path, tool: str) -> str:
    """A run whose call to the held ``tool`` is in flight; its id."""
    model.add(ToolCalls((tool, {"name": "api"})), DONE)
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops"})
    assert status == 201, created
    until(lambda: steps(tmp_path, tool) == ["begun"], f"{tool} is called")
    return str(created["runId"])


def pause_in_background(pool: concurrent.futures.Executor, served: Served, run_id: str
                        ) -> concurrent.futures.Future[tuple[int, Any, dict[str, str]]]:
    """Send ``:pause`` (immediate) from a thread; return once the host has taken it up."""
    pausing = pool.submit(served.request, "POST", f"/v1/runs/{run_id}:pause",
                          {"reason": "operator break", "drainPolicy": "immediate"})
    until(lambda: f"run {run_id}: pausing once" in served.logs(), "the host takes the pause")
    return pausing


def wop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def assert_completed_once(served: Served, model: ScriptedModelServer, tmp_path: Path,
                          run_id: str, tool: str) -> None:
    """The run completed; the tool's effect happened once, its result given to the model;
    nothing was repeated or in doubt; the log is valid, and ``wop check`` and ``wop replay``
    agree once the host stopped."""
    served.wait_status(run_id, "completed")
    found = events(served, run_id)
    assert steps(tmp_path, tool) == ["begun", "done"]
    assert kinds(found, "agent.toolCalled", "agent.toolReturned") == [
        "agent.toolCalled", "agent.toolReturned"]
    assert "TOOL_IN_DOUBT" not in str(found) and not kinds(found, "node.failed")
    assert [m["content"] for m in model.requests[-1].body["messages"]
            if m["role"] == "tool"] == [RESULTS[tool]]
    load_schemas().check_events(found)
    assert served.stop() == 0
    assert_checked_and_replayed(served.store, run_id, len(found))


def assert_checked_and_replayed(store: Path, run_id: str, count: int) -> None:
    """``wop check`` (v1, v2) pass on the stored log; ``wop replay`` appends nothing."""
    for flags in ((), ("--v2",)):
        checked = wop("check", *flags, run_id, "--store", str(store))
        assert checked.returncode == 0, checked.stdout + checked.stderr
    replayed = wop("replay", run_id, "--store", str(store))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    kept = SqliteStore(store)
    try:
        assert kept.last_sequence(run_id) + 1 == count
    finally:
        kept.close()


@pytest.mark.parametrize("tool", ["slow_restart", "slow_deploy"])  # sync and async
def test_an_immediate_pause_waits_for_the_call_in_flight_and_the_run_completes(
        host: Callable[[], Served], model: ScriptedModelServer, tmp_path: Path,
        tool: str) -> None:
    served = host()
    run_id = held_call(served, model, tmp_path, tool)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pausing = pause_in_background(pool, served, run_id)
        time.sleep(0.3)
        assert not pausing.done()  # It waits for the call (released only now).
        assert "run.paused" not in kinds(events(served, run_id), "run.paused")
        (tmp_path / "release").touch()
        status, body, _ = pausing.result(timeout=60)
    assert (status, body["status"]) == (202, "paused"), body
    assert kinds(events(served, run_id), "agent.toolCalled", "agent.toolReturned",
                 "run.paused") == ["agent.toolCalled", "agent.toolReturned", "run.paused"]

    status, body, _ = served.request("POST", f"/v1/runs/{run_id}:resume", {})
    assert status == 202, body
    assert_completed_once(served, model, tmp_path, run_id, tool)


def test_kill_9_while_a_pause_waits_leaves_the_call_in_doubt(
        host: Callable[[], Served], model: ScriptedModelServer, tmp_path: Path) -> None:
    served = host()
    run_id = held_call(served, model, tmp_path, "slow_restart")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pausing = pause_in_background(pool, served, run_id)
        served.proc.send_signal(signal.SIGKILL)  # the call has begun, not ended
        served.proc.wait(15)
        with pytest.raises(OSError):
            pausing.result(timeout=60)

    # Restarted, the host takes the run up (it never paused): the call really is in doubt,
    # its tool is not idempotent and has no approver, so the turn fails; nothing repeats.
    (tmp_path / "release").touch()
    again = host()
    again.wait_status(run_id, "failed")
    found = events(again, run_id)
    failed = next(e for e in found if e["type"] == "node.failed")["payload"]
    assert failed["error"]["code"] == "TOOL_IN_DOUBT"
    assert kinds(found, "agent.toolCalled", "agent.toolReturned", "run.paused") == [
        "agent.toolCalled"]
    assert steps(tmp_path, "slow_restart") == ["begun"]  # not made again
    assert len(model.requests) == 1
    load_schemas().check_events(found)


def test_kill_9_after_the_pause_landed_keeps_the_result(
        host: Callable[[], Served], model: ScriptedModelServer, tmp_path: Path) -> None:
    served = host()
    run_id = held_call(served, model, tmp_path, "slow_deploy")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pausing = pause_in_background(pool, served, run_id)
        (tmp_path / "release").touch()
        assert pausing.result(timeout=60)[0] == 202
    served.proc.send_signal(signal.SIGKILL)
    served.proc.wait(15)

    again = host()
    assert again.wait_status(run_id, "paused")["status"] == "paused"  # stays paused
    assert again.request("POST", f"/v1/runs/{run_id}:resume", {})[0] == 202
    assert_completed_once(again, model, tmp_path, run_id, "slow_deploy")


def test_a_host_shutting_down_records_the_call_in_flight_first(
        host: Callable[[], Served], model: ScriptedModelServer, tmp_path: Path) -> None:
    served = host()
    run_id = held_call(served, model, tmp_path, "slow_restart")
    served.proc.send_signal(signal.SIGINT)  # a clean stop (Ctrl-C, SIGTERM): runs detach
    until(lambda: "Waiting for application shutdown." in served.logs(), "the host stops")
    time.sleep(0.3)
    assert served.proc.poll() is None  # It waits for the call (released only now).
    (tmp_path / "release").touch()
    assert served.proc.wait(60) == 0

    again = host()  # takes the run up: its turn's next attempt reads the recorded result
    assert_completed_once(again, model, tmp_path, run_id, "slow_restart")
