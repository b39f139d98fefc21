"""Channel presence over HTTP (RFC 0110, DESIGN.md §24): who watches and who types in a room.

- ``GET /v1/runs/{runId}/presence?as=MEMBER[&room=ROOM]`` with ``Accept: text/event-stream``:
  the caller watches the run as ``MEMBER`` — present in each of its rooms (or ``ROOM``) while
  the connection is open — and gets an ``event: channel.presence`` frame (``data:`` the closed
  snapshot ``{conversationId, present, typing}``) for each room now and whenever it changes;
  ``: keepalive`` comments in between. Without SSE: the snapshot of ``ROOM`` as JSON.
- ``POST /v1/runs/{runId}/presence`` ``{room | conversationId, member, typing?, leave?,
  session?}``: join (a new session, present for ``WATCH_TTL_S`` unless refreshed), refresh,
  say typing, or leave; answers ``{session, presence: <snapshot>}``.

Presence is the run's ephemeral board (:mod:`wopdsl.presence`): never an event of its log,
so the run-event feed is unchanged for every client. The membership gate is the one for
posting: ``MEMBER`` must be a human member of the room (else 403 ``forbidden``: presence is
never delivered to a non-member) and the caller must be allowed to post as it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from wopdsl import CouncilState, Presence, PresenceSession, PresenceSnapshot, Run
from wopdsl.errors import ValidationError
from wopdsl.server.errors import ApiError
from wopdsl.server.io import JSONResponse, dumps, read_body, read_object, want_str
from wopdsl.server.routes import Api

__all__ = ["PresenceApi", "presence_routes"]

_MOST_SESSIONS: Final = 10_000
"""Sessions joined over ``POST`` kept at once (the oldest is forgotten beyond)."""


class PresenceApi:
    """The presence boards of a host's runs, and their endpoints."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._boards: dict[str, Presence] = {}
        self._sessions: dict[str, PresenceSession] = {}

    def board(self, run: Run) -> Presence:
        """The run's board: one per run on this host, shared by every watcher here."""
        board = self._boards.get(run.run_id)
        if board is None:
            board = self._boards[run.run_id] = run.presence
            while len(self._boards) > self.api.limits.max_runs:
                del self._boards[next(iter(self._boards))]
        return board

    async def gate(self, request: Request, run: Run, state: CouncilState, room: str,
                   member: str) -> Presence:
        """The membership gate: ``member`` is a person of ``room`` the caller may post as."""
        board = self.board(run)
        try:
            board.check_member(room, member, state)
        except ValidationError as exc:
            raise ApiError(403, "forbidden", exc.message,
                           {"member": member, "room": room, "hint": exc.hint}) from None
        spec: dict[str, Any] = next(
            (m for m in state.council.get("members", []) if m.get("id") == member), {})
        reserved = spec.get("principal")
        principal = str(request.scope.get("state", {}).get("principal") or "")
        self.api.access.check(principal, state, "post", member,
                              reserved if isinstance(reserved, str) else None)
        return board

    async def watch(self, request: Request) -> Response:
        """``GET /v1/runs/{runId}/presence``: SSE of ``channel.presence`` frames, or JSON."""
        run, state = await self.api.run_for(request, "read")
        query = request.query_params
        member = query.get("as")
        if not member:
            raise ApiError(400, "validation_error", "say whom you watch as: ?as=MEMBER",
                           {"field": "as", "hint": "presence is delivered to a room's "
                                                   "members only"})
        rooms = [_room(state, query.get("room"), query.get("conversationId"))] \
            if query.get("room") or query.get("conversationId") else [
            r for r, s in state.rooms.items() if member in s.members]
        boards = [await self.gate(request, run, state, room, member) for room in rooms]
        board = boards[0] if boards else self.board(run)
        if "text/event-stream" not in request.headers.get("accept", ""):
            if len(rooms) != 1:
                raise ApiError(400, "validation_error", "name the room: ?room=ROOM",
                               {"field": "room"})
            await board.refresh()
            return JSONResponse(board.snapshot(rooms[0]).to_json())
        sessions = [await board.join(room, member, state=state) for room in rooms]
        return StreamingResponse(
            _frames(board, rooms, sessions, self.api.limits.keepalive_s),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def post(self, request: Request) -> Response:
        """``POST /v1/runs/{runId}/presence``: join, refresh, type or leave."""
        raw = await read_body(request, self.api.limits.max_body_bytes,
                              self.api.limits.body_timeout_s)
        body = read_object(raw, allowed={"room", "conversationId", "member", "typing",
                                         "leave", "session"}, required={"member"})
        run, state = await self.api.run_for(request, "read")
        member = want_str(body, "member", max_len=64)
        assert member is not None
        room = _room(state, body.get("room"), body.get("conversationId"))
        board = await self.gate(request, run, state, room, member)
        for flag in ("typing", "leave"):
            if flag in body and not isinstance(body[flag], bool):
                raise ApiError(400, "validation_error", f"{flag} must be true or false",
                               {"field": flag})
        key = want_str(body, "session", optional=True, max_len=64)
        session = self._sessions.get(f"{run.run_id}/{key}") if key else None
        if key and (session is None or (session.room, session.member) != (room, member)):
            raise ApiError(404, "not_found", f"no presence session {key!r} of {member} in "
                           f"room {room!r} (it expired or left); join again without session",
                           {"field": "session"})
        if session is None:
            key = secrets.token_urlsafe(12)
            session = await board.join(room, member, state=state)
            self._sessions[f"{run.run_id}/{key}"] = session
            while len(self._sessions) > _MOST_SESSIONS:
                await self._sessions.pop(next(iter(self._sessions))).leave()
        if body.get("leave"):
            await session.leave()
            self._sessions.pop(f"{run.run_id}/{key}", None)
        elif "typing" in body:
            await session.set_typing(bool(body["typing"]))
        else:
            await session.refresh()
        return JSONResponse({"session": key, "presence": board.snapshot(room).to_json()})

    async def close(self) -> None:
        """Leave every session this host holds (on shutdown)."""
        for board in self._boards.values():
            await board.close()


def presence_routes(presence: PresenceApi) -> list[Route]:
    """``GET`` and ``POST /v1/runs/{runId}/presence``."""
    return [Route("/v1/runs/{run_id}/presence", presence.watch, methods=["GET"]),
            Route("/v1/runs/{run_id}/presence", presence.post, methods=["POST"])]


def _room(state: CouncilState, room: Any, conversation: Any) -> str:
    """The room a request names, by id or by its conversation id."""
    if isinstance(conversation, str) and room is None:
        room = conversation.rpartition(":room:")[2] if \
            conversation.startswith(f"{state.run_id}:room:") else None
        if room is None:
            raise ApiError(404, "not_found", f"conversation {conversation!r} is not a room of "
                           f"run {state.run_id}", {"field": "conversationId"})
    if not isinstance(room, str) or room not in state.rooms:
        raise ApiError(404, "not_found", f"run {state.run_id} has no room {room!r} (rooms: "
                       f"{', '.join(state.rooms)})", {"field": "room"})
    return room


async def _frames(board: Presence, rooms: list[str], sessions: list[PresenceSession],
                  keepalive: float) -> AsyncIterator[bytes]:
    """``channel.presence`` frames while the watcher stays; it leaves when it hangs up."""
    updates = board.watch(rooms)
    try:
        pending: asyncio.Future[PresenceSnapshot] | None = None
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(updates))
            done, _ = await asyncio.wait((pending,), timeout=keepalive)
            if not done:
                yield b": keepalive\n\n"
                continue
            snap, pending = pending.result(), None
            yield b"event: channel.presence\ndata: " + dumps(snap.to_json()) + b"\n\n"
    finally:
        if pending is not None:
            pending.cancel()
        with contextlib.suppress(Exception):
            await updates.aclose()
        for session in sessions:
            await session.leave()
