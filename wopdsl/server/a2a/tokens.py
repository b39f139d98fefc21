"""An ``llm`` member's streamed answer as A2A artifact updates, token by token.

A model member's answer arrives in ``output.chunk`` events (JSON, cut off anywhere); the text
of its posts is read from it as the AG-UI projection does (:mod:`wopdsl.projections.
streaming`). Each post being written is an artifact of the task, its id the id the post will
have (``team/{member}/{position}/{index}``), ``name: "post"`` and ``metadata {from, room}``:
the first piece of its text is sent as a new artifact, every later one with ``append``.
When the post is saved, the artifact is sent once more whole, as saved (``append: false``,
``lastChunk: true``: it replaces what was streamed), before the post's ``working`` status
update. A call made again (a retry, a repaired answer) streams its posts anew: its first piece
replaces what the abandoned attempt streamed.

A member of a blind room in the middle of a round is not streamed (its answers are held
whole, as every view holds them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wopdsl import CouncilState
from wopdsl._ids import message_id
from wopdsl.projections.streaming import StreamedCall, streamed_posts
from wopdsl.protocol.payloads import MEMBER_TYPE_ID

__all__ = ["Tokens"]

Doc = dict[str, Any]


@dataclass(slots=True)
class Tokens:
    """The streamed posts of one run, as artifact updates (JSON form, see the module)."""

    positions: dict[str, int] = field(default_factory=dict)
    """Member -> the position of its turn in flight (its posts' ids)."""
    streams: dict[str, StreamedCall] = field(default_factory=dict)
    streamed: set[str] = field(default_factory=set)
    """Ids of the posts an artifact was opened for."""

    @classmethod
    def of(cls, state: CouncilState) -> Tokens:
        """The projection of a run followed from ``state`` on (its turns in flight known)."""
        return cls({member: turn.position for member, turn in state.inflight.items()})

    def feed(self, event: Doc, state: CouncilState) -> list[Doc]:
        """The artifact updates of ``event`` (without ``taskId``/``contextId``)."""
        payload = event.get("payload") or {}
        if event.get("type") == "node.started" and payload.get("typeId") == MEMBER_TYPE_ID \
                and "position" in payload:
            self.positions[str(payload["nodeId"])] = int(payload["position"])
        elif event.get("type") == "output.chunk":
            return self._chunk(payload, state)
        return []

    def saved(self, post: Doc) -> Doc | None:
        """The last update of a streamed post, now saved (``None``: it was not streamed).

        ``post``: the post as an A2A message (``messageId``, ``parts``, ``metadata``).
        """
        post_id = str(post["messageId"])
        if post_id not in self.streamed:
            return None
        self.streamed.discard(post_id)
        return {"artifact": {"artifactId": post_id, "name": "post", "parts": post["parts"],
                             "metadata": post.get("metadata", {})},
                "append": False, "lastChunk": True}

    def _chunk(self, payload: Doc, state: CouncilState) -> list[Doc]:
        member = str(payload.get("nodeId", ""))
        position = self.positions.get(member)
        if position is None or _held(state, member):
            return []
        channel = str(payload.get("channel", ""))
        stream = self.streams.get(member)
        if stream is None or (stream.channel, stream.position) != (channel, position):
            stream = self.streams[member] = StreamedCall(channel, position)
        stream.text += str(payload.get("chunk") or "")
        updates: list[Doc] = []
        for index, (room, text) in enumerate(streamed_posts(stream.text) or []):
            sent = stream.sent.get(index)
            if not text or text == sent:
                continue
            post_id = message_id(member, position, index)
            append = sent is not None and text.startswith(sent)
            piece = text[len(sent or ""):] if append else text
            metadata = {"from": member, **({"room": room} if room else {})}
            updates.append({"artifact": {"artifactId": post_id, "name": "post",
                                         "parts": [{"text": piece}], "metadata": metadata},
                            "append": append, "lastChunk": False})
            stream.sent[index] = text
            self.streamed.add(post_id)
        return updates


def _held(state: CouncilState, member: str) -> bool:
    """Whether ``member`` is in a blind room in the middle of a round (not streamed)."""
    spec = state.members.get(member)
    return spec is not None and any(
        room.blind and room.round > 0 and not room.settled
        for room in (state.rooms[r] for r in spec.rooms if r in state.rooms))
