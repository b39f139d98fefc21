"""A deterministic council for the kill -9 / resume tests, runnable as a child process.

``python -m tests.engine.resume_council DB RUN_ID SIDE_FILE MODE DELAY [FLAG]``:

- ``MODE`` is ``run`` (start the run) or ``resume`` (continue it);
- every handler call appends ``"<pid> <member> <turn>"`` to ``SIDE_FILE`` before it works,
  then sleeps ``DELAY`` seconds (so the parent can kill the process mid-turn);
- with ``FLAG``, member ``a``'s first turn also waits until the file ``FLAG`` exists.

The process prints the run's final status (or ``error[CODE]``) and exits 0, or 1 on error.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from wopdsl import Council, Post, Reply, SqliteStore, Turn, WopError

ROOMS = {"all": ["lead", "a", "b", "c"], "pair": ["a", "b"]}

# (member, turn) -> posts as (room, mentions); texts are derived from the turn input.
PLAN: dict[tuple[str, int], list[tuple[str, list[str]]]] = {
    ("lead", 1): [("all", ["a", "b"])],
    ("a", 1): [("pair", ["b"]), ("all", [])],
    ("b", 1): [("all", ["c"])],
    ("c", 1): [("all", ["a"])],
    ("b", 2): [("pair", ["a"])],
    ("a", 2): [("all", ["lead", "c"])],
    ("lead", 2): [],
    ("c", 2): [("all", ["lead"])],
    ("a", 3): [],
    ("lead", 3): [],
}


def build(side_file: Path, delay: float, flag: Path | None = None) -> Council:
    """Return the council; its handlers log each call to ``side_file``."""
    council = Council("resume", task="Count to ten.", global_concurrency=2,
                      max_turns_per_member=3, tail_messages=4)
    for room, members in ROOMS.items():
        council.room(room, members=members)

    def handler(turn: Turn) -> Reply:
        line = f"{os.getpid()} {turn.member} {turn.turn}\n".encode()
        fd = os.open(side_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        if flag is not None and turn.member == "a" and turn.turn == 1:
            deadline = time.monotonic() + 20
            while not flag.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        if delay:
            time.sleep(delay)
        seen = ",".join(m.id for m in turn.triggers) or "-"
        posts = [
            Post(room=room, text=f"{turn.member}{turn.turn} saw {seen}", mentions=mentions)
            for room, mentions in PLAN.get((turn.member, turn.turn), [])
        ]
        return Reply(summary=f"{turn.member} turn {turn.turn} ({len(turn.messages)} msgs)",
                     posts=posts)

    for member in ["lead", "a", "b", "c"]:
        council.member(member, role=member, initial_turn=member == "lead")(handler)
    return council


async def _main(argv: list[str], build: Callable[..., Council]) -> str:
    db, run_id, side, mode, delay = argv[:5]
    council = build(Path(side), float(delay), *(Path(a) for a in argv[5:]))
    store = SqliteStore(db)
    if mode == "run":
        run = await council.arun(store=store, run_id=run_id)
    else:
        run = council.open(run_id, store)
        await run.resume()
    return run.status


def main(build: Callable[..., Council] | None = None) -> int:
    """Run or resume the council ``build`` makes (this module's by default), as a child."""
    try:
        print(asyncio.run(_main(sys.argv[1:], build or globals()["build"])), flush=True)
    except WopError as exc:
        print(f"error[{exc.code}]: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
