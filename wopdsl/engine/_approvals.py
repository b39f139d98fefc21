"""Private: a person's decision on a tool call that waits for approval (DESIGN.md §20).

The decision resolves the approval interrupt (``interrupt.resolved`` with ``kind:
"approval"`` and the resume value ``{action, decidedBy, comment?}``), records
``approval.granted`` or ``approval.rejected`` (RFC 0051), and resumes the member's node
(``node.resumed``); the turn then runs again as its next attempt and reads the decision
from the log. Only the approver named by the tool's policy may decide.
"""

from __future__ import annotations

from typing import Any

from wopdsl.engine._writer import EventWriter
from wopdsl.errors import ValidationError
from wopdsl.state.tools import PendingApproval

__all__ = ["Approvals"]


class Approvals(EventWriter):
    """Writes decisions on approvals (the caller holds the engine's lock)."""

    def apply_decision(self, call: str | None, *, as_: str | None, grant: bool,
                       reason: str = "", principal: str | None = None) -> str:
        """Emit the decision (the caller commits it); return the decided call's id.

        Args:
            call: The call id (or the approval's key); ``None``: the only one waiting.
            as_: The deciding human member (default: the approval's approver).
            grant: Approve (``True``) or reject.
            reason: Why (shown to the model with a rejection).
            principal: Who decided, when not the member itself (an HTTP principal).

        Raises:
            ValidationError: nothing waits, the choice is ambiguous, or ``as_`` may not
                decide; nothing was appended.
        """
        pending = self._choose(call, as_)
        if as_ is not None and as_ != pending.approver:
            raise ValidationError(f"{as_} may not decide call {pending.call_id}: its approver "
                                  f"is {pending.approver}",
                                  hint=f"decide it as {pending.approver} (--as "
                                       f"{pending.approver})")
        who = principal or pending.approver
        value: dict[str, Any] = {"action": "accept" if grant else "reject", "decidedBy": who}
        if reason:
            value["comment"] = reason
        node = pending.member
        self._emit("interrupt.resolved", {"nodeId": node, "interruptId": pending.key,
                                          "kind": "approval", "resumeValue": value},
                   node_id=node)
        decided: dict[str, Any] = {"gateId": pending.key, "principal": who}
        if not grant and reason:
            decided["reason"] = reason
        self._emit("approval.granted" if grant else "approval.rejected", decided, node_id=node)
        self._emit("node.resumed", {"nodeId": node, "interruptId": pending.key,
                                    "resumeValue": value}, node_id=node)
        return pending.call_id

    def _choose(self, call: str | None, as_: str | None) -> PendingApproval:
        state = self.state
        if state.terminal:
            raise ValidationError(f"run {self.run_id} has ended ({state.status}); nothing "
                                  "waits for approval")
        waiting = list(state.tools.approvals.values())
        if call is not None:
            for pending in waiting:
                if call in (pending.call_id, pending.key):
                    return pending
            listed = ", ".join(p.call_id for p in waiting) or "none"
            raise ValidationError(f"call {call} does not wait for approval in run "
                                  f"{self.run_id} (waiting: {listed})",
                                  hint="name a waiting call, as `wop approve RUN` lists them")
        mine = [p for p in waiting if as_ is None or p.approver == as_]
        if len(mine) == 1:
            return mine[0]
        if not mine and waiting:
            owners = ", ".join(f"{p.call_id} (its approver is {p.approver})" for p in waiting)
            raise ValidationError(f"{as_} may not decide any waiting call: {owners}",
                                  hint=f"decide as {waiting[0].approver}")
        if not mine:
            raise ValidationError(f"no tool call waits for approval in run {self.run_id}",
                                  hint="see what the run waits for with `wop runs` or "
                                       "`wop events RUN`")
        raise ValidationError(f"{len(mine)} tool calls wait for approval in run {self.run_id}: "
                              f"{', '.join(p.call_id for p in mine)}",
                              hint="name the call to decide (wop approve RUN CALL)")
