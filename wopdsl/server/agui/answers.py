"""What a ``RunAgentInput`` answers: its ``resume`` entries, or its last user message.

- A resume entry answers one interrupt of the thread's waiting run (``human_turn``: the
  payload is the person's post, a string or ``{text, mentions?, votes?}``; ``tool_approval``:
  ``{action: "accept"|"reject", comment?}``; @member words of a text are its mentions unless
  ``mentions`` says otherwise; the ``cancelled`` status leaves a turn unanswered
  and rejects a call). Every entry is checked before any is acted on. An id no run of the
  thread raised is 404 ``interrupt_not_found``; one that is no longer open (answered, or its
  run ended) is 409 ``interrupt_already_resolved``; a caller who may not answer it, 403.
- Without resume entries, the last user message of a waiting run is the post of its human
  member (``forwardedProps.wopdsl.member`` and ``.room`` choose when several could speak).

The door's own checks (roster, mentions, turns left) refuse a bad post with 422 before
anything is appended; the host's rules (:mod:`wopdsl.server.access`) say who may speak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wopdsl import CouncilState, MemberSpec, Run
from wopdsl.model.mentions import parse_mentions
from wopdsl.projections.agui import open_interrupts
from wopdsl.server.access import Access
from wopdsl.server.approvals import approval_at
from wopdsl.server.errors import ApiError
from wopdsl.server.host import Host
from wopdsl.server.turns import check_mentions, resolve_speaker
from wopdsl.store import Answer

__all__ = ["Act", "answers_of", "post_of"]


@dataclass(frozen=True, slots=True)
class Act:
    """One checked answer, ready to submit."""

    kind: str
    """``post`` or ``approve``."""
    member: str
    room: str = ""
    resume: Any = None
    call: str = ""
    grant: bool = True
    reason: str = ""

    async def submit(self, host: Host, run: Run, principal: str | None,
                     answer: Any = None) -> None:
        """Submit it to the run (422 when the door refuses it: nothing appended)."""
        if self.kind == "post":
            await host.reply(run, room=self.room, member=self.member, resume=self.resume,
                             answer=answer)
        else:
            await host.approve(run, call=self.call, member=self.member, grant=self.grant,
                               reason=self.reason, principal=principal)


def answers_of(entries: list[Any], runs: list[str], state: CouncilState,
               members: dict[str, MemberSpec], access: Access, principal: str,
               thread_id: str) -> list[Act]:
    """Check every resume entry against the thread's waiting run; return what to submit."""
    opened = {i["id"]: i for i in open_interrupts(state)}
    acts: list[Act] = []
    for index, entry in enumerate(entries):
        field = f"resume[{index}]"
        wanted = entry.interrupt_id
        if not any(wanted.startswith(f"{run}:") for run in runs):
            raise ApiError(404, "interrupt_not_found",
                           f"{field}: no run of thread {thread_id!r} raised interrupt "
                           f"{wanted!r}", {"field": field, "interruptId": wanted,
                                           "interrupts": sorted(opened)})
        interrupt = opened.get(wanted)
        if interrupt is None:
            raise ApiError(409, "interrupt_already_resolved",
                           f"{field}: interrupt {wanted!r} is no longer open (it was answered, "
                           "or its run ended)", {"field": field, "interruptId": wanted,
                                                 "interrupts": sorted(opened),
                                                 "hint": "send the thread's input again "
                                                 "without it to see where the council is"})
        meta = interrupt["metadata"]["wopdsl"]
        if meta["kind"] == "human_turn":
            if entry.status == "cancelled":
                continue  # Not answered: the run keeps waiting for the person.
            content = _turn_content(entry.payload, field)
            acts.append(_post(state, members, access, principal, meta["member"],
                              meta["room"], content))
        else:
            acts.append(_approval(state, members, access, principal, meta,
                                  interrupt["id"], entry, field))
    return acts


