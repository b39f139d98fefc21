"""Handlers of relay.toml: wait about BENCH_DELAY s, then pass the baton (BENCH_TURNS legs).

Each leg's wait is drawn uniformly from BENCH_DELAY x (1 ± BENCH_JITTER), like model calls
whose latency varies, so the runs do not all settle in the same instant.
"""

import asyncio
import os
import random

from wopdsl import Post, Reply, Turn

TURNS = int(os.environ.get("BENCH_TURNS", "10"))
DELAY = float(os.environ.get("BENCH_DELAY", "0.2"))
JITTER = float(os.environ.get("BENCH_JITTER", "0.5"))


async def run_leg(turn: Turn) -> Reply:
    await asyncio.sleep(DELAY * random.uniform(1 - JITTER, 1 + JITTER))
    if turn.turn >= TURNS:
        return Reply(summary="finished")
    other = "b" if turn.member == "a" else "a"
    return Reply(summary=f"leg {turn.turn}",
                 posts=[Post(room="track", text=f"{turn.member} leg {turn.turn}",
                             mentions=[other])])
