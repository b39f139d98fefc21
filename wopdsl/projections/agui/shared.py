"""Private: the shared state an AG-UI client renders, and JSON Patch deltas between two of them.

The state is a view of the run's fold (:class:`~wopdsl.state.CouncilState`): its status, the
rooms, the roster with each member's turns left, the approvals and people awaited, the
decisions (as the council's human members see them: an open tally stays hidden from its
voters) and the chair. Objects are keyed by id, so a delta names what changed
(``/roster/critic/turnsLeft``).
"""

from __future__ import annotations

from typing import Any

from wopdsl.projections.deliberation import chair_of, decisions_view, round_of
from wopdsl.state import CouncilState, wire_status

Doc = dict[str, Any]


def shared_state(state: CouncilState, thread_id: str) -> Doc:
    """The shared state of the run ``state`` folds, in the thread ``thread_id``."""
    humans = [m for m, member in state.members.items() if member.human]
    rooms: Doc = {}
    for room_id, room in state.rooms.items():
        rounds = round_of(state, room_id)
        rooms[room_id] = {"members": list(room.members), "open": room.opened and not room.closed,
                          "closed": room.closed, "messages": len(room.messages),
                          "round": None if rounds is None else rounds.label()}
    roster = {m: {"role": member.role, "engine": member.engine, "turns": member.turns,
                  "maxTurns": member.cap, "turnsLeft": max(0, member.cap - member.turns),
                  "phase": state.member_phase(m), "rooms": list(member.rooms)}
              for m, member in state.members.items()}
    approvals = {a.key: {"callId": a.call_id, "member": a.member, "approver": a.approver,
                         "title": a.title} for a in state.tools.approvals.values()}
    decisions = {d.id: {"room": d.room, "question": d.question, "open": d.open,
                        "voters": list(d.voters), "voted": d.voted,
                        "tally": d.tally, "outcome": d.outcome, "headline": d.headline(),
                        "dissent": [dict(x) for x in d.dissent]}
                 for d in decisions_view(state, humans)}
    chair = chair_of(state)
    doc: Doc = {
        "threadId": thread_id, "runId": state.run_id, "council": state.workflow_id,
        "status": wire_status(state), "task": state.task, "rooms": rooms, "roster": roster,
        "waitingFor": list(state.waiting_for), "approvals": approvals,
        "decisions": decisions,
        "chair": None if chair is None else {"member": chair.member, "called": chair.called,
                                             "done": chair.done, "answer": chair.answer},
    }
    if state.error:
        doc["error"] = {"code": state.error.get("code", "UNKNOWN"),
                        "message": state.error.get("message") or "run failed"}
    return doc


def json_patch(old: Any, new: Any, path: str = "") -> list[Doc]:
    """RFC 6902 operations that turn ``old`` into ``new`` (objects by key; others replaced).

    Example:
        >>> json_patch({"a": 1, "b": {"c": 2}}, {"b": {"c": 3}, "d": [1]})
        [{'op': 'remove', 'path': '/a'}, {'op': 'replace', 'path': '/b/c', 'value': 3}, \
{'op': 'add', 'path': '/d', 'value': [1]}]
    """
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[Doc] = [{"op": "remove", "path": f"{path}/{_escape(k)}"}
                          for k in old if k not in new]
        for key, value in new.items():
            at = f"{path}/{_escape(key)}"
            if key not in old:
                ops.append({"op": "add", "path": at, "value": value})
            else:
                ops += json_patch(old[key], value, at)
        return ops
    if old == new and type(old) is type(new):
        return []
    return [{"op": "replace", "path": path, "value": new}]


def _escape(key: str) -> str:
    """A key as a JSON Pointer token (RFC 6901)."""
    return str(key).replace("~", "~0").replace("/", "~1")
