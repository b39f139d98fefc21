"""The host's settings: limits, and the bearer tokens that map to principals."""

from __future__ import annotations

import hmac
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from wopdsl.errors import ValidationError
from wopdsl.protocol.capabilities import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_PARTICIPANTS

__all__ = ["LOOPBACK_HOSTS", "Limits", "Tokens", "is_loopback", "load_tokens"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
"""Addresses a host without tokens may bind to."""

_PRINCIPAL = re.compile(r"[A-Za-z0-9._-]{1,64}")
_MIN_TOKEN = 16


def is_loopback(host: str) -> bool:
    """Return whether ``host`` names a loopback address (``127.0.0.0/8``, ``::1``)."""
    import ipaddress

    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Limits:
    """What the host accepts before it refuses with a clear 413/429/503.

    Attributes:
        max_body_bytes: Largest request body (413 ``payload_too_large`` beyond it).
        max_runs: Most runs this host executes or holds waiting at once (429).
        max_subscribers: Most open event streams (SSE and long polls) at once (503).
        max_subscribers_per_run: Most open event streams on one run (503).
        subscriber_buffer: Events buffered per subscriber; a subscriber that falls this far
            behind is dropped (its stream ends; it reconnects with ``Last-Event-ID``).
        keepalive_s: Seconds between SSE keep-alive comments on an idle stream (at most 15).
        max_poll_s: Longest long-poll wait a client may ask for.
        idempotency_ttl_s: Seconds an ``Idempotency-Key`` answer is kept in the store for
            its retries (24 h).
        idempotency_entries: Unused since answers are kept in the store (kept so that code
            passing it still runs).
        max_participants: ``multiPartyConversation.maxParticipants`` of this host.
        max_connections: Most open connections (``wop serve``; see
            :mod:`wopdsl.server.connections`): one beyond evicts the longest idle one, or
            gets 503 ``too_many_connections``.
        header_timeout_s: Seconds a connection has to send a complete request head.
        body_timeout_s: Seconds a request has to send its body (408 ``request_timeout``).
    """

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_runs: int = 1000
    max_subscribers: int = 2000
    max_subscribers_per_run: int = 200
    subscriber_buffer: int = 1024
    keepalive_s: float = 15.0
    max_poll_s: float = 60.0
    idempotency_ttl_s: float = 24 * 3600.0
    idempotency_entries: int = 10_000
    max_participants: int = DEFAULT_MAX_PARTICIPANTS
    max_connections: int = 4096
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_runs", "max_subscribers", "max_subscribers_per_run",
                     "subscriber_buffer", "idempotency_entries", "max_connections"):
            if getattr(self, name) < 1:
                raise ValueError(f"Limits.{name} must be at least 1")
        for name in ("idempotency_ttl_s", "header_timeout_s", "body_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Limits.{name} must be positive")
        if not 0 < self.keepalive_s <= 15:
            raise ValueError("Limits.keepalive_s must be in (0, 15] seconds")
        if self.max_participants < 2:
            raise ValueError("Limits.max_participants must be at least 2")


