"""Who else is here: the screen's side of channel presence (RFC 0110, DESIGN.md §24).

:class:`Watching` joins each room of the person at this screen (the human member the composer
posts as) to the run's presence board, says while they type — a typing signal when the
composer's text changes, repeated at most every :data:`TYPING_EVERY_S` seconds, withdrawn
after :data:`IDLE_S` seconds without a keystroke or when the text is sent — and hands every
room's snapshot to the screen as it changes. Other terminals, the chat page and notebooks on
the same store share the board.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

import wopdsl

__all__ = ["IDLE_S", "TYPING_EVERY_S", "Watching"]

TYPING_EVERY_S: Final = 2.0
"""A typing signal is repeated at most this often while the person types."""
IDLE_S: Final = 3.0
"""Seconds without a keystroke after which the person no longer types."""


class Watching:
    """The person at this screen, present in their rooms (see the module docstring).

    Args:
        run: The run on screen.
        member: The human member the person posts as.
        rooms: That member's rooms.
        shown: Called with a room's snapshot each time it changes.
    """

    def __init__(self, run: wopdsl.Run, member: str, rooms: list[str],
                 shown: Callable[[wopdsl.PresenceSnapshot], None]) -> None:
        self.run = run
        self.member = member
        self.rooms = rooms
        self.shown = shown
        self._sessions: dict[str, wopdsl.PresenceSession] = {}
        self._typing_in: str | None = None
        self._signalled = 0.0
        self._idle: asyncio.TimerHandle | None = None

    async def watch(self) -> None:
        """Join the rooms, then show every change until cancelled (then leave them)."""
        presence = self.run.presence
        try:
            for room in self.rooms:
                self._sessions[room] = await presence.join(room, self.member)
            async for snapshot in presence.watch(self.rooms):
                self.shown(snapshot)
        finally:
            if self._idle is not None:
                self._idle.cancel()
            for session in self._sessions.values():
                await session.leave()

    async def typed(self, room: str | None, text: str) -> None:
        """The composer's text changed in ``room``: the person types (or cleared it)."""
        if not text.strip() or room not in self._sessions:
            await self.stopped()
            return
        if self._typing_in not in (None, room):
            await self.stopped()
        now = time.monotonic()
        if self._typing_in is None or now - self._signalled >= TYPING_EVERY_S:
            self._typing_in, self._signalled = room, now
            await self._sessions[room].set_typing(True)
        if self._idle is not None:
            self._idle.cancel()
        loop = asyncio.get_running_loop()
        self._idle = loop.call_later(IDLE_S, lambda: asyncio.ensure_future(self.stopped()))

    async def stopped(self) -> None:
        """The person stopped typing (sent, cleared, or went idle)."""
        room, self._typing_in = self._typing_in, None
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if room is not None and room in self._sessions:
            await self._sessions[room].set_typing(False)
