"""A decision on a tool call over HTTP: ``POST /v1/runs/{runId}/interrupts/{member}``.

The member whose turn waits is the suspended node (``node.suspended`` with ``kind:
"approval"``); the body's ``resumeValue`` is an approval resume (interrupt.md
``ApprovalResume``): ``{"action": "accept" | "reject", "comment"?: text}``, and
``interruptId`` (the approval's key) or ``callId`` when several calls of the member wait.
Who may decide is the host's rule (:mod:`wopdsl.server.access`, action ``approve``): the
approver's ``principal`` when it names one, else the run's starter or an admin.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from wopdsl import CouncilState, MemberSpec
from wopdsl.server.errors import ApiError

__all__ = ["Decision", "approval_at"]


class Decision(NamedTuple):
    """What an approval resume decides."""

    call: str
    """The call's id (``call/{member}/{position}/{n}``)."""
    approver: str
    """The human member who decides it."""
    reserved: str | None
    """The principal the approver names (only it may decide), if any."""
    grant: bool
    reason: str


def approval_at(state: CouncilState, members: dict[str, MemberSpec], node_id: str,
                resume: Any) -> Decision:
    """Check an approval resume for node ``node_id``; return what it decides.

    Raises:
        ApiError: 404 when nothing waits at the node, 400 for a malformed value.
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
    reason = resume.get("comment") or resume.get("reason") or ""
    if not isinstance(reason, str) or len(reason) > 2000:
        raise ApiError(400, "validation_error", "resumeValue.comment must be text (at most "
                       "2000 characters)", {"field": "resumeValue.comment"})
    approver = members.get(pending.approver)
    return Decision(pending.call_id, pending.approver,
                    approver.principal if approver is not None else None,
                    resume["action"] == "accept", reason)
