"""Private: what one member sees of a deliberating council (DESIGN.md §22).

A blind room shows a member none of the current round's posts by others (its own posts,
the room's system turns and steering posts stay, the tail is filled from earlier messages);
an anonymous room shows the others under their aliases and the member itself as ``you``,
with opaque message ids and no dispatch positions. Decisions are shown as the member may
know them: its own vote while one is open, the outcome, tally and dissent once it closed.
"""

from __future__ import annotations

import re
from typing import Any

from wopdsl.model.aliases import SELF, alias_slug
from wopdsl.model.construct import new_message
from wopdsl.model.mentions import MENTION_RE
from wopdsl.model.turns import Message
from wopdsl.state import CouncilState

__all__ = ["decision_views", "peer_views", "perspective", "seen_result"]

_SYSTEM = "system"


def perspective(state: CouncilState, viewer: str, rooms: tuple[str, ...],
                triggers: list[str]) -> tuple[list[Message], list[Message]]:
    """The member's ``messages`` and ``triggers``, as it may see them.

    Each room's visible tail plus every visible trigger, once each, in saved order; masked
    in anonymous rooms. O(tail + round): a blind room's current round is scanned for the
    member's own posts.
    """
    if len(rooms) == 1:  # One room (the common case): its visible tail is in saved order.
        room = state.rooms[rooms[0]]
        cut = room.hidden_from(viewer)
        messages = _visible_tail(state, rooms[0], viewer, cut)
        shown = [state.messages[t] for t in triggers]
        if shown and cut < len(room.messages):
            shown = [m for m in shown if _visible(state, m, viewer, {rooms[0]: cut})]
        if shown and not {m.id for m in shown} <= {m.id for m in messages}:
            messages = _merged(state, messages, shown)
        if not room.anonymous:
            return messages, shown
    else:
        cuts = {room_id: state.rooms[room_id].hidden_from(viewer) for room_id in rooms}
        shown = [m for m in (state.messages[t] for t in triggers)
                 if _visible(state, m, viewer, cuts)]
        picked: list[Message] = []
        for room_id in rooms:
            picked += _visible_tail(state, room_id, viewer, cuts[room_id])
        messages = _merged(state, picked, shown)
        if not any(state.rooms[r].anonymous for r in rooms):
            return messages, shown
    return ([_masked(state, m, viewer) for m in messages],
            [_masked(state, m, viewer) for m in shown])


def _visible_tail(state: CouncilState, room_id: str, viewer: str, cut: int) -> list[Message]:
    """The room's last ``tail`` messages the viewer may see, in saved order."""
    tail = state.tail
    messages = state.rooms[room_id].messages
    if cut >= len(messages):
        return messages[-tail:]
    own = state.rooms[room_id].round_posts.get(viewer, [])  # Blind, mid-round.
    if state.steering:  # Steering posts stay visible: instructions, not answers.
        first = state.order[messages[cut].id]
        steers = [state.messages[post] for post in state.steering
                  if state.messages[post].room == room_id and state.order[post] >= first]
        if steers:
            own = _merged(state, own, steers)
    return (messages[max(0, cut - tail):cut] + own)[-tail:]


def _merged(state: CouncilState, *groups: list[Message]) -> list[Message]:
    """The messages of ``groups``, each once, in saved order."""
    picked = {m.id: m for group in groups for m in group}
    order = state.order
    return sorted(picked.values(), key=lambda m: order[m.id])


def _visible(state: CouncilState, message: Message, viewer: str,
             cuts: dict[str, int]) -> bool:
    cut = cuts.get(message.room)
    if cut is None or message.sender in (viewer, _SYSTEM) or message.id in state.steering:
        return True
    room = state.rooms[message.room]
    return cut >= len(room.messages) or state.order[message.id] < state.order[
        room.messages[cut].id]


def _masked(state: CouncilState, message: Message, viewer: str) -> Message:
    """The message as ``viewer`` sees it in an anonymous room (else unchanged)."""
    if not state.rooms[message.room].anonymous:
        return message
    if message.sender == _SYSTEM:
        shown_id = f"{message.room}#{state.order[message.id] + 1}"
        return new_message(shown_id, message.room, _SYSTEM, message.text, [], 0)
    own = message.sender == viewer
    return new_message(f"{message.room}#{state.order[message.id] + 1}", message.room,
                       _name(state, message.sender, viewer),
                       _seen_text(state, message.room, message.text, viewer),
                       [_name(state, m, viewer) for m in message.mentions],
                       message.position if own else 0)


