"""The live printer's work: one flush per turn of the event loop, only the events it prints.

Events come from real runs on a real SQLite file; the printer writes into a stream that counts
its flushes.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from wopdsl import Council, Post, Reply, Turn
from wopdsl.cli._live import PRINTED, LivePrinter
from wopdsl.protocol.envelope import RunEventDoc


class CountingStream(io.StringIO):
    """A text stream that counts its flushes and what had been written at each."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[str] = []

    def flush(self) -> None:
        self.flushed.append(self.getvalue())
        super().flush()


def _council(*, blind: bool) -> Council:
    council = Council("relay", task="Pass it on.")
    council.room("all", members=["a", "b"], blind=blind, rounds=2 if blind else None)

    def hand_over(to: str):  # type: ignore[no-untyped-def]
        def handler(turn: Turn) -> Reply:
            if turn.turn > 2:
                return Reply(summary="done")
            return Reply(summary="passed", posts=[
                Post(room="all", text=f"turn {turn.turn} of {turn.member}", mentions=[to])])
        return handler

    council.member("a", role="r")(hand_over("b"))
    council.member("b", role="r", initial_turn=False)(hand_over("a"))
    return council


def _events(tmp_path: Path, *, blind: bool = False) -> list[RunEventDoc]:
    run = asyncio.run(_council(blind=blind).arun(tmp_path / "runs.db", "r1"))
    assert run.status == "completed", run.state.error
    return list(run.store.read("r1"))


def test_lines_fed_on_a_loop_are_flushed_once_per_turn_of_the_loop(tmp_path: Path) -> None:
    events = _events(tmp_path)
    alone = CountingStream()
    off_loop = LivePrinter(alone)
    for event in events:  # No loop: each line flushed as it is printed.
        off_loop.feed(event)
    assert off_loop.printed == 4 and len(alone.flushed) == 4

    async def scenario() -> CountingStream:
        out = CountingStream()
        printer = LivePrinter(out, loop=asyncio.get_running_loop())
        for event in events:
            printer.feed(event)
        assert out.flushed == []  # Written, not flushed yet: the loop has not turned.
        assert out.getvalue() == alone.getvalue()
        await asyncio.sleep(0)
        assert out.flushed == [alone.getvalue()]  # Once, with every line.
        printer.feed({**events[-1], "sequence": events[-1]["sequence"] + 1})  # not printed
        await asyncio.sleep(0)
        assert len(out.flushed) == 1
        return out

    asyncio.run(scenario())


def test_a_printer_asks_only_for_what_it_prints_unless_a_room_is_blind(tmp_path: Path) -> None:
    plain = LivePrinter(io.StringIO())
    assert plain.wanted() is None  # Before run.started: everything.
    events = _events(tmp_path / "plain")
    plain.feed(events[0])
    assert plain.wanted() == PRINTED
    assert {"conversation.exchanged", "agent.toolCalled", "approval.requested"} <= PRINTED
    assert "node.started" not in PRINTED and "node.completed" not in PRINTED

    blind = LivePrinter(io.StringIO())
    blind.feed(_events(tmp_path / "blind", blind=True)[0])
    assert blind.wanted() is None  # A blind round's end decides when posts print.


def test_a_buffered_printer_leaves_flushing_to_its_caller(tmp_path: Path) -> None:
    events = _events(tmp_path)
    out = CountingStream()
    printer = LivePrinter(out, buffered=True)  # wop replay: the whole log, then one flush
    for event in events:
        printer.feed(event)
    assert printer.printed == 4 and out.flushed == []
    printer.flush()
    assert len(out.flushed) == 1 and out.getvalue().count("\n") == 4
