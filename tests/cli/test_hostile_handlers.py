"""`wop run` with hostile handlers: it always exits, with the run's own exit code."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.bounded import bounded_wop
from tests.cli.conftest import stored_events

COUNCIL = """\
[council]
id = "hostile"
task = "Misbehave."
{settings}

[[members]]
id = "bad"
role = "bad"
handler = "agents:{handler}"
"""

AGENTS = """\
import asyncio
import time


class Weird(BaseException):
    pass


def sleeps(turn):
    time.sleep(3600)


def exits(turn):
    raise SystemExit(3)


def exits_zero(turn):
    raise SystemExit(0)


def interrupts(turn):
    raise KeyboardInterrupt


def weird(turn):
    raise Weird("odd")


async def blocks(turn):
    time.sleep(1)
    return "late"


async def blocks_long(turn):
    time.sleep(2.5)
    return "late"


def boom(turn):
    raise ValueError("boom in the handler")


def generator_exit(turn):
    raise GeneratorExit("closed by the handler")


async def async_generator_exit(turn):
    await asyncio.sleep(0)
    raise GeneratorExit("closed by the async handler")


async def stops_the_loop(turn):
    asyncio.get_running_loop().stop()
    await asyncio.sleep(0.05)
    return "after the stop"


def stops_the_loop_in_place(turn):
    asyncio.get_running_loop().stop()
    return "after the stop"


async def stops_the_loop_later(turn):
    loop = asyncio.get_running_loop()
    loop.call_soon(loop.stop)
    return "stop scheduled"


async def stops_the_loop_around_the_guard(turn):
    loop = asyncio.get_running_loop()
    type(loop).stop(loop)
    await asyncio.sleep(0.05)
    return "stopped behind its back"
"""


def _council(tmp_path: Path, handler: str, settings: str = "") -> None:
    (tmp_path / "c.toml").write_text(COUNCIL.format(handler=handler, settings=settings),
                                     encoding="utf-8")
    (tmp_path / "agents.py").write_text(AGENTS, encoding="utf-8")


@pytest.mark.parametrize("store", ["file", "memory:"])
def test_wop_run_exits_promptly_after_a_sync_handler_times_out(tmp_path: Path,
                                                               store: str) -> None:
    _council(tmp_path, "sleeps", "turn_timeout_ms = 300")
    started = time.monotonic()
    args = ["run", "c.toml", "--json"] + (["--store", store] if store != "file" else [])
    done = bounded_wop(*args, cwd=tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - started < 20  # the handler still sleeps, abandoned
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["error"]["code"] == "TEAM_NODE_FAILED"


@pytest.mark.parametrize(("handler", "kind"), [
    ("exits", "SystemExit"), ("exits_zero", "SystemExit"), ("interrupts", "KeyboardInterrupt"),
    ("weird", "agents.Weird"), ("generator_exit", "GeneratorExit"),
    ("async_generator_exit", "GeneratorExit"), ("stops_the_loop", "LoopStopRefused"),
    ("stops_the_loop_in_place", "LoopStopRefused"),
])
def test_a_handlers_base_exception_fails_the_run_with_exit_1(tmp_path: Path, handler: str,
                                                            kind: str) -> None:
    _council(tmp_path, handler)
    done = bounded_wop("run", "c.toml", "--run-id", "h", cwd=tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "error[TEAM_NODE_FAILED]" in done.stderr
    assert "interrupted" not in done.stderr and "Traceback" not in done.stderr
    events = stored_events(tmp_path / ".wop" / "runs.db", "h")
    (failed,) = [e for e in events if e["type"] == "node.failed"]
    assert failed["payload"]["error"]["details"]["exception"]["type"].endswith(kind)
    assert events[-1]["type"] == "run.failed"
    # Resuming a failed run never runs the handler again.
    again = bounded_wop("resume", "h", "c.toml", cwd=tmp_path)
    assert again.returncode == 1
    assert len(stored_events(tmp_path / ".wop" / "runs.db", "h")) == len(events)


def test_debug_shows_the_failed_handlers_traceback(tmp_path: Path) -> None:
    _council(tmp_path, "boom")
    plain = bounded_wop("run", "c.toml", "--run-id", "p", cwd=tmp_path)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    done = bounded_wop("run", "c.toml", "--run-id", "d", "--debug", cwd=tmp_path)
    assert done.returncode == 1
    assert "bad failed: TEAM_NODE_FAILED: bad raised ValueError: boom in the handler" in \
        done.stderr
    assert "Traceback (most recent call last):" in done.stderr
    assert 'raise ValueError("boom in the handler")' in done.stderr
    replayed = bounded_wop("replay", "d", "--debug", cwd=tmp_path)
    assert 'raise ValueError("boom in the handler")' in replayed.stderr


def test_an_async_handler_blocking_the_loop_is_reported(tmp_path: Path) -> None:
    _council(tmp_path, "blocks", "turn_timeout_ms = 200")
    done = bounded_wop("run", "c.toml", "--run-id", "b", cwd=tmp_path)
    assert done.returncode == 1
    assert "TIMEOUT" in done.stderr
    events = stored_events(tmp_path / ".wop" / "runs.db", "b")
    (failed,) = [e for e in events if e["type"] == "node.failed"]
    assert "holding the event loop" in failed["payload"]["error"]["message"]


def test_a_watchdog_reports_an_async_handler_while_it_blocks_the_loop(tmp_path: Path) -> None:
    _council(tmp_path, "blocks_long", "turn_timeout_ms = 200")
    done = bounded_wop("run", "c.toml", "--run-id", "w", cwd=tmp_path)
    assert done.returncode == 1
    assert "member bad has held the event loop for more than 1.2 s, past its " \
           "turn_timeout_ms of 0.2 s" in done.stderr
    # A handler that yields in time is never reported.
    _council(tmp_path, "boom", "turn_timeout_ms = 200")
    quiet = bounded_wop("run", "c.toml", "--run-id", "q", cwd=tmp_path)
    assert "event loop" not in quiet.stderr


@pytest.mark.parametrize("handler", ["stops_the_loop_later", "stops_the_loop_around_the_guard"])
def test_a_loop_stop_the_guard_cannot_pin_on_a_turn_does_not_strand_the_run(
        tmp_path: Path, handler: str) -> None:
    _council(tmp_path, handler)
    done = bounded_wop("run", "c.toml", "--run-id", "s", "--json", cwd=tmp_path)
    assert "INTERNAL" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "completed", out
    assert done.returncode == 0
    events = stored_events(tmp_path / ".wop" / "runs.db", "s")
    assert events[-1]["type"] == "run.completed"
