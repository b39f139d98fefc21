"""Handlers of pingpong.toml: each turn waits PINGPONG_DELAY s, then hits the ball back."""

import asyncio
import os

from wopdsl import Post, Reply, Turn

TURNS = int(os.environ.get("PINGPONG_TURNS", "10"))


async def rally(turn: Turn) -> Reply:
    await asyncio.sleep(float(os.environ.get("PINGPONG_DELAY", "0.05")))
    other = "pong" if turn.member == "ping" else "ping"
    if turn.turn >= TURNS:
        return Reply(summary=f"{turn.member} stops after {turn.turn} turns.")
    return Reply(summary=f"hit {turn.turn}",
                 posts=[Post(room="court", text=f"{turn.member} hits #{turn.turn}",
                             mentions=[other])])
