"""The v2 API (``OpenWOP-Version: 2.0``): the v1 host's handlers, in v2 shapes.

Each v2 endpoint names its run by a tenant-bound id; the handler resolves it to the store id
(refusing another tenant's), lets the v1 handler do the work (the same host, runs, limits,
idempotency and errors), and renders the answer in the v2 shape (:mod:`.shapes`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl.protocol.codemap import v2_type
from wopdsl.server import sse
from wopdsl.server.access import owner_of
from wopdsl.server.cache import cached_json
from wopdsl.server.effects import MANIFEST_PATH
from wopdsl.server.errors import ApiError
from wopdsl.server.feed import Frame
from wopdsl.server.io import JSONResponse, want_int
from wopdsl.server.modes import selection_of
from wopdsl.server.openapi import openapi_document
from wopdsl.server.routes import Api
from wopdsl.server.v2.ids import bind, tenant_of, unbind
from wopdsl.server.v2.negotiate import major_of
from wopdsl.server.v2.shapes import discovery_v2, event_v2, run_url, snapshot_v2
from wopdsl.state import CouncilState, build_snapshot, wire_status

__all__ = ["V2Api"]

Handler = Callable[[Request], Awaitable[Response]]


class V2Api:
    """The v2 endpoints over a v1 :class:`~wopdsl.server.routes.Api`."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._lane = "api-key" if api.tokens else "session"
        """How this host's principals sign in (v2 ``subject.schema.json`` ``lane``)."""

    def routes(self) -> list[Route]:
        """Discovery (both representations) first, then the unversioned v2 paths."""
        return [
            Route("/.well-known/openwop", self.discovery, methods=["GET"]),
            Route("/openapi.json", self._v2(self.openapi), methods=["GET"]),
            Route(MANIFEST_PATH, self._v2(self.api.effect_seams), methods=["GET"]),
            Route("/workflows", self._v2(self.api.workflows), methods=["GET"]),
            Route("/workflows/{workflow_id}", self._v2(self.api.workflow), methods=["GET"]),
            Route("/runs", self._v2(self.create_run), methods=["POST"]),
            Route("/runs/{run_id}/events/poll", self._v2(self.poll), methods=["GET"]),
            Route("/runs/{run_id}/events", self._v2(self.events), methods=["GET"]),
            Route("/runs/{run_id}/interrupts/{node_id}", self._v2(self.resolve),
                  methods=["POST"]),
            Route("/runs/{run_id}/cancel", self._v2(self.cancel), methods=["POST"]),
            Route("/runs/{run_ref}", self._v2(self.run_action), methods=["POST"]),
            Route("/runs/{run_id}", self._v2(self.get_run, otherwise=_chat_page()),
                  methods=["GET"]),
        ]

    def _v2(self, handler: Handler, otherwise: Handler | None = None) -> Handler:
        async def only_v2(request: Request) -> Response:
            if major_of(request.scope) != 2 and otherwise is not None:
                return await otherwise(request)  # The chat page shares GET /runs/{runId}.
            if major_of(request.scope) != 2:
                raise ApiError(400, "validation_error",
                               f"{request.url.path} is a v2 path: send OpenWOP-Version: 2.0",
                               {"hint": "v1 paths start with /v1/ (see GET /v1/openapi.json)",
                                "protocolVersions": ["1.0", "2.0"]})
            return await handler(request)

        only_v2.__name__ = handler.__name__
        return only_v2

    # -- discovery -------------------------------------------------------------------------

    async def discovery(self, request: Request) -> Response:
        """``GET /.well-known/openwop``: the v1 document, or the v2 root under 2.x."""
        doc = self.api.capabilities()
        if major_of(request.scope) == 2:
            return cached_json(request, discovery_v2(doc))
        return cached_json(request, doc)

    async def openapi(self, request: Request) -> Response:
        """``GET /openapi.json``: the OpenAPI document with the v2 (unversioned) paths."""
        from wopdsl import __version__

        doc = openapi_document(__version__)
        doc["paths"] = {path.removeprefix("/v1"): item for path, item in doc["paths"].items()}
        return JSONResponse(doc)

    # -- runs ------------------------------------------------------------------------------

    async def create_run(self, request: Request) -> Response:
        """``POST /runs`` → 201 ``{runId: <tenant>/<id>, status, eventsUrl, statusUrl}``."""
        response = await self.api.create_run(request)
        tenant = _tenant(request)
        return _rewrite(response, lambda body: {
            **body, "runId": bind(tenant, body["runId"]),
            "eventsUrl": run_url(tenant, body["runId"], "/events"),
            "statusUrl": run_url(tenant, body["runId"])})

    async def get_run(self, request: Request) -> Response:
        """``GET /runs/{runId}``: the v2 ``RunSnapshot``; ``owner`` is who started the run."""
        tenant = _resolve(request, "run_id")
        response = await self.api.get_run(request)  # 404, 403 (the v1 rules).
        if response.status_code >= 300:
            return response
        state = await self.api.host.state_of(request.path_params["run_id"])
        return _rewrite(response, lambda snap: self._snapshot(state, tenant))

    async def events(self, request: Request) -> Response:
        """``GET /runs/{runId}/events``: SSE of v2 event docs, or the JSON page.

        ``streamMode``/``bufferMs`` are checked before either; ``values`` frames carry v2
        snapshots.
        """
        tenant = _resolve(request, "run_id")
        run_id = request.path_params["run_id"]
        if sse.wants_sse(request):
            await self.api.state_for(request, "read")  # 404, 403 (the v1 rules).
            selection = selection_of(request)
            return sse.stream(self.api.feeds, run_id, sse.cursor_of(request), selection,
                              data=lambda frame: _frame_v2(frame, tenant, self._lane),
                              name=v2_type,
                              snapshot=lambda state: self._snapshot(state, tenant))
        return _rewrite(await self.api.events(request), lambda page: {
            **page, "runId": bind(tenant, run_id),
            "events": [event_v2(e, tenant, lane=self._lane) for e in page["events"]]})

    def _snapshot(self, state: CouncilState, tenant: str) -> dict[str, Any]:
        """The v2 ``RunSnapshot`` of ``state`` as ``tenant`` reads it (``owner``: the starter)."""
        return snapshot_v2(build_snapshot(state), tenant, owner_of(state) or tenant,
                           state.metadata.get("request"), lane=self._lane)

    async def poll(self, request: Request) -> Response:
        """``GET /runs/{runId}/events/poll?afterSequence=N&timeout=S`` (events.md §Poll)."""
        tenant = _resolve(request, "run_id")
        run_id = request.path_params["run_id"]
        store = self.api.host.store
        await self.api.state_for(request, "read")  # 404, 403 (the v1 rules).
        raw = request.query_params.get("afterSequence")
        after = -1 if raw is None else want_int(raw, "afterSequence", low=-1)
        raw = request.query_params.get("timeout")
        timeout = 0 if raw is None else want_int(raw, "timeout", low=0,
                                                  high=int(self.api.limits.max_poll_s))
        host = self.api.host

        async def status_of() -> str:
            return wire_status(await host.state_of(run_id))

        response = await sse.poll(self.api.feeds, store, run_id, after, timeout, status_of)
        state = await host.state_of(run_id)
        status, last = wire_status(state), state.last_sequence
        return _rewrite(response, lambda page: {
            "runId": bind(tenant, run_id),
            "events": [event_v2(e, tenant, lane=self._lane) for e in page["events"]],
            "lastSequence": last, "status": status,
            "isTerminal": status in ("completed", "failed", "cancelled")})

    async def resolve(self, request: Request) -> Response:
        """``POST /runs/{runId}/interrupts/{nodeId}`` ``{resumeValue}``."""
        tenant = _resolve(request, "run_id")
        with _bound_details(tenant):
            response = await self.api.resolve(request)
        return _rewrite(response, lambda body: {**body, "runId": bind(tenant, body["runId"])})

    async def cancel(self, request: Request) -> Response:
        """``POST /runs/{runId}/cancel``."""
        tenant = _resolve(request, "run_id")
        return _rewrite(await self.api.cancel(request),
                        lambda body: {**body, "runId": bind(tenant, body["runId"])})

    async def run_action(self, request: Request) -> Response:
        """``POST /runs/{runId}:fork`` ``{mode?, fromSeq?}``, ``:pause`` and ``:resume``."""
        segment, sep, action = request.path_params["run_ref"].partition(":")
        tenant = tenant_of(_principal(request))
        request.scope["path_params"]["run_ref"] = f"{unbind(segment, tenant)}{sep}{action}"
        with _bound_details(tenant):
            response = await self.api.run_action(request)
        if action != "fork":
            return _rewrite(response, lambda body: {**body, "runId": bind(tenant, body["runId"])})
        return _rewrite(response, lambda body: {
            **body, "runId": bind(tenant, body["runId"]),
            "sourceRunId": bind(tenant, body["sourceRunId"]),
            "eventsUrl": run_url(tenant, body["runId"], "/events")})


