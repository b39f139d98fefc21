"""A turn from outside (``POST /v1/runs/{runId}/interrupts/{nodeId}``): who speaks, and may they.

The body is exactly ``{"resumeValue": …}``; the value is an RFC 0005 §E payload
``{operation: "exchange"|"close", turn?, outcome?}`` or bare turn fields
(``{role, speakerId, content}``). The speaking member is named by the turn's ``speakerId``
(``host:<member>``); a user turn without one speaks for the room's human member when there
is exactly one to choose. Roster and role rules (DESIGN.md §7) are checked here before the
run is touched, so a refused turn appends nothing and the run keeps waiting. At the node
of an ``a2a`` member whose agent asks for input, the turn is a post in the room the question
was put to (:func:`asked_room`), and it answers the question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wopdsl import CouncilSpec, CouncilState, MemberSpec
from wopdsl.model.mentions import parse_mentions
from wopdsl.server.errors import ApiError

__all__ = ["Speaker", "asked_room", "check_mentions", "council_spec", "ended",
           "resolve_speaker", "room_of"]

_SPEAKER_PREFIX = "host:"
_OUTSIDE = {"human": "user", "external": "agent"}
"""Engines whose turns arrive from outside, and the turn role each one speaks with."""


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who a resume payload speaks for."""

    member: str
    room: str
    principal: str | None
    """The principal the member is reserved for, if any."""


def room_of(state: CouncilState, node_id: str) -> str:
    """Return the room of node ``room:<id>`` (also named by the bare room id).

    The bare id is the gate's node id in the published conformance fixtures
    (``conformance-multi-party-council``'s gate is ``convo``); events name the node
    ``room:<id>`` (DESIGN.md §7).

    Raises:
        ApiError: 404 ``interrupt_not_found`` for any other node.
    """
    room = node_id.removeprefix("room:")
    if room not in state.rooms:
        raise ApiError(404, "interrupt_not_found",
                       f"run {state.run_id} has no interrupt at node {node_id!r}",
                       {"nodeId": node_id,
                        "interrupts": [f"room:{r}" for r in state.rooms]})
    return room


def asked_room(state: CouncilState, node_id: str) -> str | None:
    """The room where the question of member ``node_id``'s A2A agent waits (``None``: none).

    An ``a2a`` member's agent that asks for input suspends the member's node; a turn
    resolved at that node is a post in the room the question was put to (DESIGN.md §25).
    """
    return next((a.room for a in state.asks.open.values() if a.member == node_id), None)


def ended(run_id: str, node_id: str, status: str, *, v2: bool) -> ApiError:
    """A resolve at a node of a run that has ended (nothing is appended).

    v2: 409 ``interrupt_already_resolved`` whatever the ending (``errors.md`` §One code per
    state, RFC 0213 §C). v1: 422 ``interrupt_cancelled`` for a cancelled run, else 409
    ``run_terminal``.
    """
    details = {"runId": run_id, "nodeId": node_id, "status": status}
    message = f"run {run_id} has ended ({status}); it takes no more turns or decisions"
    if v2:
        return ApiError(409, "interrupt_already_resolved", message, details)
    if status == "cancelled":
        return ApiError(422, "interrupt_cancelled", message, details)
    return ApiError(409, "run_terminal", message, details)


def resolve_speaker(state: CouncilState, members: dict[str, MemberSpec], room: str,
                    resume: Any) -> Speaker:
    """Check a resume payload against the room's roster; return who speaks.

    Raises:
        ApiError: 400 for a malformed payload, 409 for a closed conversation, 422 for a turn
            the roster or role rules refuse.
    """
    if not isinstance(resume, dict):
        raise ApiError(400, "validation_error", "resumeValue must be a JSON object",
                       {"field": "resumeValue"})
    turn: Any = resume.get("turn") if "operation" in resume else resume
    operation = resume.get("operation", "exchange")
    if operation not in ("exchange", "close"):
        raise ApiError(400, "validation_error",
                       f"resumeValue.operation must be 'exchange' or 'close' (got {operation!r})",
                       {"field": "resumeValue.operation"})
    if turn is not None and not isinstance(turn, dict):
        raise ApiError(400, "validation_error", "resumeValue.turn must be a JSON object",
                       {"field": "resumeValue.turn"})
    turn = turn or {}
    room_state = state.rooms[room]
    if room_state.closed:
        raise ApiError(409, "interrupt_already_resolved",
                       f"the conversation of room '{room}' is closed; it takes no more turns",
                       {"nodeId": f"room:{room}"})
    roster = list(room_state.members)
    role = turn.get("role")
    speaker_id = turn.get("speakerId")
    if speaker_id is not None:
        member = str(speaker_id).removeprefix(_SPEAKER_PREFIX)
        if not isinstance(speaker_id, str) or not speaker_id.startswith(_SPEAKER_PREFIX) or \
                member not in roster:
            raise _refused("conversation_speaker_not_participant",
                           f"speakerId {speaker_id!r} is not a participant of room '{room}'",
                           room, roster, speaker_id=speaker_id)
    elif role == "agent":
        raise _refused("validation_error",
                       "an agent turn must carry the speakerId of a room participant", room,
                       roster)
    else:
        member = _only_human(state, members, room, roster)
    spec = members.get(member)
    engine = spec.engine if spec is not None else ""
    expected = _OUTSIDE.get(engine)
    if expected is None:
        raise _refused("validation_error",
                       f"{member} is a {engine} member: its turns are produced by the host, "
                       "not sent from outside", room, roster)
    if role is not None and role != expected:
        raise _refused("validation_error",
                       f"{member} is a {engine} member: its turns are '{expected}' turns, "
                       f"not '{role}'", room, roster)
    return Speaker(member, room, spec.principal if spec is not None else None)


