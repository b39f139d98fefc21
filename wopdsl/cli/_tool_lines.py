"""Private: what the CLI prints about tool calls and approvals (live lines, waits).

Tool output is data from outside: every piece printed is escaped (control characters,
ANSI sequences, bidirectional controls) and cut short, so a result cannot move the cursor,
rewrite earlier lines or pass itself off as a message.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from typing import TYPE_CHECKING, Any, Final

from wopdsl.projections import escape
from wopdsl.protocol import RunEventDoc

if TYPE_CHECKING:
    from wopdsl import CouncilState, EventStore

__all__ = ["LINED", "approval_lines", "call_arguments", "tool_line"]

_SHOWN: Final = 200
"""Characters of a result (``observability = "full"``) or of arguments shown on one line."""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return escape(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


LINED: Final = frozenset({"agent.toolCalled", "agent.toolReturned", "approval.requested",
                          "approval.granted", "approval.rejected"})
"""The event types :func:`tool_line` prints a line for."""


def tool_line(event: RunEventDoc) -> str | None:
    """The live line of a tool or approval event, or ``None`` for other events."""
    kind = event["type"]
    if kind not in LINED:
        return None
    payload = event["payload"]
    member = escape(str(event.get("nodeId", "")))
    if kind == "agent.toolCalled":
        return (f"  [tool] {member} → {escape(str(payload.get('toolName', '')))} "
                f"{escape(str(payload.get('callId', '')))}"
                + (" (again: it was in flight)" if payload.get("repeated") else ""))
    if kind == "agent.toolReturned":
        status = str(payload.get("status", ""))
        error = payload.get("error") or {}
        what = f"{status} {error.get('code', '')}".strip()
        shown = f": {_short(str(payload['outcome']))}" if "outcome" in payload else ""
        return (f"  [tool] {member} ← {escape(str(payload.get('toolName', '')))} "
                f"{escape(what)} ({payload.get('durationMs', 0)} ms){shown}")
    if kind == "approval.requested":
        approvers = ", ".join(escape(str(a)) for a in payload.get("approversList", []))
        return f"  [approval] {approvers} to decide: {escape(str(payload.get('title', '')))}"
    if kind in ("approval.granted", "approval.rejected"):
        verb = "granted" if kind.endswith("granted") else "rejected"
        reason = f" ({_short(str(payload['reason']))})" if payload.get("reason") else ""
        return (f"  [approval] {escape(str(payload.get('principal', '')))} {verb} "
                f"{escape(str(payload.get('gateId', '')).removeprefix('approval/'))}{reason}")
    return None


def call_arguments(store: EventStore, run_id: str, call_id: str) -> str:
    """The tool and arguments of a call, from the run's private records (escaped, short)."""
    raw = store.read_private(run_id, f"{call_id}#call").get(f"{call_id}#call")
    if raw is None:
        return "(arguments not kept)"
    data: dict[str, Any] = json.loads(raw)
    return f"{escape(str(data.get('name', '')))}({_short(str(data.get('arguments', '')))})"


def approval_lines(run_id: str, state: CouncilState, store_flag: str,
                   store: EventStore | None = None) -> list[str]:
    """``waiting for approval`` lines and how to decide, for each open approval."""
    waiting = list(state.tools.approvals.values())
    if not waiting:
        return []
    lines = []
    for pending in waiting:
        what = escape(pending.title)
        if store is not None:
            with contextlib.suppress(Exception):  # no private records: the title will do
                what = f"{what}: {call_arguments(store, run_id, pending.call_id)}"
        lines.append(f"waiting for approval: {escape(pending.approver)} decides "
                     f"{escape(pending.call_id)} ({what})")
    call = f" {shlex.quote(waiting[0].call_id)}" if len(waiting) > 1 else ""
    lines.append(f"decide with: wop{store_flag} approve {shlex.quote(run_id)}{call} "
                 "[--reject --reason TEXT]")
    return lines