@contextlib.contextmanager
def _bound_details(tenant: str) -> Iterator[None]:
    """An error's ``details.runId`` (and ``sourceRunId``) name runs as v2 does: bound."""
    try:
        yield
    except ApiError as exc:
        for key in ("runId", "sourceRunId"):
            if isinstance(exc.details.get(key), str):
                exc.details[key] = bind(tenant, exc.details[key])
        raise


def _chat_page() -> Handler:
    """The chat page's ``GET /runs/{runId}`` (a browser sends no ``OpenWOP-Version``)."""
    from wopdsl.server.page import page_routes

    return next(r.endpoint for r in page_routes() if r.path == "/runs/{run_id}")


def _principal(request: Request) -> str | None:
    principal = request.scope.get("state", {}).get("principal")
    return str(principal) if principal else None


def _tenant(request: Request) -> str:
    return tenant_of(_principal(request))


def _resolve(request: Request, param: str) -> str:
    """Replace the bound id in ``param`` by its store id; return the caller's tenant."""
    tenant = _tenant(request)
    request.scope["path_params"][param] = unbind(request.path_params[param], tenant)
    return tenant


def _rewrite(response: Response, change: Callable[[dict[str, Any]], dict[str, Any]]
             ) -> Response:
    """A JSON response with its body changed (errors and non-JSON pass through)."""
    if response.status_code >= 300 or not isinstance(response, JSONResponse):
        return response
    headers = {k: v for k, v in response.headers.items()
               if k.lower() not in ("content-length", "content-type")}
    return JSONResponse(change(orjson.loads(response.body)), status_code=response.status_code,
                        headers=headers)


def _frame_v2(frame: Frame, tenant: str, lane: str) -> bytes:
    return orjson.dumps(event_v2(orjson.loads(frame.data), tenant, lane=lane))
