"""The readable part of a model member's answer while it streams: the text of its posts.

An ``llm`` member answers with a JSON turn result (``{"summary", "posts": [{"roomId",
"text", "mentions"}]}``) that arrives in ``output.chunk`` events, cut off anywhere. What a
person wants to watch is the text being written, not the JSON around it: this reads the
posts from the partial answer (pydantic-core's partial JSON parser). The chat page of
``wop serve`` does the same in ``static/partial.js``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StreamedCall", "streamed_posts", "streamed_text"]


@dataclass(slots=True)
class StreamedCall:
    """One attempt of a member's model call being streamed to a viewer (AG-UI, A2A)."""

    channel: str
    """The ``output.chunk`` channel of the attempt."""
    position: int
    """The position of the member's turn (its posts' ids)."""
    text: str = ""
    """The answer so far (the chunks, joined)."""
    sent: dict[int, str] = field(default_factory=dict)
    """Post index -> the text of that post sent to the viewer so far."""


def streamed_text(answer: str, room: str | None = None) -> str | None:
    """Return the text of the posts a (possibly cut-off) JSON answer is writing.

    Args:
        answer: The answer's text so far (the ``output.chunk`` chunks, joined).
        room: Only the posts to this room (and those whose room is not known yet).

    Returns:
        The posts' texts as far as they arrived, joined by blank lines (``""`` before any
        post text), or ``None`` when the answer is not JSON (plain text: show it as it is).

    Example:
        >>> streamed_text('{"summary": "Asked.", "posts": [{"roomId": "desk", "text": "Hel')
        'Hel'
        >>> streamed_text("Plain words") is None
        True
    """
    posts = streamed_posts(answer)
    if posts is None:
        return None
    return "\n\n".join(text for post_room, text in posts
                       if text and (room is None or post_room in (None, room)))


def streamed_posts(answer: str) -> list[tuple[str | None, str]] | None:
    """Return ``(room, text)`` of each post a (possibly cut-off) JSON answer is writing.

    Args:
        answer: The answer's text so far.

    Returns:
        One pair per post in the answer's ``posts`` so far, in order (the room ``None``
        while it is not known yet, the text ``""`` before it starts), or ``None`` when the
        answer is not JSON.

    Example:
        >>> streamed_posts('{"posts": [{"roomId": "desk", "text": "Hi"}, {"text": "Th')
        [('desk', 'Hi'), (None, 'Th')]
    """
    body = answer.lstrip()
    if body.startswith("```"):  # A fenced answer: ```json ...
        body = body.partition("\n")[2].lstrip()
    if not body:
        return []
    if not body.startswith("{"):
        return None
    from pydantic_core import from_json

    try:
        data: Any = from_json(body, allow_partial="trailing-strings")
    except ValueError:
        return []
    posts = data.get("posts") if isinstance(data, dict) else None
    if not isinstance(posts, list):
        return []
    return [(post["roomId"] if isinstance(post.get("roomId"), str) else None,
             post["text"] if isinstance(post.get("text"), str) else "")
            for post in posts if isinstance(post, dict)]
