"""Handlers of the chat page test councils (board.toml, flood.toml)."""

import asyncio
import os

from wopdsl import Post, Reply, Turn

DELAY = float(os.environ.get("WEB_DELAY", "0.05"))
FLOOD_TURNS = int(os.environ.get("FLOOD_TURNS", "10"))
FLOOD_POSTS = int(os.environ.get("FLOOD_POSTS", "1000"))


async def strategist(turn: Turn) -> Reply:
    await asyncio.sleep(DELAY)
    if turn.turn == 1:
        return Reply(summary="Opened.", posts=[
            Post(room="board", text="Welcome. Should we ship the beta on Friday, @founder?",
                 mentions=["founder"]),
            Post(room="ops", text="@analyst, please pull the crash numbers.",
                 mentions=["analyst"])])
    said = turn.triggers[0].text if turn.triggers else ""
    if turn.triggers and turn.triggers[0].room == "board":
        return Reply(summary="Answered.", posts=[
            Post(room="board", text=f"Noted: {said}")])
    return Reply(summary="Read the numbers.")


async def analyst(turn: Turn) -> Reply:
    await asyncio.sleep(DELAY)
    return Reply(summary="Reported.", posts=[
        Post(room="ops", text="Crash-free sessions are at 99.2% this week, @strategist.",
             mentions=["strategist"])])


async def talker(turn: Turn) -> Reply:
    if turn.turn > FLOOD_TURNS:
        return Reply(summary="Done.")
    base = (turn.turn - 1) * FLOOD_POSTS
    posts = [Post(room="hall", text=f"message {base + i} of the flood")
             for i in range(FLOOD_POSTS)]
    posts[-1] = Post(room="hall", text=f"message {base + FLOOD_POSTS - 1}, over to @echo",
                     mentions=["echo"])
    return Reply(summary=f"posted {len(posts)}", posts=posts)


async def echo(turn: Turn) -> Reply:
    return Reply(summary="Echoed.", posts=[
        Post(room="hall", text="Go on, @talker.", mentions=["talker"])])
