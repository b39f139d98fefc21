"""Private: the waits of ``a2a`` members whose agents ask for input (DESIGN.md §25).

A turn that ends with :class:`~wopdsl.errors.TurnAsks` (its agent's task is
``input-required``) stays in flight, suspended; :meth:`Asks._write_ask` writes the wait: a
``system`` turn in the room quoting the question (every view shows it), ``interrupt.requested``
of kind ``conversation.exchange`` on the member's node (the question as the ``prompt``) and
``node.suspended``. A post in that room by a human or external member answers it
(:meth:`Asks._answer_ask`: ``interrupt.resolved`` with the post, then ``node.resumed``); the
member's turn then runs again and sends the answer to the agent's task. Which question a post
answers is :meth:`wopdsl.state.asks.AskState.answered_by`. A room closed while a question
waits in it fails the asking turn, and so the run (:meth:`Asks._drop_asks`).
"""

from __future__ import annotations

from typing import Any

from wopdsl.engine._endings import Endings
from wopdsl.errors import TurnAsks, TurnError
from wopdsl.protocol import payloads as p
from wopdsl.state import Inflight, RoomState
from wopdsl.state.asks import PendingAsk

__all__ = ["Asks"]


class Asks(Endings):
    """Writes the waits for answers and the answers (the caller commits them)."""

    def _unanswerable(self, inflight: Inflight, asked: TurnAsks) -> TurnError | None:
        """Why the question of ``asked`` cannot wait for an answer (the turn then fails)."""
        room = self.state.rooms.get(asked.room)
        if room is not None and not room.closed and any(
                self.graph.members[m].awaited for m in self.graph.rooms[asked.room].members):
            return None
        why = "it is closed" if room is not None and room.closed else \
            "it has no human or external member to answer"
        return TurnError("A2A_ERROR", f"{inflight.member}'s agent asks for input in room "
                         f"{asked.room} ({asked.question}), but {why}",
                         {"room": asked.room, "question": asked.question})

    def _write_ask(self, inflight: Inflight, asked: TurnAsks) -> None:
        """Write the wait of ``asked`` (checked with :meth:`_unanswerable` first)."""
        member = inflight.member
        if asked.key not in self.state.asks.open:  # (asked already: only suspended again)
            self._ask(member, self.state.rooms[asked.room], asked)
        self._emit("node.suspended", {"nodeId": member, "interruptId": asked.key,
                                      "key": asked.key, "reason": "conversation-input"},
                   node_id=member)

    def _ask(self, member: str, room: RoomState, asked: TurnAsks) -> None:
        who = self.state.aliases.get(member, member) if room.anonymous else member
        self._note(room.id, f"{who}'s agent asks: {asked.question}")
        self._emit("interrupt.requested", {
            "kind": "conversation.exchange", "key": asked.key,
            "data": {"conversationId": room.conversation_id, "prompt": asked.question}},
            node_id=member)

    def _asked(self, room: str, mentions: list[str]) -> PendingAsk | None:
        """The question a post in ``room`` answers, if any (read before the post is saved)."""
        return self.state.asks.answered_by(room, mentions) if self.state.asks.open else None

    def _answer_ask(self, ask: PendingAsk, message_id: str, value: dict[str, Any]) -> None:
        """Resolve ``ask`` with the saved post ``message_id`` (its normalised resume value)."""
        answer = {**value, "messageId": message_id}
        self._emit("interrupt.resolved", p.interrupt_resolved(ask.member, ask.key, answer),
                   node_id=ask.member)
        self._emit("node.resumed", {"nodeId": ask.member, "interruptId": ask.key,
                                    "resumeValue": answer}, node_id=ask.member)

    def _drop_asks(self, room_id: str) -> None:
        """Fail the turns whose agents' questions wait in ``room_id`` (just closed), and the run."""
        for ask in [a for a in self.state.asks.open.values() if a.room == room_id]:
            inflight = self.state.inflight.get(ask.member)
            message = (f"{ask.member}'s agent asks for input in room {room_id} "
                       f"({ask.question}), but it closed before anyone answered")
            self._emit("node.failed", {
                "nodeId": ask.member, "attempts": inflight.attempt + 1 if inflight else 1,
                "error": {"code": "A2A_ERROR", "message": message,
                          "details": {"room": room_id, "question": ask.question}}},
                node_id=ask.member)
            if not self.state.terminal:
                self._fail("TEAM_NODE_FAILED", f"member {ask.member} failed: A2A_ERROR: "
                           f"{message}", ask.member, details={"nodeError": "A2A_ERROR"})
