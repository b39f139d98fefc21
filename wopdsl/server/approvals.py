"""A decision on a tool call over HTTP: ``POST /v1/runs/{runId}/interrupts/{member}``.

The member whose turn waits is the suspended node (``node.suspended`` with ``kind:
"approval"``); the body's ``resumeValue`` is an approval resume (interrupt.md
``ApprovalResume``): ``{"action": "accept" | "reject", "comment"?: text}``, and
``interruptId`` (the approval's key) or ``callId`` when several calls of the member wait.
Only the approver may decide: with bearer tokens, the token of the approver's ``principal``.
"""

from __future__ import annotations

from typing import Any

from wopdsl import CouncilState, MemberSpec
from wopdsl.server.errors import ApiError

__all__ = ["Decision", "approval_at"]

Decision = tuple[str, str, bool, str]
"""``(call id, approver, grant, reason)``."""


def approval_at(state: CouncilState, members: dict[str, MemberSpec], node_id: str,
                resume: Any, principal: str | None, *, tokens: bool) -> Decision:
    """Check an approval resume for node ``node_id``; return what to decide.

    Raises:
        ApiError: 404 when nothing waits at the node, 400 for a malformed value, 403 for a
            token that is not the approver's.
    """
    waiting = [a for a in state.tools.approvals.values() if a.member == node_id]
    if not waiting:
        nodes = [f"room:{r}" for r in state.rooms] + sorted(
            {a.member for a in state.tools.approvals.values()})
        raise ApiError(404, "interrupt_not_found",
                       f"run {state.run_id} has no interrupt at node {node_id!r}",
                       {"nodeId": node_id, "interrupts": nodes})
    if not isinstance(resume, dict) or resume.get("action") not in ("accept", "reject"):
        raise ApiError(400, "validation_error", "an approval's resumeValue is {\"action\": "
                       "\"accept\" | \"reject\", \"comment\"?: text}",
                       {"field": "resumeValue.action"})
    named = resume.get("interruptId") or resume.get("callId")
    chosen = [a for a in waiting if named in (a.key, a.call_id)] if named else waiting
    if len(chosen) != 1:
        raise ApiError(400, "validation_error",
                       f"{len(waiting)} calls of {node_id} wait for approval; name one with "
                       "resumeValue.interruptId" if not named else
                       f"no approval {named!r} waits at node {node_id}",
                       {"field": "resumeValue.interruptId",
                        "interrupts": [a.key for a in waiting]})
    pending = chosen[0]
    approver = members.get(pending.approver)
    if tokens and approver is not None and approver.principal is not None and \
            approver.principal != principal:
        raise ApiError(403, "forbidden", f"only {pending.approver}'s principal may decide "
                       f"call {pending.call_id}", {"member": pending.approver})
    reason = resume.get("comment") or resume.get("reason") or ""
    if not isinstance(reason, str) or len(reason) > 2000:
        raise ApiError(400, "validation_error", "resumeValue.comment must be text (at most "
                       "2000 characters)", {"field": "resumeValue.comment"})
    return pending.call_id, pending.approver, resume["action"] == "accept", reason
