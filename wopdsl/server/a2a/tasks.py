"""A run as an A2A task (JSON form): state, history, artifacts, and the updates of a stream.

A council served as an A2A agent runs one run per task: the task id is the run id, its
``contextId`` the client's (kept in ``run.started`` as ``metadata.request.a2a``). Everything
here is read off the run's folded state (:class:`~wopdsl.CouncilState`), so a task survives
a restart of the host: it is the run's log.

* state: ``running`` and ``paused`` are ``TASK_STATE_WORKING``; ``waiting-input`` (a person,
  an external member, an approval, or an ``a2a`` member's agent waits) is
  ``TASK_STATE_INPUT_REQUIRED`` with a status message saying who is asked where and about
  what; ``completed``, ``failed``, ``cancelled`` are the terminal states;
* history: the client's first message (the task), then every post of the rooms, in saved
  order — posts of ``human`` and ``external`` members as ``ROLE_USER``, the council's as
  ``ROLE_AGENT`` — with ``metadata {room, from}``;
* artifacts of a completed run: ``answer`` (a text part: the chair's answer, else the last
  post) and ``result`` (a data part: the council result).
"""

from __future__ import annotations

from typing import Any, Final

from wopdsl import CouncilState

__all__ = ["TERMINAL", "artifacts", "context_of", "history", "post_message", "status_of",
           "task_of", "task_state"]

_STATES: Final = {
    "pending": "TASK_STATE_SUBMITTED",
    "running": "TASK_STATE_WORKING",
    "paused": "TASK_STATE_WORKING",
    "waiting-input": "TASK_STATE_INPUT_REQUIRED",
    "completed": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED",
    "cancelled": "TASK_STATE_CANCELED",
}
TERMINAL: Final = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"})
"""Task states after which a task takes no more messages."""


def task_state(state: CouncilState) -> str:
    """The A2A task state of the run."""
    return _STATES.get(state.status, "TASK_STATE_WORKING")


def _kept(state: CouncilState) -> dict[str, Any]:
    """What the run keeps of the message that started it (``run.started`` metadata)."""
    kept = (state.metadata.get("request") or {}).get("a2a")
    return kept if isinstance(kept, dict) else {}


def context_of(state: CouncilState) -> str:
    """The task's ``contextId`` (kept when the task started; the run id for other runs)."""
    kept = _kept(state).get("contextId")
    return str(kept) if kept else state.run_id


def _agent_message(state: CouncilState, text: str, message_id: str,
                   metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": message_id, "contextId": context_of(state),
                               "taskId": state.run_id, "role": "ROLE_AGENT",
                               "parts": [{"text": text}]}
    if metadata:
        message["metadata"] = metadata
    return message


def post_message(state: CouncilState, message_id: str) -> dict[str, Any]:
    """The saved post ``message_id`` as an A2A message of the task's history."""
    post = state.messages[message_id]
    member = state.members.get(post.sender)
    return {"messageId": post.id, "contextId": context_of(state), "taskId": state.run_id,
            "role": "ROLE_USER" if member is not None and member.awaited else "ROLE_AGENT",
            "parts": [{"text": post.text}],
            "metadata": {"room": post.room, "from": post.sender, "mentions": post.mentions}}


def history(state: CouncilState, length: int | None = None) -> list[dict[str, Any]]:
    """The task's messages, oldest first (the last ``length`` of them when given)."""
    messages = [{"messageId": str(_kept(state).get("messageId") or f"{state.run_id}/task"),
                 "contextId": context_of(state), "taskId": state.run_id, "role": "ROLE_USER",
                 "parts": [{"text": state.task}]}]
    messages += [post_message(state, m) for m in state.messages]
    if length is not None:
        messages = messages[-length:] if length > 0 else []
    return messages


def _asked(state: CouncilState) -> tuple[str, dict[str, Any]]:
    """What a waiting run waits for, as a sentence, and ``{member, room}`` of the first."""
    lines: list[str] = []
    first: dict[str, Any] = {}
    for member_id in state.waiting_for:
        key_room = state.interrupts.get(member_id)
        room = key_room[1] if key_room else next(
            (r for r in state.members[member_id].rooms if not state.rooms[r].closed), "")
        triggers = [state.messages[m] for m in state.queue.get(member_id, ())
                    if m in state.messages]
        asked = f": {triggers[-1].sender} said: {triggers[-1].text}" if triggers else ""
        lines.append(f"{member_id} is asked in room {room}{asked}")
        first = first or {"member": member_id, "room": room}
    for ask in state.asks.open.values():
        lines.append(f"{ask.member}'s agent asks in room {ask.room}: {ask.question}")
        first = first or {"room": ask.room}
    for approval in state.tools.approvals.values():
        lines.append(f"{approval.member}'s call {approval.call_id} waits for {approval.approver}'s "
                     "approval")
    return "\n".join(lines) or "the council waits for input", first


def status_of(state: CouncilState, updated: str | None = None) -> dict[str, Any]:
    """The task's status: its state, a message for a waiting or failed run, its time.

    ``updated``: when the run's last event was written (default: when it ended, if it did).
    """
    status: dict[str, Any] = {"state": task_state(state)}
    if state.status == "waiting-input":
        text, who = _asked(state)
        status["message"] = _agent_message(state, text, f"{state.run_id}/asked/"
                                           f"{state.last_sequence}", who)
    elif state.status == "failed" and state.error:
        status["message"] = _agent_message(
            state, f"{state.error.get('code', 'RUN_FAILED')}: {state.error.get('message', '')}",
            f"{state.run_id}/failed")
    if updated or state.ended_at:
        status["timestamp"] = updated or state.ended_at
    return status


def artifacts(state: CouncilState) -> list[dict[str, Any]]:
    """The artifacts of a completed run: its answer and its result."""
    if state.status != "completed":
        return []
    result = state.outputs or state.result()
    answer = result.get("answer")
    if not answer:
        posts = [m for m in state.messages.values() if not m.system]
        answer = posts[-1].text if posts else ""
    return [{"artifactId": "answer", "name": "answer", "parts": [{"text": str(answer)}]},
            {"artifactId": "result", "name": "result", "parts": [{"data": result}]}]


def task_of(state: CouncilState, history_length: int | None = None,
            updated: str | None = None) -> dict[str, Any]:
    """The run as an A2A task (JSON form; ``updated``: when its last event was written)."""
    task: dict[str, Any] = {"id": state.run_id, "contextId": context_of(state),
                            "status": status_of(state, updated),
                            "history": history(state, history_length),
                            "metadata": {"workflowId": state.workflow_id,
                                         "runStatus": state.status}}
    found = artifacts(state)
    if found:
        task["artifacts"] = found
    return task
