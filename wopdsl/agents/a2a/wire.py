"""What an ``a2a`` member sends and how its remote agent's answer becomes a turn result.

Pure JSON (the A2A 1.0 ``Message``/``Task`` objects as their JSON form, camelCase keys), so
the rules are readable and testable without the SDK:

* the turn goes out as one user message: a text part (the brief, the task and the room
  messages) and a data part ``{"input": <turn input>, "resultSchema": <turn result schema>}``;
* a question (``input-required``) is answered by a post in the room: the next message to the
  same task carries it (:func:`reply_parts`);
* an answer's data part that is a turn result (``summary`` and nothing else than ``data``,
  ``posts``, ``votes``) is the result, as it is (the engine checks its posts like any
  member's); otherwise its text is the member's post in the room that triggered the turn,
  with the ``@name`` mentions in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from wopdsl.agents.base import turn_context
from wopdsl.model.mentions import parse_mentions
from wopdsl.model.turns import Turn

__all__ = ["ANSWERED", "WAITING", "Answer", "answer_of", "outgoing_parts", "reply_parts",
           "reply_room", "result_of", "state_name", "text_of"]

ANSWERED: Final = frozenset({"completed"})
"""Task states whose artifacts are the member's answer."""
FAILED: Final = frozenset({"failed", "rejected", "canceled", "auth-required"})
"""Task states that fail the turn (``auth-required``: the member's headers are not enough)."""
WAITING: Final = frozenset({"input-required"})
"""Task states in which the agent waits for an answer (DESIGN.md §25)."""
SUMMARY_CHARS: Final = 300
"""Longest summary taken from an answer's text (its first line)."""
_RESULT_KEYS: Final = frozenset({"summary", "data", "posts", "votes"})


def state_name(value: Any) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` (or ``input-required``) → ``input-required``."""
    text = str(value or "").lower()
    text = text.removeprefix("task_state_")
    return text.replace("_", "-")


def outgoing_parts(turn: Turn, schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of the message a turn sends: the text, then the structured input."""
    sections = [turn.brief.strip()] if turn.brief.strip() else []
    sections.append(f"Task: {turn.task}")
    if turn.messages:
        sections.append("\n".join(["Messages:", *(
            f"[{m.room}] {m.sender} ({m.id}){''.join(f' @{n}' for n in m.mentions)}: "
            f"{m.text}" for m in turn.messages)]))
    return [{"text": "\n\n".join(sections)},
            {"data": {"input": turn_context(turn), "resultSchema": schema}}]


def reply_parts(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of the message that answers an agent's question: the post that answered it.

    ``reply`` is the answer's resume value (``{turn: {speakerId, content}, messageId}``): its
    text, then a data part ``{"answer": {messageId, from, text, mentions}}``.
    """
    turn = reply.get("turn") or {}
    content = turn.get("content") or {}
    text = str(content.get("text", ""))
    sender = str(turn.get("speakerId", "")).removeprefix("host:")
    return [{"text": text},
            {"data": {"answer": {"messageId": str(reply.get("messageId", "")), "from": sender,
                                 "text": text, "mentions": list(content.get("mentions") or ())}}}]


def reply_room(turn: Turn, rooms: tuple[str, ...]) -> str | None:
    """The room a member's text answer (or its agent's question) goes to.

    The room of the turn's first trigger; for an initial turn, the member's first room.
    """
    return turn.triggers[0].room if turn.triggers else (rooms[0] if rooms else None)


@dataclass(frozen=True, slots=True)
class Answer:
    """What a remote agent answered, as far as the turn is concerned."""

    state: str
    """The task's state (``completed``, ``input-required`` …; ``completed`` for a bare
    message)."""
    task_id: str
    """The task's id (empty for a bare message)."""
    parts: tuple[dict[str, Any], ...]
    """The answer's parts: the task's artifacts' parts, then its status message's."""
    status_text: str
    """The text of the status message alone (a question, or why the task failed)."""


def answer_of(value: dict[str, Any]) -> Answer:
    """The :class:`Answer` of a ``Task`` or ``Message`` (JSON form)."""
    if "parts" in value and "status" not in value:  # a bare Message
        return Answer("completed", str(value.get("taskId", "")), tuple(_parts(value)), "")
    status = value.get("status") or {}
    message = status.get("message") or {}
    status_parts = _parts(message)
    parts = [part for artifact in value.get("artifacts") or () if isinstance(artifact, dict)
             for part in _parts(artifact)]
    return Answer(state_name(status.get("state")), str(value.get("id", "")),
                  tuple(parts + status_parts), text_of(status_parts))


def _parts(holder: Any) -> list[dict[str, Any]]:
    parts = holder.get("parts") if isinstance(holder, dict) else None
    return [part for part in parts or () if isinstance(part, dict)]


def text_of(parts: Any) -> str:
    """The text parts joined (a line between two)."""
    return "\n".join(str(part["text"]) for part in parts
                     if isinstance(part, dict) and isinstance(part.get("text"), str)).strip()


def result_of(answer: Answer, turn: Turn, rooms: tuple[str, ...]) -> dict[str, Any]:
    """The turn result an answer stands for (checked by the engine like any member's).

    Args:
        answer: A completed task's answer.
        turn: The turn it answers (its triggers name the room a text answer goes to).
        rooms: The member's rooms, in declaration order.

    Raises:
        ValueError: the answer holds neither a turn result nor text.
    """
    for part in answer.parts:
        data = part.get("data")
        if isinstance(data, dict) and isinstance(data.get("summary"), str) and \
                set(data) <= _RESULT_KEYS:
            return data
    text = text_of(answer.parts)
    if not text:
        raise ValueError("the agent answered neither text nor a turn result (a data part "
                         "with a summary)")
    summary = text.splitlines()[0][:SUMMARY_CHARS]
    room = reply_room(turn, rooms)
    if room is None:
        return {"summary": summary}
    return {"summary": summary,
            "posts": [{"roomId": room, "text": text, "mentions": parse_mentions(text)}]}
