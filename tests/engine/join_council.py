"""A council with a human member, runnable as a child process (cross-process join tests).

``python -m tests.engine.join_council DB RUN_ID FLAG``: member ``a``'s first turn waits until
the file ``FLAG`` exists; the process prints the final status (or ``error[CODE]``).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from wopdsl import Council, Post, Reply, Turn, WopError


def build(flag: Path | None) -> Council:
    """Return the council: ``a`` (initial), ``b`` (waits for a mention), human ``me``."""
    council = Council("join", task="Join in.")
    council.room("all", members=["a", "b", "me"])

    @council.member(role="a")
    def a(turn: Turn) -> Reply:
        if flag is not None and turn.turn == 1:
            deadline = time.monotonic() + 20
            while not flag.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return Reply(summary=f"a{turn.turn}", posts=[Post(room="all", text=f"a{turn.turn}")])

    @council.member(role="b", initial_turn=False)
    def b(turn: Turn) -> Reply:
        seen = ",".join(m.id for m in turn.triggers)
        return Reply(summary="b", posts=[Post(room="all", text=f"b saw {seen}")])

    council.human("me")
    return council


def main() -> int:
    db, run_id, flag = sys.argv[1:4]
    try:
        run = asyncio.run(build(Path(flag)).arun(store=db, run_id=run_id))
    except WopError as exc:
        print(f"error[{exc.code}]: {exc}", flush=True)
        return 1
    print(run.status, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
