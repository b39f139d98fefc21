"""Tool calls and approvals of a run, as its events tell them (``state.tools``).

Folded from ``agent.toolCalled`` (how many calls the run has made: the ``toolCalls`` budget)
and the approval interrupts (``interrupt.requested`` of ``kind: "approval"`` until its
``interrupt.resolved``): who is asked to decide which member's call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wopdsl.state.records import Inflight

__all__ = ["PendingApproval", "ToolState", "suspend"]


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call waiting for a person's decision."""

    key: str
    """The interrupt key (``approval/call/{member}/{position}/{n}``)."""
    member: str
    """The member whose turn waits (the node suspended)."""
    call_id: str
    approver: str
    """The human member who decides."""
    title: str
    data: dict[str, Any]
    """The interrupt's ``data`` (``ApprovalData``)."""


@dataclass(slots=True)
class ToolState:
    """The run's tool calls and open approvals."""

    calls: int = 0
    """``agent.toolCalled`` events (a call repeated after a crash counts once; a message to
    an ``a2a`` member's remote agent, marked ``a2a``, is the member's turn, not a tool call)."""
    approvals: dict[str, PendingApproval] = field(default_factory=dict)
    """Open approvals by interrupt key, in request order."""

    def called(self, payload: dict[str, Any]) -> None:
        """Fold one ``agent.toolCalled``."""
        if not payload.get("repeated") and "a2a" not in payload:
            self.calls += 1

    def requested(self, event: Mapping[str, Any]) -> None:
        """Fold an ``interrupt.requested`` of ``kind: "approval"``."""
        payload = event["payload"]
        data = payload.get("data") or {}
        key = str(payload.get("key", ""))
        approvers = data.get("approversList") or [""]
        self.approvals[key] = PendingApproval(
            key, str(event.get("nodeId", "")), str(data.get("artifactId", "")),
            str(approvers[0]), str(data.get("title", "")), dict(data))

    def resolved(self, key: str) -> bool:
        """Fold an ``interrupt.resolved``; return whether it closed an approval."""
        return self.approvals.pop(key, None) is not None

    def waiting_on(self, member: str) -> list[PendingApproval]:
        """The open approvals ``member`` (a human) is asked to decide."""
        return [a for a in self.approvals.values() if a.approver == member]


def suspend(inflight: Mapping[str, Inflight], event: Mapping[str, Any]) -> None:
    """Fold a member's ``node.suspended``: its turn waits on the interrupt it names."""
    turn = inflight.get(str(event.get("nodeId", "")))
    if turn is not None:
        turn.suspended = str(event["payload"].get("interruptId", ""))
