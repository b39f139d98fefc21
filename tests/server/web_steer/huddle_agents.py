"""The huddle's drafter: its first draft takes a minute unless a steering post stops it."""

import asyncio

from wopdsl import Post, Reply, Turn


async def drafter(turn: Turn) -> Reply:
    if not turn.triggers:
        await asyncio.sleep(60)  # a long first draft: someone steers it meanwhile
        return Reply(summary="Drafted alone.", posts=[Post(room="huddle", text="Draft: 5M")])
    asked = turn.triggers[-1].text
    return Reply(summary="Redrafted.", posts=[Post(room="huddle", text=f"Redrafted: {asked}")])
