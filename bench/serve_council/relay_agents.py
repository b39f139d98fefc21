"""Handlers of relay.toml: wait BENCH_DELAY s, then pass the baton (BENCH_TURNS legs each)."""

import asyncio
import os

from wopdsl import Post, Reply, Turn

TURNS = int(os.environ.get("BENCH_TURNS", "10"))
DELAY = float(os.environ.get("BENCH_DELAY", "0.2"))


async def run_leg(turn: Turn) -> Reply:
    await asyncio.sleep(DELAY)
    if turn.turn >= TURNS:
        return Reply(summary="finished")
    other = "b" if turn.member == "a" else "a"
    return Reply(summary=f"leg {turn.turn}",
                 posts=[Post(room="track", text=f"{turn.member} leg {turn.turn}",
                             mentions=[other])])