def check_mentions(state: CouncilState, room: str, resume: dict[str, Any]) -> None:
    """Refuse a post whose mentions would fail the run: a turn past a member's cap or script.

    A mention queues a turn of the member it names (unless one is queued already); a member
    requested past its ``max_turns`` fails the run with ``TEAM_TURN_LIMIT``, a scripted one
    past its script's end with ``SCRIPT_EXHAUSTED``. Whoever may post must not be able to
    end the run that way: such a post is refused (422 ``member_turns_exhausted``) and
    nothing is appended. A steer's mention of a member running a turn adds none: the
    stopped turn runs again (docs/guides/steering.md).
    """
    if resume.get("operation", "exchange") != "exchange":
        return  # A closing turn requests nobody.
    turn = resume.get("turn") if "operation" in resume else resume
    content = turn.get("content") if isinstance(turn, dict) else None
    if isinstance(content, str):
        mentions: list[Any] = parse_mentions(content)
    elif isinstance(content, dict) and isinstance(content.get("mentions"), list):
        mentions = content["mentions"]
    else:
        return  # The door (wopdsl's intake) refuses a malformed turn with its reason.
    scripts = {m.get("id"): m.get("script") for m in state.council.get("members", [])}
    steer = isinstance(content, dict) and content.get("steer") is True
    for target in dict.fromkeys(m for m in mentions if isinstance(m, str)):
        member = state.members.get(target)
        if member is None or target in state.queue:
            continue  # Unknown: the door says so. Queued: the mention adds no turn.
        running = state.inflight.get(target)
        if steer and running is not None and running.suspended is None:
            continue  # A steer runs the stopped turn again: no turn is added.
        needed = member.turns + (target in state.inflight) + 1
        script = scripts.get(target)
        if member.engine == "script" and isinstance(script, list) and needed > len(script):
            limit, value = "script", len(script)
            why = f"all {value} steps of its script are used (SCRIPT_EXHAUSTED)"
        elif needed > member.cap:
            limit, value = "max_turns", member.cap
            why = f"it has used all {value} of its turns (max_turns, TEAM_TURN_LIMIT)"
        else:
            continue
        raise ApiError(422, "member_turns_exhausted",
                       f"mentioning @{target} would fail the run: {why}",
                       {"member": target, "limit": limit, "value": value,
                        "used": member.turns, "nodeId": f"room:{room}",
                        "hint": f"post without mentioning @{target}"})


def _only_human(state: CouncilState, members: dict[str, MemberSpec], room: str,
                roster: list[str]) -> str:
    humans = [m for m in roster if m in members and members[m].engine == "human"]
    waiting = [m for m in state.waiting_for if m in humans]
    if len(waiting) == 1:
        return waiting[0]
    if len(humans) == 1:
        return humans[0]
    raise _refused("validation_error",
                   f"room '{room}' has {len(humans) or 'no'} human members; say which one "
                   "speaks with turn.speakerId = 'host:<member>'", room, roster)


def _refused(code: str, message: str, room: str, roster: list[str], *,
             speaker_id: Any = None) -> ApiError:
    details: dict[str, Any] = {"nodeId": f"room:{room}",
                               "participants": [f"host:{m}" for m in roster]}
    if speaker_id is not None:
        details["speakerId"] = speaker_id
    return ApiError(422, code, message, details)


def council_spec(run: Any, state: CouncilState) -> Any:
    """The run's council declaration (its compiled council's, else the one it logged)."""
    if run.council is not None:
        return run.council.compile().spec
    return CouncilSpec.model_validate(state.council)
