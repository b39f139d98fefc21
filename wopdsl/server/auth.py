"""Bearer-token auth as an ASGI middleware: fail closed, never echo a token.

Every path answers 401 without a valid ``Authorization: Bearer <token>`` except discovery
(``/.well-known/openwop``, the A2A agent cards of ``wop serve --a2a``), the OpenAPI document
and the chat page's static files (they hold no data; the page sends the person's token on
every API call). A host without tokens
is for loopback only (the CLI refuses another ``--host``); its callers are all the
principal ``local``.
"""

from __future__ import annotations

from typing import Any, Final

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from wopdsl.server.a2a.card import is_card_path
from wopdsl.server.config import Tokens
from wopdsl.server.errors import envelope
from wopdsl.server.page import is_page_path
from wopdsl.server.v2.negotiate import major_of, wire_code

__all__ = ["LOCAL_PRINCIPAL", "PUBLIC_PATHS", "BearerAuth"]

PUBLIC_PATHS: Final = frozenset({"/.well-known/openwop", "/v1/openapi.json", "/openapi.json"})
"""Paths served without a token."""

LOCAL_PRINCIPAL: Final = "local"
"""The principal of every caller of a host without tokens."""


class BearerAuth:
    """Resolve the caller's principal into ``scope["state"]["principal"]``, or answer 401.

    Args:
        app: The wrapped app.
        tokens: The host's tokens; empty means every caller is :data:`LOCAL_PRINCIPAL`.
    """

    def __init__(self, app: ASGIApp, tokens: Tokens) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        path, reading = scope["path"], scope["method"] == "GET"
        if path in PUBLIC_PATHS or (reading and is_card_path(path)) or (
                reading and is_page_path(path) and major_of(scope) != 2):  # v2: GET /runs/{id}
            state["principal"] = None
        elif not self.tokens:
            state["principal"] = LOCAL_PRINCIPAL
        else:
            principal = self._principal(scope)
            if principal is None:
                await _unauthorized(send, wire_code("unauthorized", scope))
                return
            state["principal"] = principal
        await self.app(scope, receive, send)

    def _principal(self, scope: Scope) -> str | None:
        header = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                header = value
                break
        scheme, _, token = header.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.tokens.principal_for(token.strip())


async def _unauthorized(send: Send, code: str) -> None:
    body = orjson.dumps(envelope(
        code, "a valid bearer token is required",
        {"hint": "send Authorization: Bearer <token> (ask the host's operator for one)"}))
    headers: list[Any] = [(b"content-type", b"application/json"),
                          (b"content-length", str(len(body)).encode()),
                          (b"www-authenticate", b'Bearer realm="openwop"')]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
