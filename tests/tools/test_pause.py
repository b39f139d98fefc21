"""A routine stop never puts a tool call in doubt (issue 32 item 6).

An immediate pause (``Run.pause``), a cancel or a detach stops a turn whose tool call is in
flight: the call finishes (within its ``timeout_ms``) and ``agent.toolReturned`` is recorded
before the turn stops, so the turn's next attempt reads the result and neither repeats nor
doubts the call. Model streams are still cut off at once. The tools count their effects in
a file; the llm member is driven by the scripted OpenAI-wire server.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from tests.openwop_schemas import load_schemas
from tests.tools.conftest import effects_in, tool_council
from tests.tools.effects_tools import RELEASE_ENV
from wopdsl import Run
from wopdsl.store import open_store
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

DONE = Answer({"summary": "done", "posts": [
    {"roomId": "ops", "text": "the service is back", "mentions": []}]})
RESULTS = {"slow_restart": "restarted api", "slow_deploy": "deployed api"}
"""What each held tool returns for ``name = "api"``."""


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file whose creation lets the held tools return (not there yet)."""
    path = tmp_path / "release"
    monkeypatch.setenv(RELEASE_ENV, str(path))
    return path


async def until(ready: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``ready`` until it holds; fail (instead of hanging) when it never does."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.01)


def steps(effects: Path, tool: str) -> list[str]:
    """The steps the held tool ``tool`` recorded (``begun``, ``done``), in order."""
    return [e["step"] for e in effects_in(effects) if e["tool"] == tool]


def kinds(events: list[Any], *types: str) -> list[str]:
    return [e["type"] for e in events if not types or e["type"] in types]


def wop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def assert_valid_and_replays_as_is(db: Path | str, run_id: str, *,
                                   status: str = "completed") -> None:
    """``wop check`` (v1 and v2) pass; ``wop replay`` of the ended run appends nothing."""
    for flags in ((), ("--v2",)):
        checked = wop("check", *flags, run_id, "--store", str(db))
        assert checked.returncode == 0, checked.stdout + checked.stderr
    store = open_store(db)
    try:
        before = store.read(run_id)
        replayed = wop("replay", run_id, "--store", str(db), "--json")
        assert json.loads(replayed.stdout)["status"] == status, replayed.stderr
        assert store.read(run_id) == before
    finally:
        store.close()
    load_schemas().check_events(before)


async def held_call(server: ScriptedModelServer, effects: Path, tmp_path: Path, tool: str,
                    settings: dict[str, Any] | None = None, *, store: Path | str | None = None,
                    **policy: Any) -> tuple[Run, Path | str]:
    """A run whose member's call to the held ``tool`` is in flight (begun, not released)."""
    server.add(ToolCalls((tool, {"name": "api"})), DONE)
    council = tool_council(tools=[f"tests.tools.effects_tools:{tool}"],
                           policy={tool: policy} if policy else None, **(settings or {}))
    db = store or tmp_path / "runs.db"
    run = council.start(store=db)
    await until(lambda: steps(effects, tool) == ["begun"], f"{tool} is called")
    return run, db


async def waits_for_the_call(run: Run, stopping: Coroutine[Any, Any, Any],
                             release: Path) -> None:
    """Start a stop (pause, cancel, detach) of ``run``; it waits for the held call; release."""
    drive = run._task  # the task driving the run here: every stop cancels it first
    assert drive is not None
    task = asyncio.ensure_future(stopping)
    await until(lambda: drive.cancelling() > 0, "the stop reaches the drive")
    await asyncio.sleep(0.2)
    assert not task.done()  # It waits for the call in flight (released only now).
    release.touch()
    await asyncio.wait_for(task, 30)


def assert_made_once(run: Run, effects: Path, *tools: str) -> None:
    """Each held tool's effect happened once; no call was repeated or left in doubt."""
    events = run.events.to_list()
    for tool in tools:
        assert steps(effects, tool) == ["begun", "done"]
    assert len(kinds(events, "agent.toolCalled")) == len(tools)
    assert len(kinds(events, "agent.toolReturned")) == len(tools)
    assert "TOOL_IN_DOUBT" not in str(events)


def given(server: ScriptedModelServer) -> list[str]:
    """The tool results the model was given in its last request."""
    return [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("tool", ["slow_restart", "slow_deploy"])  # sync and async
@pytest.mark.parametrize("settings", [{}, {"timeout_ms": 600_000}], ids=["alone", "deadline"])
async def test_an_immediate_pause_lets_the_call_in_flight_finish_and_records_it(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path,
        tool: str, settings: dict[str, Any]) -> None:
    # With a council deadline the drive waits for its batch in asyncio.wait, else on the
    # lone turn's task: a pause stops either way.
    run, db = await held_call(server, effects, tmp_path, tool, settings)

    await waits_for_the_call(run, run.pause("operator break"), release)

    assert run.status == "paused"
    events = run.events.to_list()
    assert kinds(events, "agent.toolCalled", "agent.toolReturned", "run.paused") == [
        "agent.toolCalled", "agent.toolReturned", "run.paused"]
    returned = next(e for e in events if e["type"] == "agent.toolReturned")["payload"]
    assert returned["status"] == "ok"
    assert steps(effects, tool) == ["begun", "done"]
    assert len(server.requests) == 1

    await run.unpause()
    assert await run.wait() == "completed", run.error
    assert_made_once(run, effects, tool)
    events = run.events.to_list()
    assert "node.failed" not in kinds(events)
    assert [e["payload"] for e in events if e["type"] == "run.resumed"] == [
        {"reason": "unpaused", "retrying": ["sre"]}]
    # The turn's next attempt read the recorded result: the model was given it.
    assert len(server.requests) == 2
    assert given(server) == [RESULTS[tool]]
    assert_valid_and_replays_as_is(db, run.run_id)


async def test_on_postgresql_the_pause_records_the_call_too(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path,
        pg_url: str) -> None:
    # A blocking store: the turn's records are committed on worker threads.
    run, store = await held_call(server, effects, tmp_path, "slow_restart", store=pg_url)
    await waits_for_the_call(run, run.pause(), release)
    assert kinds(run.events.to_list(), "agent.toolReturned", "run.paused") == [
        "agent.toolReturned", "run.paused"]

    await run.unpause()
    assert await run.wait() == "completed", run.error
    assert_made_once(run, effects, "slow_restart")
    assert_valid_and_replays_as_is(store, run.run_id)


async def test_parallel_calls_in_flight_are_all_recorded_before_the_pause(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path) -> None:
    server.add(ToolCalls(("slow_restart", {"name": "api"}), ("slow_deploy", {"name": "db"})),
               DONE)
    council = tool_council(tools=["tests.tools.effects_tools:slow_restart",
                                  "tests.tools.effects_tools:slow_deploy"])
    db = tmp_path / "runs.db"
    run = council.start(store=db)
    await until(lambda: steps(effects, "slow_restart") == steps(effects, "slow_deploy") ==
                ["begun"], "both calls are made")

    drive = run._task
    assert drive is not None
    pausing = asyncio.ensure_future(run.pause())
    await until(lambda: drive.cancelling() > 0, "the pause reaches the drive")
    Path(f"{release}-api").touch()  # one call ends; the pause waits for the other
    await until(lambda: steps(effects, "slow_restart") == ["begun", "done"], "api restarts")
    await asyncio.sleep(0.2)
    assert not pausing.done()
    Path(f"{release}-db").touch()
    await asyncio.wait_for(pausing, 30)

    events = run.events.to_list()
    assert kinds(events, "agent.toolReturned", "run.paused") == [
        "agent.toolReturned", "agent.toolReturned", "run.paused"]
    await run.unpause()
    assert await run.wait() == "completed", run.error
    assert_made_once(run, effects, "slow_restart", "slow_deploy")
    assert given(server) == ["restarted api", "deployed db"]
    assert_valid_and_replays_as_is(db, run.run_id)


async def test_a_slow_call_is_bounded_by_its_timeout_and_recorded_as_timed_out(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path) -> None:
    run, db = await held_call(server, effects, tmp_path, "slow_restart", timeout_ms=400)

    await asyncio.wait_for(run.pause(), 30)  # never released: the tool's timeout ends it

    assert run.status == "paused"
    events = run.events.to_list()
    returned = next(e for e in events if e["type"] == "agent.toolReturned")["payload"]
    assert returned["status"] == "error"
    assert kinds(events, "agent.toolReturned", "run.paused") == [
        "agent.toolReturned", "run.paused"]
    release.touch()  # the worker thread the call was abandoned in ends now
    await until(lambda: steps(effects, "slow_restart") == ["begun", "done"], "it ends")
    await run.unpause()
    assert await run.wait() == "completed", run.error
    # The model reads the timeout, as it would have without the pause; nothing is repeated.
    assert given(server)[0].startswith("error (TIMEOUT): no answer within 0.4 s")
    assert_made_once(run, effects, "slow_restart")
    assert_valid_and_replays_as_is(db, run.run_id)


async def test_a_model_stream_is_still_cut_off_at_once(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path) -> None:
    release.touch()
    server.add(ToolCalls(("slow_restart", {"name": "api"})),
               Answer({"summary": "late"}, delay_s=60), DONE)
    council = tool_council(tools=["tests.tools.effects_tools:slow_restart"],
                           profile={"stream": True})
    db = tmp_path / "runs.db"
    run = council.start(store=db)
    await until(lambda: len(server.requests) == 2, "the model is asked with the result")

    await asyncio.wait_for(run.pause(), 30)  # not the model's 60 s

    assert run.status == "paused"
    await run.unpause()
    assert await run.wait() == "completed", run.error
    assert_made_once(run, effects, "slow_restart")
    assert_valid_and_replays_as_is(db, run.run_id)


async def test_cancel_records_the_call_in_flight_before_the_run_ends(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path) -> None:
    run, db = await held_call(server, effects, tmp_path, "slow_deploy")

    await waits_for_the_call(run, run.cancel("no longer needed"), release)

    assert run.status == "cancelled"
    assert kinds(run.events.to_list(), "agent.toolReturned", "node.cancelled",
                 "run.cancelled") == ["agent.toolReturned", "node.cancelled", "run.cancelled"]
    assert_made_once(run, effects, "slow_deploy")
    assert_valid_and_replays_as_is(db, run.run_id, status="cancelled")


async def test_detach_records_the_call_in_flight_and_resume_uses_it(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path) -> None:
    run, db = await held_call(server, effects, tmp_path, "slow_restart")

    await waits_for_the_call(run, run.detach(), release)
    assert kinds(run.events.to_list(), "agent.toolReturned") == ["agent.toolReturned"]

    council = tool_council(tools=["tests.tools.effects_tools:slow_restart"])
    again = council.open(run.run_id, db)
    assert await again.resume() == "completed", again.error
    assert_made_once(again, effects, "slow_restart")
    assert given(server) == ["restarted api"]
    assert_valid_and_replays_as_is(db, run.run_id)


async def test_a_turn_timeout_records_the_call_in_flight_and_the_retry_uses_it(
        server: ScriptedModelServer, effects: Path, release: Path, tmp_path: Path) -> None:
    server.add(ToolCalls(("slow_deploy", {"name": "api"})), DONE)
    council = tool_council(tools=["tests.tools.effects_tools:slow_deploy"],
                           member={"turn_timeout_ms": 2000, "retries": 1,
                                   "retry_backoff_ms": 1})
    db = tmp_path / "runs.db"
    run = council.start(store=db)
    await until(lambda: steps(effects, "slow_deploy") == ["begun"], "the call is made")
    # Past turn_timeout_ms (counted from the turn's start, before the call): the turn waits
    # for its call to end before it fails.
    await asyncio.sleep(2.2)
    assert not {"node.failed", "node.retried"} & set(kinds(run.events.to_list()))
    release.touch()

    assert await asyncio.wait_for(run.wait(), 30) == "completed", run.error
    events = run.events.to_list()
    assert kinds(events, "agent.toolCalled", "agent.toolReturned", "node.retried") == [
        "agent.toolCalled", "agent.toolReturned", "node.retried"]
    retried = next(e for e in events if e["type"] == "node.retried")["payload"]
    assert retried["lastError"]["code"] == "TIMEOUT"
    assert_made_once(run, effects, "slow_deploy")
    assert given(server) == ["deployed api"]
    assert_valid_and_replays_as_is(db, run.run_id)
