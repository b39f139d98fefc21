"""``Idempotency-Key``: a retried POST gets the first answer instead of acting twice.

Keys are scoped to the caller (its principal) and the endpoint; the request body is
fingerprinted so the same key with a different body is refused (409) rather than answered
with an unrelated result. Concurrent retries wait for the first attempt. Answers are kept
in a bounded LRU in memory; run creation is also durable across restarts, because the run
id is derived from the key (see :func:`run_id_for_key`).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from wopdsl.server.errors import ApiError

__all__ = ["IdempotencyCache", "Stored", "check_key", "fingerprint", "run_id_for_key"]

_KEY = re.compile(r"[\x21-\x7e]{1,255}")


@dataclass(frozen=True, slots=True)
class Stored:
    """A remembered answer."""

    fingerprint: str
    status: int
    body: dict[str, Any]


def check_key(key: str) -> str:
    """Return ``key`` if it is 1-255 visible ASCII characters.

    Raises:
        ApiError: 400 otherwise.
    """
    if not _KEY.fullmatch(key):
        raise ApiError(400, "validation_error",
                       "Idempotency-Key must be 1-255 visible ASCII characters",
                       {"field": "Idempotency-Key"})
    return key


def fingerprint(body: bytes) -> str:
    """Return the fingerprint of a request body."""
    return hashlib.sha256(body).hexdigest()


def run_id_for_key(council_id: str, principal: str, key: str) -> str:
    """A run id determined by the caller and its key, so a retry finds the same run."""
    digest = hashlib.sha256(f"{principal}\0{key}".encode()).hexdigest()[:24]
    return f"{council_id[:39]}-k{digest}"


class IdempotencyCache:
    """Answers by ``(scope, key)``, at most ``capacity`` of them (least recent dropped)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._answers: collections.OrderedDict[tuple[str, ...], Stored] = \
            collections.OrderedDict()
        self._locks: dict[tuple[str, ...], tuple[asyncio.Lock, list[int]]] = {}
        """Per scope in use: its lock and how many requests use it."""

    def has(self, scope: tuple[str, ...]) -> bool:
        """Whether an answer for ``scope`` is remembered (a retry will replay it)."""
        return scope in self._answers

    async def run(self, scope: tuple[str, ...], print_: str,
                  act: Callable[[], Awaitable[tuple[int, dict[str, Any]]]]
                  ) -> tuple[int, dict[str, Any]]:
        """Answer from the cache, or ``act()`` once and remember a successful answer.

        Raises:
            ApiError: 409 ``idempotency_key_mismatch`` for the same key with another body;
                whatever ``act`` raises (errors are not remembered: a retry tries again).
        """
        lock, users = self._locks.setdefault(scope, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                stored = self._answers.get(scope)
                if stored is None:
                    status, body = await act()
                    self._answers[scope] = Stored(print_, status, body)
                    while len(self._answers) > self.capacity:
                        self._answers.popitem(last=False)
                    return status, body
                if stored.fingerprint != print_:
                    raise ApiError(409, "idempotency_key_mismatch",
                                   "this Idempotency-Key was used with a different request body",
                                   {"hint": "use a new key for a new request"})
                self._answers.move_to_end(scope)
                return stored.status, stored.body
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[scope]
