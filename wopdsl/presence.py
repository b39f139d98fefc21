"""Who watches and who types in a run's rooms: channel presence (RFC 0110, DESIGN.md §24).

Presence is ephemeral live state, never an event of the run's log: a person watching a room
(the terminal UI, the web page, a notebook) *joins* it as the human member they post as, and
says while they type. Every front end — in this process or another one sharing the store —
sees the same board: each session is a small private record beside the run's log
(``presence/<room>/<member>/<session>``, refreshed every :data:`HEARTBEAT_S` seconds and gone
after :data:`WATCH_TTL_S` without a refresh), never in the log, a replay or a fork.

A room's presence is the closed RFC 0110 snapshot ``{conversationId, present, typing}``: opaque
subject refs (``user:<member>``) of the room's human members who watch, and the subset of them
who type. Only a human member of the room may join it (the same membership gate as posting).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from wopdsl._ids import conversation_id
from wopdsl.errors import StoreError, ValidationError
from wopdsl.state import CouncilState
from wopdsl.store import EventStore

__all__ = ["HEARTBEAT_S", "TYPING_TTL_S", "WATCH_TTL_S", "Presence", "PresenceSession",
           "PresenceSnapshot", "subject_ref"]

WATCH_TTL_S: Final = 10.0
"""A watcher whose session was not refreshed for this long is no longer present."""
TYPING_TTL_S: Final = 5.0
"""A typing signal not repeated for this long has stopped."""
HEARTBEAT_S: Final = 3.0
"""How often a session refreshes its record (well within :data:`WATCH_TTL_S`)."""
POLL_S: Final = 0.25
"""How often a board with watchers reads the records other processes keep."""
_PREFIX: Final = "presence/"


def subject_ref(member: str) -> str:
    """The opaque RFC 0041 subject ref of a human member (``user:<member>``)."""
    return f"user:{member}"


@dataclass(frozen=True, slots=True)
class PresenceSnapshot:
    """A room's presence: the closed RFC 0110 ``channel.presence`` payload."""

    conversation_id: str
    present: tuple[str, ...]
    """Subject refs of the room's members who watch it, sorted."""
    typing: tuple[str, ...]
    """The subset of ``present`` who type now, sorted."""

    def to_json(self) -> dict[str, Any]:
        """``{conversationId, present, typing}``: nothing else (no PII rides it)."""
        return {"conversationId": self.conversation_id, "present": list(self.present),
                "typing": list(self.typing)}


@dataclass(slots=True)
class _Record:
    seen_ms: int
    typing_ms: int = 0
    left: bool = False


class PresenceSession:
    """One person watching one room (see :meth:`Presence.join`)."""

    def __init__(self, board: Presence, room: str, member: str, session: str) -> None:
        self.board = board
        self.room = room
        self.member = member
        self.key = f"{_PREFIX}{room}/{member}/{session}"
        self.typing_now = False
        self.closed = False

    async def set_typing(self, typing: bool) -> None:
        """Say that the person types now (``True``, repeat while typing) or stopped."""
        self.typing_now = typing
        await self.refresh()

    async def refresh(self) -> None:
        """Keep the session present (a heartbeat); front ends call it while they watch."""
        if not self.closed:
            await self.board._write(self, left=False)

    async def leave(self) -> None:
        """The person stopped watching (closed the view)."""
        if not self.closed:
            self.closed = True
            self.typing_now = False
            await self.board._write(self, left=True)


