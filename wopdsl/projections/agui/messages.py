"""Private: a run's posts, streamed tokens and tool calls as AG-UI message and tool events.

Each accepted post is one text message (``TEXT_MESSAGE_START``/``CONTENT``/``END``), its id the
post's message id, ``name`` its member and ``metadata.wopdsl`` its room and mentions. An
``llm`` member's streamed answer (``output.chunk``) opens the messages of its posts as their
text arrives — under the ids the posts will have (``team/{member}/{position}/{index}``) — and
the accepted post ends them. A call that is made again (a retry, a repaired answer) ends what
the abandoned attempt streamed; its post then comes as a message of its own (``…#2``). Tool
calls are ``TOOL_CALL_START``/``ARGS``/``END`` when they are asked for (an approval) or made,
and ``TOOL_CALL_RESULT`` when they return (or are rejected).

A blind room's round (docs/guides/deliberation.md) is kept as every view keeps it: its posts
are held — not streamed, not in the messages snapshot — until the round ends (the room's next
``system`` turn opening a round or ending the debate), then sent in the order they were saved;
the shared state says meanwhile how many have answered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wopdsl._ids import message_id
from wopdsl.projections.streaming import StreamedCall, streamed_posts
from wopdsl.protocol.payloads import posted_turn, turn_sender
from wopdsl.state import CouncilState

Doc = dict[str, Any]


@dataclass(slots=True)
class Messages:
    """The message and tool projection of one run (see the module)."""

    run_id: str = ""
    open: dict[str, str] = field(default_factory=dict)
    """Open text messages: AG-UI id -> the text sent so far."""
    starts: dict[str, Doc] = field(default_factory=dict)
    """Open text messages: AG-UI id -> the ``TEXT_MESSAGE_START`` that opened it."""
    streams: dict[str, StreamedCall] = field(default_factory=dict)
    abandoned: dict[str, int] = field(default_factory=dict)
    """Post ids a stream opened and abandoned -> how many times."""
    calls: dict[str, Doc] = field(default_factory=dict)
    """Announced tool calls by id: ``{name, arguments, member}``."""
    returned: set[str] = field(default_factory=set)
    snapshot: list[Doc] = field(default_factory=list)
    """The conversation as AG-UI messages, for ``MESSAGES_SNAPSHOT``."""
    held: dict[str, list[tuple[list[Doc], Doc]]] = field(default_factory=dict)
    """Per blind room mid-round: each post's events and its snapshot entry, until it ends."""

    def feed(self, event: Mapping[str, Any], state: CouncilState) -> list[Doc]:
        """The AG-UI events of ``event`` (``state``: the fold before it)."""
        kind = event["type"]
        payload = event.get("payload") or {}
        if kind in ("conversation.exchanged", "conversation.closed"):
            turn = posted_turn(event)
            if turn and turn.get("role") != "system":
                return self._post(turn, state)
            content = (payload.get("turn") or {}).get("content") if kind == \
                "conversation.exchanged" else None
            if isinstance(content, dict) and ("round" in content or "rounds" in content):
                return self.release(str(event.get("nodeId", ""))[5:])  # The round ended.
            return self.release(str(event.get("nodeId", ""))[5:]) if kind == \
                "conversation.closed" else []
        if kind == "output.chunk":
            return self._chunk(payload, state)
        if kind in ("node.retried", "envelope.retry.attempted", "node.failed"):
            return self._abandon(str(payload.get("nodeId") or event.get("nodeId") or ""))
        if kind == "interrupt.requested" and payload.get("kind") == "approval":
            data = payload.get("data") or {}
            artifact = data.get("artifactData") or {}
            if data.get("artifactType") == "tool-call" and data.get("artifactId"):
                return self._call(str(data["artifactId"]), str(artifact.get("tool", "tool")),
                                  artifact.get("arguments"), str(event.get("nodeId", "")))
            return []
        if kind == "agent.toolCalled":
            inputs = payload.get("inputs")
            args = None if inputs is None else json.dumps(inputs, ensure_ascii=False)
            return self._call(str(payload.get("callId", "")), str(payload.get("toolName", "")),
                              args, str(event.get("nodeId", "")))
        if kind == "agent.toolReturned":
            return self._result(str(payload.get("callId", "")), _outcome_text(payload))
        if kind == "approval.rejected":
            call = _call_of_gate(str(payload.get("gateId", "")))
            if call in self.calls and call not in self.returned:
                reason = payload.get("reason") or payload.get("comment") or ""
                return self._result(call, f"rejected: {reason}" if reason else "rejected")
        return []

    def reopen(self) -> list[Doc]:
        """Open again, for a client that joins now, the messages being streamed."""
        out: list[Doc] = []
        for mid, sent in self.open.items():
            out.append(self.starts[mid])
            if sent:
                out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": sent})
        return out

    def release(self, room: str) -> list[Doc]:
        """The held posts of ``room``'s blind round, now that it ended (in saved order)."""
        out: list[Doc] = []
        for events, entry in self.held.pop(room, []):
            self.snapshot.append(entry)
            out += events
        return out

    def release_all(self) -> list[Doc]:
        """Every held post (the run ended in the middle of a blind round)."""
        return [doc for room in list(self.held) for doc in self.release(room)]

    def close_all(self) -> list[Doc]:
        """``TEXT_MESSAGE_END`` for every open message (a run ends or waits)."""
        ended = [{"type": "TEXT_MESSAGE_END", "messageId": mid} for mid in self.open]
        self.open.clear()
        self.starts.clear()
        self.streams.clear()
        return ended

    # -- posts -------------------------------------------------------------------------------

    def _post(self, turn: Doc, state: CouncilState) -> list[Doc]:
        post_id = str(turn.get("messageId", ""))
        member = turn_sender(turn)
        content = turn.get("content") or {}
        text = str(content.get("text", "")) if isinstance(content, dict) else str(content)
        room = str(turn.get("groupId", ""))
        mentions = content.get("mentions", []) if isinstance(content, dict) else []
        agui_id = post_id if post_id not in self.abandoned else \
            f"{post_id}#{self.abandoned[post_id] + 1}"
        role = "user" if state.members.get(member) is not None and \
            state.members[member].human else "assistant"
        meta = {"wopdsl": {"member": member, "room": room, "mentions": list(mentions),
                           "runId": self.run_id}}
        entry = {"id": agui_id, "role": role, "content": text, "name": member}
        out: list[Doc] = []
        sent = self.open.pop(agui_id, None)
        self.starts.pop(agui_id, None)
        if sent is None:
            out.append({"type": "TEXT_MESSAGE_START", "messageId": agui_id, "role": role,
                        "name": member, "metadata": meta})
            sent = ""
        if text.startswith(sent) and len(text) > len(sent):
            out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": agui_id,
                        "delta": text[len(sent):]})
        out.append({"type": "TEXT_MESSAGE_END", "messageId": agui_id})
        if _blind_round(state, room):
            self.held.setdefault(room, []).append((out, entry))
            return []
        self.snapshot.append(entry)
        return out

    def _chunk(self, payload: Doc, state: CouncilState) -> list[Doc]:
        member = str(payload.get("nodeId", ""))
        inflight = state.inflight.get(member)
        if inflight is None or (member in state.members and any(
                _blind_round(state, r) for r in state.members[member].rooms)):
            return []  # (A blind round's answers are held whole: see the module.)
        channel = str(payload.get("channel", ""))
        out: list[Doc] = []
        stream = self.streams.get(member)
        if stream is None or stream.channel != channel:
            out += self._abandon(member)
            stream = self.streams[member] = StreamedCall(channel, inflight.position)
        stream.text += str(payload.get("chunk") or "")
        posts = streamed_posts(stream.text) or []
        for index, (room, text) in enumerate(posts):
            post_id = message_id(member, stream.position, index)
            if not text or post_id in self.abandoned:
                continue
            sent = stream.sent.get(index)
            if sent is None:
                meta = {"wopdsl": {"member": member, "runId": self.run_id,
                                   **({"room": room} if room else {})}}
                start = self.starts[post_id] = {
                    "type": "TEXT_MESSAGE_START", "messageId": post_id, "role": "assistant",
                    "name": member, "metadata": meta}
                out.append(start)
                sent = ""
            if text.startswith(sent) and len(text) > len(sent):
                out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": post_id,
                            "delta": text[len(sent):]})
                sent = text
            stream.sent[index] = self.open[post_id] = sent
        return out

    def _abandon(self, member: str) -> list[Doc]:
        """End what ``member``'s current call streamed: that attempt will not post it."""
        stream = self.streams.pop(member, None)
        if stream is None:
            return []
        out: list[Doc] = []
        for index in stream.sent:
            post_id = message_id(member, stream.position, index)
            self.starts.pop(post_id, None)
            if self.open.pop(post_id, None) is not None:
                self.abandoned[post_id] = self.abandoned.get(post_id, 0) + 1
                out.append({"type": "TEXT_MESSAGE_END", "messageId": post_id})
        return out

    # -- tool calls --------------------------------------------------------------------------

    def _call(self, call: str, name: str, arguments: Any, member: str) -> list[Doc]:
        if not call or call in self.calls:
            return []
        args = arguments if isinstance(arguments, str) else None
        self.calls[call] = {"name": name, "arguments": args, "member": member}
        self.snapshot.append({"id": call, "role": "assistant", "name": member, "toolCalls": [
            {"id": call, "type": "function",
             "function": {"name": name, "arguments": args or "{}"}}]})
        out: list[Doc] = [{"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": name,
                           "metadata": {"wopdsl": {"member": member, "runId": self.run_id}}}]
        if args:
            out.append({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args})
        out.append({"type": "TOOL_CALL_END", "toolCallId": call})
        return out

    def _result(self, call: str, content: str) -> list[Doc]:
        if call not in self.calls or call in self.returned:
            return []
        self.returned.add(call)
        result_id = f"{call}/result"
        self.snapshot.append({"id": result_id, "role": "tool", "toolCallId": call,
                              "content": content})
        return [{"type": "TOOL_CALL_RESULT", "messageId": result_id, "toolCallId": call,
                 "content": content, "role": "tool"}]


def _blind_round(state: CouncilState, room_id: str) -> bool:
    """Whether ``room_id`` is a blind room in the middle of a round (its posts are held)."""
    room = state.rooms.get(room_id)
    return room is not None and room.blind and room.round > 0 and not room.settled


def _outcome_text(payload: Doc) -> str:
    """A tool result as text: the outcome when recorded, else its status, size and hash."""
    outcome = payload.get("outcome")
    status = str(payload.get("status", "ok"))
    if isinstance(outcome, str):
        text = outcome
    elif outcome is not None:
        text = json.dumps(outcome, ensure_ascii=False)
    else:
        size = payload.get("resultBytes")
        digest = payload.get("resultHash")
        text = " ".join(str(p) for p in (f"{size} bytes" if size is not None else None,
                                          digest) if p) or "(no result recorded)"
    error = payload.get("error")
    if status != "ok":
        message = error.get("message") if isinstance(error, dict) else error
        return f"error ({status}): {message or text}"
    return text


def _call_of_gate(gate: str) -> str:
    """The call id of an approval's interrupt key (``approval/call/…`` -> ``call/…``)."""
    return gate.removeprefix("approval/")
