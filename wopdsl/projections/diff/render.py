"""Views of a run comparison: the text ``wop diff`` prints and the notebook's HTML.

:class:`RunDiff` is the comparison's data (:class:`~wopdsl.projections.diff.result.DiffData`)
with its renderings: ``str(diff)`` / :meth:`RunDiff.text` (stable plain text, no timestamps:
what snapshot tests lock) and ``_repr_html_`` (Jupyter). Both show at most
:data:`MAX_SHOWN` changes per room, each with one unchanged message around it; ``to_json()``
has them all. Message text is escaped for HTML; the CLI's terminal writer escapes control
characters in the text.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Final

from wopdsl.projections.diff.result import DiffData, Entry, MemberStats, Msg, RoomDiff, RunSide
from wopdsl.projections.transcript import format_line

__all__ = ["MAX_SHOWN", "RunDiff"]

MAX_SHOWN: Final = 50
"""Most changed messages shown per room in the text and HTML views."""
_ORDER_WINDOW: Final = 6


class RunDiff(DiffData):
    """Two runs compared: ``equal``, rooms, speaking order, members, outcome, divergence.

    ``str(diff)`` is the text ``wop diff`` prints; ``diff.to_json()`` the ``--json``
    document; in a notebook it renders as HTML.
    """

    __slots__ = ()

    def text(self) -> str:
        """The plain-text comparison (what ``wop diff`` prints)."""
        return "\n".join(_lines(self)) + "\n"

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return _html(self)

    def __repr__(self) -> str:
        return (f"RunDiff({self.a.run_id!r}, {self.b.run_id!r}, "
                f"{'equal' if self.equal else 'differ'})")


# -- text ------------------------------------------------------------------------------------


def _side_line(name: str, side: RunSide) -> str:
    text = (f"{name}: {side.run_id} (council {side.council} v{side.version}, {side.status}, "
            f"{side.messages} message{'s' if side.messages != 1 else ''})")
    if side.error:
        text += f" [{side.error.get('code')}] {side.error.get('message')}"
    return text


def _lines(diff: RunDiff) -> list[str]:
    out = [_side_line("A", diff.a), _side_line("B", diff.b), *_notes(diff)]
    out.append("equal: same transcripts, speaking order, work and outcome" if diff.equal
               else "differ")
    for room in diff.rooms:
        out.append("")
        out.extend(_room_lines(room))
    out.append("")
    out.extend(_order_lines(diff))
    out.append("")
    out.extend(_member_lines(diff))
    out.append("")
    out.append(_outcome_line(diff))
    return out


def _notes(diff: RunDiff) -> list[str]:
    """Council, fork and divergence notes under the two run lines."""
    out: list[str] = []
    if not diff.same_council:
        out.append(f"different councils: A runs {diff.a.council}, B runs {diff.b.council}")
    elif not diff.same_declaration:
        out.append(f"same council {diff.a.council}, different declarations (digest "
                   f"{diff.a.digest[:19]}… vs {diff.b.digest[:19]}…)")
    fork = diff.fork
    if fork is not None:
        if fork.child == "both":
            out.append(f"both forked from {fork.source}")
        else:
            child = "B" if fork.child == "b" else "A"
            parent = "A" if fork.child == "b" else "B"
            out.append(f"{child} is a fork of {parent}: it shares {parent}'s events 0-"
                       f"{fork.at_sequence} ({fork.mode or 'branch'} mode)")
    for name, side in (("A", diff.a), ("B", diff.b)):
        for report in side.divergences:
            source = report.get("sourceRunId")
            out.append(f"{name}'s replay reported a divergence from {source} at its event "
                       f"{report.get('atSequence')}: {report.get('divergenceKind')}")
    point = diff.divergence
    if point is not None:
        after = fork is not None and fork.child != "both"
        out.append("first divergence, after the shared events:" if after
                   else "first divergence:")
        for name, at in (("A", point.a), ("B", point.b)):
            out.append(f"  {name}: " + ("nothing more: its log stops here" if at is None
                                        else f"{at.label} (event {at.sequence}, {at.event})"))
    return out


def _room_lines(room: RoomDiff) -> list[str]:
    if room.members_a is None or room.members_b is None:
        only = "B" if room.members_a is None else "A"
        members = room.members_b if room.members_a is None else room.members_a
        head = [f"room {room.room} ({', '.join(members or ())}): only in {only}"]
    else:
        members = room.members_a if room.members_a == room.members_b else None
        who = ", ".join(members) if members is not None else \
            f"A: {', '.join(room.members_a)}; B: {', '.join(room.members_b)}"
        head = [f"room {room.room} ({who}): " + _counts(room)]
    return head + [f"  {line}" for line in _entry_lines(room.entries)]


def _counts(room: RoomDiff) -> str:
    if room.equal:
        same = room.count("same")
        return f"same {same} message{'s' if same != 1 else ''}"
    parts = [f"{room.count(op)} {op}" for op in ("changed", "added", "removed")
             if room.count(op)]
    return ", ".join(parts) + f", {room.count('same')} same"


def _entry_lines(entries: tuple[Entry, ...]) -> list[str]:
    """Changes with one unchanged message around each; unchanged stretches as counts."""
    if all(e.op == "same" for e in entries):
        return []
    out: list[str] = []
    total = sum(1 for e in entries if e.op != "same")
    shown = 0
    for index, entry in enumerate(entries):
        if entry.op != "same":
            if shown == MAX_SHOWN:
                out.append(f"… and {total - shown} more changes (see --json)")
                break
            shown += 1
            out.extend(_change(entry))
            continue
        before = index > 0
        after = index + 1 < len(entries) and shown < MAX_SHOWN
        out.extend(_same(entry, before, after))
    return out


def _same(entry: Entry, before: bool, after: bool) -> list[str]:
    """An unchanged stretch: its first message after a change, its last before one."""
    first, last, hidden = entry.a, entry.b, entry.count
    out: list[str] = []
    if before and first is not None:
        out.append("  " + _msg_line(first))
        hidden -= 1
    tail = after and last is not None and hidden > 0
    gap = hidden - (1 if tail else 0)
    if gap > 0:
        out.append(f"  … {gap} same message{'s' if gap != 1 else ''}")
    if tail and last is not None:
        out.append("  " + _msg_line(last))
    return out


def _change(entry: Entry) -> list[str]:
    out = []
    if entry.a is not None:
        out.append("- " + _msg_line(entry.a))
    if entry.b is not None:
        out.append("+ " + _msg_line(entry.b))
    return out


def _msg_line(message: Msg) -> str:
    return format_line(message.sender, message.id, list(message.mentions), message.text,
                       indent="      ")


def _order_lines(diff: RunDiff) -> list[str]:
    order = diff.order
    first = order.first_difference
    if first is None:
        turns = f"{len(order.a)} turn{'s' if len(order.a) != 1 else ''}"
        return [f"speaking order: same ({turns}: {_window(order.a, 0)})"]
    return [f"speaking order differs at turn {first + 1}:",
            f"  A ({len(order.a)} turns): {_window(order.a, first)}",
            f"  B ({len(order.b)} turns): {_window(order.b, first)}"]


def _window(members: tuple[str, ...], at: int) -> str:
    start = max(0, at - 2)
    shown = members[start:start + _ORDER_WINDOW]
    text = ", ".join(shown) if shown else "(none)"
    if start:
        text = "…, " + text
    if start + _ORDER_WINDOW < len(members):
        text += ", …"
    return text


def _member_lines(diff: RunDiff) -> list[str]:
    rows: list[tuple[str, ...]] = [
        ("member", "turns", "failed", "model calls", "tokens in/out", "cost", "tool calls")]
    for member in diff.members:
        cells = [_pair(member.a, member.b, f) for f in _FIELDS]
        mark = "" if member.equal else " *"
        rows.append((member.member + mark, *cells))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
             for row in rows]
    changed = [m.member for m in diff.members if m.result_changed]
    if changed:
        lines.append(f"final result differs: {', '.join(changed)}")
    return lines


def _tokens(stats: MemberStats) -> str:
    return f"{stats.input_tokens:,}/{stats.output_tokens:,}" if stats.calls else "-"


def _cost(stats: MemberStats) -> str:
    return "-" if stats.cost_usd is None else f"${stats.cost_usd:.4f}"


_FIELDS: Final[tuple[Callable[[MemberStats], str], ...]] = (
    lambda s: str(s.turns), lambda s: str(s.failed), lambda s: str(s.calls), _tokens, _cost,
    lambda s: str(s.tool_calls))


def _pair(a: MemberStats | None, b: MemberStats | None,
          show: Callable[[MemberStats], str]) -> str:
    left = "(absent)" if a is None else show(a)
    right = "(absent)" if b is None else show(b)
    return left if left == right else f"{left} → {right}"


def _outcome_line(diff: RunDiff) -> str:
    outcome = diff.outcome
    head = f"outcome: {outcome.a}" if outcome.a == outcome.b else \
        f"outcome: A {outcome.a}, B {outcome.b}"
    if outcome.equal:
        return head + " (same result)"
    if not outcome.results_equal and outcome.a == outcome.b == "completed":
        return head + ", results differ"
    return head


# -- HTML ------------------------------------------------------------------------------------

_COLOURS: Final = {"added": "#dcfce7", "removed": "#fee2e2", "changed": "#fef9c3"}


def _html(diff: RunDiff) -> str:
    esc = html.escape
    parts = ['<div class="wopdsl-diff" style="font-family:system-ui,sans-serif">']
    verdict = "equal" if diff.equal else "differ"
    colour = "#15803d" if diff.equal else "#b45309"
    parts.append(f'<p><b style="color:{colour}">{verdict}</b>: '
                 f"{esc(_side_line('A', diff.a))}<br>{esc(_side_line('B', diff.b))}</p>")
    notes = _notes(diff)
    if notes:
        parts.append("<pre>" + esc("\n".join(notes)) + "</pre>")
    for room in diff.rooms:
        parts.append(f"<h4>{esc(_room_lines(room)[0])}</h4>")
        rows = []
        for entry in room.entries:
            if entry.op == "same":
                rows.append(f'<tr><td colspan="2" style="color:#6b7280">… {entry.count} same'
                            "</td></tr>")
                continue
            cells = [entry.a, entry.b]
            rows.append(f'<tr style="background:{_COLOURS[entry.op]}">' + "".join(
                f"<td>{esc(_msg_line(m)) if m is not None else ''}</td>" for m in cells)
                + "</tr>")
            if len(rows) > 2 * MAX_SHOWN:
                rows.append('<tr><td colspan="2">… (see to_json())</td></tr>')
                break
        if rows:
            parts.append('<table><tr><th>A</th><th>B</th></tr>' + "".join(rows) + "</table>")
    parts.append("<pre>" + esc("\n".join([*_order_lines(diff), "", *_member_lines(diff), "",
                                          _outcome_line(diff)])) + "</pre>")
    parts.append("</div>")
    return "".join(parts)
