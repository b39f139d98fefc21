"""The notebook's view of a run: a view model folded from the run's state, as HTML or Markdown.

Both renderers read one :class:`RunView`, built from a single catch-up of the run's
:class:`~wopdsl.state.CouncilState` (the fold of its events; the same facts
``run.snapshot()`` reports). Every piece of user text is escaped: ``html.escape`` for HTML,
HTML entities plus backslashes for Markdown. ``Run._repr_html_`` and the live view in
``wopdsl.jupyter`` render through here.

Example:
    >>> from wopdsl.projections.notebook import run_html
    >>> html = run_html(run)            # what ``display(run)`` shows (a run or its state)
    >>> "completed" in html
    True
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Final

from wopdsl.model.mentions import MENTION_RE
from wopdsl.projections.deliberation import ballot_call, dissent_line, hidden_text, vote_line
from wopdsl.projections.notebook_view import (
    FailureRow,
    MemberRow,
    MessageRow,
    RoomSection,
    RunView,
    Source,
    run_view,
)

__all__ = ["FailureRow", "MemberRow", "MessageRow", "RoomSection", "RunView", "run_html",
           "run_markdown", "run_view", "view_html", "view_markdown"]


_MD_SPECIAL: Final = re.compile(r"([\\`*_\[\]{}#|~!])")

_STATUS_COLOURS: Final = {
    "pending": "#6b7280",
    "running": "#2563eb",
    "waiting-input": "#b45309",
    "paused": "#7c3aed",
    "completed": "#15803d",
    "failed": "#b91c1c",
    "cancelled": "#6b7280",
}
_STATE_COLOURS: Final = {
    "queued": "#6b7280",
    "running": "#2563eb",
    "waiting": "#b45309",
    "done": "#15803d",
    "failed": "#b91c1c",
    "idle": "#9ca3af",
}
_MENTION_STYLE: Final = ("background:#dbeafe;color:#1e3a8a;border-radius:3px;padding:0 2px;"
                         "font-weight:600")


# -- HTML ------------------------------------------------------------------------------------


def run_html(run: Source, *, tail: int | None = None) -> str:
    """Render ``run`` as a self-contained HTML fragment (``Run._repr_html_``).

    Shows the status line (with the error code when the run failed), the roster (state and
    turns used of each member) and one section per room with its messages; mentions are
    highlighted and every piece of user text is escaped.

    Args:
        run: The run's state, or the run handle.
        tail: Show at most this many messages per room (the latest); ``None`` shows all.

    Returns:
        An HTML ``<div>``.
    """
    return view_html(run_view(run, tail=tail))


def view_html(view: RunView) -> str:
    """Render an already-read :class:`RunView` as HTML."""
    e = html.escape
    colour = _STATUS_COLOURS.get(view.status, "#6b7280")
    out = [
        f'<div class="wop-run" data-run-id="{e(view.run_id)}" data-status="{e(view.status)}" '
        'style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;'
        'line-height:1.45">',
        '<div class="wop-head" style="margin-bottom:4px">'
        f'council <b>{e(view.council)}</b> · run <code>{e(view.run_id)}</code> · '
        f'<span class="wop-status" style="color:#fff;background:{colour};border-radius:9px;'
        f'padding:1px 8px;font-weight:600">{e(view.status)}</span> · '
        f'<span class="wop-events">{view.events} events</span>'
        + (f' · <span class="wop-usage">{e(view.usage)}</span>' if view.usage else "")
        + "</div>",
    ]
    if view.error:
        code = e(str(view.error.get("code", "UNKNOWN")))
        message = e(str(view.error.get("message", "run failed")))
        out.append('<div class="wop-error" style="color:#b91c1c;font-weight:600;'
                   f'white-space:pre-wrap">error[{code}]: {message}</div>')
    out += [_traceback_html(f) for f in view.failures if f.traceback]
    if view.status == "waiting-input" and view.waiting_for:
        names = ", ".join(f"<b>{e(m)}</b>" for m in view.waiting_for)
        out.append(f'<div class="wop-waiting" style="color:#b45309">waiting for input from '
                   f'{names} — reply with <code>await run.reply("…", room=…)</code></div>')
    out += [f'<div class="wop-asks" style="color:#b45309">{e(member)}\'s agent asks in room '
            f"<b>{e(room)}</b>: {e(question)}</div>" for member, room, question in view.asks]
    out.append(_roster_html(view.roster, usage=view.usage is not None))
    out.append(_decisions_html(view))
    for room in view.rooms:
        out.append(_room_html(room))
    out.append("</div>")
    return "\n".join(out)


def _traceback_html(failure: FailureRow) -> str:
    """A collapsed ``<details>`` with a failed handler's traceback (opened on demand)."""
    e = html.escape
    return (f'<details class="wop-traceback" data-member="{e(failure.member)}" '
            'style="margin:2px 0"><summary style="cursor:pointer;color:#b91c1c">traceback of '
            f"<b>{e(failure.member)}</b> (error[{e(failure.code)}])</summary>"
            '<pre style="white-space:pre-wrap;font-size:12px;margin:2px 0 2px 12px">'
            f"{e(failure.traceback or '')}</pre></details>")


