"""Async python handlers run in the engine's task but keep a context of their own."""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path

import pytest

from tests.conftest import MakeCouncil
from tests.engine.helpers import of_type, reply, say
from wopdsl import Reply, Turn
from wopdsl.agents.python import in_context

CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("CURRENT", default="unset")


@pytest.mark.parametrize("concurrency", [1, 2], ids=["lone-turns", "batches"])
async def test_context_variables_a_handler_sets_stay_in_its_turn(
    make_council: MakeCouncil, db_path: Path, concurrency: int
) -> None:
    seen: list[tuple[str, str, str]] = []

    async def handler(turn: Turn) -> Reply:
        before = CURRENT.get()
        CURRENT.set(f"{turn.member}:{turn.turn}")
        await asyncio.sleep(0)  # suspends: the value must survive the turn's own steps
        seen.append((turn.member, before, CURRENT.get()))
        if turn.member == "one" and turn.turn == 1:
            return reply("asks", say("all", "your turn", "two"))
        return reply("done")

    CURRENT.set("caller")
    council = make_council({"one": handler, "two": handler}, waiting=["two"],
                           global_concurrency=concurrency)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed", run.error
    # Each turn starts from the caller's value and never sees another turn's.
    assert seen == [("one", "caller", "one:1"), ("two", "caller", "two:1")]
    assert CURRENT.get() == "caller"


async def test_a_lone_turn_may_use_timeouts_and_task_groups(make_council: MakeCouncil,
                                                            db_path: Path) -> None:
    async def handler(turn: Turn) -> Reply:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        async with asyncio.TaskGroup() as group:
            parts = [group.create_task(asyncio.sleep(0, result=n)) for n in range(3)]
        return reply(f"sum {sum(p.result() for p in parts)}")

    council = make_council({"solo": handler})

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed", run.error
    assert run.state.members["solo"].result == {"summary": "sum 3"}
    assert len(of_type(run.events, "node.completed")) == 2  # the turn and the room


async def test_in_context_passes_results_exceptions_and_cancellation_through() -> None:
    context = contextvars.copy_context()

    async def body(value: str) -> str:
        CURRENT.set(value)
        await asyncio.sleep(0)
        return CURRENT.get()

    assert await in_context(body("inner"), context) == "inner"
    assert context[CURRENT] == "inner"
    assert CURRENT.get() != "inner"

    async def fails() -> None:
        await asyncio.sleep(0)
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await in_context(fails(), contextvars.copy_context())

    cancelled: list[bool] = []

    async def waits() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    task = asyncio.ensure_future(in_context(waits(), contextvars.copy_context()))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True]


async def test_turns_that_never_suspend_still_let_other_tasks_run(
    make_council: MakeCouncil, db_path: Path
) -> None:
    turns = 3000

    def step(mention: str) -> dict[str, object]:
        return {"summary": "on", "posts": [{"room": "all", "text": "go", "mentions": [mention]}]}

    council = make_council({"a": [step("b")] * (turns // 2), "b": [step("a")] * (turns // 2)},
                           waiting=["b"], max_turns_per_member=turns)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.ensure_future(ticker())
    run = council.start(store=db_path, deterministic=True)
    try:
        await asyncio.sleep(0.05)
        await run.cancel()
    finally:
        ticking.cancel()

    assert run.status == "cancelled"
    done = len(of_type(run.events, "node.completed"))
    assert 0 < done < turns  # it ran, and the cancel landed mid-run
    assert ticks > 1  # the other task kept running while the scripts did
