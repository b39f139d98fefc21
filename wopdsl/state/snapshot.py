"""Private: project a folded run state onto the OpenWOP v1 ``RunSnapshot`` shape."""

from __future__ import annotations

from typing import Any, Final

from wopdsl.state.fold import CouncilState

EVENT_LOG_SCHEMA_VERSION: Final = 2
"""The run's event-log era (v1 ``version-negotiation.md`` §Stamping: the current v1 value;
below 2 is legacy, with no event log). Under v2 it is the era key: 2 is the v1 era."""


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


def build_snapshot(state: CouncilState) -> dict[str, Any]:
    """Return the ``RunSnapshot`` of ``state``."""
    snap: dict[str, Any] = {
        "runId": state.run_id or "unknown",
        "workflowId": state.workflow_id or "unknown",
        "status": state.status,
    }
    if state.started_at:
        snap["startedAt"] = state.started_at
    if state.ended_at:
        snap["completedAt"] = state.ended_at
    waiting = state.waiting_for
    if state.status == "waiting-input" and waiting:
        rooms = state.members[waiting[0]].rooms
        if rooms:
            snap["currentNodeId"] = f"room:{rooms[0]}"
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
    snap["eventLogSchemaVersion"] = EVENT_LOG_SCHEMA_VERSION
    if state.error:
        snap["error"] = {"code": state.error.get("code", "UNKNOWN"),
                         "message": state.error.get("message") or "run failed"}
    return snap
