"""The turn-result schema an ``llm`` member is asked for, and the check of its answers.

The schema is built per member *and per turn*: its rooms as an enum, and for each room the
other members who may still be asked to act (a member whose turns are all used is left out)
as the mention enum; lists and texts are bounded, so a grammar-constrained model can neither
post outside its rooms, nor request a turn beyond a cap, nor loop until ``max_output_tokens``.
Every field carries its instruction as a ``description`` (the default prompt shows the same
text). Whatever the server does, every answer is checked here (and by the engine after):
error messages name the field and the allowed values, never an excerpt of the answer (RFC
0032 redaction), since they go into events and back to the model for a repair.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from wopdsl.agents.llm.prompts import ANSWER_FIELDS, CHAIR_SUMMARY, RoomView
from wopdsl.agents.llm.votes import VoteOffer, VoteProblem, check_votes, votes_schema

__all__ = ["BOUND_KEYWORDS", "AnswerBounds", "AnswerProblem", "check_answer", "result_schema",
           "strip_bounds"]

BOUND_KEYWORDS = frozenset({"maxItems", "minItems", "uniqueItems", "maxLength", "minLength"})
"""The schema keywords that bound the answer; some strict modes refuse them (see
:func:`strip_bounds`)."""


class AnswerProblem(Exception):
    """An answer that is not a valid turn result; ``reason`` is an RFC 0032 reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True, slots=True)
