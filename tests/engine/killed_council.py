"""A council of quick turns that kills its own process once, for ``test_quick_groups``.

Three sync members pass the word round-robin for ``TURNS`` turns (``a`` starts). The turn
numbered ``KILL_AT`` (counted over all members) SIGKILLs the process the first time it runs,
unless the file named by ``$WOP_TEST_KILLED`` exists (the handler creates it before the kill),
so a resumed run goes on to the end. Texts depend only on the turn: runs compare equal.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from wopdsl import Council, Post, Reply, Turn

TURNS = 30
KILL_AT = 12
ORDER = ["a", "b", "c"]


def build(*, kill: bool = True) -> Council:
    """The council; ``kill=False`` never kills (the reference run)."""
    council = Council("killed", task="Pass the word.", max_turns_per_member=TURNS)
    council.room("all", members=ORDER)

    def handler(turn: Turn) -> Reply:
        count = (turn.turn - 1) * 3 + ORDER.index(turn.member) + 1
        mark = Path(os.environ.get("WOP_TEST_KILLED", "killed.mark"))
        if kill and count == KILL_AT and not mark.exists():
            mark.write_text(f"{os.getpid()}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        nxt = ORDER[(ORDER.index(turn.member) + 1) % 3]
        posts = [Post(room="all", text=f"turn {count}", mentions=[nxt])] if count < TURNS else []
        return Reply(summary=f"{turn.member}{turn.turn}", posts=posts)

    for member in ORDER:
        council.member(member, role=member, initial_turn=member == "a")(handler)
    return council


council = build()
