"""A2A ``parts`` on v2 conversation turns (RFC 0205 §B).

A v2 turn MAY carry ``parts``, a non-empty array of A2A ``Part`` objects
(``v2/part.schema.json``); their presence marks the turn A2A-shaped, and ``messageId``,
``role`` and ``parts`` then project to an A2A ``Message``. The log keeps each turn's
``content`` (``{text, mentions, votes?, …}``) as it always has; the v2 form of a stored event
(:func:`~wopdsl.protocol.v2_events.event_v2`, what the v2 API serves and ``wop check --v2``
checks) adds ``parts`` derived from it:

* the text, when there is any, as a ``text`` part (``content`` stays readable by consumers
  that predate RFC 0205: it is unchanged);
* the structured rest of the content (``mentions``, ``votes``, a decision's outcome …), when
  there is any, as a ``data`` part with ``mediaType: application/json``.

A turn with neither (an empty system turn) carries no ``parts``: they must be non-empty. A
stored turn that already carries ``parts`` keeps them as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["TURN_SEATS", "turn_parts", "with_parts"]

TURN_SEATS: Final = {"conversation.opened": "initialTurn", "conversation.exchanged": "turn",
                     "conversation.closed": "finalTurn"}
"""Where each conversation event carries its turn."""


def turn_parts(content: Any) -> list[dict[str, Any]]:
    """The A2A parts of a turn's ``content`` (empty when it holds nothing)."""
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if not isinstance(content, Mapping):
        return [] if content is None else [{"data": content,
                                            "mediaType": "application/json"}]
    parts: list[dict[str, Any]] = []
    text = content.get("text")
    if isinstance(text, str) and text:
        parts.append({"text": text})
    rest = {k: v for k, v in content.items() if k != "text" and v not in (None, [], {})}
    if rest:
        parts.append({"data": rest, "mediaType": "application/json"})
    return parts


def with_parts(turn: Any) -> Any:
    """``turn`` with its ``parts`` (a new dict; a turn without content is left as it is)."""
    if not isinstance(turn, Mapping) or "parts" in turn or "content" not in turn:
        return turn
    parts = turn_parts(turn["content"])
    return {**turn, "parts": parts} if parts else turn
