"""Private: the door every turn submitted from outside passes (human and external members).

A submission (``Run.reply``, ``wop reply``, later HTTP) is a :class:`HumanInput`: plain text
and mentions, or an RFC 0005 §E resume payload ``{operation, turn, outcome?}`` (bare turn
fields also accepted). :func:`accept` checks it completely before anything is appended and
returns an :class:`Accepted` turn, or raises ``ValidationError`` naming the field and the fix.

Roster rules (RFC 0101, DESIGN.md §7), fail-closed: a turn is accepted only from a member of
the room with the right role for its engine — a ``human`` member speaks ``role: "user"``
turns, an ``external`` member ``role: "agent"`` turns with its ``speakerId`` (a roster
participant of the room). An agent turn without ``speakerId``, a ``speakerId`` outside the
roster, a role that does not fit the member, or a ``from`` naming someone else is refused.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from wopdsl.compile.graph import CouncilGraph
from wopdsl.engine._results import checked_votes, post_problem
from wopdsl.errors import SpeakerNotParticipant, TurnError, ValidationError
from wopdsl.model.mentions import parse_mentions
from wopdsl.protocol.bounds import json_problem
from wopdsl.protocol.conversation import MAX_DEPTH, json_depth
from wopdsl.protocol.payloads import agent_ref
from wopdsl.state import CouncilState, RunStatus
from wopdsl.store.base import Answer

__all__ = ["MAX_DEPTH", "Accepted", "HumanInput", "KeepAnswer", "accept", "json_depth"]

_TURN_KEYS: Final = frozenset({"messageId", "from", "to", "groupId", "content", "ts", "role",
                               "turnIndex", "speakerId", "agent"})
_RESUME_KEYS: Final = frozenset({"operation", "turn", "outcome"})
_CONTENT_KEYS: Final = frozenset({"text", "mentions", "votes", "steer"})
_HINT: Final = ("post as a human or external member, in one of its rooms, mentioning members "
                "of that room; resume payloads are {operation: 'exchange'|'close', turn, "
                "outcome?} or bare turn fields (docs/openwop.md)")


KeepAnswer = Callable[[str | None, RunStatus], Answer]
"""Given a submitted turn's saved message id (``None`` for a close) and the run's status once
the turn is in, the :class:`~wopdsl.store.Answer` to keep with it: appended in the same
transaction, so a host's retried request finds it whenever the turn was stored."""


@dataclass(frozen=True, slots=True)
class HumanInput:
    """A turn submitted from outside: a person's post or an external agent's turn.

    Either ``text``/``mentions`` or ``resume`` (an RFC 0005 §E payload, validated by the
    engine with the room's roster) carries the turn.
    """

    member: str | None
    """The member posting (``None``: the one the payload's ``speakerId`` names)."""
    room: str | None
    """The room (``None``: the payload's ``groupId``)."""
    text: str = ""
    """The message text (``exchange``)."""
    mentions: tuple[str, ...] = ()
    """Members the message requests a turn from."""
    operation: str = "exchange"
    """``exchange`` (post a turn) or ``close`` (end the room's conversation)."""
    outcome: Any = None
    """For ``close``: the conversation's outcome."""
    resume: Any = None
    """An RFC 0005 §E resume payload (overrides the fields above), as submitted."""
    votes: tuple[dict[str, Any], ...] = ()
    """Votes ``{decision, choice, reason}`` cast with the turn (a vote alone needs no text)."""
    steer: bool = False
    """A steering post: it stops the turns it names (docs/guides/steering.md); a payload's
    ``content.steer`` says the same."""
    answer: KeepAnswer | None = field(default=None, compare=False)
    """Builds the answer the store keeps in the turn's own transaction (see ``KeepAnswer``)."""



@dataclass(frozen=True, slots=True)
class Accepted:
    """A submission that passed every check: what the engine appends."""

    member: str
    room: str
    operation: str
    role: str
    """``user`` (a human member) or ``agent`` (an external member)."""
    text: str
    mentions: list[str]
    outcome: Any
    has_turn: bool
    """Whether there is a turn to record (always for ``exchange``; for ``close`` if given)."""
    ts: int | None
    """The submitter's timestamp (ms epoch), kept when given."""
    resume_value: dict[str, Any]
    """The normalised resume value (``interrupt.resolved.resumeValue``)."""
    votes: list[dict[str, Any]] = field(default_factory=list)
    """The votes cast with the turn, checked and normalised (DESIGN.md §22)."""
    steer: bool = False
    """Whether the post steers (docs/guides/steering.md)."""


