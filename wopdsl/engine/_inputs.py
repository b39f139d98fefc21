"""Private: build a member's turn input in O(rooms x tail), never O(history)."""

from __future__ import annotations

import json
from typing import Any

from wopdsl.agents.base import turn_context
from wopdsl.compile.graph import CompiledMember
from wopdsl.engine._perspective import decision_views, peer_views, perspective, seen_result
from wopdsl.engine._results import result_estimate
from wopdsl.errors import TurnError
from wopdsl.model.construct import new_turn
from wopdsl.model.turns import Message, Turn
from wopdsl.state import CouncilState, Inflight


def build_turn(state: CouncilState, member: CompiledMember, inflight: Inflight,
               *, deliberates: bool = False) -> Turn:
    """Return the turn input: tails of the member's rooms plus every trigger, in saved order.

    ``deliberates`` (the council has rounds, decisions or a chair): blind and anonymous
    rooms are seen as DESIGN.md §22 says, and the input holds ``decisions``, ``rounds`` and
    ``peers``.
    """
    spec = member.spec
    member_id = inflight.member  # spec.id, without reading a pydantic attribute
    mstate = state.members[member_id]
    result = mstate.result
    terms: int | None
    peers: dict[str, dict[str, list[str]]] = {}
    if member.masked:  # A blind or anonymous room: seen as DESIGN.md §22 says.
        messages, triggers = perspective(state, member_id, member.rooms, inflight.triggers)
        terms = None
        peers = peer_views(state, member_id, member.rooms)
        if peers:
            result = seen_result(state, member_id, result)
    else:
        messages, terms = _seen_messages(state, member.rooms, inflight.triggers)
        triggers = [state.messages[t] for t in inflight.triggers]
    decisions = decision_views(state, member_id) if deliberates and state.decisions else []
    rounds = state.round_views(member_id) if deliberates else {}
    brief, role = spec.brief, spec.role
    if "{" in brief:
        context = {
            "task": state.task,
            "member": member_id,
            "role": role,
            "turn": inflight.turn,
            "result": result,
            "messages": [m.to_wire() for m in messages],
            "triggers": [m.to_wire() for m in triggers],
        }
        if decisions:
            context["decisions"] = decisions
        if rounds:
            context["rounds"] = rounds
        if peers:
            context["peers"] = peers
        try:
            brief = member.brief(context, max_chars=member.max_input_bytes,
                                 timeout_s=member.turn_timeout_s)
        except TurnError:
            raise  # TEMPLATE_LIMIT, or TIMEOUT past turn_timeout_ms
        except Exception as exc:
            raise TurnError(
                "validation_error",
                f"the brief of {member_id} failed to render ({type(exc).__name__}: {exc}); "
                "fix the brief template",
            ) from None
    turn = new_turn(state.task, member_id, role, brief, inflight.turn, result,
                    messages, triggers, decisions, rounds, peers, inflight.elapsed_ms)
    _check_input_size(turn, member.max_input_bytes, state.sizes, terms,
                      len(state.task) + len(brief), result)
    return turn


def _seen_messages(state: CouncilState, rooms: tuple[str, ...],
                   triggers: list[str]) -> tuple[list[Message], int | None]:
    """The last ``tail`` messages of each room plus every trigger, once each, saved order.

    Also returns the sum of their size terms when it comes for free (else ``None``).
    """
    tail = state.tail
    order = state.order
    if len(rooms) == 1:
        # One room (the common case): its tail is already in saved order, and a trigger
        # from it is either in the tail or older than the tail's first message.
        room = state.rooms[rooms[0]]
        messages = room.messages[-tail:]
        if not messages:
            return [state.messages[t] for t in triggers], None
        first = order[messages[0].id]
        for message_id in triggers:
            if order[message_id] < first:
                break
        else:
            aligned = len(room.sizes) == len(room.messages)  # (a state built by hand)
            return messages, sum(room.sizes[-tail:]) if aligned else None
    picked: dict[str, Message] = {}
    for room_id in rooms:
        for message in state.rooms[room_id].messages[-tail:]:
            picked[message.id] = message
    for message_id in triggers:
        if message_id not in picked:
            picked[message_id] = state.messages[message_id]
    return sorted(picked.values(), key=lambda m: order[m.id]), None


def _check_input_size(turn: Turn, limit: int, sizes: dict[str, int], terms: int | None,
                      fixed: int, result: dict[str, Any] | None) -> None:
    # ``fixed`` (the task's and the brief's length) and ``result`` are the turn's, passed
    # in: reading them back from the Turn model costs more than the estimate.
    # An upper bound first: exact JSON sizing is only worth it when the input may be large.
    # Each message's term (its text, id and mentions, see CouncilState.sizes) is computed
    # once when it is saved, not once per turn that sees it.
    if terms is None:
        try:
            terms = sum([sizes[m.id] for m in turn.messages])
        except KeyError:  # A state built by hand: size its messages here.
            terms = sum(len(m.text) + len(m.id) + 64 + 16 * len(m.mentions)
                        for m in turn.messages)
    estimate = fixed + 4 * terms
    if result is not None:
        # The previous result: a canonical one is sized without encoding it, with the same
        # margin as the messages (escapes and UTF-8 may take up to 6 bytes per character).
        known = result_estimate(result)
        estimate += len(json.dumps(result)) if known is None else 4 * known
    if estimate * 4 < limit:
        return
    size = len(json.dumps(turn_context(turn), ensure_ascii=False).encode())
    if size > limit:
        raise TurnError(
            "validation_error",
            f"turn input of {turn.member} is {size} bytes, over max_input_bytes {limit}",
            {"bytes": size, "limit": limit},
        )

