"""Private id minting, identifier rules and clocks."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final, Protocol

IDENT_CHARS: Final = "[A-Za-z0-9._-]"
"""The characters of member, room, council and run ids."""
IDENT_PATTERN: Final = f"^{IDENT_CHARS}{{1,64}}$"
"""Member, room, council and run ids: safe as data, never a path (no '/', no control
chars); ``.`` and ``..`` match but are refused (see :func:`is_ident`)."""
IDENT_RE: Final = re.compile(IDENT_PATTERN)
IDENT_RULE: Final = "1-64 characters of A-Z a-z 0-9 . _ -"
"""The rule in words, for error messages."""
MAX_SAFE_INT: Final = 2**53 - 1

BIDI_CONTROLS: Final = frozenset(
    {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
)
"""Bidirectional formatting characters: shown raw they reorder what a reader sees
("Trojan Source"), so every terminal output, room file and exported file escapes them."""


def is_ident(value: str) -> bool:
    """Return whether ``value`` is a valid member/room/council/run identifier."""
    return IDENT_RE.match(value) is not None and value not in {".", ".."}


def new_run_id(council_id: str) -> str:
    """Mint a fresh, unique run id for a council."""
    return f"{council_id[:40]}-{secrets.token_hex(6)}"


def deterministic_run_id(council_id: str, taken: Callable[[str], bool]) -> str:
    """The first run id ``<council>-1``, ``<council>-2`` … that is not ``taken``."""
    prefix = council_id[:56]
    number = 1
    while taken(f"{prefix}-{number}"):
        number += 1
    return f"{prefix}-{number}"


def event_id(run_id: str, sequence: int) -> str:
    """Mint the event id of ``sequence`` in ``run_id``: unique, 16-128 chars of [A-Za-z0-9._~-]."""
    return f"evt.{run_id}.{str(sequence).zfill(12)}"  # (``:012d``, in half the time)


def conversation_id(run_id: str, room_id: str) -> str:
    """Return the deterministic conversation id of a room in a run."""
    return f"{run_id}:room:{room_id}"


def message_id(sender: str, position: int, post_index: int) -> str:
    """Return the id of an accepted post: ``team/{sender}/{position}/{postIndex}``."""
    return f"team/{sender}/{position}/{post_index}"


class Clock(Protocol):
    """A source of wall time in milliseconds since the epoch."""

    def now_ms(self) -> int:
        """Return the current time in ms since the epoch."""
        ...


class SystemClock:
    """The real wall clock."""

    def now_ms(self) -> int:
        """Return the current time in ms since the epoch."""
        return time.time_ns() // 1_000_000


class FixedClock:
    """A deterministic clock: starts at ``start_ms`` and advances ``step_ms`` per reading."""

    def __init__(self, start_ms: int = 1_767_225_600_000, step_ms: int = 1) -> None:
        self._now = start_ms
        self._step = step_ms

    def now_ms(self) -> int:
        """Return the next reading."""
        value = self._now
        self._now += self._step
        return value


def iso_ms(ms: int) -> str:
    """Format ms since the epoch as ISO 8601 UTC with millisecond precision."""
    seconds, millis = divmod(ms, 1000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{millis:03d}Z"


def parse_iso_ms(text: str) -> int:
    """Parse an ISO 8601 timestamp back into ms since the epoch."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(value.timestamp() * 1000)