def _name(state: CouncilState, member: str, viewer: str) -> str:
    """How ``viewer`` sees ``member`` in an anonymous room: its alias, or ``you``."""
    return SELF if member == viewer else state.aliases.get(
        member, member if member == "all" else "a member")


def _seen_text(state: CouncilState, room: str, text: str, viewer: str) -> str:
    """``text`` of an anonymous room with each ``@member`` as ``@member-a`` (``@you``)."""
    if "@" not in text:
        return text
    members = state.rooms[room].members

    def mention(match: re.Match[str]) -> str:
        member = match.group(1).rstrip(".")
        if member not in members:
            return str(match.group(0))
        return "@" + alias_slug(_name(state, member, viewer)) + match.group(1)[len(member):]

    return MENTION_RE.sub(mention, text)


def seen_result(state: CouncilState, viewer: str,
                result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The member's previous result as it may see it.

    Its posts to anonymous rooms name the others by alias, as its messages do (the log
    keeps the ids).
    """
    if not result or not result.get("posts"):
        return result
    shown: list[Any] = []
    for post in result["posts"]:
        room = state.rooms.get(post.get("roomId", "")) if isinstance(post, dict) else None
        if room is not None and room.anonymous:
            post = {**post, "text": _seen_text(state, post["roomId"], post["text"], viewer),
                    "mentions": [_name(state, m, viewer) for m in post["mentions"]]}
        shown.append(post)
    return {**result, "posts": shown}


def peer_views(state: CouncilState, viewer: str,
               rooms: tuple[str, ...]) -> dict[str, dict[str, list[str]]]:
    """Per anonymous room of the member: the others' aliases, and which of them are spent.

    In alias order (the declaration order would reveal who is who); ``spent``: those a
    mention may not ask, as the recorder's ``requestable`` counts them (neither queued nor
    with a turn left).
    """
    views: dict[str, dict[str, list[str]]] = {}
    aliases = state.aliases
    for room_id in rooms:
        room = state.rooms[room_id]
        if not room.anonymous:
            continue
        others = sorted((m for m in room.members if m != viewer and m in aliases),
                        key=lambda m: (len(aliases[m]), aliases[m]))
        views[room_id] = {
            "members": [aliases[m] for m in others],
            "spent": [aliases[m] for m in others
                      if m not in state.queue and not state.has_turn_left(m)]}
    return views


def decision_views(state: CouncilState, viewer: str) -> list[dict[str, Any]]:
    """The decisions of the member's rooms (every decision for the chair), as it may see them."""
    rooms = state.members[viewer].rooms
    chair = viewer == state.chair
    views: list[dict[str, Any]] = []
    for decision in state.decisions.values():
        if decision.room not in rooms and not chair:
            continue
        static = decision.view
        if not static:
            definition = decision.definition
            static.update(id=decision.id, room=decision.room,
                          question=definition.get("question", ""), quorum=decision.quorum)
            if "options" in definition:
                static.update(options=list(definition["options"]),
                              rule=definition.get("rule", "majority"))
            else:
                static["scale"] = list(definition.get("scale") or ())
        view = {**static, "open": not decision.closed, "voter": viewer in decision.voter_set,
                "votes": len(decision.votes)}
        mine = decision.votes.get(viewer)
        if mine is not None:
            view["your_vote"] = {"choice": mine.choice, "reason": mine.reason}
        if decision.closed and decision.summary is not None:
            anonymous = decision.room in state.rooms and state.rooms[decision.room].anonymous
            view["outcome"] = decision.outcome
            view["tally"] = dict(decision.summary.get("tally", {}))
            view["dissent"] = [
                {**d, "voter": _seen_as(state, str(d.get("voter")), viewer, anonymous)}
                for d in decision.summary.get("dissent", ()) if isinstance(d, dict)]
        views.append(view)
    return views


def _seen_as(state: CouncilState, member: str, viewer: str, anonymous: bool) -> str:
    if not anonymous:
        return member
    return SELF if member == viewer else state.aliases.get(member, "a member")