class AnswerBounds:
    """How long an answer's parts may be (characters), and how many posts it may carry."""

    summary_chars: int
    text_chars: int
    posts: int
    reason_chars: int = 0
    """A vote's reason (0: the member votes on nothing)."""

    @classmethod
    def of(cls, rooms: int, max_output_tokens: int, max_output_bytes: int, *,
           votes: int = 0, chair: bool = False) -> AnswerBounds:
        """Bounds that let a whole answer fit in its token and byte caps.

        At 2 characters a token (most tokenizers give 3 to 4), less the JSON around the
        texts, within ``max_output_tokens``; and within ``max_output_bytes``. ``votes``
        decisions the member may vote on take their share (a reason each, and the JSON
        around it); the chair's summary is the council's answer, so it may be as long as a
        post.
        """
        posts = max(1, rooms)
        chars = min(2 * max_output_tokens, max_output_bytes // 2)
        summary = max(16, min(2000 if chair else 300, chars // (2 if chair else 5)))
        reason = max(16, min(300, chars // (5 * votes))) if votes else 0
        text = max(16, (chars - summary - 100 * posts - (reason + 80) * votes) // posts)
        return cls(summary, text, posts, reason)


def result_schema(rooms: tuple[RoomView, ...], bounds: AnswerBounds,
                  requestable: Collection[str] | None = None, *,
                  votes: tuple[VoteOffer, ...] = (), chair: bool = False) -> dict[str, Any]:
    """The JSON Schema of this member's turn result (strict-mode compatible).

    Args:
        rooms: The rooms the member may post in, with their other members (as it sees
            them: aliases in anonymous rooms).
        bounds: Lengths and counts.
        requestable: The members a mention may name now (``None``: everyone in the room).
        votes: The open decisions the member votes on (none: no ``votes`` property).
        chair: The member is the council's chair (its summary is the answer).
    """
    properties: dict[str, Any] = {"summary": {
        "type": "string", "description": CHAIR_SUMMARY if chair else ANSWER_FIELDS["summary"],
        "maxLength": bounds.summary_chars}}
    required = ["summary"]
    if rooms:
        variants = [_post_schema(room, bounds, requestable) for room in rooms]
        properties["posts"] = {"type": "array", "description": ANSWER_FIELDS["posts"],
                               "items": variants[0] if len(variants) == 1 else
                               {"anyOf": variants},
                               "maxItems": min(bounds.posts, len(rooms))}
        required.append("posts")
    if votes:
        properties["votes"] = votes_schema(votes, bounds.reason_chars)
        required.append("votes")
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


def _post_schema(room: RoomView, bounds: AnswerBounds,
                 requestable: Collection[str] | None) -> dict[str, Any]:
    members = [m for m in room.members if requestable is None or m in requestable]
    mentions: dict[str, Any] = {"type": "array", "description": ANSWER_FIELDS["mentions"]}
    if members:
        mentions.update(items={"type": "string", "enum": members}, maxItems=len(members),
                        uniqueItems=True)
    else:  # nobody may be asked: only [] fits (an empty enum is not valid in strict mode)
        mentions.update(items={"type": "string", "enum": [""]}, maxItems=0)
    return {
        "type": "object",
        "properties": {
            "roomId": {"type": "string", "enum": [room.id],
                       "description": ANSWER_FIELDS["roomId"]},
            "text": {"type": "string", "description": ANSWER_FIELDS["text"],
                     "minLength": 1, "maxLength": bounds.text_chars},
            "mentions": mentions,
        },
        "required": ["roomId", "text", "mentions"],
        "additionalProperties": False,
    }


def strip_bounds(schema: Any) -> Any:
    """The schema without :data:`BOUND_KEYWORDS`.

    For a strict mode that refuses them; the answer is still checked against the bounds.
    """
    if isinstance(schema, dict):
        return {k: strip_bounds(v) for k, v in schema.items() if k not in BOUND_KEYWORDS}
    if isinstance(schema, list):
        return [strip_bounds(v) for v in schema]
    return schema


def check_answer(text: str, rooms: tuple[RoomView, ...], *, truncated: bool = False,
                 bounds: AnswerBounds | None = None,
                 requestable: Collection[str] | None = None,
                 votes: tuple[VoteOffer, ...] = (),
                 decisions: Collection[dict[str, Any]] = ()) -> dict[str, Any]:
    """Parse and check an answer; return the turn result ``{summary, posts?, data?, votes?}``.

    Args:
        text: The model's answer.
        rooms: The rooms the member may post in.
        truncated: The answer was cut at ``max_output_tokens``.
        bounds: Lengths and counts to enforce (``None``: unbounded).
        requestable: The members a mention may name (``None``: everyone in the room).
        votes: The open decisions the member votes on (none: ``votes`` is not allowed).
        decisions: The turn input's ``decisions`` (to name a closed one in a message).

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
    unknown = sorted(set(value) - ({"summary", "posts", "data", "votes"} if votes else
                                   {"summary", "posts", "data"}))
    if unknown:
        raise AnswerProblem("schema-violation", f"unexpected key(s) {len(unknown)}: only "
                            '"summary", "posts"' + (', "votes"' if votes else "") +
                            ' and "data" are allowed')
    summary = value.get("summary")
    if not isinstance(summary, str):
        raise AnswerProblem("type-mismatch" if "summary" in value else "schema-violation",
                            '"summary" must be a string')
    if bounds is not None and len(summary) > bounds.summary_chars:
        raise AnswerProblem("schema-violation", f'"summary" is longer than '
                            f"{bounds.summary_chars} characters; keep it to one sentence")
    result: dict[str, Any] = {"summary": summary}
    if value.get("data") is not None:
        result["data"] = value["data"]
    posts = value.get("posts")
    if posts is not None and posts != []:
        if not isinstance(posts, list):
            raise AnswerProblem("type-mismatch", '"posts" must be an array')
        most = bounds.posts if bounds is not None else None
        if most is not None and rooms:
            most = min(most, len(rooms))
        if most is not None and len(posts) > most:
            raise AnswerProblem("schema-violation", f'"posts" has {len(posts)} entries; at '
                                f"most {most} (one per room)")
        by_id = {room.id: room for room in rooms}
        result["posts"] = [_check_post(f"posts[{index}]", post, by_id, bounds, requestable)
                           for index, post in enumerate(posts)]
    if votes:
        cast = value.get("votes")
        try:
            checked = check_votes([] if cast is None else cast, votes, decisions,
                                  bounds.reason_chars if bounds is not None else None)
        except VoteProblem as problem:
            raise AnswerProblem("schema-violation", str(problem)) from None
        if checked:
            result["votes"] = checked
    return result


def _check_post(where: str, post: Any, by_id: dict[str, RoomView],
                bounds: AnswerBounds | None,
                requestable: Collection[str] | None) -> dict[str, Any]:
    if not isinstance(post, dict) or set(post) - {"roomId", "text", "mentions"}:
        raise AnswerProblem("schema-violation", f'{where} must be an object with '
                            '"roomId", "text" and "mentions" only')
    room = by_id.get(post.get("roomId"))  # type: ignore[arg-type]
    if room is None:
        allowed = ", ".join(by_id) or "none: you are in no room"
        raise AnswerProblem("schema-violation", f"{where}.roomId is not one of your "
                            f"rooms ({allowed})")
    text = post.get("text")
    if not isinstance(text, str):
        raise AnswerProblem("type-mismatch", f"{where}.text must be a string")
    if not text.strip():
        raise AnswerProblem("schema-violation", f"{where}.text is empty; write the message, "
                            'or leave the post out ("posts": [])')
    if bounds is not None and len(text) > bounds.text_chars:
        raise AnswerProblem("schema-violation", f"{where}.text is longer than "
                            f"{bounds.text_chars} characters")
    mentions = post.get("mentions", [])
    if not isinstance(mentions, list) or not all(isinstance(m, str) for m in mentions):
        raise AnswerProblem("type-mismatch", f"{where}.mentions must be an array of "
                            "member ids")
    mayask = [m for m in room.members if requestable is None or m in requestable]
    allowed = ", ".join(mayask) or "nobody: leave it empty"
    for mention in mentions:
        if mention not in room.members:
            raise AnswerProblem("schema-violation", f"{where}.mentions names someone who is "
                                f"not in room {room.id} (you may mention: {allowed})")
        if mention not in mayask:
            raise AnswerProblem("schema-violation", f"{where}.mentions names {mention}, who "
                                "has used all of its turns and cannot be asked again (you "
                                f"may mention: {allowed})")
    # A member named twice is kept once, as in a person's post.
    return {"roomId": room.id, "text": text, "mentions": list(dict.fromkeys(mentions))}


def _strip_fence(text: str) -> str:
    # Models in JSON mode still wrap answers in ```json fences now and then.
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        stripped = stripped[3:-3]
        if stripped.startswith("json"):
            stripped = stripped[4:]
    return stripped.strip()
