"""Private: how an AG-UI run ends — the council run's end, or the people it waits for.

A council run that waits for a person (a human member's turn, a tool call's approval) ends the
AG-UI run with the interrupt outcome: one interrupt per open wait, its id the wait's interrupt
key (an approval's prefixed with the council run's id, so every id names its run). A resume
entry answers it (:mod:`wopdsl.server.agui`). A completed run is a success whose ``result`` is
the council's result, a cancelled one the cancelled outcome, a failed one ``RUN_ERROR`` with
the wopdsl error code.
"""

from __future__ import annotations

from typing import Any, Final

from wopdsl.state import CouncilState

Doc = dict[str, Any]

TURN_SCHEMA: Final[Doc] = {
    "type": "object", "required": ["text"], "additionalProperties": False,
    "properties": {"text": {"type": "string", "description": "the person's post"},
                   "mentions": {"type": "array", "items": {"type": "string"},
                                "description": "members asked to answer (else @names in "
                                               "the text)"},
                   "votes": {"type": "array", "items": {
                       "type": "object", "required": ["decision", "choice"],
                       "properties": {"decision": {"type": "string"}, "choice": {},
                                      "reason": {"type": "string"}}}}}}
"""What a human turn's resume payload holds (a bare string is the text)."""

APPROVAL_SCHEMA: Final[Doc] = {
    "type": "object", "required": ["action"], "additionalProperties": False,
    "properties": {"action": {"enum": ["accept", "reject"]},
                   "comment": {"type": "string", "maxLength": 2000}}}
"""What an approval's resume payload holds."""


def interrupt_id(run_id: str, key: str) -> str:
    """The AG-UI id of the interrupt ``key`` of council run ``run_id`` (it names the run)."""
    return key if key.startswith(f"{run_id}:") else f"{run_id}:{key}"


def open_interrupts(state: CouncilState) -> list[Doc]:
    """The interrupts a waiting run's people answer (``[]`` while it is not waiting for one).

    The run waits when nothing runs and every human turn it awaits and every suspended
    turn's approval has its interrupt in the log (a turn waiting only for an external member
    is not an interrupt: that member answers over the OpenWOP API).
    """
    if state.terminal is not None or state.status != "waiting-input":
        return []
    humans = [m for m in state.waiting_for if state.members[m].human]
    if any(m not in state.interrupts for m in humans) or any(
            i.suspended not in state.tools.approvals for i in state.inflight.values()
            if i.suspended):
        return []  # Between two events of one step: the wait is not complete yet.
    run = state.run_id
    found: list[Doc] = []
    for member in humans:
        key, room = state.interrupts[member]
        found.append({
            "id": interrupt_id(run, key), "reason": "human_turn",
            "message": f"{member}'s turn in room {room}: answer as {member}",
            "responseSchema": TURN_SCHEMA,
            "metadata": {"wopdsl": {"kind": "human_turn", "member": member, "room": room,
                                    "runId": run}}})
    for approval in state.tools.approvals.values():
        artifact = approval.data.get("artifactData") or {}
        found.append({
            "id": interrupt_id(run, approval.key), "reason": "tool_approval",
            "message": f"{approval.title}: {approval.approver} accepts or rejects",
            "toolCallId": approval.call_id, "responseSchema": APPROVAL_SCHEMA,
            "metadata": {"wopdsl": {"kind": "approval", "member": approval.member,
                                    "approver": approval.approver,
                                    "tool": artifact.get("tool"), "runId": run}}})
    return found


def ending(state: CouncilState, thread_id: str, run_id: str,
           usage: list[Doc]) -> Doc | None:
    """The event that ends the AG-UI run ``run_id`` now, or ``None`` while it goes on."""
    usage_part = {"usage": usage} if usage else {}
    if state.terminal == "failed":
        error = state.error or {}
        return {"type": "RUN_ERROR", "code": str(error.get("code") or "RUN_FAILED"),
                "message": str(error.get("message") or "the council's run failed"),
                **usage_part}
    closing: Doc = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id,
                    **usage_part}
    if state.terminal == "completed":
        return {**closing, "result": state.result(), "outcome": {"type": "success"}}
    if state.terminal == "cancelled":
        return {**closing, "outcome": {"type": "cancelled"}}
    interrupts = open_interrupts(state)
    if interrupts:
        return {**closing, "outcome": {"type": "interrupt", "interrupts": interrupts}}
    return None
