"""Run a two-member council in its own process; the second turn waits for a gate file.

Usage: ``python -m tests.tui.relay_process STORE GATE`` (exit 0 when the run completed).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from wopdsl import Council, Post, Reply, Turn

RUN_ID = "relay-1"


def build(gate: Path) -> Council:
    council = Council("relay", task="Pass the baton.")
    council.room("track", members=["first", "second"])

    @council.member(role="opens the relay")
    def first(turn: Turn) -> Reply:
        return Reply(summary="Passed.", posts=[
            Post(room="track", text="Baton to @second", mentions=["second"])])

    @council.member(role="runs when the gate opens", initial_turn=False)
    def second(turn: Turn) -> Reply:
        # A sync handler runs off the event loop, so waiting here blocks nothing else.
        while not gate.exists():
            time.sleep(0.02)
        return Reply(summary="Finished.", posts=[Post(room="track", text="Baton home")])

    return council


def main(store: str, gate: str) -> int:
    run = build(Path(gate)).run(store=store, run_id=RUN_ID, deterministic=True)
    return 0 if run.status == "completed" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
