"""The benchmark workload W(N, T), shared by ``bench/run.py`` and ``bench/profile.py``.

W(N, T): N members ``m0 … m{N-1}`` in one room ``all``, ``tail_messages = 8``. ``m0`` takes
the first turn; every turn posts one message mentioning the next member (round-robin), so
turn k is taken by member ``(k - 1) % N``. Turn T posts nothing, so the run completes after
exactly T member turns. Two member engines:

* ``script``: each member's script has one step per turn it will take, rendered with Jinja2
  (``{{ member }} hands over after turn {{ turn }}``), declared with ``Council.add_member``.
* ``python``: an ``async`` handler bound with ``@council.member`` returning a ``Reply``.
* ``python-sync``: the same handler as a plain ``def`` (it runs in place while it is fast,
  so it should cost what the async one does: no thread hop per turn).

The log is a fresh SQLite file (``SqliteStore``: WAL, ``synchronous=NORMAL``) per run.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wopdsl import Council, Engine, Post, Reply, SqliteStore, Turn
from wopdsl.store.base import EventStore, RunInfo

ROOM = "all"
TAIL = 8
RUN_ID = "bench-run"
ENGINES = ("script", "python", "python-sync")


def member_ids(n: int) -> list[str]:
    return [f"m{i}" for i in range(n)]


def turns_of(index: int, n: int, turns: int) -> list[int]:
    """Global turn numbers (1-based) member ``index`` takes in W(n, turns)."""
    return list(range(index + 1, turns + 1, n))


def build_council(engine: str, n: int, turns: int) -> Council:
    """Declare W(n, turns) with ``engine`` (``script`` or ``python``) members."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    if n < 1 or turns < 1:
        raise ValueError("need at least one member and one turn")
    ids = member_ids(n)
    council = Council(
        "bench",
        task="Pass the baton around the room.",
        tail_messages=TAIL,
        global_concurrency=1,
        max_turns_per_member=max(1, -(-turns // n)),
    )
    council.room(ROOM, members=ids)
    for index, member in enumerate(ids):
        following = ids[(index + 1) % n]
        if engine == "script":
            steps: list[dict[str, Any]] = []
            for number in turns_of(index, n, turns):
                if number < turns:
                    steps.append({
                        "summary": "Handed over.",
                        "posts": [{
                            "room": ROOM,
                            "text": "{{ member }} hands over after turn {{ turn }}",
                            "mentions": [following],
                        }],
                    })
                else:
                    steps.append({"summary": "Done."})
            council.add_member(member, role="runner", engine="script", script=steps,
                               initial_turn=index == 0)
        else:
            make = _sync_handler if engine == "python-sync" else _handler
            council.member(member, role="runner", initial_turn=index == 0)(
                make(index, n, turns, following)
            )
    return council


def _handler(index: int, n: int, turns: int, following: str) -> Any:
    async def handler(turn: Turn) -> Reply:
        number = (turn.turn - 1) * n + index + 1
        if number >= turns:
            return Reply(summary="Done.")
        return Reply(summary="Handed over.", posts=[
            Post(room=ROOM, text=f"{turn.member} hands over after turn {turn.turn}",
                 mentions=[following]),
        ])

    handler.__name__ = handler.__qualname__ = f"m{index}"
    return handler


def _sync_handler(index: int, n: int, turns: int, following: str) -> Any:
    def handler(turn: Turn) -> Reply:
        number = (turn.turn - 1) * n + index + 1
        if number >= turns:
            return Reply(summary="Done.")
        return Reply(summary="Handed over.", posts=[
            Post(room=ROOM, text=f"{turn.member} hands over after turn {turn.turn}",
                 mentions=[following]),
        ])

    handler.__name__ = handler.__qualname__ = f"m{index}"
    return handler


class CountingStore(SqliteStore):
    """A ``SqliteStore`` that records how many events each append (transaction) wrote."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path)
        self.batches: list[int] = []

    def append(self, run_id: str, events: Any, expected_sequence: int) -> None:
        self.batches.append(len(events))
        super().append(run_id, events, expected_sequence)


class NullStore(EventStore):
    """Accepts appends and keeps nothing: times the engine without JSON or SQLite."""

    def __init__(self) -> None:
        self.last = -1

    def append(self, run_id: str, events: Any, expected_sequence: int) -> None:
        self.last += len(events)

    def read(self, run_id: str, after: int = -1) -> list[Any]:
        return []

    def runs(self) -> list[RunInfo]:
        return []

    def last_sequence(self, run_id: str) -> int:
        return self.last


@dataclass
class Timing:
    wall: float
    cpu: float
    status: str
    events: int


def run_once(council: Council, store: SqliteStore | str) -> Timing:
    """Run the council to its end on ``store`` and time it (wall and CPU seconds).

    The clock covers ``council.arun()`` end to end: compile, opening the store, every
    durable append, and the run's end. The store is closed afterwards.
    """

    async def go() -> Timing:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        run = await council.arun(store=store, run_id=RUN_ID)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        events = run.store.last_sequence(RUN_ID) + 1
        status = run.status
        run.store.close()
        return Timing(wall, cpu, status, events)

    return asyncio.run(go())


def run_engine_only(council: Council) -> Timing:
    """Run the compiled council's engine on a ``NullStore``: the engine's own cost per turn."""
    graph = council.compile()

    async def go() -> Timing:
        engine = Engine(graph, NullStore(), RUN_ID)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        await engine.start()
        status = await engine.drive()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        return Timing(wall, cpu, status, engine.state.last_sequence + 1)

    return asyncio.run(go())


def chatty_council(messages: int, variant: str = "plain", per_turn: int = 100) -> Council:
    """A council whose one member ``talker`` saves ``messages`` messages, ``per_turn`` a turn.

    ``variant`` shapes the texts ``wop diff`` aligns: ``plain`` (``message 17``: all
    distinct), ``changed`` (as plain, but the middle message says something else),
    ``repetitive`` (only ``yes`` and ``no``, in a pseudo-random pattern of their own: the
    worst case for a line-by-line alignment).
    """
    turns = -(-messages // per_turn)
    council = Council(f"chatty-{variant}" if variant == "other" else "chatty",
                      task="Say many things.", max_turns_per_member=turns + 1, tail_messages=4)
    council.room(ROOM, members=["talker"])

    def text(index: int) -> str:
        if variant == "repetitive":
            return ("yes", "no")[(index * 2654435761 >> 7) % 2]
        if variant == "changed" and index == messages // 2:
            return "something else entirely"
        return f"message {index}"

    @council.member("talker", role="talker")
    def talker(turn: Turn) -> Reply:
        first = (turn.turn - 1) * per_turn
        count = min(per_turn, messages - first)
        if count <= 0:
            return Reply(summary="Done.")
        posts = [Post(room=ROOM, text=text(first + k)) for k in range(count)]
        more = first + count < messages
        if more:
            posts[-1] = Post(room=ROOM, text=posts[-1].text, mentions=["talker"])
        return Reply(summary=f"Said {first + count}.", posts=posts)

    return council
