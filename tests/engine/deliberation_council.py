"""A deliberating council for the kill -9 / resume / fork tests, runnable as a child process.

``python -m tests.engine.deliberation_council DB RUN_ID SIDE_FILE MODE DELAY``: ``MODE`` is
``run`` or ``resume``; each handler call appends ``"<pid> <member> <turn>"`` to ``SIDE_FILE``
and sleeps ``DELAY`` seconds. Three voters debate two blind, anonymous rounds with a vote in
each turn (cmo changes its vote in round 2); @all wakes nobody extra in a round room; the
chair answers with the outcome it was given.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from wopdsl import Council, Post, Reply, Turn, Vote

CHOICES = {("cfo", 1): "hold", ("cfo", 2): "hold", ("cto", 1): "ship", ("cto", 2): "ship",
           ("cmo", 1): "hold", ("cmo", 2): "ship"}


def build(side_file: Path, delay: float) -> Council:
    """Return the council; its handlers log each call to ``side_file``."""
    council = Council("board", task="Ship v2 this week?", chair="chair", global_concurrency=2)
    council.room("board", members=["cfo", "cto", "cmo", "chair"], rounds=2, blind=True,
                 anonymous=True)
    council.decision("ship", room="board", question="Ship v2?", options=["ship", "hold"])

    def log(turn: Turn) -> None:
        fd = os.open(side_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{os.getpid()} {turn.member} {turn.turn}\n".encode())
        finally:
            os.close(fd)
        if delay:
            time.sleep(delay)

    def voter(turn: Turn) -> Reply:
        log(turn)
        choice = CHOICES[(turn.member, turn.turn)]
        seen = sum(1 for m in turn.messages if not m.system)
        mentions = ["all"] if (turn.member, turn.turn) == ("cto", 1) else []
        return Reply(summary=f"{turn.member} {turn.turn}: {choice}",
                     posts=[Post(room="board", text=f"{choice}, having seen {seen} posts",
                                 mentions=mentions)],
                     votes=[Vote(decision="ship", choice=choice, reason=f"{turn.member} why")])

    def chair(turn: Turn) -> Reply:
        log(turn)
        (decision,) = turn.decisions
        return Reply(summary=f"Outcome {decision['outcome']} {decision['tally']}, dissent "
                             f"{len(decision['dissent'])}")

    for member in ("cfo", "cto", "cmo"):
        council.member(member, role=member.upper())(voter)
    council.member("chair", role="chair")(chair)
    return council


if __name__ == "__main__":
    from tests.engine.resume_council import main

    sys.exit(main(build))
