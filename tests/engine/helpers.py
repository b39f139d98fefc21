"""Helpers for the engine semantics tests: replies, call recorders, event queries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wopdsl import Post, Reply, Turn
from wopdsl.protocol.envelope import RunEventDoc


def say(room: str, text: str, *mentions: str) -> Post:
    """A post in ``room`` mentioning ``mentions``."""
    return Post(room=room, text=text, mentions=list(mentions))


def reply(summary: str, *posts: Post, data: Any = None) -> Reply:
    """A turn result."""
    return Reply(summary=summary, posts=list(posts), data=data)


@dataclass
class Call:
    """One handler call, as the handler saw it."""

    member: str
    turn: int
    triggers: list[str]
    messages: list[str]
    input: Turn


@dataclass
class Calls:
    """Records every handler call, in call order."""

    log: list[Call] = field(default_factory=list)

    def record(self, turn: Turn) -> None:
        self.log.append(Call(turn.member, turn.turn, [m.id for m in turn.triggers],
                             [m.id for m in turn.messages], turn))

    @property
    def order(self) -> list[str]:
        return [c.member for c in self.log]

    def of(self, member: str) -> list[Call]:
        return [c for c in self.log if c.member == member]

    def handler(
        self,
        body: Callable[[Turn], Any] | None = None,
        *,
        before: Callable[[Turn], Awaitable[None]] | None = None,
    ) -> Callable[[Turn], Awaitable[Any]]:
        """An async handler: record the call, await ``before``, return ``body(turn)``."""

        async def handle(turn: Turn) -> Any:
            self.record(turn)
            if before is not None:
                await before(turn)
            if body is None:
                return reply(f"{turn.member} turn {turn.turn}")
            return body(turn)

        return handle


def types(events: Iterable[RunEventDoc]) -> list[str]:
    return [e["type"] for e in events]


def of_type(events: Iterable[RunEventDoc], *kinds: str) -> list[RunEventDoc]:
    return [e for e in events if e["type"] in kinds]


def member_events(events: Iterable[RunEventDoc]) -> list[tuple[str, str]]:
    """``(type, member)`` of every member-turn event, in log order."""
    return [
        (e["type"], e["payload"]["nodeId"])
        for e in events
        if e["type"].startswith("node.") and not e.get("nodeId", "").startswith("room:")
    ]


def dispatch_order(events: Iterable[RunEventDoc]) -> list[str]:
    """Members in the order of their first-attempt ``node.started``."""
    return [
        e["payload"]["nodeId"]
        for e in events
        if e["type"] == "node.started"
        and e["payload"].get("typeId") == "council.member"
        and e["payload"].get("attempt", 0) == 0
    ]


def exchanged_ids(events: Iterable[RunEventDoc]) -> list[str]:
    return [e["payload"]["turn"]["messageId"] for e in of_type(events, "conversation.exchanged")]


def index_of(events: Sequence[RunEventDoc], kind: str, member: str, nth: int = 0) -> int:
    """Log index of the ``nth`` event of ``kind`` scoped to node ``member``."""
    hits = [i for i, e in enumerate(events) if e["type"] == kind and e.get("nodeId") == member]
    return hits[nth]


async def wait_for(event: asyncio.Event, what: str, timeout: float = 5.0) -> None:
    """Await ``event``; fail (instead of hanging) when it never comes."""
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        raise AssertionError(f"never happened: {what}") from None
