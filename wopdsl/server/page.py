"""The chat page ``wop serve`` serves at ``/`` and ``/runs/{runId}`` (static files, no build).

The page (``static/``: HTML, vanilla JS, CSS, shipped in the wheel) talks to the host only
through its public v1 API. It is served without a token — it holds no data; every API call
it makes carries the bearer token the person types in. A strict Content-Security-Policy
allows only this host's own scripts and styles, so no text a member writes can run.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl.server.errors import ApiError

__all__ = ["ASSETS", "is_page_path", "page_routes"]

ASSETS: Final = {"app.js": "text/javascript", "stream.js": "text/javascript",
                 "partial.js": "text/javascript", "panels.js": "text/javascript",
                 "view.js": "text/javascript", "tools.js": "text/javascript",
                 "deliberation.js": "text/javascript", "presence.js": "text/javascript",
                 "app.css": "text/css", "icon.svg": "image/svg+xml"}
"""The page's files under ``/ui/`` and their media types."""

_PAGE_PATH = re.compile(r"^/(?:runs/[A-Za-z0-9._:~-]{1,200})?$")
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_HEADERS: Final = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
                   "Referrer-Policy": "no-referrer", "Content-Security-Policy": _CSP}


def is_page_path(path: str) -> bool:
    """Whether ``path`` is the page or one of its files (served without a token)."""
    return bool(_PAGE_PATH.match(path)) or path.removeprefix("/ui/") in ASSETS or \
        path == "/favicon.ico"


def _read(name: str) -> bytes:
    return resources.files("wopdsl.server").joinpath("static", name).read_bytes()


async def _index(request: Request) -> Response:
    return Response(_read("index.html"), media_type="text/html; charset=utf-8",
                    headers=_HEADERS)


async def _asset(request: Request) -> Response:
    name = request.path_params.get("name", "icon.svg")  # /favicon.ico: the page's icon
    media = ASSETS.get(name)
    if media is None:
        raise ApiError(404, "not_found", f"no such file: /ui/{name}",
                       {"files": sorted(ASSETS)})
    return Response(_read(name), media_type=f"{media}; charset=utf-8", headers=_HEADERS)


def page_routes() -> list[Route]:
    """The page's routes: ``/``, ``/runs/{runId}``, ``/ui/{name}`` and ``/favicon.ico``.

    ``GET /favicon.ico`` serves the page's icon, for browsers that ask without reading it.
    """
    return [Route("/", _index, methods=["GET"]),
            Route("/runs/{run_id}", _index, methods=["GET"]),
            Route("/ui/{name}", _asset, methods=["GET"]),
            Route("/favicon.ico", _asset, methods=["GET"])]