class Presence:
    """The presence board of one run's rooms (``Run.presence``).

    Args:
        store: The run's store (sessions are private records beside its log).
        run_id: The run.
        state: Reads the run's folded state (rooms, members, conversation ids).
        clock: Wall-clock milliseconds (records of other processes are compared with it).
    """

    def __init__(self, store: EventStore, run_id: str, state: Callable[[], CouncilState], *,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.run_id = run_id
        self._state = state
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._sessions: dict[str, PresenceSession] = {}
        self._changed = asyncio.Event()
        self._ticker: asyncio.Task[None] | None = None
        self._watchers = 0
        self._shown: dict[str, PresenceSnapshot] = {}

    # -- sessions ----------------------------------------------------------------------------

    async def join(self, room: str, member: str, *,
                   state: CouncilState | None = None) -> PresenceSession:
        """Mark ``member`` (a human member of ``room``) as watching it; return its session.

        ``state``: the run's state to check membership against (default: read it now).

        Raises:
            ValidationError: no such room, or ``member`` is not a human member of it (only a
                room's people appear in its presence).
        """
        self.check_member(room, member, state)
        session = PresenceSession(self, room, member, secrets.token_hex(8))
        self._sessions[session.key] = session
        await self._write(session, left=False)
        self._start()
        return session

    def check_member(self, room: str, member: str, state: CouncilState | None = None) -> None:
        """The membership gate: ``member`` is a human member of ``room``.

        Raises:
            ValidationError: it is not (the message names the room's people).
        """
        state = state or self._state()
        found = state.rooms.get(room)
        if found is None:
            raise ValidationError(f"room {room!r} does not exist (rooms: "
                                  f"{', '.join(state.rooms) or 'none'})",
                                  hint="name one of the run's rooms")
        people = [m for m in found.members if state.members[m].human]
        if member not in people:
            raise ValidationError(f"{member!r} is not a person in room {room!r} (its human "
                                  f"members: {', '.join(people) or 'none'})",
                                  hint="only a room's human members appear in its presence")

    async def _write(self, session: PresenceSession, *, left: bool) -> None:
        now = self._now()
        record = _Record(now, now if session.typing_now and not left else 0, left)
        self._records[session.key] = record
        if left:
            self._sessions.pop(session.key, None)
        self._notify()
        value = json.dumps({"seen": record.seen_ms, "typing": record.typing_ms, "left": left})
        with contextlib.suppress(StoreError):  # A read-only store: presence stays local.
            await self.store.call(self.store.save_private, self.run_id, {session.key: value})

    # -- reading -----------------------------------------------------------------------------

    def snapshot(self, room: str) -> PresenceSnapshot:
        """The room's presence now, from what this board knows (see :meth:`refresh`)."""
        now = self._now()
        present: set[str] = set()
        typing: set[str] = set()
        prefix = f"{_PREFIX}{room}/"
        for key, record in self._records.items():
            if not key.startswith(prefix) or record.left or \
                    now - record.seen_ms > WATCH_TTL_S * 1000:
                continue
            member = key[len(prefix):].partition("/")[0]
            present.add(subject_ref(member))
            if record.typing_ms and now - record.typing_ms <= TYPING_TTL_S * 1000:
                typing.add(subject_ref(member))
        return PresenceSnapshot(conversation_id(self.run_id, room), tuple(sorted(present)),
                        tuple(sorted(typing)))

    async def refresh(self) -> None:
        """Read the sessions other processes keep (and drop what expired from view)."""
        try:
            kept = await self.store.call(self.store.read_private, self.run_id, _PREFIX)
        except StoreError:
            return
        for key, value in kept.items():
            if key in self._sessions:
                continue  # this process's own sessions are known first-hand
            try:
                data = json.loads(value)
                self._records[key] = _Record(int(data["seen"]), int(data.get("typing", 0)),
                                             bool(data.get("left")))
            except (ValueError, KeyError, TypeError):
                continue

    async def watch(self, rooms: Iterable[str]) -> AsyncGenerator[PresenceSnapshot, None]:
        """Yield each room's snapshot now, then every time one of them changes."""
        rooms = list(rooms)
        self._watchers += 1
        self._start()
        try:
            await self.refresh()
            shown: dict[str, PresenceSnapshot] = {}
            while True:
                changed = self._changed
                for room in rooms:
                    snap = self.snapshot(room)
                    if shown.get(room) != snap:
                        shown[room] = snap
                        yield snap
                await changed.wait()
        finally:
            self._watchers -= 1

    # -- the ticker: heartbeats, other processes, expiry ---------------------------------------

    def _start(self) -> None:
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        beat = 0.0
        while self._sessions or self._watchers:
            await asyncio.sleep(POLL_S)
            beat += POLL_S
            if beat >= HEARTBEAT_S:
                beat = 0.0
                for session in list(self._sessions.values()):
                    await session.refresh()
            if self._watchers:
                await self.refresh()
                self._notify_if_changed()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _notify_if_changed(self) -> None:
        """Wake watchers when a snapshot moved (another process, an expiry)."""
        rooms = {key[len(_PREFIX):].partition("/")[0] for key in self._records}
        current = {room: self.snapshot(room) for room in rooms}
        if current != self._shown:
            self._shown = current
            self._notify()

    def _now(self) -> int:
        return int(self._clock() * 1000)

    async def close(self) -> None:
        """Leave every session of this board and stop its ticker."""
        for session in list(self._sessions.values()):
            await session.leave()
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
