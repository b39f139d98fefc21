"""Private: project a folded run state onto the OpenWOP v1 ``RunSnapshot`` shape."""

from __future__ import annotations

from typing import Any

from wopdsl.state.fold import CouncilState


def channels(state: CouncilState) -> dict[str, list[dict[str, Any]]]:
    """Per-room turn lists: deterministic (no timestamps), byte-identical on replay."""
    return {
        room_id: [
            {"messageId": m.id, "from": m.sender, "content": {"text": m.text,
                                                              "mentions": list(m.mentions)}}
            for m in room.messages
        ]
        for room_id, room in state.rooms.items()
    }


def wire_status(state: CouncilState) -> str:
    """The run's status as OpenWOP names it (``RunSnapshot.status``).

    ``waiting-approval`` when the run waits and every wait is a tool call's approval (the run
    is suspended at approval interrupts only, ``interrupt.md``); otherwise the fold's
    :attr:`~CouncilState.status` (``waiting-input`` when a person's or an external member's
    turn is awaited, with or without approvals).
    """
    status = state.status
    if status == "waiting-input" and state.tools.approvals and not state.waiting_for and \
            not state.asks.open:
        return "waiting-approval"
    return status


def build_snapshot(state: CouncilState) -> dict[str, Any]:
    """Return the ``RunSnapshot`` of ``state``."""
    status = wire_status(state)
    snap: dict[str, Any] = {
        "runId": state.run_id or "unknown",
        "workflowId": state.workflow_id or "unknown",
        "status": status,
    }
    if state.started_at:
        snap["startedAt"] = state.started_at
    if state.ended_at:
        snap["completedAt"] = state.ended_at
    waiting = state.waiting_for
    if status == "waiting-input" and waiting:
        rooms = state.members[waiting[0]].rooms
        if rooms:
            snap["currentNodeId"] = f"room:{rooms[0]}"
    elif status == "waiting-input" and state.asks.open:  # An agent's question: answered there.
        snap["currentNodeId"] = f"room:{state.asks.rooms()[0]}"
    elif status == "waiting-approval":  # The member node whose tool call waits.
        snap["currentNodeId"] = next(iter(state.tools.approvals.values())).member
    nodes: dict[str, Any] = {}
    for member_id, member in state.members.items():
        nodes[member_id] = {
            "status": state.member_phase(member_id),
            "role": member.role,
            "engine": member.engine,
            "turns": member.turns,
            "maxTurns": member.cap,
        }
    for room_id, room in state.rooms.items():
        nodes[f"room:{room_id}"] = {
            "status": "closed" if room.closed else ("open" if room.opened else "pending"),
            "conversationId": room.conversation_id,
            "turnIndex": room.turn_index,
            "messages": len(room.messages),
        }
    snap["nodeStates"] = nodes
    snap["channels"] = channels(state)
    snap["variables"] = {"task": state.task}
    snap["metadata"] = {"councilDigest": state.metadata.get("councilDigest", "")}
    snap["eventLogSchemaVersion"] = state.era
    if state.error:
        snap["error"] = {"code": state.error.get("code", "UNKNOWN"),
                         "message": state.error.get("message") or "run failed"}
    return snap