def _refuse(message: str, hint: str = _HINT) -> ValidationError:
    return ValidationError(message, hint=hint)


def _unpack(resume: Any) -> tuple[str, dict[str, Any] | None, Any]:
    """Split a resume payload into ``(operation, turn fields, outcome)``."""
    if not isinstance(resume, dict):
        raise _refuse(f"the resume payload must be a JSON object, not {_kind(resume)}")
    _check_json(resume, "the resume payload")
    if "operation" not in resume:
        _only(resume, _TURN_KEYS, "turn")
        return "exchange", resume, None
    _only(resume, _RESUME_KEYS, "resume payload")
    operation = resume["operation"]
    if operation not in ("exchange", "close"):
        raise _refuse(f"operation must be 'exchange' or 'close' (got {operation!r})")
    turn = resume.get("turn")
    if turn is not None and not isinstance(turn, dict):
        raise _refuse(f"turn must be an object (got {_kind(turn)})")
    if turn is not None:
        _only(turn, _TURN_KEYS, "turn")
    if operation == "exchange":
        if turn is None:
            raise _refuse("an exchange needs a turn: {operation: 'exchange', turn: {content}}")
        if "outcome" in resume:
            raise _refuse("outcome is only for operation 'close'")
    return operation, turn, resume.get("outcome")


def _check_json(value: Any, what: str) -> None:
    """Refuse a value no reader of the log could serve (too deep, too wide an integer)."""
    problem = json_problem(value)
    if problem is not None:
        where, message = problem
        raise _refuse(f"{what}{': ' + where if where else ''}: {message}",
                      hint=f"send plain JSON data: at most {MAX_DEPTH} levels deep, integers "
                           "within 64 bits; e.g. a flat turn {content: {text, mentions}}")


def _only(value: dict[str, Any], allowed: frozenset[str], what: str) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise _refuse(f"unknown {what} field(s): {', '.join(map(str, unknown))} "
                      f"(allowed: {', '.join(sorted(allowed))})")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def _speaker(graph: CouncilGraph, turn: dict[str, Any], member: str | None) -> str | None:
    """Resolve who speaks from ``as_`` and the turn's ``speakerId`` (they must agree)."""
    speaker = turn.get("speakerId")
    if speaker is None:
        return member
    if not isinstance(speaker, str) or not speaker.startswith("host:"):
        raise _refuse(f"speakerId must be 'host:<member>' (got {speaker!r})")
    named = speaker[5:]
    if named not in graph.members:
        raise SpeakerNotParticipant(f"speakerId {speaker!r} names no member of this council",
                                    hint=_HINT, details={"speakerId": speaker})
    if member is not None and member != named:
        raise _refuse(f"speakerId {speaker!r} does not match --as {member}")
    return named


