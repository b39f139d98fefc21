"""``POST /v1/runs:bulk-cancel`` and, under v2, ``POST /runs:bulk-cancel``.

Each run id is cancelled on its own (v1 ``rest-endpoints.md`` §"POST /v1/runs:bulk-cancel",
v2 ``runs.md`` §Cancel): the answer is ``200 {results: [{runId, ok, status?, error?}]}`` in
request order even when every entry failed (a failed entry's ``error``: ``{code, message}``
under v1, the error envelope ``{error, message, details?}`` under v2). An entry is
``ok: true`` with ``status: cancelled`` for a run cancelled now or before (idempotent);
``ok: false`` with an error
(``not_found``, ``run_terminal`` for a completed or failed run, ``forbidden``,
``id_tenant_mismatch`` for a v2 id bound to another tenant). More than
:data:`MAX_RUN_IDS` ids, or none, is ``400 validation_error`` with ``details.maxRunIds``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl.errors import WopError
from wopdsl.server.errors import ApiError, envelope, from_wop_error
from wopdsl.server.io import JSONResponse, read_body, read_object, want_run_id, want_str
from wopdsl.server.routes import Api
from wopdsl.server.v2.ids import tenant_of, unbind
from wopdsl.server.v2.negotiate import major_of

__all__ = ["MAX_RUN_IDS", "bulk_routes"]

MAX_RUN_IDS: Final = 100
"""The most run ids one bulk-cancel request may name (the spec's recommended cap)."""


def bulk_routes(api: Api) -> list[Route]:
    """The v1 and v2 bulk-cancel routes over ``api``."""

    async def v1(request: Request) -> Response:
        return await _bulk_cancel(api, request, lambda wire: wire)

    async def v2(request: Request) -> Response:
        if major_of(request.scope) != 2:
            raise ApiError(400, "validation_error",
                           "/runs:bulk-cancel is a v2 path: send OpenWOP-Version: 2.0",
                           {"hint": "v1 paths start with /v1/ (see GET /v1/openapi.json)"})
        principal = request.scope.get("state", {}).get("principal")
        tenant = tenant_of(str(principal) if principal else None)
        return await _bulk_cancel(api, request, lambda wire: unbind(wire, tenant))

    return [Route("/v1/runs:bulk-cancel", v1, methods=["POST"]),
            Route("/runs:bulk-cancel", v2, methods=["POST"])]


async def _bulk_cancel(api: Api, request: Request, resolve: Callable[[str], str]) -> Response:
    raw = await read_body(request, api.limits.max_body_bytes, api.limits.body_timeout_s)
    body = read_object(raw, allowed={"runIds", "reason"}, required={"runIds"})
    ids = body["runIds"]
    cap = {"field": "runIds", "maxRunIds": MAX_RUN_IDS}
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise ApiError(400, "validation_error", "runIds must be a non-empty array of run ids",
                       cap)
    if len(ids) > MAX_RUN_IDS:
        raise ApiError(400, "validation_error",
                       f"at most {MAX_RUN_IDS} run ids per request; got {len(ids)}", cap)
    reason = want_str(body, "reason", optional=True, max_len=1000) or "cancelled by client"
    v2 = major_of(request.scope) == 2
    return JSONResponse({"results": [await _one(api, request, wire, resolve, reason, v2=v2)
                                     for wire in ids]})


async def _one(api: Api, request: Request, wire: str, resolve: Callable[[str], str],
               reason: str, *, v2: bool) -> dict[str, Any]:
    """Cancel one run; its entry of ``results``.

    A failed entry's ``error`` is ``{code, message}`` under v1 (``rest-endpoints.md``) and
    the v2 error envelope ``{error, message, details?}`` under v2 (the OpenAPI ``$ref``s
    ``error-envelope.schema.json`` for ``results[].error``).
    """
    try:
        run, state = await api.run_for(request, "cancel", want_run_id(resolve(wire)))
        status = state.status
        if status in ("completed", "failed"):
            raise ApiError(409, "run_terminal", f"run {run.run_id} has already {status}",
                           {"status": status})
        if status != "cancelled":
            await api.host.cancel(run, reason)
        return {"runId": wire, "ok": True, "status": await run.astatus()}
    except (ApiError, WopError) as exc:
        error = exc if isinstance(exc, ApiError) else from_wop_error(exc)
        code = "not_found" if error.code == "run_not_found" else error.code
        if v2:
            return {"runId": wire, "ok": False,
                    "error": envelope(code, error.message, error.details)}
        return {"runId": wire, "ok": False, "error": {"code": code, "message": error.message}}