def _roster_html(roster: tuple[MemberRow, ...], *, usage: bool = False) -> str:
    e = html.escape
    cell = 'style="text-align:left;padding:1px 10px 1px 0;vertical-align:top"'
    tokens = f"<th {cell}>model usage</th>" if usage else ""
    rows = [f'<table class="wop-roster" style="border-collapse:collapse;margin:4px 0">'
            f"<thead><tr><th {cell}>member</th><th {cell}>role</th><th {cell}>state</th>"
            f"<th {cell}>turns</th>{tokens}<th {cell}>last result</th></tr></thead><tbody>"]
    for m in roster:
        colour = _STATE_COLOURS.get(m.state, "#6b7280")
        human = ' <span title="human member">(human)</span>' if m.engine == "human" else ""
        summary = e(m.summary) if m.summary is not None else ""
        rows.append(
            f'<tr class="wop-member" data-member="{e(m.id)}" data-state="{e(m.state)}">'
            f"<td {cell}><b>{e(m.id)}</b>{human}</td><td {cell}>{e(m.role)}</td>"
            f'<td {cell}><span style="color:{colour};font-weight:600">{e(m.state)}</span></td>'
            f"<td {cell}>{m.turns}/{m.max_turns}</td>"
            + (f'<td {cell} class="wop-member-usage">{e(m.usage or "")}</td>' if usage else "")
            + f'<td {cell}><span style="white-space:pre-wrap">{summary}</span></td></tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _room_html(room: RoomSection) -> str:
    e = html.escape
    count = len(room.messages) + room.hidden
    head = (f'<section class="wop-room" data-room="{e(room.id)}" style="margin-top:6px">'
            f'<div style="font-weight:600;border-bottom:1px solid #e5e7eb">room {e(room.id)} '
            f'<span style="font-weight:400;color:#6b7280">({e(", ".join(room.members))}) · '
            f"{e(room.state)} · {count} message{'' if count == 1 else 's'}</span>"
            + (f' · <span class="wop-round" style="font-weight:400;color:#7c3aed">'
               f"{e(room.round.label())}</span>" if room.round else "") + "</div>")
    parts = [head]
    if room.hidden:
        parts.append(f'<div style="color:#6b7280">… {room.hidden} earlier '
                     f"message{'' if room.hidden == 1 else 's'}</div>")
    if not count:
        parts.append('<div style="color:#9ca3af">no messages yet</div>')
    for m in room.messages:
        if m.system or m.id in room.concealed:
            parts.append(_note_html(m, room))
            continue
        mentions = " ".join(_mention_html(name) for name in m.mentions)
        parts.append(
            f'<div class="wop-msg" data-id="{e(m.id)}" style="margin:2px 0">'
            f'<b class="wop-sender">{e(m.sender)}</b> '
            f'<code class="wop-id" style="color:#9ca3af;font-size:11px">{e(m.id)}</code>'
            f"{' ' + mentions if mentions else ''}: "
            f'<span class="wop-text" style="white-space:pre-wrap">'
            f"{_highlight(m.text, m.mentions)}</span></div>")
    parts.append("</section>")
    return "".join(parts)


def _note_html(m: MessageRow, room: RoomSection) -> str:
    """A system turn (a round, a decision closed, the chair called), or a hidden post."""
    e = html.escape
    if m.system:
        return (f'<div class="wop-msg wop-system" data-id="{e(m.id)}" style="margin:2px 0;'
                f'color:#6b7280;font-style:italic;white-space:pre-wrap">— {e(m.text)}</div>')
    number = room.round.number if room.round else 0
    return (f'<div class="wop-msg wop-hidden" data-id="{e(m.id)}" style="margin:2px 0;'
            f'color:#6b7280;font-style:italic"><b class="wop-sender" style="font-style:normal">'
            f"{e(m.sender)}</b>{e(hidden_text(m.sender, number).removeprefix(m.sender))}</div>")


def _decisions_html(view: RunView) -> str:
    """The decisions (open or closed: tally, dissent with reasons) and the chair's answer."""
    if not view.decisions and view.chair is None:
        return ""
    e = html.escape
    parts = ['<section class="wop-decisions" style="margin-top:6px">'
             '<div style="font-weight:600;border-bottom:1px solid #e5e7eb">decisions</div>']
    for d in view.decisions:
        colour = "#b45309" if d.open else "#15803d"
        weight = "normal" if d.open else "600"
        parts.append(
            f'<div class="wop-decision" data-decision="{e(d.id)}" '
            f'data-open="{str(d.open).lower()}" style="margin:2px 0"><b>{e(d.id)}</b> '
            f'<span class="wop-question">{e(d.question)}</span> · '
            f'<span style="color:{colour};font-weight:600">{"open" if d.open else "closed"}'
            f'</span> · <span class="wop-outcome" style="font-weight:{weight}">'
            f"{e(d.headline().removeprefix('open · '))}</span>")
        parts += [f'<div class="wop-vote" style="margin-left:12px;color:#0e7490">'
                  f"{e(vote_line(v))}</div>" for v in d.mine]
        if d.ballot:
            parts.append('<div class="wop-ballot" style="margin-left:12px;color:#6b7280">vote '
                         f"with <code>{e(ballot_call(d))}</code></div>")
        parts += [f'<div class="wop-dissent" data-voter="{e(str(x.get("voter")))}" '
                  f'style="margin-left:12px;color:#b91c1c">{e(dissent_line(x))}</div>'
                  for x in d.dissent]
        parts.append("</div>")
    chair = view.chair
    if chair is not None:
        parts.append(f'<div class="wop-chair" data-done="{str(chair.done).lower()}" '
                     f'style="margin:4px 0"><b>{"answer" if chair.done else "chair"}</b> '
                     f'({e(chair.member)}): <span class="wop-answer" style="white-space:pre-wrap'
                     f'{"" if chair.done else ";font-style:italic"}">{e(chair.label())}</span>'
                     "</div>")
    return "".join(parts) + "</section>"


def _mention_html(name: str) -> str:
    return f'<span class="wop-mention" style="{_MENTION_STYLE}">@{html.escape(name)}</span>'


def _highlight(text: str, mentions: Sequence[str]) -> str:
    """Escape ``text`` and highlight its ``@member`` words that are real mentions."""
    escaped = html.escape(text)
    if not mentions:
        return escaped
    wanted = set(mentions)

    def mark(match: re.Match[str]) -> str:
        name = match.group(1)
        core = name.rstrip(".")
        if core not in wanted:
            return match.group(0)
        return _mention_html(core) + name[len(core):]

    # Member ids use only [A-Za-z0-9._-], which html.escape leaves alone.
    return MENTION_RE.sub(mark, escaped)


# -- Markdown --------------------------------------------------------------------------------


def run_markdown(run: Source, *, tail: int | None = None) -> str:
    """Render ``run`` as Markdown (``Run._repr_markdown_``) for front-ends without HTML.

    Args:
        run: The run's state, or the run handle.
        tail: Show at most this many messages per room (the latest); ``None`` shows all.

    Returns:
        CommonMark text: status line, error, roster table, one section per room.
    """
    return view_markdown(run_view(run, tail=tail))


def view_markdown(view: RunView) -> str:
    """Render an already-read :class:`RunView` as Markdown."""
    md = _md
    lines = [f"council **{md(view.council)}** · run {_code(view.run_id)} · "
             f"**{md(view.status)}** · {view.events} events"
             + (f" · {md(view.usage)}" if view.usage else ""), ""]
    if view.error:
        lines += [f"> **error\\[{md(str(view.error.get('code', 'UNKNOWN')))}\\]**: "
                  f"{md(str(view.error.get('message', 'run failed')))}", ""]
    if view.status == "waiting-input" and view.waiting_for:
        names = ", ".join(f"**{md(m)}**" for m in view.waiting_for)
        lines += [f"waiting for input from {names} — reply with "
                  '`await run.reply("…", room=…)`', ""]
    lines += [f"{md(member)}'s agent asks in room **{md(room)}**: {md(question)}\n"
              for member, room, question in view.asks]
    usage = view.usage is not None
    lines += ["| member | role | state | turns |" + (" model usage |" if usage else "")
              + " last result |", "|---|---|---|---|" + ("---|" if usage else "") + "---|"]
    for m in view.roster:
        human = " (human)" if m.engine == "human" else ""
        tokens = f" {md(m.usage or '')} |" if usage else ""
        lines.append(f"| **{md(m.id)}**{human} | {md(m.role)} | {md(m.state)} | "
                     f"{m.turns}/{m.max_turns} |{tokens} {md(m.summary or '')} |")
    lines += _decisions_markdown(view)
    for room in view.rooms:
        count = len(room.messages) + room.hidden
        lines += ["", f"#### room {md(room.id)} ({md(', '.join(room.members))}) · "
                      f"{md(room.state)} · {count} message{'' if count == 1 else 's'}"
                      + (f" · {md(room.round.label())}" if room.round else ""), ""]
        if room.hidden:
            lines.append(f"- … {room.hidden} earlier message{'' if room.hidden == 1 else 's'}")
        if not count:
            lines.append("_no messages yet_")
        for msg in room.messages:
            mentions = "".join(f" **@{md(name)}**" for name in msg.mentions)
            if msg.system:
                lines.append(f"- _— {md(msg.text)}_")
            elif msg.id in room.concealed:
                number = room.round.number if room.round else 0
                lines.append(f"- _{md(hidden_text(msg.sender, number))}_")
            else:
                lines.append(f"- **{md(msg.sender)}** {_code(msg.id)}{mentions}: {md(msg.text)}")
    return "\n".join(lines) + "\n"


def _decisions_markdown(view: RunView) -> list[str]:
    if not view.decisions and view.chair is None:
        return []
    md = _md
    lines = ["", "#### decisions", ""]
    for d in view.decisions:
        lines.append(f"- **{md(d.id)}** {md(d.question)} · {'open' if d.open else 'closed'} · "
                     + (md(d.headline().removeprefix("open · ")) if d.open
                        else f"**{md(d.headline())}**"))
        lines += [f"  - {md(vote_line(v))}" for v in d.mine]
        if d.ballot:
            lines.append(f"  - vote with {_code(ballot_call(d))}")
        lines += [f"  - {md(dissent_line(x))}" for x in d.dissent]
    if view.chair is not None:
        chair = view.chair
        lines += ["", f"**{'answer' if chair.done else 'chair'}** ({md(chair.member)}): "
                      + (md(chair.label()) if chair.done else f"_{md(chair.label())}_")]
    return lines


def _md(text: str) -> str:
    """Escape ``text`` for inline Markdown: HTML entities, punctuation, hard line breaks."""
    escaped = _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
    return escaped.replace("\r\n", "\n").replace("\n", "<br>")


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text and "\n" not in text else _md(text)
