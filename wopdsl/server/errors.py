"""The OpenWOP error envelope ``{error, message, details?}`` and how errors map onto it."""

from __future__ import annotations

from typing import Any

from wopdsl.errors import (
    DeclarationError,
    RunNotFound,
    RunStateConflict,
    StoreConflict,
    StoreError,
    ValidationError,
    WopError,
)

__all__ = ["ApiError", "envelope", "from_wop_error"]


class ApiError(Exception):
    """An HTTP error answered with the envelope; never carries a traceback or a secret.

    Args:
        status: The HTTP status.
        code: The envelope's ``error`` code (``validation_error``, ``run_not_found`` ...).
        message: What went wrong, for a person.
        details: Machine-readable specifics (field paths, limits, hints).
        headers: Extra response headers (``Retry-After``, ``WWW-Authenticate``).
    """

    def __init__(self, status: int, code: str, message: str,
                 details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """Return the envelope."""
        return envelope(self.code, self.message, self.details)


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return ``{error, message, details?}`` (``details`` left out when empty)."""
    body: dict[str, Any] = {"error": code, "message": message}
    if details:
        body["details"] = details
    return body


def from_wop_error(exc: WopError, *, refused_turn: bool = False) -> ApiError:
    """Map a wopdsl error onto an HTTP status and envelope.

    Args:
        exc: The error.
        refused_turn: The error refused a turn sent to a waiting run (422, not 400).
    """
    details: dict[str, Any] = dict(exc.details)
    if exc.hint:
        details["hint"] = exc.hint
    if isinstance(exc, RunNotFound):
        return ApiError(404, exc.wire_code, exc.message, details)
    if isinstance(exc, RunStateConflict):
        return ApiError(409, exc.wire_code, exc.message, details)
    if isinstance(exc, StoreConflict):
        return ApiError(409, "STORE_CONFLICT", exc.message, details)
    if isinstance(exc, ValidationError):
        return ApiError(422 if refused_turn else 400, exc.wire_code, exc.message, details)
    if isinstance(exc, DeclarationError):
        details["problems"] = [
            {"message": p.message, "path": p.path, **({"hint": p.hint} if p.hint else {})}
            for p in exc.problems]
        return ApiError(422, "DECLARATION_INVALID", exc.message.split("\n", 1)[0], details)
    if isinstance(exc, StoreError):
        return ApiError(503, exc.code, exc.message, details)
    return ApiError(500, exc.code, exc.message, details)
