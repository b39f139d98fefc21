"""The readable part of a model member's answer while it streams: the text of its posts.

An ``llm`` member answers with a JSON turn result (``{"summary", "posts": [{"roomId",
"text", "mentions"}]}``) that arrives in ``output.chunk`` events, cut off anywhere. What a
person wants to watch is the text being written, not the JSON around it: this reads the
posts from the partial answer (pydantic-core's partial JSON parser). The chat page of
``wop serve`` does the same in ``static/partial.js``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["streamed_text"]


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
    body = answer.lstrip()
    if body.startswith("```"):  # A fenced answer: ```json ...
        body = body.partition("\n")[2].lstrip()
    if not body:
        return ""
    if not body.startswith("{"):
        return None
    from pydantic_core import from_json

    try:
        data: Any = from_json(body, allow_partial="trailing-strings")
    except ValueError:
        return ""
    posts = data.get("posts") if isinstance(data, dict) else None
    texts = [post["text"] for post in posts if isinstance(post, dict)
             and isinstance(post.get("text"), str) and post["text"]
             and (room is None or post.get("roomId") in (None, room))] \
        if isinstance(posts, list) else []
    return "\n\n".join(texts)
