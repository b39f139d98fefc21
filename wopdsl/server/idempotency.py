"""``Idempotency-Key``: a retried POST gets the first answer instead of acting twice.

A key belongs to its caller (the principal). The first answer to a keyed request is kept in
the host's store (:meth:`~wopdsl.EventStore.remember_answer`) with the request's semantic
fingerprint — its path, its caller and what its body means (canonical JSON of the fields
that matter: key order and spacing do not count) — for ``Limits.idempotency_ttl_s`` (24 h by
default). A retry within that time, from this host after a restart or from another host on
the same store, gets the same status and body (the routes mark it with the header
``OpenWOP-Idempotent-Replay: true``); the same key with another request gets 409
``idempotency_key_mismatch``. Concurrent retries in one host wait for the first attempt;
errors are not kept (a retry tries again). A crash between acting and keeping the answer
cannot make a retry act twice: a turn post keeps its answer in the transaction that appends
the turn (:class:`Keep`), and a new run's id is derived from the key
(:func:`run_id_for_key`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from wopdsl import EventStore, WopError
from wopdsl.server.errors import ApiError
from wopdsl.store import Answer

__all__ = ["Idempotency", "Keep", "check_key", "fingerprint", "run_id_for_key"]

_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_KEY_V2 = re.compile(r"[A-Za-z0-9._~-]{22,128}")
"""The v2 grammar (v2 ``idempotency.md`` §Layer 1: 128 bits of entropy, base64url or UUID)."""
_PURGE_EVERY = 60.0
"""Seconds between sweeps of expired answers."""

_log = logging.getLogger("wopdsl.server")

Act = Callable[["Keep"], Awaitable[tuple[int, dict[str, Any]]]]
"""A keyed request's action; it may keep its answer itself, with its effect (:class:`Keep`)."""
Answered = tuple[int, dict[str, Any], bool]
"""Status, body, and whether it is a replay of a kept answer."""


def crash_point(name: str) -> None:
    """A test hook: ``WOPDSL_TEST_CRASH_AT=<name>`` kills this process here, as ``kill -9``."""
    if os.environ.get("WOPDSL_TEST_CRASH_AT") == name:
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


def check_key(key: str, *, v2: bool = False) -> str:
    """Return ``key`` if it is 1-255 visible ASCII characters (v2: ``[A-Za-z0-9._~-]{22,128}``).

    Raises:
        ApiError: 400 ``validation_error`` otherwise (v2: ``idempotency_key_invalid``).
    """
    if v2 and not _KEY_V2.fullmatch(key):
        raise ApiError(400, "idempotency_key_invalid",
                       "Idempotency-Key must be 22-128 characters of A-Z a-z 0-9 . _ ~ -",
                       {"field": "Idempotency-Key", "pattern": _KEY_V2.pattern,
                        "hint": "send 16 random bytes in base64url, or a UUID"})
    if not _KEY.fullmatch(key):
        raise ApiError(400, "validation_error",
                       "Idempotency-Key must be 1-255 visible ASCII characters",
                       {"field": "Idempotency-Key"})
    return key


def fingerprint(path: str, principal: str, meaning: Any) -> str:
    """The semantic fingerprint of a request: its path, its caller and its body's meaning."""
    doc = {"path": path, "principal": principal, "request": meaning}
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


def run_id_for_key(council_id: str, principal: str, key: str) -> str:
    """A run id determined by the caller and its key, so a retry finds the same run."""
    digest = hashlib.sha256(f"{principal}\0{key}".encode()).hexdigest()[:24]
    return f"{council_id[:38]}-k{digest}"


class Keep:
    """Builds a keyed request's answer for an action that keeps it in its own transaction.

    A turn post keeps its answer in the transaction that appends the turn
    (:meth:`~wopdsl.EventStore.append_answered`): a retry after a crash at any point finds
    the answer, or finds the turn not appended and posts it once.
    """

    def __init__(self, scope: str, print_: str, at: float) -> None:
        self._scope, self._print, self._at = scope, print_, at
        self.kept: Answer | None = None
        """The answer built last (kept if the action's transaction committed)."""

    def __call__(self, status: int, body: dict[str, Any]) -> Answer:
        """The answer ``status`` and ``body``, to keep with the action's effect."""
        self.kept = Answer(self._scope, self._print, status, body, self._at)
        return self.kept


class Idempotency:
    """Keyed requests' answers, kept in ``store`` for ``lifetime`` seconds.

    Args:
        store: Where the answers are kept (the runs' store).
        lifetime: Seconds an answer is kept for its retries.
    """

    def __init__(self, store: EventStore, lifetime: float) -> None:
        self.store = store
        self.lifetime = lifetime
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        """Per scope in use: its lock and how many requests use it."""
        self._swept = 0.0

    async def run(self, principal: str, key: str, print_: str, act: Act) -> Answered:
        """Answer from the store, or ``act()`` once and keep a successful answer.

        Returns:
            The status, the body, and whether they replay a kept answer.

        Raises:
            ApiError: 409 ``idempotency_key_mismatch`` for the key with another request;
                whatever ``act`` raises (errors are not kept: a retry tries again).
        """
        scope = hashlib.sha256(f"{principal}\0{check_key(key)}".encode()).hexdigest()
        lock, users = self._locks.setdefault(scope, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                return await self._answer(scope, print_, act)
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[scope]

    async def _answer(self, scope: str, print_: str, act: Act) -> Answered:
        now = time.time()
        cutoff = now - self.lifetime
        stored = await asyncio.to_thread(self.store.recall_answer, scope)
        if stored is not None and stored.created_at < cutoff:
            stored = None  # Expired: swept now, so the new answer can be kept.
            self._swept = 0.0
        await self._sweep(now, cutoff)
        if stored is not None:
            if stored.fingerprint != print_:
                raise ApiError(409, "idempotency_key_mismatch",
                               "this Idempotency-Key was used with a different request",
                               {"hint": "use a new key for a new request"})
            return stored.status, stored.body, True
        keep = Keep(scope, print_, now)
        status, body = await act(keep)
        crash_point("idempotent-act")
        if keep.kept is not None and (keep.kept.status, keep.kept.body) == (status, body):
            return status, body, False  # Kept with the action's effect, in one transaction.
        try:
            await asyncio.to_thread(self.store.remember_answer,
                                    Answer(scope, print_, status, body, now))
        except WopError as exc:  # Acted: answer anyway; only a retry's replay is lost.
            _log.warning("an idempotency answer was not kept: %s", exc.code)
        return status, body, False

    async def _sweep(self, now: float, cutoff: float) -> None:
        if now - self._swept < _PURGE_EVERY:
            return
        self._swept = now
        try:
            await asyncio.to_thread(self.store.forget_answers, cutoff)
        except WopError as exc:
            _log.warning("expired idempotency answers were not swept: %s", exc.code)
