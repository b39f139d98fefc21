"""``wop serve --a2a``: every served council is also an A2A 1.0 agent (DESIGN.md §25).

Routes (added by ``create_app(..., a2a=True)``):

* ``GET /a2a/{councilId}/.well-known/agent-card.json`` — the council's agent card
  (:mod:`wopdsl.server.a2a.card`), readable without a token like the host's discovery; also
  ``GET /.well-known/agent-card.json`` when the host serves one council;
* ``POST /a2a/{councilId}`` — A2A's JSON-RPC binding, read by the official SDK's dispatcher
  and answered by :class:`~wopdsl.server.a2a.handler.CouncilAgent` from the host's runs.

The host's rules apply as to every route: its bearer tokens (the caller's principal owns
the runs it starts), its allowed host names, and its body bound (a larger request is a
JSON-RPC ``Invalid Request`` error, not read to its end).
"""

from __future__ import annotations

import json
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl.server.a2a.card import CARD_PATH, agent_card
from wopdsl.server.access import Access
from wopdsl.server.config import Limits
from wopdsl.server.errors import ApiError
from wopdsl.server.feed import Feeds
from wopdsl.server.host import Host
from wopdsl.server.idempotency import Idempotency
from wopdsl.server.io import JSONResponse, read_body

__all__ = ["a2a_routes"]

_VERSION_KEY: Final = "wopdsl.a2a.version"
"""Where the A2A version of a request without ``A2A-Version`` is kept in its scope."""


def a2a_routes(host: Host, feeds: Feeds, access: Access, limits: Limits,
               idempotency: Idempotency) -> list[Route]:
    """The A2A routes of ``host``'s councils (see the module docstring)."""
    from a2a.server.context import ServerCallContext
    from a2a.server.routes.common import ServerCallContextBuilder
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
    from a2a.utils.constants import PROTOCOL_VERSION_1_0, VERSION_HEADER

    from wopdsl.server.a2a.handler import CouncilAgent

    class Principal(ServerCallContextBuilder):
        """The call's context: the caller's principal and A2A version, no other header.

        A request without ``A2A-Version`` is of the version its method names: 1.0 for
        ``SendMessage``… (the SDK alone would take it as 0.3 and refuse it), 0.3 for
        ``message/send``… (read by the SDK's 0.3 adapter).
        """

        def build(self, request: Request) -> ServerCallContext:
            version = request.headers.get(VERSION_HEADER) or request.scope.get(_VERSION_KEY) \
                or PROTOCOL_VERSION_1_0
            return ServerCallContext(state={
                "principal": request.scope.get("state", {}).get("principal"),
                "headers": {VERSION_HEADER.lower(): version}})

    dispatchers = {council_id: JsonRpcDispatcher(CouncilAgent(council_id, host, feeds, access,
                                                              idempotency),
                                                 context_builder=Principal(),
                                                 enable_v0_3_compat=True)
                   for council_id in host.councils}

    def council_of(request: Request) -> str:
        council_id = str(request.path_params.get("council_id") or next(iter(host.councils)))
        if council_id not in host.councils:
            raise ApiError(404, "workflow_not_found", f"no council with id {council_id!r} is "
                           "served here", {"workflows": sorted(host.councils)})
        return council_id

    async def card(request: Request) -> Response:
        council = host.council(council_of(request))
        return JSONResponse(agent_card(council, str(request.base_url),
                                       secured=bool(access.tokens)))

    async def rpc(request: Request) -> Response:
        dispatcher = dispatchers[council_of(request)]
        try:
            raw = await read_body(request, limits.max_body_bytes, limits.body_timeout_s)
        except ApiError as exc:
            return _rpc_error(exc.message, exc.headers)
        request.scope[_VERSION_KEY] = _version_of(raw)
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:  # the body was read: what comes now is the client going away
                return dict(await request.receive())
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        response: Response = await dispatcher.handle_requests(Request(request.scope, replay))
        return response

    routes = [Route("/a2a/{council_id}" + CARD_PATH, card, methods=["GET"]),
              Route("/a2a/{council_id}", rpc, methods=["POST"])]
    if len(host.councils) == 1:
        routes.append(Route(CARD_PATH, card, methods=["GET"]))
    return routes


def _version_of(raw: bytes) -> str:
    """The A2A version a JSON-RPC request's method name belongs to (0.3 names hold a ``/``)."""
    try:
        method = json.loads(raw).get("method")
    except (ValueError, AttributeError):
        return "1.0"
    return "0.3" if isinstance(method, str) and "/" in method else "1.0"


def _rpc_error(message: str, headers: dict[str, str] | None) -> Response:
    """A JSON-RPC ``Invalid Request`` error (the request was refused before it was read)."""
    return JSONResponse({"jsonrpc": "2.0", "id": None,
                         "error": {"code": -32600, "message": message}}, headers=headers)
