"""The live printer's work: one flush per turn of the event loop, only the events it prints.

Events come from real runs on a real SQLite file; the printer writes into a stream that counts
its flushes.
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wopdsl import Council, Post, Reply, SqliteStore, Turn
from wopdsl.cli._live import PRINTED, LivePrinter, message_line, plain_line
from wopdsl.protocol.envelope import RunEventDoc


class CountingStream(io.StringIO):
    """A text stream that counts its writes and flushes, and what had been written at each."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[str] = []
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)

    def flush(self) -> None:
        self.flushed.append(self.getvalue())
        super().flush()


def _council(*, blind: bool, turns: int = 2,
             each_turn: Callable[[Turn], None] = lambda turn: None) -> Council:
    """Two members hand over ``turns`` times each; ``each_turn`` runs in every handler."""
    council = Council("relay", task="Pass it on.", max_turns_per_member=turns + 1)
    council.room("all", members=["a", "b"], blind=blind, rounds=2 if blind else None)

    def hand_over(to: str):  # type: ignore[no-untyped-def]
        def handler(turn: Turn) -> Reply:
            each_turn(turn)
            if turn.turn > turns:
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
        # Gathered, not written yet: the loop has not turned.
        assert out.flushed == [] and out.getvalue() == "" and out.writes == 0
        await asyncio.sleep(0)
        assert out.flushed == [alone.getvalue()]  # Once, with every line,
        assert out.writes == 1  # in one write (one system call on an unbuffered stream).
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


def test_a_printer_takes_committed_batches_in_place_only_where_they_continue(
        tmp_path: Path) -> None:
    events = _events(tmp_path)
    expected = LivePrinter(io.StringIO(), buffered=True)
    for event in events:
        expected.feed(event)
    started, rest = events[:1], events[1:]

    async def scenario() -> str:
        out = io.StringIO()
        printer = LivePrinter(out)
        printer.attach(asyncio.get_running_loop())
        printer.committed(started)  # Before run.started is folded: left to the follower.
        assert printer.last_sequence == -1
        printer.feed(started[0])  # (what the follower reads from the log)
        gap = [e for e in rest if e["sequence"] > rest[0]["sequence"]]
        printer.committed(gap)  # Does not continue what it has: left to the follower.
        assert printer.last_sequence == 0
        elsewhere = threading.Thread(target=printer.committed, args=(rest,))
        elsewhere.start()
        elsewhere.join()
        assert printer.last_sequence == 0  # Another thread's commit: left to the follower.
        printer.committed(rest[:7])  # ... up to the first post
        assert printer.last_sequence == rest[6]["sequence"]
        assert printer.printed == 0 and out.getvalue() == ""  # Formatted at the next flush.
        for event in rest[7:10]:  # Read from the log, up to the second post: the batches
            printer.feed(event)  # taken before it are printed first.
        printer.committed(rest[10:])
        assert printer.last_sequence == events[-1]["sequence"]
        await asyncio.sleep(0)  # The loop's next turn writes what was gathered, in order.
        assert printer.printed == expected.printed == 4
        return out.getvalue()

    assert asyncio.run(scenario()) == expected.out.getvalue()  # type: ignore[attr-defined]

    blind_events = _events(tmp_path / "blind", blind=True)
    blind = LivePrinter(io.StringIO())
    blind.feed(blind_events[0])
    blind.committed(blind_events[1:])  # A printer that folds reads the log instead.
    assert blind.last_sequence == 0 and blind.printed == 0


def _printed_live(council: Council, store: SqliteStore) -> tuple[LivePrinter, str]:
    """Run ``council`` as ``r1`` printing live as ``wop run`` does: the printer, its text."""
    from wopdsl.cli._drive import follow_while

    async def scenario() -> LivePrinter:
        run = council.start(store, "r1")
        printer = LivePrinter(io.StringIO())
        await follow_while(run, printer, run.wait())
        return printer

    printer = asyncio.run(scenario())
    return printer, printer.out.getvalue()  # type: ignore[attr-defined]


def _replayed(store: SqliteStore) -> str:
    """What ``wop replay`` prints of run ``r1``."""
    replayed = LivePrinter(io.StringIO(), buffered=True)
    for event in store.read("r1"):
        replayed.feed(event)
    return replayed.out.getvalue()  # type: ignore[attr-defined,no-any-return]


def test_wop_runs_printer_does_not_read_back_the_commits_of_its_own_run(
        tmp_path: Path) -> None:
    from tests.store.test_sqlite_recent import ReadCountingStore

    kept: list[int] = []  # what the store keeps for subscribers, at each turn
    council = _council(blind=False, turns=30,
                       each_turn=lambda turn: kept.append(len(store._recent._runs)))
    store = ReadCountingStore(tmp_path / "runs.db")
    printer, printed = _printed_live(council, store)
    assert printed == _replayed(store)
    assert printer.printed == 60
    # The log is read only to catch up at the start (run.started): 60 posts, at most 2 reads.
    assert store.reads <= 2, store.reads
    assert kept and set(kept) == {0}  # Fed in place: no subscriber, so nothing kept or decoded.
    store.close()


def test_the_plain_line_of_a_post_is_the_general_paths_line_or_none() -> None:
    def event(**changes: Any) -> dict[str, Any]:
        turn: dict[str, Any] = {"messageId": "team/a/3/0", "from": "a", "role": "agent",
                                "content": {"text": "hello b", "mentions": ["b"]},
                                "groupId": "all", "speakerId": "host:a"}
        content = changes.pop("content", {})
        turn.update(changes)
        turn["content"] = {**turn["content"], **content} if content is not None else None
        return {"type": "conversation.exchanged", "nodeId": "room:all",
                "payload": {"turn": turn}}

    plain = [event(), event(content={"mentions": []}),
             event(content={"mentions": ["b", "c"]}), event(content={"text": "a: b @c [d]"})]
    for sample in plain:
        turn = sample["payload"]["turn"]
        assert plain_line(turn) == message_line(sample, turn)  # type: ignore[arg-type]
    assert plain_line(plain[0]["payload"]["turn"]) == "[all] a team/a/3/0 @b: hello b"

    general = [
        event(content={"text": "two\nlines"}),  # continuation lines are indented
        event(content={"text": "back\\slash"}),  # escaped on one line
        event(content={"text": "red \x1b[31m alert"}),  # a terminal escape
        event(content={"text": "café"}),  # not ASCII
        event(content={"mentions": ["b", 7]}),  # a mention that is not text
        event(content={"text": 5}),
        event(content=None),
        event(role="user", **{"from": "user", "speakerId": "host:ann"}),  # a person
        event(role="system"),
        event(groupId=None),  # the room from the node id
        event(**{"from": None}),
    ]
    for sample in general:
        turn = sample["payload"]["turn"]
        assert plain_line(turn) is None
        message_line(sample, turn)  # type: ignore[arg-type]  # (the general path copes)


def test_a_handler_changing_its_last_result_does_not_change_what_was_printed(
        tmp_path: Path) -> None:
    """The printer formats batches after later turns ran: what it prints is what was logged."""
    def scribble(turn: Turn) -> None:
        if turn.result and turn.result.get("posts"):
            # The previous result is the member's own to read; this handler writes on it.
            turn.result["posts"][0]["mentions"].append("c")
            turn.result["posts"][0]["text"] = "rewritten"

    council = _council(blind=False, turns=3, each_turn=scribble)
    store = SqliteStore(tmp_path / "runs.db")
    _, printed = _printed_live(council, store)
    assert printed == _replayed(store)
    assert "team/a/1/0 @b: turn 1 of a\n" in printed and "@c" not in printed
    store.close()
