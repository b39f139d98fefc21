"""The turn-result schema an ``llm`` member is asked for, and the check of its answers.

The schema is built per member: its rooms as an enum, and for each room the other members
as the mention enum, so a strict server cannot even produce a post outside the member's rooms.
Whatever the server does, every answer is checked here (and by the engine after): error
messages name the field and the allowed values, never an excerpt of the answer (RFC 0032
redaction), since they go into events and back to the model for a repair.
"""

from __future__ import annotations

import json
from typing import Any

from wopdsl.agents.llm.prompts import RoomView

__all__ = ["AnswerProblem", "check_answer", "result_schema"]


class AnswerProblem(Exception):
    """An answer that is not a valid turn result; ``reason`` is an RFC 0032 reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def result_schema(rooms: tuple[RoomView, ...]) -> dict[str, Any]:
    """The JSON Schema of this member's turn result (strict-mode compatible)."""
    properties: dict[str, Any] = {"summary": {"type": "string"}}
    required = ["summary"]
    if rooms:
        variants = [{
            "type": "object",
            "properties": {
                "roomId": {"type": "string", "enum": [room.id]},
                "text": {"type": "string"},
                "mentions": {"type": "array", "items": (
                    {"type": "string", "enum": list(room.members)} if room.members
                    else {"type": "string", "enum": [""]}), **(
                    {} if room.members else {"maxItems": 0})},
            },
            "required": ["roomId", "text", "mentions"],
            "additionalProperties": False,
        } for room in rooms]
        properties["posts"] = {"type": "array",
                               "items": variants[0] if len(variants) == 1 else
                               {"anyOf": variants}}
        required.append("posts")
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


def check_answer(text: str, rooms: tuple[RoomView, ...], *, truncated: bool = False
                 ) -> dict[str, Any]:
    """Parse and check an answer; return the turn result ``{summary, posts?, data?}``.

    Raises:
        AnswerProblem: the answer is not JSON, or not a valid result for this member.
    """
    try:
        value = json.loads(_strip_fence(text))
    except json.JSONDecodeError as exc:
        if truncated:
            raise AnswerProblem("truncation", "the answer was cut off at max_output_tokens "
                                "before the JSON object ended") from None
        raise AnswerProblem("parse-error", f"the answer is not valid JSON ({exc.msg} at "
                            f"line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise AnswerProblem("schema-violation", "the answer must be a JSON object with a "
                            '"summary" string')
    unknown = sorted(set(value) - {"summary", "posts", "data"})
    if unknown:
        raise AnswerProblem("schema-violation", f"unexpected key(s) {len(unknown)}: only "
                            '"summary", "posts" and "data" are allowed')
    summary = value.get("summary")
    if not isinstance(summary, str):
        raise AnswerProblem("type-mismatch" if "summary" in value else "schema-violation",
                            '"summary" must be a string')
    result: dict[str, Any] = {"summary": summary}
    if value.get("data") is not None:
        result["data"] = value["data"]
    posts = value.get("posts")
    if posts is None or posts == []:
        return result
    if not isinstance(posts, list):
        raise AnswerProblem("type-mismatch", '"posts" must be an array')
    by_id = {room.id: room for room in rooms}
    checked = []
    for index, post in enumerate(posts):
        where = f"posts[{index}]"
        if not isinstance(post, dict) or set(post) - {"roomId", "text", "mentions"}:
            raise AnswerProblem("schema-violation", f'{where} must be an object with '
                                '"roomId", "text" and "mentions" only')
        room = by_id.get(post.get("roomId"))  # type: ignore[arg-type]
        if room is None:
            allowed = ", ".join(by_id) or "none: you are in no room"
            raise AnswerProblem("schema-violation", f"{where}.roomId is not one of your "
                                f"rooms ({allowed})")
        if not isinstance(post.get("text"), str):
            raise AnswerProblem("type-mismatch", f"{where}.text must be a string")
        mentions = post.get("mentions", [])
        if not isinstance(mentions, list) or not all(isinstance(m, str) for m in mentions):
            raise AnswerProblem("type-mismatch", f"{where}.mentions must be an array of "
                                "member ids")
        outside = [m for m in mentions if m not in room.members]
        if outside:
            allowed = ", ".join(room.members) or "nobody"
            raise AnswerProblem("schema-violation", f"{where}.mentions names someone who is "
                                f"not in room {room.id} (you may mention: {allowed})")
        checked.append({"roomId": room.id, "text": post["text"], "mentions": list(mentions)})
    result["posts"] = checked
    return result


def _strip_fence(text: str) -> str:
    # Models in JSON mode still wrap answers in ```json fences now and then.
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        stripped = stripped[3:-3]
        if stripped.startswith("json"):
            stripped = stripped[4:]
    return stripped.strip()
