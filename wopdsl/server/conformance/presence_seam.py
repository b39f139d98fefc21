"""The RFC 0110 channel-presence test seam (``host-sample-test-seams.md`` §13).

``POST /v1/host/sample/channel-presence/snapshot`` ``{conversationId, member, observer?}``
joins ``member`` (a ``user:<id>`` subject ref) to the conversation for the moment of the
request, then answers the closed ``channel.presence`` snapshot ``{conversationId, present,
typing}`` as ``observer`` (default: ``member``) would receive it, and leaves. A conversation
id of a run's room (``{runId}:room:{roomId}``) is that room; any other id is a channel the seam
opens on first use: a council whose room ``channel`` has one human member, ``member``.

Both go through the production path: the run's presence board and the membership gate of
``GET /v1/runs/{runId}/presence`` (a human member of the room). A member outside the room —
or an ``observer`` outside it — is refused 403 ``forbidden``: presence is never delivered to
a non-member. Served only with ``wop serve --conformance``.
"""

from __future__ import annotations

import re
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl import Council, CouncilSpec, Run
from wopdsl.errors import ValidationError
from wopdsl.server.errors import ApiError
from wopdsl.server.host import Host
from wopdsl.server.io import JSONResponse, read_body, read_object, want_str
from wopdsl.server.presence import PresenceApi

__all__ = ["PresenceSeam"]

PATH: Final = "/v1/host/sample/channel-presence/snapshot"
ROOM: Final = "channel"
_SUBJECT: Final = re.compile(r"user:([A-Za-z0-9._-]{1,64})")
_MOST_OPEN: Final = 100
"""Channels the seam keeps open at once (the oldest is forgotten beyond)."""


class PresenceSeam:
    """The seam's endpoint, on a host and its presence boards."""

    def __init__(self, host: Host, presence: PresenceApi) -> None:
        self.host = host
        self.presence = presence
        self._open: dict[str, Run] = {}

    def routes(self) -> list[Route]:
        """``POST /v1/host/sample/channel-presence/snapshot``."""
        return [Route(PATH, self.snapshot, methods=["POST"])]

    async def snapshot(self, request: Request) -> Response:
        """A transient join of ``member``, then the snapshot ``observer`` receives."""
        body = read_object(await read_body(request, self.host.limits.max_body_bytes),
                           allowed={"conversationId", "member", "observer"},
                           required={"conversationId", "member"})
        conversation = want_str(body, "conversationId", max_len=256)
        assert conversation is not None
        member = _subject(body["member"], "member")
        observer = _subject(body.get("observer", body["member"]), "observer")
        run, room = await self._channel(conversation, member)
        state = await run.astate()
        board = self.presence.board(run)
        for who in (member, observer):
            try:
                board.check_member(room, who, state)
            except ValidationError as exc:
                raise ApiError(403, "forbidden", exc.message,
                               {"member": f"user:{who}", "conversationId": conversation}
                               ) from None
        session = await board.join(room, member, state=state)
        try:
            snap = board.snapshot(room).to_json()
        finally:
            await session.leave()
        return JSONResponse({**snap, "conversationId": conversation})

    async def _channel(self, conversation: str, member: str) -> tuple[Run, str]:
        """The run and room of ``conversation``; a seam channel is opened on first use."""
        run_id, marker, room = conversation.partition(":room:")
        if marker and self.host.store.exists(run_id):
            return await self.host.open(run_id), room
        run = self._open.get(conversation)
        if run is None:
            spec = CouncilSpec.model_validate({
                "council": {"id": "channel-presence-seam",
                            "task": f"RFC 0110 seam: {conversation}"},
                "rooms": [{"id": ROOM, "members": [member]}],
                "members": [{"id": member, "role": "user", "engine": "human",
                             "initial_turn": False}]})
            run = await Council.from_spec(spec).astart(self.host.store)
            await run.wait()
            while len(self._open) >= _MOST_OPEN:
                self._open.pop(next(iter(self._open)))
            self._open[conversation] = run
        return run, ROOM


def _subject(value: object, field: str) -> str:
    """The member id of a ``user:<id>`` subject ref (400 otherwise)."""
    match = _SUBJECT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ApiError(400, "validation_error", f"{field} must be a 'user:<id>' subject ref "
                       f"(got {value!r})", {"field": field})
    return match.group(1)
