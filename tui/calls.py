"""The tool calls of a run as the screen shows them, folded from their events.

One :class:`ToolCall` per call id, updated in place as its events arrive: the approval it
waits for (``interrupt.requested`` of ``kind: "approval"``), the decision
(``approval.granted`` / ``approval.rejected``), the call (``agent.toolCalled``) and its result
(``agent.toolReturned``). Arguments and results are in the events only under
``observability = "full"``; by default the screen reads a call's arguments from the run's
private records (:func:`kept_arguments`), as ``wop run`` and ``wop approve`` do. Nothing here
imports Textual.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import wopdsl

__all__ = ["TOOL_EVENTS", "ToolCall", "ToolFold", "kept_arguments"]

TOOL_EVENTS: Final = frozenset({
    "agent.toolCalled", "agent.toolReturned", "interrupt.requested", "approval.granted",
    "approval.rejected",
})
"""Event types the tool fold reads (``interrupt.requested`` only of ``kind: "approval"``)."""
_KEPT: Final = 200
"""Characters of arguments or of a result kept per call for the screen."""


def _cut(text: str) -> str:
    return text if len(text) <= _KEPT else text[:_KEPT] + "…"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(slots=True)
class ToolCall:
    """One tool call: who asked, for what, what was decided, how it went."""

    call_id: str
    """The call's id (``call/{member}/{turn}/{n}``)."""
    member: str
    """The member whose model asked for the call."""
    tool: str = ""
    """The tool's name (``""`` until an event or the private records name it)."""
    arguments: str | None = None
    """The arguments (raw JSON, cut short) when the log or the private records hold them."""
    state: str = "called"
    """``waiting`` (for its approver), ``rejected``, ``called`` (in flight), or the status of
    ``agent.toolReturned``: ``ok``, ``error``, ``forbidden``, ``timeout``..."""
    approver: str = ""
    """The human member asked to decide, if the tool needs approval."""
    decision: str = ""
    """``approved by oncall`` or ``rejected by oncall: reason`` once decided."""
    duration_ms: int | None = None
    """How long the call took, once returned."""
    result_bytes: int | None = None
    """The size of the result, once returned."""
    error: str = ""
    """The error's code when the call failed (``TIMEOUT``, ``REJECTED``...)."""
    outcome: str | None = None
    """The result (cut short) when the log holds it (``observability = "full"``)."""
    repeated: bool = False
    """Made again after a crash (the call was in flight)."""


@dataclass(slots=True)
class ToolFold:
    """The run's tool calls by id, in the order they were first seen."""

    calls: dict[str, ToolCall] = field(default_factory=dict)
    changed: bool = False
    """Set when a call changed; the screen clears it after redrawing."""
    _looked_up: set[str] = field(default_factory=set)

    def apply(self, event: Mapping[str, Any]) -> None:
        """Fold one event (others than :data:`TOOL_EVENTS` are ignored)."""
        kind = str(event["type"])
        if kind not in TOOL_EVENTS:
            return
        payload: Mapping[str, Any] = event.get("payload") or {}
        member = str(event.get("nodeId") or "")
        if kind == "interrupt.requested":
            if payload.get("kind") == "approval":
                self._asked(member, payload.get("data") or {})
            return
        if kind in ("approval.granted", "approval.rejected"):
            self._decided(kind == "approval.granted", payload)
            return
        call = self._call(str(payload.get("callId", "")), member)
        call.tool = str(payload.get("toolName") or call.tool)
        if kind == "agent.toolCalled":
            call.state = "called"
            call.repeated = bool(payload.get("repeated"))
            if "inputs" in payload:
                call.arguments = _cut(_text(payload["inputs"]))
        else:
            call.state = str(payload.get("status", "ok"))
            call.duration_ms = int(payload.get("durationMs") or 0)
            call.result_bytes = int(payload.get("resultBytes") or 0)
            error = payload.get("error")
            call.error = str(error.get("code", "")) if isinstance(error, Mapping) else ""
            if "outcome" in payload:
                call.outcome = _cut(_text(payload["outcome"]))
        self.changed = True

    def _call(self, call_id: str, member: str) -> ToolCall:
        call = self.calls.get(call_id)
        if call is None:
            call = self.calls[call_id] = ToolCall(call_id, member)
        return call

    def _asked(self, member: str, data: Mapping[str, Any]) -> None:
        call = self._call(str(data.get("artifactId", "")), member)
        approvers = data.get("approversList") or [""]
        call.approver, call.state, call.decision = str(approvers[0]), "waiting", ""
        asked = data.get("artifactData")
        if isinstance(asked, Mapping):
            call.tool = str(asked.get("tool") or call.tool)
            if "arguments" in asked:
                call.arguments = _cut(_text(asked["arguments"]))
        if not call.tool:
            # The title says "sre asks to call restart_service[ again (...)]".
            title = str(data.get("title", ""))
            call.tool = title.partition(" asks to call ")[2].split(" ", 1)[0]
        self.changed = True

    def _decided(self, granted: bool, payload: Mapping[str, Any]) -> None:
        gate = str(payload.get("gateId", ""))
        call = self.calls.get(gate.removeprefix("approval/").removesuffix("#repeat"))
        if call is None:
            return
        who = str(payload.get("principal", ""))
        reason = str(payload.get("reason") or "")
        call.decision = f"approved by {who}" if granted else \
            f"rejected by {who}" + (f": {_cut(reason)}" if reason else "")
        call.state = "called" if granted else "rejected"
        self.changed = True

    def fill_arguments(self, lookup: Callable[[str], tuple[str, str] | None]) -> None:
        """Fill in arguments the events do not carry, from ``lookup`` (once per call).

        ``lookup(call_id)`` returns ``(tool, arguments)`` or ``None``: :func:`kept_arguments`.
        """
        for call in self.calls.values():
            if call.arguments is None and call.call_id not in self._looked_up:
                self._looked_up.add(call.call_id)
                kept = lookup(call.call_id)
                if kept is not None:
                    call.tool = call.tool or kept[0]
                    call.arguments = kept[1]


def kept_arguments(run: wopdsl.Run, call_id: str) -> tuple[str, str] | None:
    """``(tool, arguments)`` of a call from the run's private records, or ``None``.

    What ``wop approve`` shows: under ``observability = "hashed"`` the events carry only a
    hash of the arguments, and the run keeps the model's request beside its log. ``None``
    when the store keeps no private records or has none for the call.
    """
    key = f"{call_id}#call"
    try:
        raw = run.store.read_private(run.run_id, key).get(key)
        data = json.loads(raw) if raw is not None else None
    except Exception:  # a store without private records, or a record it cannot read
        return None
    if not isinstance(data, dict):
        return None
    return str(data.get("name", "")), _cut(_text(data.get("arguments", "")))