def post_of(state: CouncilState, members: dict[str, MemberSpec], access: Access,
            principal: str, text: str, chosen: dict[str, Any]) -> Act:
    """The post of a user message: as the waiting (or only) human member, in its room."""
    member = chosen.get("member")
    room = chosen.get("room")
    for name, value in (("member", member), ("room", room)):
        if value is not None and not isinstance(value, str):
            raise ApiError(400, "validation_error", f"forwardedProps.wopdsl.{name} must be "
                           "a string", {"field": f"forwardedProps.wopdsl.{name}"})
    humans = [m for m, spec in members.items() if spec.engine == "human"]
    if member is None:
        waiting = [m for m in state.waiting_for if m in humans]
        candidates = waiting or humans
        if len(candidates) != 1:
            raise ApiError(409, "member_not_chosen",
                           f"{len(candidates) or 'no'} human members could post this message"
                           if candidates else "this council has no human member: a message "
                           "cannot join its run", {"members": candidates, "hint":
                           "name one in forwardedProps.wopdsl.member" if candidates else
                           "start the next run when this one ends"})
        member = candidates[0]
    if member not in humans:
        raise ApiError(422, "validation_error", f"{member!r} is not a human member of this "
                       "council", {"field": "forwardedProps.wopdsl.member", "members": humans})
    if room is None:
        waiting_room = state.interrupts.get(member)
        rooms = [r for r in state.members[member].rooms if not state.rooms[r].closed]
        room = waiting_room[1] if waiting_room else (rooms[0] if rooms else None)
        if room is None:
            raise ApiError(409, "interrupt_already_resolved", f"every room of {member} is "
                           "closed: it takes no more posts", {"member": member})
    if room not in state.rooms:
        raise ApiError(422, "validation_error", f"room {room!r} does not exist",
                       {"field": "forwardedProps.wopdsl.room", "rooms": sorted(state.rooms)})
    return _post(state, members, access, principal, member, room, text)


def keeping(keep: Any, run_id: str) -> Any:
    """The answer a post keeps with its turn (a retried message finds it, posts nothing)."""
    if keep is None:
        return None

    def answer(message: str | None, status: str) -> Answer:
        kept: Answer = keep(200, {"runId": run_id, "messageId": message})
        return kept

    return answer


def _post(state: CouncilState, members: dict[str, MemberSpec], access: Access,
          principal: str, member: str, room: str, content: Any) -> Act:
    resume = {"role": "user", "speakerId": f"host:{member}", "content": content}
    speaker = resolve_speaker(state, members, room, resume)
    access.check(principal, state, "post", speaker.member, speaker.principal)
    check_mentions(state, room, resume)
    return Act("post", speaker.member, room, resume)


def _approval(state: CouncilState, members: dict[str, MemberSpec], access: Access,
              principal: str, meta: dict[str, Any], interrupt: str, entry: Any,
              field: str) -> Act:
    key = interrupt.removeprefix(f"{state.run_id}:")
    if entry.status == "cancelled":
        value: Any = {"action": "reject", "comment": "abandoned in the chat"}
    else:
        value = entry.payload
        if not isinstance(value, dict) or set(value) - {"action", "comment"}:
            raise ApiError(400, "validation_error", f"{field}.payload of a tool approval is "
                           '{"action": "accept" | "reject", "comment"?: text}',
                           {"field": f"{field}.payload"})
    decision = approval_at(state, members, meta["member"], {**value, "interruptId": key})
    access.check(principal, state, "approve", decision.approver, decision.reserved)
    return Act("approve", decision.approver, call=decision.call, grant=decision.grant,
               reason=decision.reason)


def _turn_content(payload: Any, field: str) -> Any:
    """A human turn's payload as turn content: a string, or ``{text, mentions?, votes?}``."""
    if isinstance(payload, str) and payload.strip():
        return payload
    if isinstance(payload, dict) and not set(payload) - {"text", "mentions", "votes"} and \
            isinstance(payload.get("text", ""), str):
        if "mentions" in payload:
            return payload
        # Typed in a chat box: its @member words are the mentions, as in a plain string.
        return {**payload, "mentions": parse_mentions(payload.get("text", ""))}
    raise ApiError(400, "validation_error", f"{field}.payload of a human turn is the post: a "
                   'string, or {"text": …, "mentions"?: [members], "votes"?: [...]}',
                   {"field": f"{field}.payload"})
