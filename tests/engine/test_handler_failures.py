"""Hostile handlers: every failure fails the turn (never the process), with its traceback;
retries; sync handlers abandonable; async handlers that block the loop are caught."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import MakeCouncil
from tests.engine.helpers import of_type
from tests.openwop_schemas import load_schemas
from wopdsl import Reply, Turn


class Weird(BaseException):
    """A BaseException subclass a handler might raise."""


def _raiser(exc: BaseException):
    def handler(turn: Turn) -> Reply:
        raise exc

    return handler


@pytest.mark.parametrize("exc", [SystemExit(3), SystemExit(0), KeyboardInterrupt(),
                                 Weird("odd"), ValueError("plain")],
                         ids=["exit3", "exit0", "ctrl-c", "base", "exception"])
@pytest.mark.parametrize("timeout", [None, 5000], ids=["inline", "worker"])
async def test_any_handler_exception_fails_the_turn_with_its_traceback(
        make_council: MakeCouncil, db_path: Path, exc: BaseException, timeout: int | None,
) -> None:
    settings = {"turn_timeout_ms": timeout} if timeout else {}
    council = make_council({"bad": _raiser(exc)}, **settings)
    run = await council.arun(store=db_path, deterministic=True)
    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    (failed,) = of_type(run.events, "node.failed")
    error = failed["payload"]["error"]
    assert error["code"] == "TEAM_NODE_FAILED"
    exception = error["details"]["exception"]
    assert exception["type"].endswith(type(exc).__name__)
    assert "in handler\n    raise exc" in exception["traceback"]
    assert run.state.members["bad"].error == error
    load_schemas().check_events(run.events)


async def test_async_handler_raising_base_exceptions_fails_the_turn(
        make_council: MakeCouncil, db_path: Path) -> None:
    async def leaves(turn: Turn) -> Reply:
        raise SystemExit(2)

    run = await make_council({"leaves": leaves}).arun(store=db_path, deterministic=True)
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["error"]["details"]["exception"]["type"] == "SystemExit"
    assert "fails its turn, not the process" in failed["payload"]["error"]["message"]


async def test_retries_append_node_retried_before_each_new_start(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls: list[int] = []

    def flaky(turn: Turn) -> Reply:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError(f"try {len(calls)}")
        return Reply(summary="third time")

    council = make_council({"flaky": flaky}, retries=2, retry_backoff_ms=20)
    started = time.monotonic()
    run = await council.arun(store=db_path, deterministic=True)
    assert run.status == "completed"
    assert time.monotonic() - started >= 0.06  # 20 ms, then 40 ms
    turn_events = [(e["type"], e["payload"].get("attempt")) for e in run.events
                   if e.get("nodeId") == "flaky"]
    assert turn_events == [("node.started", 0), ("node.retried", 1), ("node.started", 1),
                           ("node.retried", 2), ("node.started", 2), ("node.completed", None)]
    retried = of_type(run.events, "node.retried")
    assert [e["payload"]["delayMs"] for e in retried] == [20, 40]
    assert retried[0]["payload"]["lastError"]["message"] == "flaky raised ConnectionError: try 1"
    assert retried[0]["payload"]["lastError"]["details"]["exception"]["type"] == \
        "ConnectionError"
    load_schemas().check_events(run.events)
    assert run.result["agents"][0]["result"] == {"summary": "third time"}


async def test_a_member_overrides_the_council_retries(make_council: MakeCouncil,
                                                     db_path: Path) -> None:
    council = make_council({"bad": _raiser(ValueError("no"))}, retries=3,
                           options={"bad": {"retries": 0}})
    run = await council.arun(store=db_path, deterministic=True)
    assert run.status == "failed"
    assert of_type(run.events, "node.retried") == []
    council = make_council({"bad": _raiser(ValueError("no"))},
                           options={"bad": {"retries": 1, "retry_backoff_ms": 0}})
    run = await council.arun(store=db_path, deterministic=True)
    assert run.status == "failed"
    assert len(of_type(run.events, "node.retried")) == 1
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["attempts"] == 2


async def test_script_exhaustion_is_never_retried(make_council: MakeCouncil,
                                                  db_path: Path) -> None:
    council = make_council({"s": [{"summary": "once", "posts": [
        {"room": "all", "text": "again", "mentions": ["s"]}]}]}, retries=3)
    run = await council.arun(store=db_path, deterministic=True)
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["error"]["code"] == "SCRIPT_EXHAUSTED"
    assert of_type(run.events, "node.retried") == []


async def test_an_async_handler_blocking_the_loop_times_out(make_council: MakeCouncil,
                                                           db_path: Path) -> None:
    async def sleeper(turn: Turn) -> Reply:
        time.sleep(0.5)  # blocks the event loop: asyncio's timeout cannot fire meanwhile
        return Reply(summary="late")

    run = await make_council({"sleeper": sleeper}, turn_timeout_ms=100).arun(
        store=db_path, deterministic=True)
    (failed,) = of_type(run.events, "node.failed")
    error = failed["payload"]["error"]
    assert error["code"] == "TIMEOUT"
    assert "holding the event loop" in error["message"]
    assert error["details"]["blockedEventLoop"] is True
    assert run.state.members["sleeper"].result is None


async def test_fast_sync_handlers_run_in_place_and_slow_ones_move_off_the_loop(
        make_council: MakeCouncil, db_path: Path) -> None:
    import threading

    threads: list[str] = []

    def fast(turn: Turn) -> Reply:
        threads.append(threading.current_thread().name)
        if turn.turn == 2:
            time.sleep(0.06)  # far past the inline threshold: later turns go to a worker
        return Reply(summary="ok", posts=[] if turn.turn == 4 else [
            {"room": "all", "text": "again @fast", "mentions": ["fast"]}])

    run = await make_council({"fast": fast}, max_turns_per_member=4).arun(
        store=db_path, deterministic=True)
    assert run.status == "completed"
    main = threading.current_thread().name
    assert threads[:2] == [main, main]
    assert threads[2:] == ["wopdsl-handler", "wopdsl-handler"]
