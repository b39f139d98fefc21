"""``OpenWOP-Version`` negotiation (v2 ``versioning.md`` §1.3–§1.4) as an ASGI middleware.

The request header selects the contract: none or ``1.x`` is v1 (``/v1/…`` paths), ``2.x``
is v2 (the unversioned paths ``/runs``, ``/workflows``, ``/openapi.json``); discovery
(``/.well-known/openwop``) is one resource with a representation per major. A major this
host does not serve is ``406 protocol_version_unsupported`` (``details.protocolVersions``);
``2.x`` on a ``/v1/`` path is ``400 protocol_version_mismatch``. Every response carries
``OpenWOP-Version`` naming the contract that produced it.
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wopdsl.protocol.capabilities import PROTOCOL_VERSIONS as SPOKEN
from wopdsl.server.errors import envelope
from wopdsl.server.v2.ids import v2_route_path

__all__ = ["PROTOCOL_VERSIONS", "V2_CODES", "VersionNegotiation", "major_of", "wire_code"]

PROTOCOL_VERSIONS: Final = SPOKEN
"""The versions this host speaks (discovery ``protocolVersions``)."""

V2_CODES: Final = {"run_not_found": "not_found", "workflow_not_found": "not_found",
                   "unauthorized": "unauthenticated"}
"""Error codes this host names that v2's registry (``error-envelope.schema.json``) spells
otherwise; a v2 response carries the registered code."""

_VERSION: Final = re.compile(r"\s*(\d{1,3})(?:\.(\d{1,3}))?\s*")


def major_of(scope: Scope) -> int:
    """The major a request speaks (set by :class:`VersionNegotiation`; 1 without it)."""
    return int(scope.get("state", {}).get("openwop_major", 1))


def wire_code(code: str, scope: Scope) -> str:
    """``code`` as the request's contract names it (v2: :data:`V2_CODES`)."""
    return V2_CODES.get(code, code) if major_of(scope) == 2 else code


class VersionNegotiation:
    """Select the contract from ``OpenWOP-Version``; stamp it on the response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = None
        for name, value in scope.get("headers", ()):
            if name == b"openwop-version":
                header = value.decode("latin-1")
        major = 1
        if header is not None:
            match = _VERSION.fullmatch(header)
            major = int(match.group(1)) if match else -1
        if major not in (1, 2):
            await _refuse(send, 406, "protocol_version_unsupported",
                          f"OpenWOP-Version {header!r} names no version this host serves",
                          {"protocolVersions": list(PROTOCOL_VERSIONS)})
            return
        if major == 2 and scope["path"].startswith("/v1/"):
            await _refuse(send, 400, "protocol_version_mismatch",
                          "OpenWOP-Version 2 on a /v1/ path: v2 paths are unversioned "
                          "(/runs, /workflows …)", {"protocolVersions": list(PROTOCOL_VERSIONS)},
                          major=1)
            return
        scope.setdefault("state", {})["openwop_major"] = major
        rerouted = v2_route_path(scope.get("raw_path") or b"")
        if rerouted is not None:
            scope = {**scope, "path": rerouted}
        stamp = f"{major}.0".encode()

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()),
                                                  (b"openwop-version", stamp)]}
            await send(message)

        await self.app(scope, receive, stamped)


async def _refuse(send: Send, status: int, code: str, message: str, details: dict[str, Any],
                  *, major: int = 2) -> None:
    body = orjson.dumps(envelope(code, message, details))
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"openwop-version", f"{major}.0".encode())]})
    await send({"type": "http.response.body", "body": body})
