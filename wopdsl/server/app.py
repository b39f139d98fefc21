"""``create_app``: the ASGI app of the OpenWOP host (Starlette), for uvicorn or your own app."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl import Council, EventStore, WopError, load, open_store
from wopdsl.server.agui import AguiApi
from wopdsl.server.auth import BearerAuth
from wopdsl.server.bulk import bulk_routes
from wopdsl.server.config import Limits, Tokens
from wopdsl.server.errors import ApiError, envelope, from_wop_error
from wopdsl.server.feed import Feeds
from wopdsl.server.host import Host
from wopdsl.server.io import JSONResponse, run_not_found
from wopdsl.server.logs import throttle
from wopdsl.server.page import page_routes
from wopdsl.server.presence import PresenceApi, presence_routes
from wopdsl.server.routes import Api
from wopdsl.server.sites import AllowedHosts, SiteGuard
from wopdsl.server.v2 import V2Api, VersionNegotiation
from wopdsl.server.v2.negotiate import major_of, wire_code

__all__ = ["create_app"]

_log = logging.getLogger("wopdsl.server")

Endpoint = Callable[[Request], Awaitable[Response]]
CouncilsArg = Mapping[str, Council] | Iterable[Council | str | os.PathLike[str]]


def create_app(store: str | os.PathLike[str] | EventStore | None = None,
               councils: CouncilsArg = (), *, tokens: Tokens | Mapping[str, str] | None = None,
               limits: Limits | None = None, allowed_hosts: Iterable[str] = (),
               conformance: bool = False, a2a: bool = False) -> Starlette:
    """Return the OpenWOP v1 host for ``councils`` as an ASGI app.

    On startup the app resumes the unfinished runs of its councils that it can claim; on
    shutdown it stops driving and leaves them resumable.

    Args:
        store: Where runs live: a path, ``"memory:"`` or a store (default ``.wop/runs.db``).
        councils: ``Council`` objects or council file paths (``wopdsl.load``).
        tokens: Bearer tokens by principal (``Tokens`` or ``{principal: token}``); without
            any, every caller is the principal ``local`` — serve such an app on loopback only.
        limits: Body size, run and subscriber caps, keep-alive interval (see ``Limits``).
        allowed_hosts: Names the host answers to besides the loopback ones (``Host``
            header; ``*.example.com`` for a domain's subdomains, ``*`` for any name).
            Requests for other names get 400 ``host_not_allowed`` (DNS rebinding).
        conformance: Also serve the OpenWOP conformance fixtures (advertised in discovery
            ``fixtures[]``) and the multi-party test seam (:mod:`wopdsl.server.conformance`).
        a2a: Also serve every council as an A2A 1.0 agent (:mod:`wopdsl.server.a2a`; needs
            the ``a2a`` extra).

    Returns:
        A Starlette app; ``app.state.host`` is its :class:`~wopdsl.server.host.Host`.

    Example:
        >>> app = create_app("memory:", ["councils/release-team.toml"])  # doctest: +SKIP
        >>> # uvicorn.run(app, host="127.0.0.1", port=8000)
    """
    limits = limits or Limits()
    throttle(["wopdsl.server"])  # Its failures logged once per condition per minute.
    if not isinstance(tokens, Tokens):
        tokens = Tokens(dict(tokens or {}))
    st = open_store(store)
    served = councils.values() if isinstance(councils, Mapping) else councils
    loaded = [c if isinstance(c, Council) else load(Path(c)) for c in served]
    extra: list[Route] = []
    stand_in: Any = None  # The approval fixture's model (a loopback server while serving).
    if conformance:  # OpenWOP conformance fixtures and test seam (docs/openwop.md).
        from wopdsl.server.conformance import FIXTURES, StandIn, fixture_councils
        from wopdsl.server.conformance.seam import MultiPartySeam

        stand_in = StandIn()
        loaded += fixture_councils(stand_in)
    host = Host(st, loaded, limits)
    feeds = Feeds(st, limits)
    api = Api(host, feeds, tokens)
    presence = PresenceApi(api)
    if conformance:
        from wopdsl.server.conformance.presence_seam import PresenceSeam

        host.fixtures = frozenset(FIXTURES)
        extra = [*MultiPartySeam(host).routes(), *PresenceSeam(host, presence).routes()]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if stand_in is not None:
            stand_in.start()
        taken = await host.start()
        if taken:
            _log.info("resumed %d unfinished run(s): %s", len(taken), ", ".join(taken))
        try:
            yield
        finally:
            await presence.close()
            await feeds.close()
            await host.stop()
            if stand_in is not None:
                stand_in.stop()

    if a2a:
        from wopdsl.server.a2a import a2a_routes

        extra += a2a_routes(host, feeds, api.access, limits, api.idempotency)
    routes = [Route(r.path, _guard(r.endpoint), methods=list(r.methods or ()))
              for r in [*V2Api(api).routes(), *api.routes(), *bulk_routes(api),
                        *presence_routes(presence), *extra, *AguiApi(api).routes(),
                        *page_routes()]]
    routes.append(Route("/{path:path}", _guard(functools.partial(_no_route, list(routes))),
                        methods=["GET", "POST", "PUT", "PATCH", "DELETE"]))
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: _http_error})
    app.state.host = host
    app.state.api = api
    app.state.presence = presence
    app.add_middleware(BearerAuth, tokens=tokens)
    app.add_middleware(SiteGuard, hosts=AllowedHosts(allowed_hosts))  # Before any route.
    app.add_middleware(VersionNegotiation)  # Outermost: the contract before anything else.
    return app


def _guard(endpoint: Any) -> Endpoint:
    """Answer every failure with the envelope: never a traceback, never a bare 500."""

    @functools.wraps(endpoint)
    async def guarded(request: Request) -> Response:
        try:
            _no_encoded_slash(request)
            response: Response = await endpoint(request)
            return response
        except ApiError as exc:
            return _error_response(exc, request)
        except WopError as exc:
            return _error_response(from_wop_error(exc), request)
        except Exception as exc:
            correlation = uuid.uuid4().hex
            _log.error("internal error %s on %s %s: %s", correlation, request.method,
                       request.url.path, type(exc).__name__, exc_info=exc)
            return JSONResponse(envelope("internal_error", "the host failed to answer this "
                                         "request; it has been logged",
                                         {"correlationId": correlation}), status_code=500)

    return guarded




def _no_encoded_slash(request: Request) -> None:
    """A v1 run path with ``%2F`` names no run: 404 ``run_not_found``, whatever it decodes to.

    The server decodes ``%2F`` before routing, so ``/v1/runs/r-1%2Fcancel`` would otherwise
    reach ``POST /v1/runs/r-1/cancel``. No v1 run id holds a ``/``, so such a segment is
    refused before any handler sees it. (A v2 path's ``<tenant>%2F<id>`` is the legacy form
    of a bound id and is kept one segment: :func:`wopdsl.server.v2.ids.v2_route_path`.)
    """
    raw = request.scope.get("raw_path") or request.url.path.encode()
    if raw.startswith(b"/v1/runs/"):
        segment = raw[len(b"/v1/runs/"):].split(b"/", 1)[0]
        if b"%2f" in segment.lower():
            raise run_not_found(segment.decode("latin-1"))


def _error_response(exc: ApiError, request: Request) -> Response:
    body = envelope(wire_code(exc.code, request.scope), exc.message, exc.details)
    return JSONResponse(body, status_code=exc.status, headers=exc.headers)


async def _no_route(routes: list[Route], request: Request) -> Response:
    path = request.url.path
    allowed = sorted({m for r in routes if r.path_regex.match(path) for m in r.methods or ()})
    if allowed:
        raise ApiError(405, "method_not_allowed", f"{request.method} is not allowed on {path}",
                       {"allowed": allowed}, headers={"Allow": ", ".join(allowed)})
    if path.startswith("/v1/") or path.startswith("/.well-known/") or major_of(request.scope) == 2:
        raise ApiError(404, "not_found", f"no such endpoint: {request.method} {path}",
                       {"hint": "see GET /v1/openapi.json (v2: GET /openapi.json)"})
    raise ApiError(400, "validation_error", f"{path} is not under a versioned root",
                   {"hint": "paths start with /v1/ (see GET /v1/openapi.json)"})


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return JSONResponse(envelope(code, f"{exc.detail} ({request.method} {request.url.path})"),
                        status_code=exc.status_code, headers=exc.headers)
