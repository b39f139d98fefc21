"""Request bodies in, JSON responses out: size-limited, strictly typed, enveloped errors."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Final

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from wopdsl.server.errors import ApiError

__all__ = ["MAX_SEQUENCE", "JSONResponse", "dumps", "read_body", "read_object", "run_not_found",
           "want_int", "want_run_id", "want_str"]

MAX_SEQUENCE: Final = 2**63 - 1
"""The largest integer a query or header may carry (a signed 64-bit value, as stores keep)."""

_INTEGER: Final = re.compile(r"-?[0-9]{1,20}")
_RUN_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""What a run id may be (ids this package mints are 1-65 of these characters)."""

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


async def read_body(request: Request, limit: int, timeout: float | None = None) -> bytes:
    """Read the body: at most ``limit`` bytes (413), within ``timeout`` seconds (408).

    A body that is too large is refused without being read to its end; a client that
    stopped sending gets 408 ``request_timeout`` and its connection is closed.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "validation_error", "Content-Length is not a number",
                           {"field": "Content-Length"})
        if int(declared) > limit:
            raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _too_large(limit)
                chunks.append(chunk)
    except TimeoutError:
        raise ApiError(408, "request_timeout", f"the request body did not arrive within "
                       f"{timeout:g} s", {"limit": "bodyTimeoutSeconds", "value": timeout},
                       headers={"Connection": "close"}) from None
    except ClientDisconnect:
        raise ApiError(400, "client_disconnected", "the client went away while sending "
                       "the request body") from None
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


def want_int(value: Any, field: str, *, low: int, high: int = MAX_SEQUENCE) -> int:
    """Return ``value`` as an integer in ``[low, high]`` (400 otherwise).

    Strings (query values, headers) are parsed strictly: ASCII digits with an optional
    minus sign, nothing else (no spaces, ``_``, ``+`` or other scripts' digits).
    """
    if isinstance(value, str):
        value = int(value) if _INTEGER.fullmatch(value) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < low or value > high:
        bound = f"{low}..{high}"
        raise ApiError(400, "validation_error", f"{field} must be an integer {bound}",
                       {"field": field})
    return value


def want_run_id(run_id: str) -> str:
    """Return ``run_id`` if it may name a run; 404 ``run_not_found`` otherwise.

    Checked before any store is asked: an id with a NUL or a control character is no run
    here, whatever the store would make of it.
    """
    if not _RUN_ID.fullmatch(run_id) or run_id in {".", ".."}:
        raise run_not_found(run_id)
    return run_id


def run_not_found(run_id: str) -> ApiError:
    """The 404 for a run this host does not hold."""
    shown = run_id if len(run_id) <= 128 else run_id[:128] + "…"
    return ApiError(404, "run_not_found", f"run {shown!r} not found", {"runId": shown})


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)
