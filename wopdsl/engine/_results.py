"""Private: check a member's raw result before any of its posts is accepted."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from wopdsl.compile.graph import CompiledMember, CouncilGraph
from wopdsl.errors import TurnError
from wopdsl.model.aliases import resolve_alias
from wopdsl.model.turns import Reply
from wopdsl.model.votes import MAX_REASON_CHARS, choice_problem
from wopdsl.protocol.bounds import field_path, json_problem
from wopdsl.state import CouncilState


def check_result(
    graph: CouncilGraph, state: CouncilState, member: CompiledMember, raw: object
) -> dict[str, Any]:
    """Return the wire result ``{summary, data?, posts?}`` or raise ``RESULT_INVALID``.

    Every post is checked before any is accepted: the room exists and is open, the text is
    not blank, the sender belongs to it, every mention belongs to it, and the content
    satisfies its turn schema — the rules a person's post obeys. A member mentioned twice
    in one post is kept once, as in a person's post. ``data`` must be JSON every reader of
    the log can serve (``wopdsl.protocol.bounds``).
    """
    member_id = member.id  # (a pydantic attribute: read once)
    result = _normalise(raw, member_id)
    if "data" in result:
        bad = json_problem(result["data"])
        if bad is not None:
            field = field_path("data", bad[0])
            raise TurnError("RESULT_INVALID", f"{member_id} returned {field}: {bad[1]}",
                            {"field": field})
    posts = result.get("posts", [])
    if state.aliases and posts:
        posts = [_unaliased(graph, state, member_id, post) for post in posts]
        result = {**result, "posts": posts}
    for post in posts:
        if len(post["mentions"]) > 1 and len(set(post["mentions"])) != len(post["mentions"]):
            # Each member once, as in a person's post (the message reaches it once anyway).
            posts = [{**p, "mentions": list(dict.fromkeys(p["mentions"]))} for p in posts]
            result = {**result, "posts": posts}
            break
    for index, post in enumerate(posts):
        problem = post_problem(graph, state, member_id, post["roomId"], post["text"],
                               post["mentions"])
        if problem:
            raise TurnError("RESULT_INVALID", f"{member_id}: posts[{index}]: {problem}",
                            {"post": index})
    if "votes" in result:
        result = {**result, "votes": checked_votes(state, member_id, result["votes"])}
    _check_output_size(result, member.max_output_bytes, member_id)
    return result


def _unaliased(graph: CouncilGraph, state: CouncilState, sender: str,
               post: dict[str, Any]) -> dict[str, Any]:
    """A post to an anonymous room with its mentions of aliases mapped back to members."""
    room = graph.rooms.get(post["roomId"])
    if room is None or not state.rooms[room.id].anonymous:
        return post
    mentions = [m if m in room.member_set or m == "all" else
                (resolve_alias(m, state.aliases, sender) or m) for m in post["mentions"]]
    return {**post, "mentions": mentions}


def checked_votes(state: CouncilState, member: str, votes: Any) -> list[dict[str, Any]]:
    """The votes of a result, each on an open decision the member votes on, normalised.

    Raises:
        TurnError: ``RESULT_INVALID`` naming the vote and what is wrong with it.
    """
    if not isinstance(votes, list):
        raise TurnError("RESULT_INVALID", f"{member}: votes must be a list of "
                        "{decision, choice, reason}", {"field": "votes"})
    checked: list[dict[str, Any]] = []
    for index, vote in enumerate(votes):
        name = vote.get("decision") if isinstance(vote, dict) else None
        decision = state.decisions.get(name) if isinstance(name, str) else None
        reason = vote.get("reason", "") if decision is not None else ""
        choice = vote.get("choice") if decision is not None else None
        options = decision.definition.get("options") if decision is not None else None
        if decision is not None and not decision.closed and member in decision.voter_set and \
                type(reason) is str and len(reason) <= MAX_REASON_CHARS and \
                type(choice) is str and options is not None and choice in options and \
                all(c["decision"] != name for c in checked):
            checked.append({"decision": name, "choice": choice, "reason": reason})
            continue  # The common case, checked without building a message.
        checked.append(_checked_vote(state, member, vote, index, checked))
    return checked


def _checked_vote(state: CouncilState, member: str, vote: Any, index: int,
                  before: list[dict[str, Any]]) -> dict[str, Any]:
    """One vote checked in full (a score, a case-folded option, or a problem to report)."""
    where = f"votes[{index}]"
    if not isinstance(vote, dict) or not isinstance(vote.get("decision"), str):
        raise TurnError("RESULT_INVALID", f"{member}: {where} must be {{decision, choice, "
                        "reason}", {"field": where})
    name = vote["decision"]
    decision = state.decisions.get(name)
    problem = None
    if decision is None:
        problem = (f"decision '{name}' does not exist (decisions: "
                   f"{', '.join(state.decisions) or 'none'})")
    elif decision.closed:
        problem = f"decision '{name}' is closed (outcome: {decision.outcome})"
    elif member not in decision.voters:
        problem = (f"{member} is not a voter of decision '{name}' "
                   f"(voters: {', '.join(decision.voters)})")
    elif any(c["decision"] == name for c in before):
        problem = f"decision '{name}' is voted on twice in one turn"
    reason = vote.get("reason", "")
    if problem is None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS):
        problem = f"the reason must be text of at most {MAX_REASON_CHARS} characters"
    choice = None
    if problem is None and decision is not None:
        problem, choice = choice_problem(decision.definition, vote.get("choice"))
    if problem is not None:
        raise TurnError("RESULT_INVALID", f"{member}: {where}: {problem}", {"field": where})
    return {"decision": name, "choice": choice, "reason": reason}


def post_problem(
    graph: CouncilGraph,
    state: CouncilState,
    sender: str,
    room_id: str,
    text: str,
    mentions: list[str],
) -> str | None:
    """Return why a post may not be saved, or ``None`` when it may."""
    room = graph.rooms.get(room_id)
    if room is None:
        return f"room '{room_id}' does not exist (rooms: {', '.join(graph.rooms) or 'none'})"
    if not text.strip():
        return "the post is empty (a post needs some text)"
    if sender not in room.member_set:
        return f"{sender} is not a member of room '{room_id}' ({', '.join(room.members)})"
    for target in mentions:
        if target not in room.member_set and target != "all":
            return (f"mention '@{target}' is not a member of room '{room_id}' "
                    f"({', '.join(room.members)})")
    if not text.isascii() and not _is_unicode(text):  # (ASCII, the common case: no call)
        return "text is not valid Unicode (a lone surrogate, e.g. from undecodable bytes)"
    if state.rooms[room_id].closed:
        return f"the conversation of room '{room_id}' is closed"
    if room.check_content is not None:
        violation = room.check_content({"text": text, "mentions": mentions})
        if violation:
            return f"content breaks the turn_schema of room '{room_id}': {violation}"
    return None


def _normalise(raw: object, member_id: str) -> dict[str, Any]:
    if isinstance(raw, Reply):
        return raw.to_wire()
    if isinstance(raw, str):
        return {"summary": raw}
    if isinstance(raw, dict) and _looks_canonical(raw):
        return raw
    try:
        return Reply.model_validate(raw).to_wire()
    except PydanticValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'result'}: {e['msg']}" for e in exc.errors()
        )
        raise TurnError(
            "RESULT_INVALID",
            f"{member_id} returned an invalid result ({details}); expected "
            "{summary: str, data?: JSON, posts?: [{roomId, text, mentions}], "
            "votes?: [{decision, choice, reason}]}",
        ) from None


_RESULT_KEYS = frozenset({"summary", "data", "posts", "votes"})
_POST_KEYS = frozenset({"roomId", "text", "mentions"})


def _looks_canonical(raw: dict[Any, Any]) -> bool:
    # Results built by the script engine (and well-formed dicts) skip pydantic: hot path,
    # hence loops rather than generators.
    if not isinstance(raw.get("summary"), str) or not raw.keys() <= _RESULT_KEYS:
        return False
    posts = raw.get("posts", [])
    if not isinstance(posts, list) or not isinstance(raw.get("votes", []), list):
        return False
    for p in posts:
        if not (isinstance(p, dict) and p.keys() == _POST_KEYS and isinstance(p["roomId"], str)
                and isinstance(p["text"], str) and isinstance(p["mentions"], list)):
            return False
        for mention in p["mentions"]:
            if not isinstance(mention, str):
                return False
    return True


def result_estimate(result: dict[str, Any]) -> int | None:
    """Return a cheap size estimate of a ``{summary, posts?}`` result, ``None`` otherwise.

    Counts the characters of the summary and of each post's text, plus 32 per post and per
    mention for the rest of the JSON. Callers compare it with a safety factor before they
    skip exact JSON sizing; a result with ``data`` (or of another shape) returns ``None``:
    only encoding it tells its size.
    """
    summary = result.get("summary")
    if "data" in result or type(summary) is not str:
        return None
    size = len(summary)
    try:
        for post in result.get("posts", ()):  # A loop: results have few posts.
            size += len(post["text"]) + 32 * (1 + len(post["mentions"]))
    except (TypeError, KeyError):
        return None
    return size


def _check_output_size(result: dict[str, Any], limit: int, member_id: str) -> None:
    estimate = result_estimate(result)
    if estimate is not None and estimate * 6 < limit:
        summary = result["summary"]
        if not summary.isascii() and not _is_unicode(summary):
            raise TurnError("RESULT_INVALID", f"{member_id}: summary is not valid Unicode "
                            "(a lone surrogate)")
        return
    try:
        size = len(json.dumps(result, ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError, RecursionError) as exc:
        # NaN, sets, objects, cycles, lone surrogates: the log could not store it.
        raise TurnError("RESULT_INVALID",
                        f"{member_id} returned a result that is not JSON data: {exc}") from None
    if size > limit:
        raise TurnError(
            "RESULT_INVALID",
            f"{member_id} returned {size} bytes, over max_output_bytes {limit}",
            {"bytes": size, "limit": limit},
        )


def _is_unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
