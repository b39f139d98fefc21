"""The transcript: stable plain text per room, the format snapshot tests lock."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from wopdsl.projections.deliberation import dissent_line, outcome_text
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.state import CouncilState

__all__ = ["TranscriptProjection", "decision_lines", "format_line", "render_transcript"]


@dataclass(slots=True)
class TranscriptProjection:
    """A run's transcript, following its log by ``last_sequence``.

    It reads the run's :class:`~wopdsl.state.CouncilState` (rooms, saved messages, status,
    results), the fold every reader shares. No timestamps or run ids appear in the text, so
    two runs of a deterministic council give byte-identical transcripts.
    """

    state: CouncilState = field(default_factory=CouncilState)
    """The run's folded state."""

    @property
    def last_sequence(self) -> int:
        """Sequence of the last event applied."""
        return self.state.last_sequence

    def apply(self, event: RunEventDoc) -> None:
        """Apply one event (in sequence order)."""
        self.state.apply(event)

    def render(self, status: str | None = None) -> str:
        """Return the transcript text (``status`` overrides the run's own in the header)."""
        return render_state(self.state, status)


def render_state(state: CouncilState, status: str | None = None, *,
                 text: Callable[[str], str] | None = None) -> str:
    """Return the transcript text of a folded run (``text``: see :func:`render_transcript`)."""
    show = text or _same
    head = f"council {state.workflow_id}: {status or state.status}"
    if state.error:
        head += f" [{state.error.get('code')}] {state.error.get('message')}"
    out = [head]
    for room_id, room in state.rooms.items():
        out.append("")
        out.append(f"room {room_id} ({', '.join(room.members)})")
        if not room.messages:
            out.append("  (no messages)")
        out.extend("  " + (f"-- {show(m.text)}" if m.system else
                           format_line(m.sender, m.id, m.mentions, show(m.text), indent="    "))
                   for m in room.messages)
    outputs = (state.outputs or {}) if state.terminal == "completed" else {}
    agents = outputs.get("agents", [])
    if agents:
        out.append("")
        out.append("results")
        for agent in agents:
            result = agent["result"]
            summary = "(no turn)" if result is None else show(str(result.get("summary", "")))
            out.append("  " + _indent(f"{agent['name']} ({agent['role']}): {summary}", "    "))
    out += decision_lines(outputs.get("decisions") or [], show)
    if "answer" in outputs:
        out += ["", "answer", "  " + _indent(show(str(outputs["answer"] or "(none)")), "  ")]
    return "\n".join(out) + "\n"


def decision_lines(decisions: list[dict[str, Any]],
                   show: Callable[[str], str] = str) -> list[str]:
    """The ``decisions`` block of a transcript: each outcome, its tally and the dissent."""
    if not decisions:
        return []
    out = ["", "decisions"]
    for block in decisions:
        voted = f"{block.get('voted', 0)} of {len(block.get('voters') or ())} voted"
        out.append(f"  {block.get('id')}: " + outcome_text(
            block.get("outcome"), block.get("tally") or {}, voted, "scale" in block,
            block.get("mean")) if "tally" in block else f"  {block.get('id')}: open")
        out += ["    " + _indent(dissent_line(dissent, show), "      ")
                for dissent in block.get("dissent") or ()]
    return out


def format_line(sender: str, message_id: str, mentions: list[str], text: str,
                indent: str = "  ") -> str:
    """Format one message: ``sender message-id @mention…: text`` (continuations indented)."""
    tags = "".join(f" @{m}" for m in mentions)
    return _indent(f"{sender} {message_id}{tags}: {text}", indent)


def _indent(text: str, indent: str) -> str:
    return text.replace("\n", "\n" + indent)


def render_transcript(
    events: Iterable[RunEventDoc] | CouncilState, status: str | None = None, *,
    text: Callable[[str], str] | None = None,
) -> str:
    """Return the transcript text of a run's events (or of its folded state).

    Args:
        events: The run's events in sequence order, or its :class:`CouncilState`.
        status: Shown in the header instead of the run's own status.
        text: Applied to each message text and result summary (e.g. to escape them for a
            terminal); by default they are written exactly as logged.
    """
    state = events if isinstance(events, CouncilState) else CouncilState.fold(events)
    return render_state(state, status, text=text)


def _same(text: str) -> str:
    return text
