"""The transcript: stable plain text per room, the format snapshot tests lock."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from wopdsl.protocol.envelope import RunEventDoc

__all__ = ["TranscriptProjection", "format_line", "render_transcript"]


@dataclass(slots=True)
class _Line:
    sender: str
    message_id: str
    mentions: list[str]
    text: str


@dataclass(slots=True)
class TranscriptProjection:
    """Folds a run's events into its transcript; follows the log by ``last_sequence``.

    No timestamps or run ids appear in the text, so two runs of a deterministic council give
    byte-identical transcripts.
    """

    council_id: str = ""
    rooms: dict[str, list[str]] = field(default_factory=dict)
    """Room id -> its members, in declaration order."""
    lines: dict[str, list[_Line]] = field(default_factory=dict)
    results: list[tuple[str, str, Any]] = field(default_factory=list)
    status: str = "pending"
    error: dict[str, Any] | None = None
    last_sequence: int = -1

    def apply(self, event: RunEventDoc) -> None:
        """Apply one event (in sequence order)."""
        self.last_sequence = event["sequence"]
        kind, payload = event["type"], event["payload"]
        if kind == "run.started":
            council = payload.get("metadata", {}).get("council", {})
            self.council_id = payload["workflowId"]
            self.rooms = {r["id"]: list(r["members"]) for r in council.get("rooms", [])}
            self.lines = {room: [] for room in self.rooms}
            self.status = "running"
        elif kind == "conversation.exchanged":
            turn = payload["turn"]
            content = turn.get("content") or {}
            room = turn.get("groupId") or event.get("nodeId", "room:")[5:]
            self.lines.setdefault(room, []).append(
                _Line(turn["from"], turn["messageId"], list(content.get("mentions", [])),
                      str(content.get("text", "")))
            )
        elif kind == "run.completed":
            self.status = "completed"
            outputs = payload.get("outputs") or {}
            self.results = [(a["name"], a["role"], a["result"]) for a in outputs.get("agents", [])]
        elif kind == "run.failed":
            self.status = "failed"
            self.error = payload.get("error")
        elif kind == "run.cancelled":
            self.status = "cancelled"

    def render(self, status: str | None = None) -> str:
        """Return the transcript text.

        Args:
            status: The run status to show (the caller's fold may know more than the
                transcript's, e.g. ``waiting-input``); default: the projection's own.
        """
        head = f"council {self.council_id}: {status or self.status}"
        if self.error:
            head += f" [{self.error.get('code')}] {self.error.get('message')}"
        out = [head]
        for room, members in self.rooms.items():
            out.append("")
            out.append(f"room {room} ({', '.join(members)})")
            lines = self.lines.get(room, [])
            if not lines:
                out.append("  (no messages)")
            out.extend("  " + format_line(ln.sender, ln.message_id, ln.mentions, ln.text,
                                          indent="    ") for ln in lines)
        if self.results:
            out.append("")
            out.append("results")
            for name, role, result in self.results:
                summary = "(no turn)" if result is None else str(result.get("summary", ""))
                out.append("  " + _indent(f"{name} ({role}): {summary}", "    "))
        return "\n".join(out) + "\n"


def format_line(sender: str, message_id: str, mentions: list[str], text: str,
                indent: str = "  ") -> str:
    """Format one message: ``sender message-id @mention…: text`` (continuations indented)."""
    tags = "".join(f" @{m}" for m in mentions)
    return _indent(f"{sender} {message_id}{tags}: {text}", indent)


def _indent(text: str, indent: str) -> str:
    return text.replace("\n", "\n" + indent)


def render_transcript(events: Iterable[RunEventDoc], status: str | None = None) -> str:
    """Fold ``events`` and return the transcript text (``status`` overrides the header's)."""
    projection = TranscriptProjection()
    for event in events:
        projection.apply(event)
    return projection.render(status)
