"""The OpenAPI 3.1 document of this host (``GET /v1/openapi.json``, served without auth)."""

from __future__ import annotations

from typing import Any

__all__ = ["openapi_document"]

_ERROR = {"$ref": "#/components/schemas/Error"}
_RUN_ID = {"name": "runId", "in": "path", "required": True,
           "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}}
_IDEMPOTENCY = {"name": "Idempotency-Key", "in": "header", "required": False,
                "schema": {"type": "string", "maxLength": 255},
                "description": "A retried request with the same key and body acts once."}


def _errors(*statuses: int) -> dict[str, Any]:
    return {str(s): {"description": "error envelope",
                     "content": {"application/json": {"schema": _ERROR}}} for s in statuses}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _op(summary: str, responses: dict[str, Any], *, params: list[Any] | None = None,
        body: dict[str, Any] | None = None, public: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": responses}
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = {"required": True,
                             "content": {"application/json": {"schema": body}}}
    if public:
        op["security"] = []
    return op


def openapi_document(version: str) -> dict[str, Any]:
    """Return the OpenAPI document (a fresh dict)."""
    obj = {"type": "object"}
    event = {"$ref": "#/components/schemas/RunEventDoc"}
    page = {"type": "object", "required": ["events", "isComplete"],
            "properties": {"events": {"type": "array", "items": event},
                           "isComplete": {"type": "boolean"},
                           "lastEventSeq": {"type": "integer"}}}
    auth = (401,)
    return {
        "openapi": "3.1.0",
        "info": {"title": "wopdsl council host (OpenWOP v1)", "version": version},
        "security": [{"bearer": []}],
        "paths": {
            "/.well-known/openwop": {"get": _op("Discovery document", {"200": _json(obj)},
                                                public=True)},
            "/v1/openapi.json": {"get": _op("This document", {"200": _json(obj)},
                                            public=True)},
            "/v1/host/effect-seams": {"get": _op(
                "The effect seams a replay fork guards (v2 replay.md §The effect-seam manifest)",
                {"200": _json({"type": "object",
                               "required": ["manifestVersion", "host", "seams"]}),
                 **_errors(*auth)})},
            "/v1/whoami": {"get": _op("The caller's principal (for a chat page)",
                                      {"200": _json(obj), **_errors(*auth)})},
            "/v1/workflows": {"get": _op("Councils served", {"200": _json(obj),
                                                             **_errors(*auth)})},
            "/v1/workflows/{workflowId}": {"get": _op(
                "One council", {"200": _json(obj), **_errors(401, 404)},
                params=[{"name": "workflowId", "in": "path", "required": True,
                         "schema": {"type": "string"}}])},
            "/v1/runs": {"post": _op(
                "Start a run", {"201": _json({"type": "object",
                                              "required": ["runId", "status", "eventsUrl"]},
                                             "created"),
                                **_errors(400, 401, 404, 413, 422, 429)},
                params=[_IDEMPOTENCY],
                body={"type": "object", "required": ["workflowId"],
                      "properties": {"workflowId": {"type": "string"},
                                     "inputs": {"type": "object",
                                                "properties": {"task": {"type": "string"}},
                                                "additionalProperties": False},
                                     "metadata": obj, "tags": {"type": "array"},
                                     "tenantId": {"type": "string"},
                                     "scopeId": {"type": "string"}}})},
            "/v1/runs/{runId}": {"get": _op("The run's RunSnapshot",
                                            {"200": _json(obj), **_errors(401, 404)},
                                            params=[_RUN_ID])},
            "/v1/runs/{runId}/events": {"get": _op(
                "Events: SSE with Accept: text/event-stream (id = sequence, Last-Event-ID "
                "resumes; streamMode filters, updates by default; bufferMs batches), else "
                "JSON (every event, or the named streamMode's)", {
                    "200": {"description": "events",
                            "content": {"text/event-stream": {"schema": {"type": "string"}},
                                        "application/json": {"schema": page}}},
                    **_errors(400, 401, 404, 503)},
                params=[_RUN_ID, {"name": "Last-Event-ID", "in": "header",
                                  "schema": {"type": "string"}},
                        {"name": "lastSequence", "in": "query",
                         "schema": {"type": "integer"}},
                        {"name": "streamMode", "in": "query", "schema": {
                            "type": "string", "default": "updates", "pattern":
                            "^(values|(updates|messages|debug)(,(updates|messages|debug))*)$"}},
                        {"name": "bufferMs", "in": "query",
                         "schema": {"type": "integer", "minimum": 0, "maximum": 5000}}])},
            "/v1/runs/{runId}/events/poll": {"get": _op(
                "Long poll", {"200": _json(page), **_errors(400, 401, 404, 503)},
                params=[_RUN_ID, {"name": "lastSequence", "in": "query",
                                  "schema": {"type": "integer"}},
                        {"name": "timeout", "in": "query",
                         "schema": {"type": "integer", "minimum": 0, "maximum": 60}}])},
            "/v1/runs/{runId}/interrupts/{nodeId}": {"post": _op(
                "A turn from outside (RFC 0005 §E resume payload) for room node room:<id>",
                {"200": _json({"type": "object", "required": ["runId", "nodeId", "status"]}),
                 **_errors(400, 401, 403, 404, 409, 413, 422)},
                params=[_RUN_ID, {"name": "nodeId", "in": "path", "required": True,
                                  "schema": {"type": "string"}}, _IDEMPOTENCY],
                body={"type": "object", "required": ["resumeValue"],
                      "additionalProperties": False, "properties": {"resumeValue": obj}})},
            "/v1/runs/{runId}/cancel": {"post": _op(
                "Cancel", {"200": _json({"type": "object", "required": ["runId", "status"]}),
                           **_errors(401, 404, 409)},
                params=[_RUN_ID], body={"type": "object",
                                        "properties": {"reason": {"type": "string"}}})},
            "/v1/runs:bulk-cancel": {"post": _op(
                "Cancel runs by id, each on its own (at most 100)",
                {"200": _json({"type": "object", "required": ["results"]}),
                 **_errors(400, 401)},
                body={"type": "object", "required": ["runIds"],
                      "properties": {"runIds": {"type": "array", "minItems": 1,
                                                "maxItems": 100,
                                                "items": {"type": "string"}},
                                     "reason": {"type": "string"}}})},
            "/v1/runs/{runId}:fork": {"post": _op(
                "Fork: events before fromSeq are kept, the rest runs again",
                {"201": _json({"type": "object", "required": [
                    "runId", "sourceRunId", "fromSeq", "mode", "status", "eventsUrl"]},
                    "created"), **_errors(400, 401, 403, 404, 422, 429)},
                params=[_RUN_ID],
                body={"type": "object", "additionalProperties": False,
                      "properties": {"fromSeq": {"type": "integer", "minimum": 0,
                                                 "description": "required for branch; "
                                                                "replay: 0 if left out"},
                                     "mode": {"enum": ["branch", "replay"],
                                              "default": "branch"},
                                     "runOptionsOverlay": {"type": "object",
                                                           "maxProperties": 0}}})},
            "/v1/runs/{runId}:pause": {"post": _op(
                "Pause a running run", {"202": _json(obj, "accepted"),
                                        **_errors(400, 401, 403, 404, 409)},
                params=[_RUN_ID],
                body={"type": "object", "properties": {
                    "reason": {"type": "string"},
                    "drainPolicy": {"enum": ["immediate", "drain-current-node"]}}})},
            "/v1/runs/{runId}:resume": {"post": _op(
                "Resume a paused run", {"202": _json(obj, "accepted"),
                                        **_errors(400, 401, 403, 404, 409)},
                params=[_RUN_ID],
                body={"type": "object", "properties": {"reason": {"type": "string"}}})},
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error", "message"],
                          "additionalProperties": False,
                          "properties": {"error": {"type": "string"},
                                         "message": {"type": "string"},
                                         "details": {"type": "object"}}},
                "RunEventDoc": {"type": "object",
                                "required": ["eventId", "runId", "type", "payload",
                                             "timestamp", "sequence"]},
            },
        },
    }