class Tokens:
    """Bearer tokens mapped to principals; compared in constant time, never shown.

    Args:
        by_principal: ``{principal: token}``.
        admins: Principals that may read, fork and cancel every run (not only their own).

    Raises:
        ValidationError: a principal is not an identifier, a token is too short, two
            principals share a token, or an admin has no token.
    """

    def __init__(self, by_principal: Mapping[str, str], admins: Iterable[str] = ()) -> None:
        seen: set[str] = set()
        for principal, token in by_principal.items():
            if not _PRINCIPAL.fullmatch(principal):
                raise ValidationError(
                    f"tokens: principal {principal!r} is not 1-64 characters of "
                    "A-Z a-z 0-9 . _ -", hint="rename the principal")
            if not isinstance(token, str) or len(token) < _MIN_TOKEN or token.strip() != token:
                raise ValidationError(
                    f"tokens: the token of principal {principal!r} must be a string of at "
                    f"least {_MIN_TOKEN} characters without surrounding spaces",
                    hint="generate one with `python -c 'import secrets; "
                         "print(secrets.token_urlsafe(32))'`")
            if token in seen:
                raise ValidationError(f"tokens: principal {principal!r} shares its token with "
                                      "another principal", hint="give each principal its own")
            seen.add(token)
        self._pairs = [(p, t.encode()) for p, t in by_principal.items()]
        self.admins = frozenset(admins)
        """Principals that may read, fork and cancel every run."""
        unknown = sorted(self.admins - set(by_principal))
        if unknown:
            raise ValidationError(f"tokens: admin(s) {', '.join(map(repr, unknown))} have no "
                                  "token", hint="list only principals of [tokens] in [admins]")

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def __repr__(self) -> str:  # Never the tokens themselves.
        return (f"Tokens(principals={[p for p, _ in self._pairs]!r}, "
                f"admins={sorted(self.admins)!r})")

    @property
    def principals(self) -> list[str]:
        """The principals, in the order given."""
        return [p for p, _ in self._pairs]

    def principal_for(self, token: str) -> str | None:
        """Return the principal whose token is ``token`` (``None`` when there is none)."""
        offered = token.encode()
        found = None
        for principal, expected in self._pairs:  # Every pair compared: no early exit.
            if hmac.compare_digest(offered, expected):
                found = principal
        return found


def load_tokens(path: str | os.PathLike[str] | None = None,
                env: str | None = None) -> Tokens:
    """Read tokens from a TOML file and/or ``WOP_TOKENS``.

    The file holds ``[tokens]`` with ``principal = "token"`` lines and, optionally,
    ``[admins]`` with ``principals = ["ops"]``: principals that may read, fork and cancel
    every run.

    Args:
        path: The tokens file, if any.
        env: The value of ``WOP_TOKENS`` (``alice=token1,bob=token2``), if any.

    Returns:
        The tokens (empty when neither source gives any).

    Raises:
        ValidationError: unreadable or malformed input; the message never contains a token.
    """
    pairs: dict[str, str] = {}
    admins: list[str] = []
    if path is not None:
        where = os.fspath(path)
        try:
            data = tomllib.loads(Path(where).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValidationError(f"{where}: cannot read the tokens file: {exc.strerror}",
                                  hint="pass --tokens FILE with a readable file") from None
        except tomllib.TOMLDecodeError as exc:
            # The decoder's message quotes no values, only the position.
            raise ValidationError(f"{where}: not valid TOML ({exc})",
                                  hint='write [tokens] then lines like alice = "…"') from None
        table = data.get("tokens")
        extra = sorted(set(data) - {"tokens", "admins"})
        if not isinstance(table, dict) or extra:
            raise ValidationError(f"{where}: expected one [tokens] table"
                                  + (f" (unknown keys: {', '.join(extra)})" if extra else ""),
                                  hint='write [tokens] then lines like alice = "…"')
        admins = _admins(where, data["admins"]) if "admins" in data else []
        for principal, token in table.items():
            if not isinstance(token, str):
                raise ValidationError(f"{where}: tokens.{principal} must be a string",
                                      hint='quote the token: alice = "…"')
            pairs[principal] = token
    if env:
        for index, item in enumerate(part.strip() for part in env.split(",")):
            if not item:
                continue
            principal, sep, token = item.partition("=")
            if not sep:
                raise ValidationError(f"WOP_TOKENS: entry {index + 1} has no '='",
                                      hint="write WOP_TOKENS=alice=token1,bob=token2")
            principal = principal.strip()
            if principal in pairs:
                raise ValidationError(f"WOP_TOKENS: principal {principal!r} given twice",
                                      hint="name each principal once")
            pairs[principal] = token.strip()
    return Tokens(pairs, admins)


def _admins(where: str, table: object) -> list[str]:
    """The ``[admins]`` table: ``principals = ["ops", …]``."""
    principals = table.get("principals") if isinstance(table, dict) else None
    if not isinstance(table, dict) or set(table) - {"principals"} or \
            not isinstance(principals, list) or \
            not all(isinstance(p, str) for p in principals):
        raise ValidationError(f"{where}: [admins] must hold principals = [\"name\", …]",
                              hint='write [admins] then principals = ["ops"]')
    return principals
