"""What a turn with tools keeps, so that every effect happens exactly once.

The engine gives each turn of a member with tools a :class:`ToolJournal` (on its recorder).
Before a call is made, the model's request is kept (:meth:`ToolJournal.save`, private) and
``agent.toolCalled`` is committed; the result is kept and ``agent.toolReturned`` committed
before the model is called again. A turn that runs again (after a crash, a retry, or an
approval) reads back :meth:`ToolJournal.recorded` and continues from there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from wopdsl.agents.tools.base import ToolOutput

__all__ = ["Decision", "RecordedCall", "ToolJournal", "call_record", "read_records",
           "result_record"]


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's decision on an approval: granted or not, by whom, why."""

    granted: bool
    principal: str
    reason: str = ""


@dataclass(slots=True)
class RecordedCall:
    """One tool call of a turn as the journal knows it."""

    call_id: str
    """``call/{member}/{position}/{n}``: unique in the run, stable across attempts."""
    index: int
    """``n``: the call's number within its turn."""
    round: int
    """Which model answer asked for it (calls of one answer ran in parallel)."""
    tool_call_id: str
    """The model's id for the call (tool messages answer it)."""
    name: str
    arguments: str
    """The model's arguments, as JSON text (unchecked)."""
    text: str = ""
    """The assistant text of its answer (kept on the round's first call)."""
    started: bool = False
    """``agent.toolCalled`` is in the log: the call may have been made."""
    returned: bool = False
    """``agent.toolReturned`` is in the log."""
    output: ToolOutput | None = None
    """The kept result (what the model was given)."""
    status: str = "ok"
    """The result's status (``ok``, ``error``, ``forbidden``)."""
    duration_ms: int = 0
    requested: bool = False
    """An approval was asked for (an ``a2a`` member's message: its agent's question was put
    to the room)."""
    decision: Decision | None = None
    repeat_requested: bool = False
    """An approval to make it again (it was in flight at a crash) was asked for."""
    repeat_decision: Decision | None = None
    remote: str = ""
    """The id the far side gave the call, kept as soon as it is known (an A2A member's
    message: the remote agent's task id), so a turn run again follows it, never resends."""
    reply: dict[str, Any] | None = None
    """For an ``a2a`` member's message its agent asked a question about: the post that
    answered it (the ``interrupt.resolved`` resume value, with its ``messageId``)."""


def call_record(call: RecordedCall) -> str:
    """The private record of a call the model asked for."""
    record = {"round": call.round, "id": call.tool_call_id, "name": call.name,
              "arguments": call.arguments, "text": call.text}
    if call.remote:
        record["remote"] = call.remote
    return json.dumps(record, ensure_ascii=False)


def result_record(output: ToolOutput, status: str, duration_ms: int) -> str:
    """The private record of a call's result."""
    return json.dumps({"text": output.text, "error": output.error, "status": status,
                       "ms": duration_ms}, ensure_ascii=False)


def read_records(call_id: str, index: int, records: dict[str, str]) -> RecordedCall | None:
    """Rebuild a call from its private records (``None`` if the model's request is missing)."""
    raw = records.get(f"{call_id}#call")
    if raw is None:
        return None
    data: dict[str, Any] = json.loads(raw)
    call = RecordedCall(call_id, index, int(data["round"]), str(data["id"]), str(data["name"]),
                        str(data["arguments"]), str(data.get("text", "")),
                        remote=str(data.get("remote", "")))
    result = records.get(f"{call_id}#result")
    if result is not None:
        kept: dict[str, Any] = json.loads(result)
        call.output = ToolOutput(str(kept["text"]), bool(kept.get("error")))
        call.status = str(kept.get("status", "ok"))
        call.duration_ms = int(kept.get("ms", 0))
    return call


class ToolJournal(Protocol):
    """The engine's side of a turn with tools (``recorder.journal``)."""

    run_id: str
    position: int
    """The turn's dispatch position (calls are numbered within it)."""
    replaying: bool
    """A replay-mode fork: results come from the source run; nothing is called."""

    async def recorded(self) -> list[RecordedCall]:
        """The turn's calls so far (earlier attempts), in call order."""

    async def save(self, entries: dict[str, str]) -> None:
        """Keep private records durably (before returning)."""

    async def commit(self) -> None:
        """Make every event recorded so far durable now."""

    async def source(self, call_id: str) -> RecordedCall | None:
        """For a replay: the source run's call with this id and its result."""
