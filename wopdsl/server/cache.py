"""Cacheable JSON documents (discovery): ``Cache-Control``, a strong ``ETag``, ``304``.

The discovery document changes only when the host is restarted with other councils or
limits, so clients may keep it for a while (``capabilities.md`` §4) and revalidate it with
``If-None-Match`` (RFC 0165 §C.2): a matching validator is answered ``304 Not Modified``
without a body.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import orjson
from starlette.requests import Request
from starlette.responses import Response

__all__ = ["CACHE_CONTROL", "cached_json"]

CACHE_CONTROL: Final = "public, max-age=300"
"""How long a client may reuse the discovery document without asking again."""


def cached_json(request: Request, doc: Any, *, headers: dict[str, str] | None = None
                ) -> Response:
    """Answer ``doc`` as JSON with ``Cache-Control`` and an ``ETag`` (304 when it matches)."""
    body = orjson.dumps(doc)
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    common = {"Cache-Control": CACHE_CONTROL, "ETag": etag, "Vary": "OpenWOP-Version",
              **(headers or {})}
    if _matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=common)
    return Response(body, media_type="application/json", headers=common)


def _matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    offered = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return "*" in offered or etag in offered