def accept(graph: CouncilGraph, state: CouncilState, entry: HumanInput) -> Accepted:
    """Check a submission completely; return what to append.

    Raises:
        ValidationError: the run takes no input, or the submission breaks a rule; the message
            names the field and how to fix it.
    """
    if state.terminal:
        raise _refuse(f"run {state.run_id} has ended ({state.terminal}); it takes no more input",
                      hint="start a new run, or fork this one")
    if state.last_sequence < 0:
        raise _refuse("the run has not started")
    operation, text, outcome = entry.operation, entry.text, entry.outcome
    mentions: list[str] = list(entry.mentions)
    votes: Any = list(entry.votes)
    steer = entry.steer
    turn: dict[str, Any] | None = None
    member, room_id = entry.member, entry.room
    if entry.resume is not None:
        operation, turn, outcome = _unpack(entry.resume)
    elif operation not in ("exchange", "close"):
        raise _refuse(f"unknown operation '{operation}' (use 'exchange' or 'close')")
    elif operation == "exchange":
        turn = {"content": {"text": text, "mentions": mentions, **(
            {"votes": votes} if votes else {}), **({"steer": True} if steer else {})}}
    if outcome is not None:
        _check_json(outcome, "the outcome")
    role = None
    ts = None
    if turn is not None:
        member = _speaker(graph, turn, member)
        role = turn.get("role")
        if role is not None and role not in ("user", "agent"):
            raise _refuse(f"turn role must be 'user' or 'agent' (got {role!r}); system turns "
                          "come from the host")
        if role == "agent" and "speakerId" not in turn:
            raise _refuse("an agent turn must carry speakerId (RFC 0101)",
                          hint="send speakerId: 'host:<member>' of a participant of the room")
        group = turn.get("groupId")
        if group is not None:
            if room_id is not None and group != room_id:
                raise _refuse(f"turn groupId {group!r} differs from --room {room_id}")
            room_id = str(group)
        ts = _timestamp(turn.get("ts"))
        for key in ("messageId", "to"):
            if key in turn and not (isinstance(turn[key], str) and 0 < len(turn[key]) <= 256):
                raise _refuse(f"turn {key} must be a string of 1-256 characters")
        if "turnIndex" in turn and not (isinstance(turn["turnIndex"], int)
                                        and turn["turnIndex"] >= 0):
            raise _refuse("turn turnIndex must be an integer >= 0 (the host assigns it)")
        text, mentions, votes = _content(turn.get("content"))
        steer = _steer_flag(turn.get("content"), steer)
    if member is None:
        raise _refuse("say who is posting", hint="pass as_='<member>' (CLI: --as MEMBER)")
    compiled = graph.members.get(member)
    if compiled is None or not compiled.awaited:
        awaited = [m.id for m in graph.members.values() if m.awaited]
        raise _refuse(f"'{member}' is not a human or external member of this council "
                      f"(those members: {', '.join(awaited) or 'none'}){_guess(member, awaited)}",
                      hint=f"post as one of them: {', '.join(awaited)}" if awaited else
                      "this council has no human or external member: nobody may post")
    expected = "agent" if compiled.external else "user"
    if role is not None and role != expected:
        raise _refuse(f"{member} is a{'n external' if compiled.external else ' human'} member:"
                      f" its turns are role '{expected}', not '{role}'")
    rooms_hint = _rooms_hint(graph, member)
    if room_id is None or room_id not in graph.rooms:
        guess = _guess(room_id, list(graph.rooms)) if room_id is not None else ""
        raise _refuse(f"room {room_id!r} does not exist (rooms: {', '.join(graph.rooms)})"
                      f"{guess}", hint=rooms_hint)
    if turn is not None:
        _check_from(turn, member, expected)
        if compiled.external and member not in graph.participants(room_id):
            raise SpeakerNotParticipant(
                f"speaker {agent_ref(member)} is not a participant of room '{room_id}'",
                hint=_HINT, details={"speakerId": agent_ref(member),
                                     "participants": [agent_ref(m) for m in
                                                      graph.participants(room_id)]})
    if steer:
        _check_steer(operation, compiled.human, member, text)
    room = graph.rooms[room_id]
    if member not in room.member_set:
        raise _refuse(f"{member} is not a member of room '{room_id}' ({', '.join(room.members)})",
                      hint=rooms_hint)
    if state.rooms[room_id].closed:
        raise _refuse(f"the conversation of room '{room_id}' is closed; no turn may follow "
                      "conversation.closed")
    mention_list = mentions
    if votes:
        if operation != "exchange":
            raise _refuse("votes go with an exchange, not a close")
        try:
            votes = checked_votes(state, member, votes)
        except TurnError as exc:
            refused = _refuse(exc.message.removeprefix(f"{member}: "),
                              hint="vote on an open decision you are a voter of, for one of "
                              "its options (wop vote RUN DECISION CHOICE)")
            refused.details["field"] = f"content.{exc.details.get('field', 'votes')}"
            raise refused from None
    if turn is not None:
        _check_size(text, mention_list, compiled.max_input_bytes, member)
        _check_mentions(mention_list, list(room.members), room_id)
        if operation == "exchange" and state.members[member].turns >= compiled.cap:
            raise _refuse(f"{member} has used all {compiled.cap} of its turns (max_turns)")
        problem = post_problem(graph, state, member, room_id, text, mention_list) \
            if text or not votes else None
        if problem:
            raise _refuse(problem)
    value: dict[str, Any] = {"operation": operation}
    if turn is not None:
        content: dict[str, Any] = {"text": text, "mentions": mention_list}
        if votes:
            content["votes"] = votes
        if steer:
            content["steer"] = True
        value["turn"] = {"role": expected, "speakerId": agent_ref(member), "content": content}
    if operation == "close":
        value["outcome"] = outcome
    return Accepted(member, room_id, operation, expected, text, mention_list, outcome,
                    turn is not None, ts, value, votes, steer)


