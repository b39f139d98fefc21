"""Private: the fields the fold reads out of the ids the log carries."""

from __future__ import annotations

__all__ = ["exchange_member", "position_of"]


def exchange_member(key: str) -> str:
    """The member of a ``conversation.exchange`` interrupt key ``{cid}:exchange:{member}:{n}``."""
    _, sep, tail = key.rpartition(":exchange:")
    return tail.partition(":")[0] if sep else ""


def position_of(message_id: str) -> int:
    """The dispatch position in a post's id ``team/{sender}/{position}/{index}`` (else 0)."""
    parts = message_id.split("/")
    try:
        return int(parts[-2])
    except (IndexError, ValueError):
        return 0
