"""Request bodies in, JSON responses out: size-limited, strictly typed, enveloped errors."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from wopdsl.server.errors import ApiError

__all__ = ["JSONResponse", "dumps", "read_body", "read_object", "want_int", "want_str"]

_exact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                          check_circular=False).encode


def dumps(content: Any) -> bytes:
    """Encode ``content`` as compact JSON: orjson, or the standard library for what it refuses.

    The doors keep new values within what orjson writes (``wopdsl.protocol.bounds``), but a log
    written before them may hold an integer beyond 64 bits or a value nested past orjson's 254
    levels: such a run's events are still served, never a 500.
    """
    try:
        return orjson.dumps(content)
    except TypeError:
        return _exact(content).encode()


class JSONResponse(Response):
    """A JSON response encoded with orjson (see :func:`dumps`)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        """Encode ``content``."""
        return dumps(content)


async def read_body(request: Request, limit: int) -> bytes:
    """Read the body, refusing more than ``limit`` bytes (413) without reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "validation_error", "Content-Length is not a number",
                           {"field": "Content-Length"})
        if int(declared) > limit:
            raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "payload_too_large", f"the request body is larger than {limit} bytes",
                    {"limit": "maxRequestBodyBytes", "value": limit})


def read_object(raw: bytes, *, allowed: set[str], required: set[str] = frozenset(),  # type: ignore[assignment]
                empty_ok: bool = False) -> dict[str, Any]:
    """Parse a JSON object body with only ``allowed`` keys and every ``required`` one.

    Raises:
        ApiError: 400 ``validation_error`` naming what is wrong.
    """
    if not raw.strip():
        if empty_ok and not required:
            return {}
        raise ApiError(400, "validation_error", "the request body must be a JSON object",
                       {"required": sorted(required)})
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, "validation_error", f"the request body is not valid JSON: {exc}",
                       {"hint": "send Content-Type: application/json with a JSON object"}
                       ) from None
    if not isinstance(data, dict):
        raise ApiError(400, "validation_error",
                       f"the request body must be a JSON object, not {_kind(data)}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ApiError(400, "validation_error", f"unknown field(s): {', '.join(unknown)}",
                       {"fields": unknown, "allowed": sorted(allowed)})
    missing = sorted(required - set(data))
    if missing:
        raise ApiError(400, "validation_error", f"missing field(s): {', '.join(missing)}",
                       {"fields": missing})
    return data


def want_str(data: dict[str, Any], field: str, *, optional: bool = False,
             max_len: int = 4096) -> str | None:
    """Return ``data[field]`` as a non-empty string (400 otherwise)."""
    value = data.get(field)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > max_len:
        raise ApiError(400, "validation_error",
                       f"{field} must be a non-empty string of at most {max_len} characters "
                       f"(got {_kind(value)})", {"field": field})
    return value


def want_int(value: Any, field: str, *, low: int, high: int | None = None) -> int:
    """Return ``value`` as an integer in ``[low, high]`` (400 otherwise); strings are parsed."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low or \
            (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise ApiError(400, "validation_error", f"{field} must be an integer {bound}",
                       {"field": field})
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)
