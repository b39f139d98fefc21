"""Connections under attack: header and body deadlines, a connection cap, quiet refusals.

uvicorn times out a connection only between two requests (``timeout_keep_alive``, and any
byte received restarts it), so a client that connects and sends nothing, or sends its
request one byte at a time, holds a connection (a file descriptor) for ever; enough of them
and the host can accept nobody. :func:`guarded_protocol` returns uvicorn's h11 protocol
with what is missing:

- **Header deadline** (``Limits.header_timeout_s``, 10 s): a connection that has not sent
  a complete request head by then is closed (with a 408 if it sent part of one).
- **Body deadline** (``Limits.body_timeout_s``, 30 s): the endpoints stop reading a body
  that has not arrived by then (408 ``request_timeout``); the protocol closes a connection
  whose body is still incomplete a few seconds later, whoever reads it.
- **Connection cap** (``Limits.max_connections``, 4096, lowered to what the process's file
  limit allows, see :func:`connection_budget`): a connection beyond it first evicts the
  connection that has waited longest without sending a request head; when every connection
  is busy with a request, the newcomer gets a short 503 ``too_many_connections`` and is
  closed.

Each of these conditions is logged once per minute (:mod:`wopdsl.server.logs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Final

import h11
import orjson
from uvicorn.protocols.http.h11_impl import H11Protocol

from wopdsl.server.config import Limits
from wopdsl.server.errors import envelope

__all__ = ["BODY_GRACE_S", "RESERVED_FDS", "connection_budget", "guarded_protocol"]

RESERVED_FDS: Final = 128
"""File descriptors kept for the store, models, logs and the listening socket."""
_BACKLOG: Final = 2048
"""uvicorn's listen backlog."""
BODY_GRACE_S: Final = 5.0
"""Seconds past the body deadline before the protocol itself closes the connection."""

_log = logging.getLogger("wopdsl.server")


def connection_budget(wanted: int) -> tuple[int, int]:
    """The connection cap and the listen backlog the open-file limit allows.

    The limit is first raised to its hard limit. The event loop accepts up to ``backlog``
    waiting connections in one go before the cap can close any, so the cap leaves room for
    a backlog's burst besides :data:`RESERVED_FDS`: the host never runs out of files.

    Returns:
        ``(max_connections, backlog)``: ``wanted`` (or less) and uvicorn's default 2048 (or
        less).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows has no such limit to respect.
        return wanted, _BACKLOG
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    if soft == resource.RLIM_INFINITY:
        return wanted, _BACKLOG
    spare = max(2, soft - RESERVED_FDS)
    backlog = min(_BACKLOG, max(1, spare // 4))
    return max(1, min(wanted, spare - backlog)), backlog


def _raw_response(status: int, reason: str, code: str, message: str) -> bytes:
    body = orjson.dumps(envelope(code, message))
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode() + body


_TOO_MANY: Final = _raw_response(503, "Service Unavailable", "too_many_connections",
                                 "this host holds as many connections as it allows; retry")
_TIMEOUT: Final = _raw_response(408, "Request Timeout", "request_timeout",
                                "the request did not arrive in time")


def guarded_protocol(limits: Limits, max_connections: int | None = None) -> type[H11Protocol]:
    """Return uvicorn's h11 protocol with the deadlines and the cap of ``limits`` (see the module).

    Pass it as ``uvicorn.Config(app, http=guarded_protocol(limits))``.

    Args:
        limits: The host's limits.
        max_connections: The cap (default ``limits.max_connections``).
    """
    cap = limits.max_connections if max_connections is None else max_connections
    header_s, body_s = limits.header_timeout_s, limits.body_timeout_s + BODY_GRACE_S

    class GuardedH11Protocol(H11Protocol):
        _phase: str | None = None
        _since = 0.0
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > cap and not self._make_room():
                _log.warning("connection refused: %d connections open (the cap)", cap)
                transport.write(_TOO_MANY)
                transport.close()
                return
            self._track()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._track()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._track()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _make_room(self) -> bool:
            """Close the connection idle longest before a request head, if there is one."""
            idle: list[Any] = [c for c in self.connections if c is not self
                               and getattr(c, "_phase", None) == "head"]
            if not idle:
                return False
            oldest = min(idle, key=lambda c: c._since)
            _log.warning("connection cap (%d) reached: closing connections that sent no "
                         "request", cap)
            oldest._disarm()
            oldest.transport.close()
            return True

        def _track(self) -> None:
            """Arm the deadline of what the connection waits for (head, body, nothing)."""
            if self.transport.is_closing():
                self._disarm()
                return
            state = self.conn.their_state
            phase = "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
            if phase == self._phase:
                return
            self._disarm()
            self._phase, self._since = phase, time.monotonic()
            if phase is not None:
                self._timer = self.loop.call_later(header_s if phase == "head" else body_s,
                                                   self._expire)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._phase = None

        def _expire(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            started = self.conn.their_state is not h11.IDLE or bool(self.conn.trailing_data[0])
            if self._phase == "head" and started:
                _log.warning("connection closed: no complete request head within %g s",
                             header_s)
                self.transport.write(_TIMEOUT)
            elif self._phase == "body":
                _log.warning("connection closed: request body incomplete after %g s", body_s)
            self._phase = None
            self.transport.close()

    return GuardedH11Protocol