def _steer_flag(content: Any, given: bool) -> bool:
    """``content.steer`` of a turn (``True``, ``False`` or absent), or ``given``."""
    if not isinstance(content, dict) or "steer" not in content:
        return given
    flag = content["steer"]
    if not isinstance(flag, bool):
        raise _refuse(f"content.steer must be true or false (got {_kind(flag)})",
                      hint='e.g. "content": {"text": "@cfo stop", "steer": true}')
    return flag or given


def _check_steer(operation: str, human: bool, member: str, text: str) -> None:
    """A steer is a person's post with text (docs/guides/steering.md)."""
    if operation != "exchange":
        raise _refuse("a steer is a post (operation 'exchange'), not a close",
                      hint="close the room without steer, or post the steering text")
    if not human:
        raise _refuse(f"{member} is an external member: only a person (a human member) "
                      "steers", hint="send the turn without steer")
    if not text:
        raise _refuse("a steer needs text: what should the members do instead?",
                      hint='e.g. wop reply RUN --room R --steer "@cfo use the 2M budget"')


def _check_mentions(mentions: list[str], members: list[str], room_id: str) -> None:
    """Refuse a mention of someone outside the room, naming the room's members."""
    for target in mentions:
        if target != "all" and target not in members:
            raise _refuse(f"mention '@{target}' is not a member of room '{room_id}' "
                          f"({', '.join(members)}){_guess(target, members)}",
                          hint=f"mention members of room '{room_id}': "
                               f"{', '.join('@' + m for m in members)} (or @all); a name "
                               "without @ asks nobody")


def _guess(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _rooms_hint(graph: CouncilGraph, member: str) -> str:
    mine = [r.id for r in graph.rooms.values() if member in r.member_set]
    if not mine:
        return f"{member} is in no room, so it cannot post"
    return f"post in one of {member}'s rooms: {', '.join(mine)}"


def _timestamp(ts: Any) -> int | None:
    if ts is None:
        return None
    if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
        raise _refuse(f"turn ts must be milliseconds since the epoch, an integer >= 0 "
                      f"(got {ts!r})")
    return ts


def _content(content: Any) -> tuple[str, list[str], list[Any]]:
    if isinstance(content, str):
        # Plain text, as typed: its @member words are the mentions (like `wop reply TEXT`).
        return _text(content), parse_mentions(content), []
    if not isinstance(content, dict):
        raise _refuse(f"turn content must be {{text, mentions?, votes?}} or a string (got "
                      f"{_kind(content)})")
    _only(content, _CONTENT_KEYS, "content")
    mentions = content.get("mentions", [])
    if not isinstance(mentions, list) or not all(isinstance(m, str) for m in mentions):
        raise _refuse("content.mentions must be a list of member ids (strings)",
                      hint='e.g. "mentions": ["reviewer"]')
    votes = content.get("votes", [])
    if not isinstance(votes, list):
        raise _refuse("content.votes must be a list of {decision, choice, reason}",
                      hint='e.g. "votes": [{"decision": "ship", "choice": "hold", '
                      '"reason": "…"}]')
    if votes and not content.get("text"):
        return "", list(dict.fromkeys(mentions)), votes  # A vote alone: no post.
    return _text(content.get("text")), list(dict.fromkeys(mentions)), votes


def _text(text: Any) -> str:
    if not isinstance(text, str):
        raise _refuse(f"content.text must be a string (got {_kind(text)})")
    if not text.strip():
        raise _refuse("the post is empty", hint="write some text")
    return text


def _check_from(turn: dict[str, Any], member: str, role: str) -> None:
    sender = turn.get("from")
    if sender is None:
        return
    allowed = {"user", member} if role == "user" else {member, agent_ref(member)}
    if sender not in allowed:
        raise _refuse(f"turn from {sender!r} does not match the speaker {member} "
                      f"(use {' or '.join(repr(a) for a in sorted(allowed))})")


def _check_size(text: str, mentions: list[str], limit: int, member: str) -> None:
    size = len(text.encode("utf-8", "surrogatepass")) + sum(len(m) + 3 for m in mentions)
    if size > limit:
        raise _refuse(f"the post is {size} bytes; {member}'s max_input_bytes is {limit}",
                      hint="shorten it, or raise max_input_bytes in the council file")
