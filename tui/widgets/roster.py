"""The roster panel: each member's role, state and turns used of its cap."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Final

from rich.text import Text
from textual.widgets import Static
from wopdsl_tui.bridge import MemberInfo

from wopdsl.projections import terminal_safe
from wopdsl.projections.streaming import streamed_text

__all__ = ["STATE_LABELS", "Roster"]

STATE_LABELS: Final[Mapping[str, tuple[str, str]]] = {
    "queued": ("queued", "yellow"),
    "running": ("running", "bold green"),
    "waiting": ("waiting for input", "bold magenta"),
    "done": ("done", "dim"),
    "failed": ("failed", "bold red"),
    "idle": ("idle", "dim"),
}
"""Member phase (the ``nodeStates`` status names) -> (label, style) as the roster shows it."""


class Roster(Static):
    """Members in declaration order: name and state, then role (wrapped, never cut) and turns."""

    DEFAULT_CSS = """
    Roster {
        width: 32;
        height: 1fr;
        border: round $primary;
        border-title-color: $text;
        padding: 0 1;
        overflow-y: auto;
    }
    """

    def on_mount(self) -> None:
        self.border_title = "Roster"

    def show_members(self, members: Sequence[MemberInfo], phases: Mapping[str, str],
                     colors: Mapping[str, str], usage: Mapping[str, str] | None = None,
                     streams: Mapping[str, str] | None = None,
                     present: Mapping[str, str] | None = None) -> None:
        """Redraw from the members (turns, cap) and each one's phase (``RunFold.phase``).

        ``present``: the people watching the run (``watching``, or ``typing``), marked
        beside their role (channel presence).

        ``llm`` members get a line with their model tokens (and cost) and, while a turn is
        in flight, the end of the text their model is writing: its posts' text, not the
        JSON around it (``streams`` holds each member's answer so far).
        """
        width = max(12, self.scrollable_content_region.width or 28)
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for number, member in enumerate(members):
            phase = phases.get(member.id, "idle")
            label, style = STATE_LABELS.get(phase, (phase, ""))
            name = _fit(member.id, width - len(label) - 1)
            if number:
                text.append("\n")
            text.append(name, style=f"bold {colors.get(member.id, '')}".strip())
            text.append(" " * (width - len(name) - len(label)))
            text.append(label, style=style)
            turns = f"{member.turns}/{member.cap or '?'} turns"
            role = terminal_safe(member.role) + (" · human" if member.human else "")
            seen = (present or {}).get(member.id)
            if seen is not None:
                role += " · ✎ typing" if seen == "typing" else " · ● watching"
            lines = textwrap.wrap(role, width - 2, break_on_hyphens=False) or [""]
            for line in lines:
                text.append("\n  ")
                text.append(line, style="dim")
            if len(lines[-1]) + 2 + 1 + len(turns) > width:
                text.append("\n")  # No room beside the role's last line: turns below it.
                text.append(" " * (width - len(turns)))
            else:
                text.append(" " * (width - 2 - len(lines[-1]) - len(turns)))
            text.append(turns)
            spent = (usage or {}).get(member.id)
            if spent:
                text.append("\n")
                text.append(_fit(f"  {spent}", width), style="cyan")
            answer = (streams or {}).get(member.id)
            if answer and phase == "running":
                readable = streamed_text(answer)
                tail = " ".join(terminal_safe(answer if readable is None else readable).split())
                text.append("\n")
                text.append(_fit("  ▸ " + (tail[-(width - 4):] or "writing…"), width),
                            style="italic dim")
        self.update(text)


def _fit(value: str, width: int) -> str:
    """Cut ``value`` to ``width`` characters, marking the cut with an ellipsis."""
    width = max(width, 1)
    return value if len(value) <= width else value[: width - 1] + "…"
