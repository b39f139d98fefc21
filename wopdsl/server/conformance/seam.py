"""The RFC 0101 multi-party conversation test seam (``host-sample-test-seams.md``).

``POST /v1/host/sample/conversation/multi-party/open`` ``{conversationId, participants,
maxParticipants?}`` opens a council whose one room (``council``) has an ``external`` member
per participant (``host:<id>`` → member ``<id>``); ``…/exchange`` ``{conversationId, turn}``
submits a turn to it. Both go through the production paths: the roster check of run start
(``maxParticipants``) and the engine's door for a submitted turn (membership, attribution,
role), so what the seam accepts or refuses is what ``POST /v1/runs`` and
``POST /v1/runs/{runId}/interrupts/{nodeId}`` accept or refuse.

The seam is RFC 0101's v1 witness: its refusals carry ``validation_error`` (RFC 0005 §E),
with the specific OpenWOP code in ``details.reason`` (``conversation_roster_exceeded``,
``conversation_speaker_not_participant``). Served only with ``wop serve --conformance``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl import Council, CouncilSpec, Run, ValidationError
from wopdsl.server.errors import ApiError
from wopdsl.server.host import Host
from wopdsl.server.io import JSONResponse, read_body, read_object, want_str

__all__ = ["MultiPartySeam"]

PREFIX: Final = "/v1/host/sample/conversation/multi-party"
ROOM: Final = "council"
_MEMBER: Final = re.compile(r"host:([A-Za-z0-9._-]{1,64})")
_MOST_OPEN: Final = 100
"""Conversations the seam keeps open at once (the oldest is forgotten beyond)."""


class MultiPartySeam:
    """The seam's two endpoints, on a host."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._open: dict[str, Run] = {}

    def routes(self) -> list[Route]:
        """``…/open`` and ``…/exchange``."""
        return [Route(f"{PREFIX}/open", self.open, methods=["POST"]),
                Route(f"{PREFIX}/exchange", self.exchange, methods=["POST"])]

    async def open(self, request: Request) -> Response:
        """Open a council of the participants (refused over ``maxParticipants``)."""
        body = read_object(await read_body(request, self.host.limits.max_body_bytes),
                           allowed={"conversationId", "participants", "maxParticipants"},
                           required={"conversationId", "participants"})
        conversation = want_str(body, "conversationId", max_len=256)
        assert conversation is not None
        members = _members(body["participants"])
        limit = self.host.limits.max_participants
        if body.get("maxParticipants") is not None:
            asked = body["maxParticipants"]
            if isinstance(asked, bool) or not isinstance(asked, int) or asked < 2:
                raise ApiError(400, "validation_error", "maxParticipants must be an integer "
                               ">= 2", {"field": "maxParticipants"})
            limit = min(limit, asked)
        spec = CouncilSpec.model_validate({
            "council": {"id": "multi-party-seam", "task": f"RFC 0101 seam: {conversation}",
                        "max_turns_per_member": 8},
            "rooms": [{"id": ROOM, "members": members}],
            "members": [{"id": m, "role": "participant", "engine": "external"}
                        for m in members]})
        try:
            run = await Council.from_spec(spec).astart(self.host.store, max_participants=limit)
            await run.wait()
        except ValidationError as exc:
            raise _refusal(exc) from None
        while len(self._open) >= _MOST_OPEN:
            self._open.pop(next(iter(self._open)))
        self._open[conversation] = run
        return JSONResponse({"conversationId": conversation, "runId": run.run_id,
                             "nodeId": f"room:{ROOM}", "status": await run.astatus(),
                             "participants": [{"agentId": f"host:{m}"} for m in members]})

    async def exchange(self, request: Request) -> Response:
        """Submit a turn: accepted only from a roster member, attributed (RFC 0101)."""
        body = read_object(await read_body(request, self.host.limits.max_body_bytes),
                           allowed={"conversationId", "turn"},
                           required={"conversationId", "turn"})
        conversation = want_str(body, "conversationId", max_len=256)
        run = self._open.get(conversation or "")
        if run is None:
            raise ApiError(404, "conversation_not_found",
                           f"no conversation {conversation!r} was opened through this seam",
                           {"conversationId": conversation})
        turn = body["turn"]
        speaker = turn.get("speakerId") if isinstance(turn, dict) else None
        named = _MEMBER.fullmatch(speaker) if isinstance(speaker, str) else None
        try:
            if named is not None and named.group(1) in (await run.astate()).members:
                message = await self.host.reply(run, room=ROOM, member=named.group(1),
                                                resume=turn)
            else:  # The engine's door refuses it (no speakerId, or not a member).
                message = await run.reply(room=ROOM, as_=None, resume=turn)
        except ApiError as exc:
            if exc.status == 422:
                raise ApiError(422, "validation_error", exc.message,
                               {**exc.details, "reason": exc.code}) from None
            raise
        except ValidationError as exc:
            raise _refusal(exc) from None
        return JSONResponse({"conversationId": conversation, "runId": run.run_id,
                             "messageId": message, "status": await run.astatus()})


def _members(participants: Any) -> list[str]:
    if not isinstance(participants, list) or not participants:
        raise ApiError(400, "validation_error", "participants must be a non-empty list of "
                       "{agentId}", {"field": "participants"})
    members: list[str] = []
    for index, ref in enumerate(participants):
        agent = ref.get("agentId") if isinstance(ref, dict) else None
        match = _MEMBER.fullmatch(agent) if isinstance(agent, str) else None
        if match is None or match.group(1) in members:
            raise ApiError(400, "validation_error",
                           f"participants[{index}].agentId must be a distinct 'host:<id>' "
                           f"(got {agent!r})", {"field": f"participants[{index}].agentId"})
        members.append(match.group(1))
    return members


def _refusal(exc: ValidationError) -> ApiError:
    return ApiError(422, "validation_error", exc.message,
                    {**exc.details, "reason": exc.wire_code})
